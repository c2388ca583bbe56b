"""Completeness of the scripted oracle on RAGEval's own DragonBall tasks (the released sample,
tests/data/seeds/dragonball_real), measured as RAGEval measures it: each free-text key point
judged relevant / irrelevant / wrong by :class:`KeyPointJudge`.

No model is run and no overlap rule decides: the judge's one "model" replays verdicts a person
gave (tests/data/dragonball_oracle_keypoint_labels.jsonl: every key point of the answerable
tasks on RAGEval's reference answer, which is what the oracle answers, and a few answers with a
fact changed or dropped), looked up by the exact (question, answer, key point); any other answer
gets no verdict, which the judge counts as irrelevant, so nothing unlabelled is ever credited.
RAGEval's unanswerable questions ("Unable to answer" as the gold) are graded by the rejection
rule; their one key point is the refusal itself, which RAGEval's prompt counts as irrelevant
(its released GPT-4o run: recall 0 on 16 of the 23 unanswerable questions GPT-4o declined)."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from raleval.grading.keypoint_judge import KeyPointJudge
from raleval.model import GenerateRequest, Generation
from raleval.store import write_tasks
from raleval.tasks.collection_loaders import load_collection, write_collection

from .conftest import run_config

DATA = Path(__file__).parent / "data"
QUERIES = DATA / "seeds" / "dragonball_real" / "dragonball_queries.jsonl"
LABELS = DATA / "dragonball_oracle_keypoint_labels.jsonl"
MARK = {"relevant": "[[[Relevant]]]", "irrelevant": "[[[Irrelevant]]]", "wrong": "[[[Wrong]]]"}


def _labels() -> list[dict]:
    return [json.loads(line) for line in LABELS.read_text(encoding="utf-8").splitlines()]


@dataclass
class ReplayedVerdicts:
    """A judge model that answers with a person's recorded label for the exact (question,
    answer, key point) it is asked about, and with nothing otherwise."""

    table: dict[tuple[str, str, str], str]

    async def generate(self, request: GenerateRequest) -> Generation:
        user = next(m for m in request.messages if m.role == "user").content
        if user.startswith("问题："):
            question, rest = user[3:].split("\n生成回答：", 1)
            answer, point = rest.split("\n标准回答要点：", 1)
        else:
            question, rest = user[len("Question: ") :].split("\nGenerated answer: ", 1)
            answer, point = rest.split("\nKey point: ", 1)
        label = self.table.get((question, answer, point))
        return Generation(text=f"Conclusion: {MARK[label]}" if label else "")


def _judge() -> KeyPointJudge:
    table = {(r["question"], r["answer"], r["key_point"]): r["truth"] for r in _labels()}
    return KeyPointJudge(["recorded-hand-labels"], models=[ReplayedVerdicts(table)])


@pytest.fixture(scope="module")
def oracle_run(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("dragonball")
    report = load_collection("rageval", QUERIES)
    out = tmp_path / "tasks.jsonl"
    corpus = write_collection(report, out)
    write_tasks(out, report.tasks)
    _, results = run_config(
        tmp_path, env="docs", env_options={"corpus": str(corpus)}, workflow="react",
        tasks=str(out), tasks_per_family=100,
    )  # fmt: skip
    return {t.id: t for t in report.tasks}, results


def test_the_labels_cover_every_key_point_of_every_answerable_task():
    tasks = load_collection("rageval", QUERIES).tasks
    labelled = {(r["task_id"], r["answer"], r["key_point"]) for r in _labels()}
    for task in tasks:
        if task.tags.answerable:
            for point in task.metadata["key_points"]:
                assert (task.id, task.answers[0], point) in labelled


def test_the_oracle_through_react_on_docs_is_complete_on_every_answerable_task(oracle_run):
    tasks, results = oracle_run
    judge = _judge()
    judged = 0
    for r in results:
        task = tasks[r.task_id]
        assert [s.tool for s in r.steps if s.tool][:2] == ["search", "read"], r.task_id
        assert r.scores["correct"] == 1.0 and r.scores["f1"] == 1.0, r.task_id
        points = task.metadata["key_points"]
        scores = asyncio.run(judge.judge(task.question, r.answer, points))
        if task.tags.answerable:
            assert (scores.completeness, scores.hallucination) == (1.0, 0.0), r.task_id
            judged += 1
        else:  # the refusal is right (graded by rejection); as a key point it is irrelevant
            assert scores.completeness == 0.0 and scores.hallucination == 0.0, r.task_id
    assert judged == 6 and judge.unreadable == 0


def test_a_changed_fact_is_wrong_a_dropped_one_missing_and_unlabelled_text_never_credited():
    tasks = {t.id: t for t in load_collection("rageval", QUERIES).tasks}
    judge = _judge()

    def shares(task_id: str, answer: str):
        task = tasks[task_id]
        return asyncio.run(judge.judge(task.question, answer, task.metadata["key_points"]))

    changed = shares("rageval-en-3205", tasks["rageval-en-3205"].answers[0].replace("$500", "$50"))
    assert changed.verdicts == ["covered", "contradicted", "covered"]
    assert shares("rageval-zh-1", "轻微的废气泄漏事故。").hallucination == 1.0
    dropped = next(r["answer"] for r in _labels() if r["task_id"] == "rageval-zh-8"
                   and r["truth"] == "irrelevant")  # fmt: skip
    assert shares("rageval-zh-8", dropped).verdicts == ["covered", "covered", "missing"]
    assert judge.unreadable == 0
    # the reference answer with every word kept but one character more: nobody labelled it
    unseen = shares("rageval-en-2134", "January 2021.")
    assert unseen.completeness == 0.0 and judge.unreadable == 1
