"""The task catalog: every family on the small worlds, seasons, manifests, cross-env sets."""

import json
from collections import Counter

import pytest
from typer.testing import CliRunner

from raleval import registry
from raleval.analysis.scoring import score_trajectory
from raleval.app.cli import app
from raleval.envs.scholar import families as scholar
from raleval.model import ModelBase
from raleval.records import Task
from raleval.store import read_tasks
from raleval.tasks.catalog import build_catalog, load_tasks

_ENVS: dict = {}


def _env(name):
    if name not in _ENVS:
        _ENVS[name] = registry.envs.get(name)(size="small")
    return _ENVS[name]


@pytest.mark.parametrize("family", registry.task_families.names())
def test_every_family_makes_100_verified_tasks_on_small(family):
    fam = registry.task_families.get(family)
    tasks = fam.generate(_env(fam.env), 100, 7)
    assert len(tasks) == 100
    assert len({t.question for t in tasks}) == 100
    assert all(t.solution for t in tasks)
    assert all(t.level == fam.level and t.family == family for t in tasks)
    # every template of the family takes its turn
    templates = Counter(t.metadata.get("template") for t in tasks)
    assert min(templates.values()) >= 3, templates
    if fam.env == "crag":  # CRAG's equal head / torso / tail buckets (teams have no tail)
        buckets = Counter(t.tags.popularity for t in tasks)
        assert set(buckets) == {"head", "torso", "tail"}
        assert max(buckets.values()) - min(buckets.values()) <= 15, buckets


def test_scholar_has_at_least_40_templates():
    assert scholar.TEMPLATE_COUNT >= 40
    used = set()
    for fid in ("1-3", "2-4", "3-5"):
        used |= {
            t.metadata["template"] for t in scholar.FAMILIES[fid].generate(_env("scholar"), 100, 1)
        }
    assert len(used) == scholar.TEMPLATE_COUNT


def test_crag_families_cover_every_domain_and_type():
    seen = set()
    for fid in registry.task_sets.get("crag-kg"):
        # half the false-premise family's questions are asked with a true premise (typed
        # simple), so it needs more tasks to show a false premise in every domain
        n = 30 if fid == "crag-false-premise" else 10
        for t in registry.task_families.get(fid).generate(_env("crag"), n, 0):
            seen.add((t.tags.question_type, t.domain))
            assert t.query_time is not None and t.tags.dynamism and t.tags.popularity
    types = {q for q, _ in seen}
    assert len(types) == 8 and len(seen) == 40


def test_season_build_is_reproducible_and_disjoint(tmp_path):
    a = build_catalog("scholar", tmp_path / "a", "2026-11", size=20, examples=4, world="tiny")
    b = build_catalog("scholar", tmp_path / "b", "2026-11", size=20, examples=4, world="tiny")
    c = build_catalog("scholar", tmp_path / "c", "2026-12", size=20, examples=4, world="tiny")
    assert a["files"] == b["files"] and a["files"] != c["files"]
    test = read_tasks(tmp_path / "a" / "test.jsonl")
    pool = read_tasks(tmp_path / "a" / "examples.jsonl")
    assert {t.question for t in test}.isdisjoint({t.question for t in pool})
    assert len({t.id for t in test + pool}) == len(test) + len(pool)
    manifest = json.loads((tmp_path / "a" / "manifest.json").read_text())
    assert manifest["families"]["3-5"]["examples"] == 4 and manifest["seed"] == a["seed"]


def test_cli_tasks_list_and_build(tmp_path):
    runner = CliRunner()
    listed = runner.invoke(app, ["tasks", "list"])
    assert (
        listed.exit_code == 0
        and "reval-12" in listed.output
        and "crag-false-premise" in listed.output
    )
    built = runner.invoke(
        app, ["tasks", "build", "1-3", "--size", "5", "--world", "tiny", "--out", str(tmp_path)]
    )
    assert built.exit_code == 0, built.output
    assert len(read_tasks(tmp_path / "test.jsonl")) == 5
    bad = runner.invoke(app, ["tasks", "build", "nope", "--out", str(tmp_path)])
    assert bad.exit_code != 0 and "unknown task set" in bad.output


def test_cross_env_set_runs_the_families_of_the_chosen_env():
    env = registry.envs.get("scholar")(size="tiny")
    tasks = load_tasks("reval-12", env, "scholar", 2, 0)
    assert {t.family for t in tasks} == {"1-3", "2-4", "3-5"}
    with pytest.raises(ValueError, match="--env scholar or --env wiki"):
        load_tasks("reval-12", env, "crag", 2, 0)


def test_task_metric_is_scored():
    from .test_taxonomy_slice import _traj

    profile = "position: Professor; organization: Qerrin; phd_year: 2004"
    task = Task(
        id="t",
        domain="scholar",
        level="KU",
        family="2-4",
        question="q",
        answers=[profile],
        metric="fields",
    )
    traj = _traj("position: Professor; organization: Qerrin; phd_year: 1999")
    score_trajectory(traj, task)
    assert traj.scores["fields"] == pytest.approx(2 / 3)
    assert {"correct", "score", "f1", "em", "relaxed_f1", "crag", "missing"} <= set(traj.scores)


def test_read_values_are_what_a_computed_answer_reads():
    from raleval.families import read_values

    results = [{"a": [{"x": 1.25, "n": "Foo"}, {"x": 2.5, "n": "Bar"}]}, "ABCD", {"2024-01-02": 7}]
    assert read_values("max(r0['a'], key=lambda d: d['x'])['n']", results) == [
        "1.25", "2.5", "Bar",
    ]  # fmt: skip
    assert read_values("r1[:2]", results) == ["ABCD"]
    assert read_values("sum(d['x'] for d in r0['a'])", results) == ["1.25", "2.5"]
    assert read_values("sorted(r2)[0]", results) == ["2024-01-02"]  # keys read by iterating


def test_computed_crag_answers_carry_the_values_they_read_as_evidence():
    fam = registry.task_families.get("crag-aggregation")
    tasks = fam.generate(_env("crag"), 20, 3)
    computed = [t for t in tasks if t.evidence]
    assert len(computed) >= 5
    for t in computed:
        assert all(e != t.answers[0] for e in t.evidence)


def test_template_expansion_keeps_only_well_formed_proposals(tmp_path):
    import asyncio

    import yaml

    from raleval.model import Generation
    from raleval.tasks.expand import (
        expand_templates,
        parse_candidates,
        surface_templates,
        write_review_file,
    )

    template = "Which organization is {name} affiliated with?"
    kept, rejected = parse_candidates(
        "1. Where is {name} employed?\n- 'What institution does {name} belong to?'\n"
        "Which organization is {name} affiliated with?\nWhere does {person} work?\n"
        "Tell me where {name} works.\n2) Where is {name} employed?\n"
        "Paraphrases: Who employs {name}?",
        template,
    )
    assert kept == [
        "Where is {name} employed?",
        "What institution does {name} belong to?",
        "Who employs {name}?",
    ]
    assert [r["why"] for r in rejected] == [
        "same as the template", "placeholders differ", "not a question", "duplicate",
    ]  # fmt: skip

    class Paraphraser(ModelBase):  # a model that answers every template with two lines
        async def generate(self, request):
            assert "{name}" in request.messages[0].content
            return Generation(text="Who employs {name}?\nWhere does {name} work today?")

    templates = surface_templates(registry.task_families.get("1-1"), _env("wiki"))
    assert len(templates) >= 5 and all("{name}" in t for t in templates)
    entries = asyncio.run(expand_templates(templates[:2], Paraphraser(), 3))
    doc = write_review_file(tmp_path / "t.yaml", "1-1", "fake", entries)
    assert yaml.safe_load((tmp_path / "t.yaml").read_text()) == doc
    assert doc["templates"][0]["candidates"] == [
        "Who employs {name}?",
        "Where does {name} work today?",
    ]
    # the proposals are only in the review file: the family still asks what it asked before
    assert surface_templates(registry.task_families.get("1-1"), _env("wiki")) == templates


def test_template_expansion_cli_refuses_code_built_families():
    from typer.testing import CliRunner

    from raleval.app.cli import app

    result = CliRunner().invoke(app, ["tasks", "expand", "crag-set", "--model", "scripted/abstain"])
    assert result.exit_code != 0 and "no surface templates" in result.output


def test_grounding_evidence_uses_the_taxonomys_token_test():
    from raleval.families import grounding_evidence

    games = [{"game_id": {"0": "g-101", "1": "g-102"}, "game_date": {"0": "2024-01-13"}}]
    # "13" is inside a date, not a token of its own: the count is grounded by what it counts
    assert grounding_evidence("str(len(r0['game_id']))", games, "2") == ["g-101", "g-102"]
    assert grounding_evidence("r0['game_id']['0']", games, "g-101") is None  # shown as is
    points = [{"pts_home": {"0": 98}, "pts_away": {"0": 104}}]
    # yes/no is never "shown": the numbers compared are the evidence
    expr = "'yes' if r0['pts_home']['0'] > r0['pts_away']['0'] else 'no'"
    assert grounding_evidence(expr, points, "no") == ["98", "104"]


def test_a_built_season_runs_on_the_world_it_was_made_for_and_names_its_run(tmp_path):
    """`tasks build` makes CRAG tasks on the small world while `--env crag` defaults to tiny: a
    run given no -E takes the task file's world; an explicit other world is still refused;
    two seasons' test.jsonl get run directories of their own."""
    runner = CliRunner()
    for season in ("2026-11", "2026-12"):
        built = runner.invoke(
            app,
            ["tasks", "build", "crag-condition", "--size", "2", "--examples", "0",
             "--season", season, "--out", str(tmp_path / season)],
        )  # fmt: skip
        assert built.exit_code == 0, built.output
    run = ["run", "--env", "crag", "--model", "scripted/oracle", "--display", "none"]
    logs = ["--log-dir", str(tmp_path / "runs")]
    for season in ("2026-11", "2026-12"):
        res = runner.invoke(app, [*run, "--tasks", str(tmp_path / season / "test.jsonl"), *logs])
        assert res.exit_code == 0, res.output
    names = sorted(p.name for p in (tmp_path / "runs").iterdir())
    assert len(names) == 2 and all("crag-condition-2026-" in n for n in names), names
    header = json.loads((tmp_path / "runs" / names[0] / "header.json").read_text())
    assert header["config"]["env_options"] == {"size": "small"}
    tiny = runner.invoke(
        app, [*run, "--tasks", str(tmp_path / "2026-11" / "test.jsonl"), "-E", "size=tiny",
              "--log-dir", str(tmp_path / "other")],
    )  # fmt: skip
    assert tiny.exit_code == 2 and "was made for world" in tiny.output
    assert not (tmp_path / "other").exists() or not any((tmp_path / "other").rglob("*.jsonl"))
