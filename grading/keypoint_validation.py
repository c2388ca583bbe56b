"""A hand-labelled set for the free-text key-point judge, and its agreement with the labels.

``keypoint_labels.jsonl`` (beside this module): real answers written by models in raleval runs
on the seeds' loaded benchmarks (the model is named in ``source``), each paired with one key
point of its task and labelled by a person as RAGEval's prompt defines the labels (relevant /
irrelevant / wrong; "not enough information" is irrelevant). Nothing here was labelled by a
model or by raleval's rules. ``raleval judge validate --keypoints`` prints the judge's
agreement per language and overall (accuracy, false accepts, false rejects, Cohen's kappa).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Sequence
from importlib import resources

from pydantic import BaseModel, ConfigDict

from raleval.grading.agreement import ACCURATE, HALLUCINATED, MISSING
from raleval.grading.judge_validation import Agreement, agreement
from raleval.grading.keypoint_judge import IRRELEVANT, LABELS, RELEVANT, WRONG, KeyPointJudge

LABELS_FILE = "keypoint_labels.jsonl"
# RAGEval's labels on the three-way scale the answer judge's agreement is measured on
AS_THREE_WAY = {RELEVANT: ACCURATE, IRRELEVANT: MISSING, WRONG: HALLUCINATED}


class KeyPointItem(BaseModel):
    """One key point of one real answer, with the label a person gave it."""

    model_config = ConfigDict(extra="forbid")

    id: str
    task_id: str
    language: str
    question: str
    answer: str
    key_point: str
    truth: str  # relevant | irrelevant | wrong
    source: str  # the model spec that wrote the answer
    note: str = ""  # why the label (the words that decided it)


class KeyPointValidation(BaseModel):
    """A key-point judge's agreement with the hand labels."""

    model_config = ConfigDict(extra="forbid")

    judge: str
    prompt_version: str
    n: int
    labels: dict[str, int]
    per_language: dict[str, Agreement]
    overall: Agreement
    by_rule: int  # abstentions labelled irrelevant without asking the model
    unreadable: int
    elapsed_s: float


def load_items() -> list[KeyPointItem]:
    """The shipped hand-labelled items."""
    text = resources.files("raleval.grading").joinpath(LABELS_FILE).read_text("utf-8")
    items = [KeyPointItem.model_validate_json(line) for line in text.splitlines() if line.strip()]
    bad = [i.id for i in items if i.truth not in LABELS]
    if bad:
        raise ValueError(f"{LABELS_FILE}: labels outside {LABELS}: {bad}")
    return items


def validate_keypoints(
    judge: KeyPointJudge, items: Sequence[KeyPointItem], concurrency: int = 1
) -> tuple[KeyPointValidation, list[str]]:
    """Judge every item and measure the agreement with its label."""
    start = time.perf_counter()
    by_rule = sum(judge.grammar.abstains(i.answer) for i in items)

    async def everything() -> list[str]:
        gate = asyncio.Semaphore(max(1, concurrency))

        async def one(item: KeyPointItem) -> str:
            async with gate:
                return await judge.judge_point(
                    item.question, item.answer, item.key_point, item.language
                )

        return list(await asyncio.gather(*(one(i) for i in items)))

    labels = asyncio.run(everything())
    truth = [AS_THREE_WAY[i.truth] for i in items]
    got = [AS_THREE_WAY[label] for label in labels]
    per_language = {}
    for lang in sorted({i.language for i in items}):
        idx = [k for k, i in enumerate(items) if i.language == lang]
        per_language[lang] = agreement([truth[k] for k in idx], [got[k] for k in idx])
    result = KeyPointValidation(
        judge=judge.spec,
        prompt_version=judge.prompt_version,
        n=len(items),
        labels={label: sum(i.truth == label for i in items) for label in LABELS},
        per_language=per_language,
        overall=agreement(truth, got),
        by_rule=by_rule,
        unreadable=judge.unreadable,
        elapsed_s=time.perf_counter() - start,
    )
    return result, labels


def as_json(result: KeyPointValidation) -> str:
    return json.dumps(result.model_dump())
