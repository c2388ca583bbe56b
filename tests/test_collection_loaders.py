"""The seeds' own benchmarks loaded with their collections (CRUD-RAG, RAGEval's DragonBall,
RGB): fixtures written in their exact formats, bad records skipped and listed, and the oracle
answering every loaded task through ReAct on the docs environment (search, read, answer)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from raleval.answers import AnswerType
from raleval.app.cli import app
from raleval.records import Level
from raleval.store import read_tasks
from raleval.tasks.collection_loaders import load_collection, write_collection
from raleval.tasks.demonstrations import pool_path
from raleval.tasks.loaders import TaskFileError

from .conftest import run_config

DATA = Path(__file__).parent / "data" / "seeds"
FIXTURES = {
    "crud": DATA / "crud" / "split_merged.json",
    "rageval": DATA / "dragonball" / "dragonball_queries.jsonl",
    "rgb-noise": DATA / "rgb" / "en.json",
    "rgb-int": DATA / "rgb" / "zh_int.json",
    "rgb-fact": DATA / "rgb" / "zh_fact.json",
}
# small samples of the seeds' released files (tests/data/README.md: sources, commits, licences)
REAL = {
    "crud-real": DATA / "crud_real" / "split_merged.json",
    "rageval-real": DATA / "dragonball_real" / "dragonball_queries.jsonl",
    "rgb-real-en-fact": DATA / "rgb_real" / "en_fact.json",
    "rgb-real-zh-fact": DATA / "rgb_real" / "zh_fact.json",
    "rgb-real-int": DATA / "rgb_real" / "zh_int.json",
    "rgb-real-noise": DATA / "rgb_real" / "zh_refine.json",
}
FIXTURES.update(REAL)


def test_crud_loads_every_task_list_with_references_and_key_information():
    report = load_collection("crud", FIXTURES["crud"])
    families = sorted(t.family for t in report.tasks)
    assert families == [
        "crud-continuation", "crud-hallucination", "crud-qa-1doc", "crud-qa-1doc",
        "crud-qa-2docs", "crud-qa-3docs", "crud-summary",
    ]  # fmt: skip
    skipped = [str(s).split(": ", 1)[1] for s in report.skipped]
    assert skipped == [
        "hallu_modified[1]: field 'hallucinatedMod': the generator failed on this record",
        "questanswer_1doc[2]: field 'questions': missing or not text",
    ]
    by_id = {t.id: t for t in report.tasks}
    qa = by_id["crud-qa-1doc-qa1-001"]
    assert qa.answers == ["2860万元"] and qa.answer_type is AnswerType.free_text
    assert qa.metadata["key_points"] == ["云溪县农业农村局", "2860万元", "4100户"]
    assert by_id["crud-qa-3docs-qa3-001"].level is Level.KA
    assert len(by_id["crud-qa-3docs-qa3-001"].evidence) == 3
    assert [c.tool for c in by_id["crud-qa-2docs-qa2-001"].solution] == ["search", "read"] * 2
    # the corrected continuation is the reference, the source news the document
    hallu = by_id["crud-hallucination-hm-001"]
    assert hallu.answers == ["同比增长8.6%，集装箱吞吐量突破210万标准箱。"]
    texts = {d["id"]: d["text"] for d in report.collection}
    assert "下半年将开通两条新的东南亚航线" in texts[hallu.evidence[0]]
    assert len(report.collection) == 11


def test_rageval_loads_dragonball_queries_with_free_text_key_points_in_both_languages():
    report = load_collection("rageval", FIXTURES["rageval"])
    assert [str(s).split(": ", 1)[1] for s in report.skipped] == [
        "field 'ground_truth.doc_ids': [99] not among the documents"
    ]
    by_id = {t.id: t for t in report.tasks}
    assert sorted(by_id) == [f"rageval-en-{i}" for i in (1, 2, 3, 4)] + [
        "rageval-zh-5", "rageval-zh-6",
    ]  # fmt: skip
    assert by_id["rageval-zh-5"].metadata["key_points"] == [
        "1. 青禾科技在2022年3月收购了蓝鲸软件有限公司。",
        "2. 交易金额为2.3亿元。",
    ]
    assert by_id["rageval-zh-5"].metadata["language"] == "zh"
    assert by_id["rageval-en-4"].level is Level.KA and len(by_id["rageval-en-4"].evidence) == 2
    assert by_id["rageval-en-3"].family == "rageval-summary-question"
    titles = {d["title"] for d in report.collection}
    assert {"Harborline Logistics Ltd.", "青禾科技有限公司", "安宁医院_李秀英"} <= titles


def test_rgb_loads_noise_integration_counterfactual_and_negative_rejection():
    noise = load_collection("rgb", FIXTURES["rgb-noise"])
    assert [s.line for s in noise.skipped] == [3]
    two = next(t for t in noise.tasks if t.id == "rgb-noise-en-1")
    assert two.answer_type is AnswerType.list
    assert two.elements == [["Mira Stanek", "M. Stanek"], ["Northlight Pictures"]]
    assert len(noise.collection) == 7  # every positive and negative passage, once

    integration, two_parts = load_collection("rgb", FIXTURES["rgb-int"]).tasks
    assert integration.family == "rgb-integration" and integration.level is Level.KA
    assert integration.elements == [["陈远航"], ["林晓雨", "林晓雨选手"]]
    # RGB's two-part questions: a passage group per part (asnwer1, answer2), not per answer
    assert two_parts.elements == [["剧情片"], ["周立言"], ["唐思琪"]]
    assert len(two_parts.evidence) == 2

    fact = load_collection("rgb", FIXTURES["rgb-fact"])
    task = fact.tasks[0]
    assert task.answers == ["36.2公里"] and task.metadata["original_answers"] == ["29.6公里"]
    assert task.metadata["testbed"]["kind"] == "counterfactual"
    # the real passage is not in the collection: only the counterfactual one and the noise
    assert not any("29.6公里" in d["text"] for d in fact.collection)

    negative = load_collection("rgb-negative", FIXTURES["rgb-noise"])
    assert {t.tags.answerable for t in negative.tasks} == {False}
    assert not any("Velmont Arena" in d["text"] for d in negative.collection)


def test_the_released_samples_load_every_record():
    crud = load_collection("crud", FIXTURES["crud-real"])
    assert crud.skipped == []
    assert sorted(t.family for t in crud.tasks) == [
        "crud-continuation", "crud-hallucination", "crud-qa-2docs", "crud-qa-3docs",
        "crud-summary", "crud-summary",
    ]  # fmt: skip
    by_id = {t.id: t for t in crud.tasks}
    three = by_id["crud-qa-3docs-64fa9b27b82641eb8ecbe14d"]
    two = by_id["crud-qa-2docs-64fa9b27b82641eb8ecbe14d"]
    assert len(three.evidence) == 3 and set(two.evidence) < set(three.evidence)
    assert "总额500万元的体育消费券" in two.metadata["key_points"]  # RAGQuestEval's own
    assert by_id["crud-hallucination-doc_004201"].answers == ["此次活动已经正式启动。"]
    assert len(crud.collection) == 7  # the two QA records share their Shanghai and Chengdu news

    rageval = load_collection("rageval", FIXTURES["rageval-real"])
    assert rageval.skipped == [] and len(rageval.tasks) == 8
    by_id = {t.id: t for t in rageval.tasks}
    assert {t.metadata["language"] for t in rageval.tasks} == {"en", "zh"}
    # RAGEval's unanswerable questions: its refusal is the gold, declining is right
    assert [t.id for t in rageval.tasks if not t.tags.answerable] == [
        "rageval-zh-0", "rageval-en-2158",
    ]  # fmt: skip
    assert (
        by_id["rageval-en-3205"].level is Level.KA and len(by_id["rageval-en-3205"].evidence) == 2
    )
    assert by_id["rageval-zh-8"].metadata["key_points"][0].startswith("1. 公司在2017年2月")

    counts = {
        name: len(load_collection("rgb", FIXTURES[name]).tasks)
        for name in ("rgb-real-en-fact", "rgb-real-zh-fact", "rgb-real-int", "rgb-real-noise")
    }
    assert counts == dict.fromkeys(counts, 3)


@pytest.mark.parametrize("refusal", ["信息不足", "无法回答", "Unable to answer.", "I don't know"])
def test_a_refusal_in_either_language_is_right_on_the_real_unanswerable_tasks(refusal):
    from raleval.grading.rules import grade_task

    tasks = {t.id: t for t in load_collection("rageval", FIXTURES["rageval-real"]).tasks}
    negative = load_collection("rgb-negative", FIXTURES["rgb-real-noise"]).tasks[0]
    for task in (tasks["rageval-zh-0"], tasks["rageval-en-2158"], negative):
        assert grade_task(task, refusal).correct, (task.id, refusal)
    assert not grade_task(tasks["rageval-zh-1"], refusal).correct


def test_a_file_of_another_shape_is_refused_as_a_whole(tmp_path):
    bad = tmp_path / "split_merged.json"
    bad.write_text(json.dumps([{"ID": 1}]))
    with pytest.raises(TaskFileError, match="object of task lists"):
        load_collection("crud", bad)
    with pytest.raises(TaskFileError, match=r"dragonball_docs\.jsonl"):
        load_collection("rageval", tmp_path / "split_merged.json")


def test_strict_fails_on_the_first_bad_record():
    with pytest.raises(TaskFileError, match=r"split_merged.json:4: hallu_modified\[1\]"):
        load_collection("crud", FIXTURES["crud"], strict=True)


def test_the_cli_writes_the_tasks_and_their_collection(tmp_path):
    out = tmp_path / "crud.jsonl"
    result = CliRunner().invoke(app, ["tasks", "load", "crud", str(FIXTURES["crud"]), "--out",
                                      str(out)])  # fmt: skip
    assert result.exit_code == 0, result.output
    corpus = tmp_path / "crud.corpus.jsonl"
    assert f"11 documents -> {corpus}" in result.output
    tasks = read_tasks(out)
    assert {t.metadata["made_for"] for t in tasks} == {f"docs:corpus={corpus.resolve()}"}
    assert "skipped" in result.output and "2 records skipped" in result.output


@pytest.mark.parametrize(
    ("kind", "fixture", "tasks", "documents"),
    [
        ("crud", "crud-real", 6, 7),
        ("rageval", "rageval-real", 8, 4),
        ("rgb", "rgb-real-int", 3, 56),
        ("rgb-negative", "rgb-real-noise", 3, 22),
    ],
)
def test_the_cli_loads_the_released_samples(tmp_path, kind, fixture, tasks, documents):
    out = tmp_path / "tasks.jsonl"
    args = ["tasks", "load", kind, str(FIXTURES[fixture]), "--out", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert f"{tasks} tasks loaded, 0 records skipped, {documents} documents" in result.output
    assert len(read_tasks(out)) == tasks


@pytest.mark.parametrize(
    ("kind", "fixture"),
    [
        ("crud", "crud"),
        ("rageval", "rageval"),
        ("rgb", "rgb-noise"),
        ("rgb", "rgb-int"),
        ("rgb", "rgb-fact"),
        ("rgb-negative", "rgb-noise"),
        ("crud", "crud-real"),
        ("rageval", "rageval-real"),
        ("rgb", "rgb-real-en-fact"),
        ("rgb", "rgb-real-zh-fact"),
        ("rgb", "rgb-real-int"),
        ("rgb", "rgb-real-noise"),
        ("rgb-negative", "rgb-real-noise"),
    ],
)
def test_the_oracle_answers_every_loaded_task_through_react_on_docs(tmp_path, kind, fixture):
    report = load_collection(kind, FIXTURES[fixture])
    out = tmp_path / "tasks.jsonl"
    corpus = write_collection(report, out)
    from raleval.store import write_tasks

    write_tasks(out, report.tasks)
    summary, results = run_config(
        tmp_path, env="docs", env_options={"corpus": str(corpus)}, workflow="react",
        tasks=str(out), tasks_per_family=100,
    )  # fmt: skip
    assert summary.ran == len(report.tasks) == len(results)
    assert [r.task_id for r in results if r.scores["f1"] != 1.0] == []
    assert [r.task_id for r in results if r.scores["correct"] != 1.0] == []
    for r in results:
        tools = [s.tool for s in r.steps if s.tool]
        assert tools[:2] == ["search", "read"] or kind == "rgb-negative", (r.task_id, tools)
        expected = "EM:correct_rejection" if kind == "rgb-negative" else None
        assert r.error_type.value == "EM", (r.task_id, r.error_cause)
        if expected:
            assert r.error_cause == expected


def test_examples_set_aside_are_solved_on_the_written_collection(tmp_path):
    out = tmp_path / "rageval.jsonl"
    args = ["tasks", "load", "rageval", str(FIXTURES["rageval"]), "--out", str(out),
            "--examples", "1", "--env", "docs"]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "1 examples -> " in result.output
    assert len(read_tasks(out)) == 5


def _load_with_examples(tmp_path, *extra):
    out = tmp_path / "dragonball.jsonl"
    args = ["tasks", "load", "rageval", str(REAL["rageval-real"]), "--out", str(out),
            "--env", "docs", *extra]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return read_tasks(out), read_tasks(pool_path(out))


def test_examples_are_answerable_first_across_question_types(tmp_path):
    """Issue 61: DragonBall's first line is unanswerable; set aside alone, it taught a 0.5B
    model to answer "无法回答" to everything. Answerable items come first, one question type
    at a time; an unanswerable one only when asked for."""
    _, pool = _load_with_examples(tmp_path / "one", "--examples", "1")
    assert [t.tags.answerable for t in pool] == [True]
    assert pool[0].id == "rageval-zh-1"  # the file's first answerable line
    tested, pool = _load_with_examples(tmp_path / "six", "--examples", "6")
    assert all(t.tags.answerable for t in pool) and len(pool) == 6
    assert len({t.family for t in pool}) == 6  # one per question type before any repeats
    assert len(tested) == 2 and not any(t.tags.answerable for t in tested)
    _, pool = _load_with_examples(tmp_path / "asked", "--examples", "7", "--unanswerable-examples")
    assert [t.tags.answerable for t in pool] == [True] * 6 + [False]
