"""Robustness testbeds: each changes what an agent sees in the way it claims, and each has the
effect RGB and CRAG measure (memory fails on counterfactuals, abstaining scores 0 on CRAG and
rejects every answerless question, noise leaves the answer reachable)."""

import json

import pytest

from raleval import registry
from raleval.analysis.runs import load_run, robustness_rates
from raleval.grading.metrics import crag_score, crag_verdict, rejection_rate
from raleval.records import OutcomeKind
from raleval.tasks.catalog import load_tasks
from raleval.tasks.testbeds import Testbed, parse_spec, wrap_session
from raleval.tasks.testbeds.world import (
    INVALID_ANSWER,
    REJECTION_ANSWER,
    add_noise,
    data_sentences,
)
from raleval.workflows.sandbox import check_isolation

from .conftest import run_config, standalone_workflows

SETS = {"scholar": "scholar", "wiki": "reval-12", "crag": "crag-kg"}


@pytest.fixture(scope="module")
def envs():
    return {name: registry.envs.get(name)(size="tiny") for name in SETS}


def _tasks(envs, env, testbed, n=4):
    return load_tasks(f"{SETS[env]}@{testbed}", envs[env], env, n, 3)


def _observations(env, task):
    session = wrap_session(env.session(task), task)
    return [session.call_sync(c.tool, c.arguments) for c in task.solution or []]


def test_parse_spec():
    assert parse_spec("crag-kg") == ("crag-kg", None)
    assert parse_spec("crag-kg@negative") == ("crag-kg", Testbed("negative"))
    assert parse_spec("reval-12@noise=0.4") == ("reval-12", Testbed("noise", 0.4))
    for bad, message in [
        ("x@noise", "needs a ratio"),
        ("x@noise=0.9", "between 0 and 0.8"),
        ("x@negative=1", "takes no value"),
        ("x@shuffle", "unknown testbed"),
    ]:
        with pytest.raises(ValueError, match=message):
            parse_spec(bad)


@pytest.mark.parametrize("env", sorted(SETS))
def test_negative_rejection_withholds_every_trace_of_the_answer(envs, env):
    tasks = _tasks(envs, env, "negative")
    assert len(tasks) >= 4
    for task in tasks:
        assert task.answers == [REJECTION_ANSWER] and not task.tags.answerable
        assert task.id.endswith("@neg")
        withheld = task.metadata["testbed"]["withhold"]
        for result in _observations(envs[env], task):
            text = result.observation.lower()
            assert not any(f" {w.lower()} " in f" {text} " for w in withheld), (task.id, text)


@pytest.mark.parametrize("env", sorted(SETS))
def test_false_premise_names_an_entity_the_world_does_not_have(envs, env):
    tasks = _tasks(envs, env, "false-premise")
    assert len(tasks) >= 4
    for task in tasks:
        spec = task.metadata["testbed"]
        assert task.answers == [INVALID_ANSWER] and task.tags.question_type == "false_premise"
        assert spec["fake"].lower() in task.question.lower()
        assert spec["real"].lower() not in task.question.lower()
        (result,) = _observations(envs[env], task)
        assert result.kind is OutcomeKind.ok
        data = result.data
        # the lookup made with the fake name finds nothing by that name
        shown = "" if data is None else json.dumps(data)
        shown = shown.replace(f"Could not find {spec['fake']}.", "")
        assert spec["fake"] not in shown or not data, (task.id, shown[:200])


@pytest.mark.parametrize("env", sorted(SETS))
def test_counterfactual_changes_the_answer_in_every_result(envs, env):
    tasks = _tasks(envs, env, "counterfactual")
    assert len(tasks) >= 3
    for task in tasks:
        old, new = task.metadata["testbed"]["swap"]
        assert task.answers == [new] and task.metadata["original_answers"][0] == old
        text = " ".join(r.observation for r in _observations(envs[env], task))
        assert new in text and f" {old} " not in f" {text} "
        # the base world still says the original
        session = envs[env].session(task)  # CRAG answers as of the task's query time
        base = " ".join(session.call_sync(c.tool, c.arguments).observation for c in task.solution)
        assert old in base


@pytest.mark.parametrize("env", sorted(SETS))
def test_noise_makes_up_the_ratio_of_search_results_and_never_holds_the_answer(envs, env):
    tasks = _tasks(envs, env, "noise=0.6")
    base = {t.id: t for t in load_tasks(SETS[env], envs[env], env, 4, 3)}
    assert {t.id.rsplit("@", 1)[0] for t in tasks} == set(base)  # noise drops no task
    added = 0
    for task in tasks:
        assert task.metadata["noise_ratio"] == 0.6
        for call, noisy in zip(task.solution, _observations(envs[env], task), strict=True):
            clean = envs[env].session(task).call_sync(call.tool, call.arguments)
            if envs[env].tool(call.tool).matching != "fuzzy" or not clean.data:
                continue
            if isinstance(clean.data, str):  # a page: look-alike sentences among its own
                clean_items, noisy_items = data_sentences(clean.data), data_sentences(noisy.data)
            else:
                clean_items, noisy_items = clean.data, noisy.data
            extra = [x for x in noisy_items if x not in clean_items]
            assert [x for x in noisy_items if x in clean_items] == clean_items  # order kept
            # round(n * r / (1 - r)) look-alikes, unless none could be made answerless
            assert len(extra) <= round(len(clean_items) * 0.6 / 0.4)
            added += len(extra)
            for x in extra:
                text = json.dumps(x).lower()
                assert not any(f'"{a.lower()}"' in text for a in task.answers), x
    assert added > 0


def test_noise_ratio_zero_changes_nothing_and_text_gets_sentences():
    import random

    data = ["Ada Lin", "Bo Kim"]
    assert add_noise(data, 0.0, random.Random(1), None) == (data, 0)
    noisy, n = add_noise(data, 0.8, random.Random(1), None)
    assert n == 8 and len(noisy) == 10 and [x for x in noisy if x in data] == data
    text = "Ada Lin is a professor at Foo University. She has published 12 papers."
    noisy_text, n = add_noise(text, 0.5, random.Random(1), None)
    assert n == 2 and noisy_text.count(". ") >= 3 and "Foo University" in noisy_text


@pytest.mark.parametrize("workflow", ["react", "function_calling", "pal"])
def test_tools_win_on_counterfactuals_and_memory_scores_zero(tmp_path, workflow):
    if workflow == "pal" and check_isolation() is not None:
        pytest.skip(check_isolation())
    common = {"env": "scholar", "tasks": "scholar@counterfactual", "tasks_per_family": 4}
    _, trusting = run_config(tmp_path / "o", workflow=workflow, **common)
    assert trusting and all(r.scores["f1"] == 1.0 for r in trusting)
    # an oracle that ignores the tools answers from the real world: every answer is wrong
    _, memory = run_config(tmp_path / "m", workflow=workflow, model="scripted/memorizer", **common)
    assert len(memory) == len(trusting)
    assert all(r.scores["f1"] == 0.0 for r in memory)
    # ... although it is right on the same questions without the testbed
    _, plain = run_config(
        tmp_path / "p", workflow=workflow, model="scripted/memorizer", env="scholar",
        tasks="scholar", tasks_per_family=4,
    )  # fmt: skip
    assert all(r.scores["f1"] == 1.0 for r in plain)
    rates = robustness_rates(load_run(next((tmp_path / "m").glob("*"))))["counterfactual"]
    assert rates["from_memory"] == 1.0 and rates["trusts_tools"] == 0.0
    rates = robustness_rates(load_run(next((tmp_path / "o").glob("*"))))["counterfactual"]
    assert rates["trusts_tools"] == 1.0 and rates["from_memory"] == 0.0


def test_always_abstaining_scores_crag_zero_and_rejects_everything(tmp_path):
    common = {"env": "crag", "model": "scripted/abstain", "tasks_per_family": 3}
    _, plain = run_config(tmp_path / "kg", tasks="crag-kg", **common)
    run = load_run(next((tmp_path / "kg").glob("*")))
    assert any(t.tags.question_type == "false_premise" for t in run.tasks.values())
    scored = [crag_verdict(t.answer, run.tasks[t.task_id].answers) for t in run.results]
    assert set(scored) == {"missing"} and crag_score(scored)["score"] == 0.0
    assert sum(r.scores["crag"] for r in plain) == 0.0
    _, negative = run_config(tmp_path / "neg", tasks="crag-kg@negative", **common)
    assert negative and rejection_rate([r.answer for r in negative]) == 1.0
    # scripted/abstain declines without a tool call: a rejection from the model alone is AM
    # (issue 19; it was EM)
    assert all(r.error_cause == "AM:correct_rejection" for r in negative)
    rates = robustness_rates(load_run(next((tmp_path / "neg").glob("*"))))["negative"]
    # no tool call: no subgoal of the gold solution reached (progress rate 0)
    assert rates == {
        "n": len(negative), "rejection_rate": 1.0, "hallucination": 0.0, "progress": 0.0
    }  # fmt: skip
    # answering anyway is a hallucination, the one thing negative rejection punishes
    _, memory = run_config(tmp_path / "mem", tasks="crag-kg@negative",
                           **{**common, "model": "scripted/memorizer"})  # fmt: skip
    assert all(r.scores["crag"] == -1.0 for r in memory)


@pytest.mark.parametrize("workflow", standalone_workflows())
def test_oracle_keeps_f1_one_under_the_heaviest_noise(tmp_path, workflow):
    if workflow == "pal" and check_isolation() is not None:
        pytest.skip(check_isolation())
    if workflow == "direct":
        pytest.skip("direct calls no tool: noise cannot reach it")
    _, results = run_config(
        tmp_path, env="scholar", workflow=workflow, tasks="scholar@noise=0.8", tasks_per_family=3
    )
    assert results and all(r.scores["f1"] == 1.0 for r in results)
    assert all(r.task_id.endswith("@noise0.8") for r in results)


def test_false_premise_oracle_says_invalid_and_abstention_is_missing(tmp_path):
    common = {"env": "wiki", "tasks": "reval-12@false-premise", "tasks_per_family": 2}
    _, oracle = run_config(tmp_path / "o", **common)
    assert oracle and all(r.error_cause == "EM:correct_rejection" for r in oracle)
    _, abstain = run_config(tmp_path / "a", model="scripted/abstain", **common)
    assert all(r.scores["crag"] == 0.0 and r.scores["missing"] == 1.0 for r in abstain)
    rates = robustness_rates(load_run(next((tmp_path / "a").glob("*"))))["false-premise"]
    assert (rates["invalid"], rates["missing"]) == (0.0, 1.0)


def test_a_season_can_be_built_for_a_testbed(tmp_path):
    from raleval.tasks.catalog import build_catalog

    first = build_catalog("scholar@negative", tmp_path / "a", "2026-11", 10, 2, "tiny")
    again = build_catalog("scholar@negative", tmp_path / "b", "2026-11", 10, 2, "tiny")
    assert first["testbed"] == "negative" and first["files"] == again["files"]
    assert all(f["test"] == 10 and f["examples"] == 2 for f in first["families"].values())
    lines = (tmp_path / "a" / "test.jsonl").read_text().splitlines()
    assert len(lines) == 30 and all('@neg"' in line for line in lines)


def test_k_shot_examples_of_a_testbed_run_come_from_the_ordinary_world(tmp_path):
    from raleval.app.demonstrations import demonstration_tasks, solved_example
    from raleval.config import RunConfig

    env = registry.envs.get("scholar")(size="tiny")
    config = RunConfig(
        env="scholar",
        env_options={"size": "tiny"},
        workflow="react",
        model="scripted/oracle",
        tasks="scholar@negative",
        log_dir=tmp_path,
    )
    tasks = load_tasks("scholar@negative", env, "scholar", 2, config.seed)
    demos = demonstration_tasks(config, env, tasks, 2)
    react = registry.workflows.get("react")()
    demo_tasks = [t for group in demos.values() for t in group]
    examples = [react.render_example(solved_example(t, env), env) for t in demo_tasks]
    assert len(examples) == 2 * len({t.family for t in tasks}) == 2 * len(demos)
    assert not any(REJECTION_ANSWER in e for e in examples)
    assert not any("@" in t.id for t in demo_tasks)


def test_testbed_seasons_do_not_depend_on_the_hash_seed(tmp_path):
    import os
    import subprocess
    import sys

    hashes = set()
    for hash_seed in ("1", "2", "3"):
        out = tmp_path / hash_seed
        subprocess.run(
            [sys.executable, "-m", "raleval", "tasks", "build", "3-4@negative", "--size", "10",
             "--examples", "0", "--world", "tiny", "--out", str(out)],
            check=True, capture_output=True, env={**os.environ, "PYTHONHASHSEED": hash_seed},
        )  # fmt: skip
        hashes.add((out / "test.jsonl").read_bytes())
    assert len(hashes) == 1
