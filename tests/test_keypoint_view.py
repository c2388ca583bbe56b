"""The viewer's key-point rows: each key point of a long-form episode with its verdict and the
words of the answer that decided it, and a "why" line that speaks of key points."""

from __future__ import annotations

from raleval.analysis.keypoint_view import key_point_rows, long_form_reason
from raleval.records import KeyPoint, Level, Task


def _task(points: list[KeyPoint], **metadata) -> Task:
    return Task(
        id="t", domain="scholar", level=Level.KA, family="f", question="Who is Ada Lin?",
        answers=["Ada Lin was cited 1,234 times and works at Kelo Institute."],
        key_points=points or None, metadata=metadata,
    )  # fmt: skip


CITED = KeyPoint(
    slot="citations", kind="number", value="1234", cues=["cited"],
    statement="Ada Lin was cited 1,234 times.",
)  # fmt: skip
ORG = KeyPoint(
    slot="organization", kind="entity", value="Kelo Institute", aliases=["Kelo"],
    statement="Ada Lin works at Kelo Institute.",
)  # fmt: skip


def test_covered_points_show_the_value_as_the_answer_writes_it():
    rows = key_point_rows(_task([CITED, ORG]), "Cited 1,234 times, she is at the KELO INSTITUTE.")
    assert rows == [
        {"point": CITED.statement, "verdict": "covered", "words": "1,234"},
        {"point": ORG.statement, "verdict": "covered", "words": "KELO INSTITUTE"},
    ]


def test_a_contradicted_point_shows_the_sentence_that_names_its_slot():
    answer = "Ada Lin works at Kelo Institute. Her papers were cited 999 times in all."
    rows = key_point_rows(_task([CITED, ORG]), answer)
    assert rows[0] == {
        "point": CITED.statement,
        "verdict": "contradicted",
        "words": "Her papers were cited 999 times in all.",
    }
    assert rows[1]["verdict"] == "covered"
    assert long_form_reason(rows, "GE:contradicts") == (
        "long form: 1 of 2 key points covered, 1 contradicted, 0 missing. Cause: GE:contradicts."
    )


def test_missing_points_and_unjudged_free_text_points_show_no_words():
    assert key_point_rows(_task([ORG]), "I don't know.") == [
        {"point": ORG.statement, "verdict": "missing", "words": ""}
    ]
    loaded = _task([], key_points=["1. Harborline appointed a CEO in June 2021."])
    assert key_point_rows(loaded, "June 2021") == [
        {"point": "1. Harborline appointed a CEO in June 2021.", "verdict": "not judged",
         "words": ""}
    ]  # fmt: skip
    assert key_point_rows(None, "x") == []


def test_the_report_shows_key_points_of_a_long_form_run(tmp_path):
    from raleval.analysis.report import build_report, episode_view
    from raleval.analysis.runs import load_run
    from tests.conftest import run_config

    summary, _ = run_config(tmp_path, tasks="scholar-longform", limit=1)
    run = load_run(summary.run_dir)
    (t,) = run.results
    e = episode_view(0, run, t, 0.5)
    task = run.tasks[t.task_id]
    assert [r["point"] for r in e["key_points"]] == [p.statement for p in task.key_points]
    assert {r["verdict"] for r in e["key_points"]} == {"covered"}  # the oracle's answer
    assert all(r["words"] and r["words"] in t.answer for r in e["key_points"])
    assert e["reason"].startswith(f"long form: {len(task.key_points)} of ")
    assert "the answer&#x27;s words" in build_report([run]) or "the answer's words" in build_report(
        [run]
    )
