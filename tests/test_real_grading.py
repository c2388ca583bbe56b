"""Grading that holds on real answers: CRAG's sentence golds that restate the question, golds
that are not answers, either-or answers, and a hand-labelled set of real model answers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from raleval.grading.freetext import answer_bearing, answer_bearing_text, grade_free_text
from raleval.grading.rules import grade
from raleval.records import Task

ROOT = Path(__file__).resolve().parents[1]
CRAG_DEV = ROOT / "studies" / "data" / "crag-dev.jsonl"
REAL = ROOT / "grading" / "real_answers.jsonl"


def crag_dev() -> list[Task]:
    return [Task.model_validate_json(line) for line in CRAG_DEV.read_text().splitlines()]


def _grade(task: Task, answer: str):
    return grade(
        answer,
        task.answers,
        task.answer_type,
        elements=task.elements,
        answerable=task.tags.answerable,
        question=task.question,
    )


@pytest.mark.parametrize("task", crag_dev(), ids=lambda t: t.id[:13])
def test_crag_dev_question_restated_or_wrong_or_empty_is_never_correct(task):
    wrong_value = "Carol Forman" if "forman" not in task.answers[0] else "Bill Murray"
    if any(c.isdigit() for c in task.answers[0]):
        wrong_value = "17"
    for answer in (task.question, f"{task.question} {wrong_value}", "", "   "):
        v = _grade(task, answer)
        assert not v.correct, (answer, v.explanation)


@pytest.mark.parametrize("task", crag_dev(), ids=lambda t: t.id[:13])
def test_crag_dev_gold_and_its_answer_bearing_part_are_correct(task):
    if task.answers == ["nan"]:
        v = _grade(task, "nan")
        assert v.ungraded and not v.correct  # a gold that is not an answer grades nothing
        return
    assert _grade(task, task.answers[0]).correct
    part = answer_bearing_text(task.answers[0], task.question)
    if part:  # a short gold ("yes", "en") says nothing beyond the question: itself is the part
        assert _grade(task, part).correct, (part, _grade(task, part).explanation)


def test_restatements_of_the_shortest_highway_are_wrong_and_its_value_is_right():
    q = "what is the shortest highway in the us in feet?"
    gold = ["the shortest highway in the us, i-878 in new york, is only 3,696 feet long."]
    assert answer_bearing(gold[0], q) == [("i-878",), ("new", "york"), ("3696",), ("long",)]
    for wrong in (
        "The shortest highway in the US is the 100-yard highway.",  # F1 0.50 with the gold
        "The shortest highway in the US in feet is 17 feet.",
        "The shortest highway in the United States in feet is 12,288.25 feet.",
    ):
        v = grade(wrong, gold, "free_text", question=q)
        assert not v.correct and not v.ungraded, (wrong, v.explanation)
    for right in ("3,696 feet", "I-878 in New York, 3696 feet long"):
        assert grade(right, gold, "free_text", question=q).correct
    # naming the highway without its length: rules cannot decide, and say so
    v = grade("I-878 in New York", gold, "free_text", question=q)
    assert v.ungraded and not v.correct and v.crag == "ungraded"


def test_a_cut_off_answer_or_a_tool_call_string_is_not_correct():
    q = "who was the first actor to play the role of a comic book villain in a live-action movie?"
    gold = [
        "carol forman was the first actor to play the role of a comic book villain in a "
        "live-action movie, in his iconic portrayal of the spider lady in superman."
    ]
    for wrong in (
        "The first actor to play the role of a comic book villain in a live-action movie was:",
        "The first actor to play the role of a comic book villain in a live-action movie was "
        "Bill Murray.",
        '{"name": "find_actor", "arguments": {"query": "' + q + '"}}',
    ):
        assert not grade(wrong, gold, "free_text", question=q).correct, wrong
    assert grade("Carol Forman", gold, "free_text", question=q).ungraded


def test_free_text_is_never_correct_by_overlap_alone():
    gold = ["the committee approved the new budget of the city after a long debate"]
    answer = "the committee rejected the new budget of the city after a long debate"
    # token F1 0.89 with the gold; without the question only the gold itself is correct
    v = grade(answer, gold, "free_text")
    assert not v.correct and v.ungraded and v.f1 > 0.85
    assert grade(gold[0], gold, "free_text").correct
    assert grade_free_text(answer, gold, "what did the committee do?").state == "ungraded"


def test_either_or_answers_naming_both_options():
    q = "Who received a doctorate earlier, Voul Jaibriamton or Mialom Krasturholt?"
    gold = ["Mialom Krasturholt"]
    wrong = "Voul Jaibriamton received a doctorate earlier than Mialom Krasturholt."
    right = "Mialom Krasturholt received a doctorate earlier than Voul Jaibriamton."
    assert not grade(wrong, gold, "entity", question=q).correct
    assert grade(right, gold, "entity", question=q).correct
    q2 = "is dreamworks animation owned by time warner or universal pictures?"
    v = grade(
        "Universal Pictures is not owned by Time Warner.", ["universal pictures"], question=q2
    )
    assert v.ungraded and not v.correct
    # the question restated inside the answer does not count as naming the other option
    q3 = (
        "Which company has the larger market capitalization, Ronixmello Foods or Zorshibelvin Bank?"
    )
    answer = f'The answer to the question "{q3}" is Ronixmello Foods.'
    assert grade(answer, ["Ronixmello Foods"], question=q3).correct


def test_a_gold_that_is_not_an_answer_grades_nothing():
    for gold in ("nan", "", "  ", "NULL"):
        v = grade("Playa Hotels", [gold], "entity", question="which is larger, plya or seatw?")
        assert v.ungraded and not v.correct and v.crag == "ungraded"


def test_the_real_answer_set_is_large_labelled_and_covers_every_source():
    rows = [json.loads(line) for line in REAL.read_text(encoding="utf-8").splitlines()]
    assert len(rows) >= 150
    assert {r["label"] for r in rows} == {"right", "wrong"}
    assert all(r["reason"].strip() and r["answer"] is not None for r in rows)
    assert {r["source"] for r in rows} >= {"hotpotqa", "crag-dev", "crag", "scholar", "wiki"}
    assert {r["answer_type"] for r in rows} >= {
        "entity", "boolean", "count", "number", "year", "date", "list", "free_text",
        "invalid_premise",
    }  # fmt: skip


def _cli():
    from typer.testing import CliRunner

    from raleval.app.cli import app

    return CliRunner(), app


def test_judge_validate_real_prints_rules_agreement_per_type(tmp_path, monkeypatch):
    monkeypatch.setenv("RALEVAL_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("COLUMNS", "200")
    runner, app = _cli()
    result = runner.invoke(
        app, ["judge", "validate", "--judge", "scripted/rules", "--set", "real", "--json"]
    )
    assert result.exit_code == 0, result.output
    (out,) = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["judge"] == "scripted/rules" and out["n"] >= 150
    assert set(out["per_type"]) >= {"entity", "boolean", "count", "free_text", "number"}
    # the floor of issue 45: the rules on the short-answer types
    assert out["short_answer"]["accuracy"] >= 0.95
    for kind in ("entity", "boolean", "count", "number", "year", "date", "list"):
        assert out["per_type"][kind]["accuracy"] >= 0.95, kind
    # free text is never accepted by overlap: no wrong free-text answer is accepted
    assert out["per_type"]["free_text"]["false_accept"] == 0.0
    table = runner.invoke(app, ["judge", "validate", "--judge", "scripted/rules", "--set", "real"])
    assert table.exit_code == 0 and "short" in table.output and "generated" in table.output
    bad = runner.invoke(app, ["judge", "validate", "--judge", "scripted/rules", "--set", "nope"])
    assert bad.exit_code != 0 and "--set takes generated or real" in bad.output


def test_score_protocol_crag_on_a_stored_crag_pages_cell(tmp_path, monkeypatch):
    import shutil

    monkeypatch.setenv("RALEVAL_CACHE_DIR", str(tmp_path / "cache"))
    cell = "crag-pages__direct__local_qwen2.5-0.5b__crag-dev-f8fbbbc9"
    run = tmp_path / cell
    shutil.copytree(ROOT / "studies" / "local-models" / cell, run)
    runner, app = _cli()
    result = runner.invoke(app, ["score", str(run), "--protocol", "crag"])
    assert result.exit_code == 0, result.output
    line = next(x for x in result.output.splitlines() if x.startswith("CRAG protocol"))
    # the no-tools baseline's 3 of 8 'correct' were restated questions: none is accurate now
    assert "accurate 0," in line and "score -0.750" in line and "ungraded 2" in line
    stored = [json.loads(x) for x in (run / "scores.jsonl").read_text().splitlines()]
    assert sorted(s["crag_protocol"] for s in stored).count("ungraded") == 2
    bad = runner.invoke(app, ["score", str(run), "--protocol", "nope"])
    assert bad.exit_code != 0


def test_protocol_order_exact_match_then_rules():
    from raleval.grading.crag_protocol import protocol_summary, rules_protocol_verdict

    q = "what is the shortest highway in the us in feet?"
    gold = ["the shortest highway in the us, i-878 in new york, is only 3,696 feet long."]
    got = [
        rules_protocol_verdict(q, gold, a, "free_text")
        for a in (gold[0].upper(), "I don't know", "17 feet", "I-878", "3,696 ft")
    ]
    assert got == ["accurate", "missing", "hallucinated", "ungraded", "accurate"]
    s = protocol_summary(got)
    assert s["score"] == pytest.approx(2 / 5 - 1 / 5) and s["counts"]["ungraded"] == 1


def test_the_corrected_crag_numbers_in_docs_are_the_stored_cells():
    """docs/study.md's sentences about the re-scored CRAG arm, recomputed from the cells."""
    import re

    from raleval.analysis.study import load_study
    from raleval.grading.crag_protocol import protocol_summary, rules_protocol_verdict

    doc = " ".join((ROOT / "docs" / "study.md").read_text(encoding="utf-8").split())
    arm = load_study(ROOT / "studies" / "local-models")["crag-dev"]
    correct, ungraded_nan, scores = [], 0, []
    for (workflow, model), run in arm.items():
        verdicts = []
        for t in run.scored:
            task = run.tasks[t.task_id]
            if t.scores["correct"]:
                correct.append((workflow, model, task, t.answer))
            if task.answers == ["nan"]:
                # graded against nothing: ungraded, or missing when the answer declines
                ungraded_nan += t.scores.get("ungraded") == 1.0 or t.scores["missing"] == 1.0
            verdicts.append(
                rules_protocol_verdict(
                    task.question, task.answers, t.answer, task.answer_type.value, task.elements
                )
            )
        scores.append(protocol_summary(verdicts)["score"])

    # no restated question is graded correct: every correct answer has a word the question
    # does not (a yes/no answer's "yes" counts)
    def words(text: str) -> set[str]:
        return set(re.findall(r"[a-z0-9]+", text.lower()))

    assert all(words(a) - words(task.question) for _, _, task, a in correct)
    assert ungraded_nan == len(arm)  # the 'nan' gold grades no answer right or wrong
    assert len(correct) == 2 and {task.answer_type.value for *_, task, _ in correct} == {"boolean"}
    assert f"Re-scored, {len(correct)} CRAG episodes are correct" in doc
    assert f"a score of {min(scores):.3f} to {max(scores):.3f}" in doc
    direct = [sum(t.scores["correct"] for t in arm[("direct", m)].scored) for m in (
        "local/qwen2.5-0.5b", "local/smollm2-135m")]  # fmt: skip
    assert direct == [0, 0] and "`direct` answers none (0 of 8 for each model" in doc
    react = {m: sum(t.scores["f1"] for t in r.scored) / len(r.scored)
             for (w, m), r in arm.items() if w == "react"}  # fmt: skip
    want = (
        f"CRAG {react['local/qwen2.5-0.5b']:.3f} (Qwen2.5-0.5B) and "
        f"{react['local/smollm2-135m']:.3f} (SmolLM2)"
    )
    assert want in doc, want
    f1s = [sum(t.scores["f1"] for t in r.scored) / len(r.scored) for r in arm.values()]
    assert re.search(rf"F1 {min(f1s):.3f}-{max(f1s):.3f}\)", doc)


def test_tables_count_ungraded_apart_from_missing_and_wrong():
    from datetime import datetime, timezone

    from raleval.analysis.scoring import aggregate, score_trajectory
    from raleval.analysis.summary import render_table, summarize
    from raleval.records import AgentSpec, Trajectory

    q = "what is the shortest highway in the us in feet?"
    task = Task(
        id="t",
        domain="crag/open",
        level="KA",
        family="crag-multihop",
        question=q,
        answers=["the shortest highway in the us, i-878 in new york, is only 3,696 feet long."],
        answer_type="free_text",
    )
    trajs = []
    for k, answer in enumerate(("I-878 in New York", "I don't know", "17 feet", "3,696 feet")):
        t = Trajectory(
            task_id="t",
            epoch=k,
            agent=AgentSpec(workflow="direct", model="m", env="e"),
            answer=answer,
            termination="finished",
            started_at=datetime(2026, 1, 1, tzinfo=timezone.utc),
            wall_time_s=1.0,
        )
        score_trajectory(t, task)
        trajs.append(t)
    assert [t.scores.get("ungraded") for t in trajs] == [1.0, None, None, None]
    agg = aggregate(trajs)["all"]
    assert (agg.correct, agg.missing, agg.ungraded, agg.hallucination) == (0.25, 0.25, 0.25, 0.25)
    assert agg.crag_score == 0.0
    (row,) = summarize(trajs, {"t": task})
    assert row.ungraded == 0.25
    from rich.console import Console

    console = Console(width=200, record=True)
    console.print(render_table([row]))
    assert "ungr." in console.export_text()


def test_hostile_long_questions_and_answers_are_graded():
    # a question with thousands of words and ' or ' far from its end, an answer repeating it:
    # the rules return a verdict (a backtracking regex here once took cubic time)
    question = "which " + "word " * 3000 + "or " + "other, " * 3000 + "?"
    answer = ("word other " * 3000) + "(((" + "\u2028" * 10
    for kind in ("entity", "free_text", "number", "boolean"):
        v = grade(answer, ["word"], kind, question=question)
        assert not v.correct or kind == "entity"
    assert grade("", ["nan"], "free_text", question=question).crag == "missing"


def test_grade_command_takes_the_question():
    runner, app = _cli()
    gold = "the shortest highway in the us, i-878 in new york, is only 3,696 feet long."
    q = "what is the shortest highway in the us in feet?"
    args = ["grade", "--gold", gold, "--type", "free_text", "--question", q, "--answer"]
    wrong = runner.invoke(app, [*args, "The shortest highway in the US in feet is 17 feet."])
    assert wrong.exit_code == 0 and wrong.output.startswith("not correct (free_text)")
    part = runner.invoke(app, [*args, "I-878"])
    assert part.output.startswith("ungraded (free_text)")
    right = runner.invoke(app, [*args, "3,696 feet"])
    assert right.output.startswith("correct (free_text)")
