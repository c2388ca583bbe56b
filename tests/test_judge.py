"""The validated judge: the validation set's construction, three-way grading, abstentions as
missing, and what ``raleval score --judge`` records."""

from __future__ import annotations

import json
import random
from collections import Counter

import pytest
from typer.testing import CliRunner

from raleval import registry
from raleval.answers import AnswerType
from raleval.app.cli import app
from raleval.grading.agreement import cohen_kappa
from raleval.grading.judge import (
    ACCURATE,
    HALLUCINATED,
    MISSING,
    LLMJudge,
    RulesJudge,
    judge_answer,
    parse_three_way,
    resolve_judge,
)
from raleval.grading.judge_validation import (
    agreement,
    build_set,
    count_variants,
    list_variants,
    number_variants,
    set_id,
    validate,
    year_variants,
)
from raleval.grading.rules import grade
from raleval.model import Generation, ModelBase
from raleval.records import Task
from tests.conftest import run_config

runner = CliRunner()


@pytest.fixture(scope="module")
def items():
    return build_set(seed=0)


# --- the set --------------------------------------------------------------------------------


def test_set_covers_every_generated_answer_type_with_all_three_truths(items):
    scored = [i for i in items if not i.rule_gap]
    assert len(scored) >= 300
    by_type: dict[str, Counter] = {}
    for i in scored:
        by_type.setdefault(i.answer_type, Counter())[i.truth] += 1
    # every short-answer type the built-in families generate (none generates free text; long
    # forms are graded by their key points, not judged)
    assert set(by_type) == {t.value for t in AnswerType} - {"free_text", "long_form"}
    for kind, truths in by_type.items():
        assert set(truths) == {ACCURATE, MISSING, HALLUCINATED}, kind


def test_set_holds_each_kind_of_rewording_and_near_miss(items):
    variants = {i.variant for i in items}
    for v in (
        "reword:separators_and_unit",
        "reword:scale_word",
        "reword:rounded",
        "reword:alias_article",
        "reword:list_reordered",
        "reword:list_semicolons",
        "reword:date_written_out",
        "miss:year_off_by_one",
        "miss:list_missing_one",
        "miss:list_extra_one",
        "miss:wrong_scale_word",
        "miss:sibling_entity",
        "miss:hedged",
        "miss:self_contradicting",
        "miss:invalid_on_answerable",
        "abstain:0",
    ):
        assert v in variants, v


def test_set_is_deterministic_per_seed(items):
    assert set_id(build_set(seed=0)) == set_id(items)
    assert set_id(build_set(seed=1)) != set_id(items)


def test_rules_grade_every_item_as_its_truth_and_every_gap_item_wrong(items):
    """The truth is written by the generators, not by the rules: this is where a generator
    that writes a near miss the rules accept (or a rewording they reject) is caught."""
    for i in items:
        v = grade(i.answer, i.golds, i.answer_type, elements=i.elements)
        rules = {"accurate": ACCURATE, "missing": MISSING}.get(v.crag, HALLUCINATED)
        if i.rule_gap:
            assert rules != i.truth, (i.variant, i.answer)
        else:
            assert rules == i.truth, (i.variant, i.answer, i.golds)


def test_writers_golden():
    rng = random.Random(0)
    q = "How much profit (revenue minus budget) did Velvet Tide make?"
    out = {v: a for v, a, _, _ in number_variants("58000000", q, rng)}
    assert out["reword:scale_word"] == "$58 million"
    assert out["reword:scale_suffix"] == "$58M"
    assert out["reword:separators_and_unit"] == "$58,000,000"
    assert out["miss:wrong_scale_word"] == "$58 billion"
    pct = {v: a for v, a, _, _ in number_variants("-9.75", "By what percentage ...", rng)}
    assert pct["reword:separators_and_unit"] == "-9.75%" and pct["miss:sign_flipped"] == "9.75%"
    years = {v: a for v, a, _, _ in year_variants("1995", "", rng)}
    assert abs(int(years["miss:year_off_by_one"]) - 1995) == 1
    counts = {v: a for v, a, _, _ in count_variants("3", "", rng)}
    assert counts["reword:number_word"] == "Three."
    task = Task(
        id="t",
        domain="d",
        level="KS",
        family="f",
        question="Which?",
        answers=["Ann Lee, Bo Chen, Cy Diaz"],
        answer_type="list",
    )
    lists = {v: a for v, a, _, _ in list_variants(task, ["Dee Fox"], rng)}
    assert sorted(lists["reword:list_reordered"].split(", ")) == ["Ann Lee", "Bo Chen", "Cy Diaz"]
    assert len(lists["miss:list_missing_one"].split(", ")) == 2
    assert lists["miss:list_extra_one"].endswith(", Dee Fox")


# --- kappa ----------------------------------------------------------------------------------


def test_cohen_kappa_golden():
    # Cohen (1960)'s setting: p_o = 0.7, p_e = 0.5 -> 0.4
    a = ["accurate"] * 5 + ["hallucinated"] * 5
    b = ["accurate"] * 4 + ["hallucinated"] + ["hallucinated"] * 3 + ["accurate"] * 2
    assert cohen_kappa(a, b) == pytest.approx(0.4)
    assert cohen_kappa(a, a) == 1.0
    assert cohen_kappa(["missing"] * 3, ["missing"] * 3) is None
    agr = agreement(a, b)
    assert agr.false_accept == pytest.approx(2 / 5) and agr.false_reject == pytest.approx(1 / 5)


# --- three-way grading and abstentions ------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "verdict"),
    [
        ('{"verdict": "accurate"}', ACCURATE),
        ('{"verdict": "Missing"}', MISSING),
        ('x {"a": 1} then {"verdict": "hallucinated"}', HALLUCINATED),
        ('{"verdict": "hallucinated', HALLUCINATED),  # cut at a stop sequence
        ('{"score": 1}', ACCURATE),
        ('{"score": 0}', HALLUCINATED),
        ('{"verdict": "maybe"}', None),
        ("accurate or hallucinated", None),
        ("no idea", None),
    ],
)
def test_parse_three_way(text, verdict):
    assert parse_three_way(text) == verdict


class _Says(ModelBase):
    """A judge model that always gives one verdict and counts its calls."""

    calls = 0

    def __init__(self, name):
        self.name = f"judgetest/{name}"
        self.word = name

    async def generate(self, request):
        type(self).calls += 1
        if self.word == "garbage":
            return Generation(text="I think so")
        return Generation(text=json.dumps({"verdict": self.word}))


def _make_says(name, **options):
    return _Says(name)


@pytest.fixture
def says(tmp_path):
    if "judgetest" not in registry.models:
        registry.models.register("judgetest")(_make_says)
    made = []

    def make(*words):
        j = LLMJudge([f"judgetest/{w}" for w in words], cache_path=tmp_path / "c.sqlite")
        made.append(j)
        return j

    yield make
    for j in made:
        j.close()


def _ask(judge, answer, gold="1995", kind="year"):
    import asyncio

    return asyncio.run(judge_answer(judge, "When?", [gold], answer, kind))


def test_llm_judge_grades_three_ways_and_a_panel_takes_the_majority(says):
    assert _ask(says("accurate"), "1995") == ACCURATE
    assert _ask(says("missing"), "no clue whatsoever") == MISSING
    assert _ask(says("hallucinated"), "1996") == HALLUCINATED
    assert _ask(says("accurate", "hallucinated", "hallucinated"), "1995") == HALLUCINATED
    assert _ask(says("accurate", "accurate", "missing"), "1995") == ACCURATE
    bad = says("garbage")
    assert _ask(bad, "1995") == HALLUCINATED and bad.unreadable == 1


def test_abstentions_are_missing_whatever_the_judge_says(says):
    yes = says("accurate")
    before = _Says.calls
    for text in ("I don't know.", "I don't know, maybe 1995.", "Unknown.", "", None):
        assert _ask(yes, text) == MISSING
    assert _Says.calls == before  # the judge was never asked
    # on a false premise "invalid question" is decided by rule too, as CRAG does
    no = says("hallucinated")
    assert _ask(no, "Invalid question.", "invalid question", "invalid_premise") == ACCURATE
    assert _ask(no, "1995", "invalid question", "invalid_premise") == HALLUCINATED


def test_scripted_rules_judge_reaches_kappa_one(items):
    result, _ = validate(RulesJudge(), items)
    assert result.n >= 300 and result.overall.kappa == 1.0
    assert all(a.kappa == 1.0 for a in result.per_type.values())
    # the rules' blind spots stay blind through the judge interface (one kind is fixed by
    # deciding abstentions first: "I don't know, maybe invalid question" on a false premise)
    assert result.rule_gaps is not None and result.rule_gaps.accuracy < 0.1


def test_a_judge_that_accepts_everything_is_measured_as_such(says, items):
    result, _ = validate(says("accurate"), items)
    assert result.overall.false_reject == 0.0
    # abstentions stay missing; every near miss is a false accept
    assert result.overall.false_accept == pytest.approx(
        sum(i.truth == HALLUCINATED for i in items if not i.rule_gap)
        / sum(i.truth != ACCURATE for i in items if not i.rule_gap)
    )
    assert result.overall.kappa < 0.5


def test_rules_cannot_join_a_panel():
    with pytest.raises(ValueError, match="panel"):
        resolve_judge(["scripted/rules", "openai/x"])


# --- the CLI ----------------------------------------------------------------------------------


def test_judge_validate_cli_prints_kappa_per_type_and_stores_it(tmp_path, monkeypatch):
    monkeypatch.setenv("RALEVAL_CACHE_DIR", str(tmp_path))
    res = runner.invoke(app, ["judge", "validate", "--judge", "scripted/rules"])
    assert res.exit_code == 0, res.output
    assert "320 items" in res.output
    assert (
        "│ year            │  40 │    1.000 │        0.000 │        0.000 │ 1.000 │" in res.output
    )
    assert "│ all             │ 320 │    1.000 │" in res.output
    stored = [
        json.loads(x) for x in (tmp_path / "judge_validation.jsonl").read_text().split("\n") if x
    ]
    assert stored[-1]["judge"] == "scripted/rules" and stored[-1]["overall"]["kappa"] == 1.0


def test_score_with_judge_records_spec_prompt_version_and_kappa(tmp_path, monkeypatch, says):
    monkeypatch.setenv("RALEVAL_CACHE_DIR", str(tmp_path / "cache"))
    summary, _ = run_config(tmp_path, tasks="scholar-ks", limit=4)
    run_dir = summary.run_dir
    # not validated yet: recorded, with no kappa
    res = runner.invoke(app, ["score", str(run_dir), "--judge", "judgetest/hallucinated"])
    assert res.exit_code == 0, res.output
    out = " ".join(res.output.split())  # rich wraps lines at the terminal's width
    assert "validated kappa not measured" in out
    assert "judge agrees with the rules on 0/4 episode(s)" in out
    rows = [json.loads(x) for x in (run_dir / "scores.jsonl").read_text().splitlines()]
    assert [r["judge"]["verdict"] for r in rows] == [HALLUCINATED] * 4
    assert [r["judge"]["rule_verdict"] for r in rows] == [ACCURATE] * 4
    assert rows[0]["judge"]["spec"] == "judgetest/hallucinated"
    assert rows[0]["judge"]["prompt_version"] == "crag3-v1" and rows[0]["judge"]["kappa"] is None
    # validated: the measured kappa is recorded with the verdicts
    assert runner.invoke(app, ["judge", "validate", "--judge", "scripted/rules"]).exit_code == 0
    res = runner.invoke(app, ["score", str(run_dir), "--judge", "scripted/rules"])
    assert res.exit_code == 0, res.output
    out = " ".join(res.output.split())
    assert "validated kappa 1.000): judge agrees with the rules on 4/4 episode(s) (100.0%)" in out
    rows = [json.loads(x) for x in (run_dir / "scores.jsonl").read_text().splitlines()]
    assert {
        (r["judge"]["spec"], r["judge"]["prompt_version"], r["judge"]["kappa"]) for r in rows
    } == {("scripted/rules", "rules-v1", 1.0)}
    # without --judge, scores.jsonl holds no judge
    assert runner.invoke(app, ["score", str(run_dir)]).exit_code == 0
    assert all(
        "judge" not in json.loads(x) for x in (run_dir / "scores.jsonl").read_text().splitlines()
    )


def test_report_shows_judge_verdicts_beside_the_rules(tmp_path, monkeypatch, says):
    from raleval.analysis.report import build_report
    from raleval.analysis.runs import load_run

    monkeypatch.setenv("RALEVAL_CACHE_DIR", str(tmp_path / "cache"))
    summary, _ = run_config(tmp_path, tasks="scholar-ks", limit=4)
    assert "Judge verdicts" not in build_report([load_run(summary.run_dir)])
    res = runner.invoke(app, ["score", str(summary.run_dir), "--judge", "judgetest/<b>missing"])
    assert res.exit_code == 0, res.output
    page = build_report([load_run(summary.run_dir)])
    assert "<h2>Judge verdicts beside the rule verdicts</h2>" in page
    assert "judge <b>judgetest/&lt;b&gt;missing</b>" in page  # the spec is escaped
    assert "agreement with the rules on this run: 0.000 of 4 episode(s)" in page
    # the judge's word is unreadable ("<b>missing" is no verdict): hallucinated, 4 times
    assert "<tr><td>rules: accurate</td><td>0</td><td>0</td><td>4</td></tr>" in page
    # in the viewer's data, escaped so that no text can end its script element
    verdict = '"judge":"hallucinated (rules: accurate; judge judgetest/\\u003cb\\u003emissing)"'
    assert verdict in page


def test_two_judges_are_validated_apart_and_compared(tmp_path, monkeypatch, says):
    monkeypatch.setenv("RALEVAL_CACHE_DIR", str(tmp_path))
    says("accurate")  # registers the provider
    res = runner.invoke(
        app, ["judge", "validate", "--judge", "scripted/rules", "--judge", "judgetest/accurate"]
    )
    assert res.exit_code == 0, res.output
    out = " ".join(res.output.split())
    assert "inter-judge kappa scripted/rules vs judgetest/accurate:" in out
    stored = [json.loads(x) for x in (tmp_path / "judge_validation.jsonl").read_text().splitlines()]
    assert [s["judge"] for s in stored] == ["scripted/rules", "judgetest/accurate"]
    assert stored[1]["overall"]["false_reject"] == 0.0 and stored[1]["overall"]["kappa"] < 0.5
