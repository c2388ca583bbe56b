"""The seeds' own long-form data scored as generated long-form tasks are (issue 61, item 1):
CRUD-RAG's and DragonBall's released samples (tests/data/seeds/*_real), loaded, answered by
the scripted oracle through ReAct on ``docs``, then scored by the commands a user types.

What decides the numbers is not raleval's: the references are the benchmarks' own; the
key-point verdicts are a person's (tests/data/dragonball_oracle_keypoint_labels.jsonl),
replayed by a judge "model"; the RAGQuestEval reader replays the answers CRUD-RAG's own reader
read from each reference (its ``*_quest_gt_save.json``)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import ClassVar

import pytest
from typer.testing import CliRunner

from raleval import registry
from raleval.app.cli import app
from raleval.grading.keypoint_judge import KeyPointJudge
from raleval.model import GenerateRequest, Generation, ModelBase
from raleval.store import write_tasks
from raleval.tasks.collection_loaders import load_collection, write_collection

from .conftest import run_config

DATA = Path(__file__).parent / "data"
CRUD = DATA / "seeds" / "crud_real" / "split_merged.json"
DRAGONBALL = DATA / "seeds" / "dragonball_real" / "dragonball_queries.jsonl"
LABELS = DATA / "dragonball_oracle_keypoint_labels.jsonl"
MARK = {"relevant": "[[[Relevant]]]", "irrelevant": "[[[Irrelevant]]]", "wrong": "[[[Wrong]]]"}
runner = CliRunner()


def _oracle_run(tmp_path: Path, kind: str, path: Path) -> tuple[Path, dict]:
    report = load_collection(kind, path)
    out = tmp_path / "tasks.jsonl"
    corpus = write_collection(report, out)
    write_tasks(out, report.tasks)
    summary, results = run_config(
        tmp_path, env="docs", env_options={"corpus": str(corpus)}, workflow="react",
        tasks=str(out), tasks_per_family=100,
    )  # fmt: skip
    assert len(results) == len(report.tasks) and all(r.scores["f1"] == 1.0 for r in results)
    return summary.run_dir, {t.id: t for t in report.tasks}


@pytest.fixture(scope="module")
def crud_run(tmp_path_factory):
    return _oracle_run(tmp_path_factory.mktemp("crud"), "crud", CRUD)


@pytest.fixture(scope="module")
def dragonball_run(tmp_path_factory):
    return _oracle_run(tmp_path_factory.mktemp("dragonball"), "rageval", DRAGONBALL)


def _scores(run_dir: Path) -> dict[str, dict]:
    rows = [json.loads(x) for x in (run_dir / "scores.jsonl").read_text().splitlines()]
    return {r["task_id"]: r for r in rows}


@pytest.mark.parametrize("which", ["crud", "dragonball"])
def test_the_crud_profile_gives_every_loaded_episode_rouge_l_and_bleu(
    which, crud_run, dragonball_run
):
    run_dir, tasks = crud_run if which == "crud" else dragonball_run
    res = runner.invoke(app, ["score", str(run_dir), "-S", "profile=crud"])
    assert res.exit_code == 0, res.output
    rows = _scores(run_dir)
    assert set(rows) == set(tasks)
    for task_id, row in rows.items():
        assert row["metric_profile"] == "crud"
        # the oracle answers each benchmark's own reference: CRUD-RAG's metrics give a copy 1
        assert row["scores"]["rouge_l"] == pytest.approx(1.0), task_id
        assert row["scores"]["bleu"] == pytest.approx(1.0), task_id


def test_overlap_is_measured_not_assumed_on_a_changed_answer(crud_run):
    """The same scoring path on answers that are not the reference: less than 1. Every
    episode is checked (the results file's order is the order episodes finished in)."""
    from raleval.analysis.scoring import score_trajectory
    from raleval.store import RESULTS, ResultsFile
    from raleval.text import segment

    run_dir, tasks = crud_run
    checked = 0
    for traj in ResultsFile(run_dir / RESULTS):
        task = tasks[traj.task_id]
        pieces = segment(task.answers[0])
        half = len(pieces) // 2
        # cut at one of jieba's pieces: a prefix of the reference's own pieces
        traj.answer = "".join(pieces[:half])
        score_trajectory(traj, task, profile="crud")
        assert 0.0 < traj.scores["rouge_l"] < 1.0, task.id
        if half >= 4:
            # CRUD-RAG's BLEU has no brevity penalty: a prefix keeps every n-gram's precision
            assert traj.scores["bleu"] == pytest.approx(1.0), task.id
        else:
            # unsmoothed 4-gram BLEU: a prefix of under four pieces has no 4-gram, so 0
            assert traj.scores["bleu"] == 0.0, task.id
        traj.answer = "".join(pieces[half:] + pieces[:half])
        score_trajectory(traj, task, profile="crud")
        assert 0.0 <= traj.scores["bleu"] < 1.0, task.id
        checked += half >= 4
    assert checked >= 5


class ReplayedVerdicts(ModelBase):
    """A judge model answering with a person's recorded label for the exact (question,
    answer, key point) it is asked about, and with nothing otherwise."""

    table: ClassVar[dict[tuple[str, str, str], str]] = {}

    def __init__(self, name: str = "hand", **options) -> None:
        self.name = f"handlabels/{name}"
        if not type(self).table:
            rows = [json.loads(x) for x in LABELS.read_text(encoding="utf-8").splitlines()]
            type(self).table = {
                (r["question"], r["answer"], r["key_point"]): r["truth"] for r in rows
            }

    async def generate(self, request: GenerateRequest) -> Generation:
        user = next(m for m in request.messages if m.role == "user").content
        if user.startswith("问题："):
            question, rest = user[3:].split("\n生成回答：", 1)
            answer, point = rest.split("\n标准回答要点：", 1)
        elif user.startswith("Question: ") and "\nKey point: " in user:
            question, rest = user[len("Question: ") :].split("\nGenerated answer: ", 1)
            answer, point = rest.split("\nKey point: ", 1)
        else:  # the answer judge's own prompt: this judge has no verdict for it
            return Generation(text="")
        label = self.table.get((question, answer, point))
        return Generation(text=f"Conclusion: {MARK[label]}" if label else "")


def test_score_judge_gives_dragonball_key_point_completeness(dragonball_run, monkeypatch, tmp_path):
    monkeypatch.setenv("RALEVAL_CACHE_DIR", str(tmp_path / "cache"))
    if "handlabels" not in registry.models:
        registry.models.register("handlabels")(ReplayedVerdicts)
    run_dir, tasks = dragonball_run
    res = runner.invoke(app, ["score", str(run_dir), "--judge", "handlabels/hand"])
    assert res.exit_code == 0, res.output
    assert "free-text key points judged on 8 episode(s)" in " ".join(res.output.split())
    rows = _scores(run_dir)
    answerable = [i for i, t in tasks.items() if t.tags.answerable]
    assert len(answerable) == 6
    for task_id in answerable:
        s = rows[task_id]["scores"]
        assert (s["kp_completeness"], s["kp_hallucination"]) == (1.0, 0.0), task_id
    for task_id in set(tasks) - set(answerable):  # the oracle declines: irrelevant, not wrong
        s = rows[task_id]["scores"]
        assert (s["kp_completeness"], s["kp_hallucination"]) == (0.0, 0.0), task_id


class NeverAsked:
    async def generate(self, request):
        raise AssertionError("the rule decides without a model")


@pytest.mark.parametrize(
    ("point", "answer", "label"),
    [
        ("Unable to answer", "The CEO was appointed in March 2021.", "wrong"),
        ("无法回答", "严重的废水泄漏事故。", "wrong"),
        ("Unable to answer", "I don't know.", "irrelevant"),
    ],
)
def test_answering_an_unable_to_answer_key_point_is_wrong(point, answer, label):
    judge = KeyPointJudge(["never"], models=[NeverAsked()])
    assert asyncio.run(judge.judge_point("Who?", answer, point)) == label


class CrudReader(ModelBase):
    """A RAGQuestEval reader that replies with what CRUD-RAG's own reader read from the
    reference for a question (its saved answers), and "unanswerable" to any text that is not
    a reference it read."""

    answers: ClassVar[dict[tuple[str, str], str]] = {}

    def __init__(self, name: str = "saved", **options) -> None:
        self.name = f"crudreader/{name}"

    async def generate(self, request: GenerateRequest) -> Generation:
        user = request.messages[-1].content
        text, question = user[len("Text:\n") :].split("\n\nQuestion: ", 1)
        question = question.removesuffix("\nAnswer:")
        return Generation(text=self.answers.get((text, question), "unanswerable"))


def test_questeval_runs_on_loaded_crud_tasks(crud_run, monkeypatch, tmp_path):
    monkeypatch.setenv("RALEVAL_CACHE_DIR", str(tmp_path / "cache"))
    if "crudreader" not in registry.models:
        registry.models.register("crudreader")(CrudReader)
    run_dir, tasks = crud_run
    with_questions = {i: t for i, t in tasks.items() if t.metadata.get("key_questions")}
    assert len(with_questions) == 3  # the records whose quest_eval files are in the sample
    CrudReader.answers = {
        (t.answers[0], q): a
        for t in with_questions.values()
        for q, a in zip(t.metadata["key_questions"], t.metadata["key_answers"], strict=False)
    }
    res = runner.invoke(app, ["questeval", str(run_dir), "--model", "crudreader/saved"])
    assert res.exit_code == 0, res.output
    rows = [json.loads(x) for x in (run_dir / "questeval.jsonl").read_text().splitlines()]
    assert {r["task_id"] for r in rows} == set(with_questions)
    for r in rows:
        kept = [q for q in r["questions"]]
        assert kept and all("无法推断" not in q["gold"] for q in kept)
        assert (r["quest_recall"], r["quest_f1"]) == (1.0, 1.0), r["task_id"]
    # an answer that is not the reference: the reader finds nothing in it
    CrudReader.answers = {}
    res = runner.invoke(app, ["questeval", str(run_dir), "--model", "crudreader/other"])
    assert res.exit_code == 0, res.output
    rows = [json.loads(x) for x in (run_dir / "questeval.jsonl").read_text().splitlines()]
    assert all(r["quest_recall"] == 0.0 for r in rows)
