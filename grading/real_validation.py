"""Judges and rules validated on real model answers labelled by hand (``--set real``).

The generated validation set (:mod:`raleval.grading.judge_validation`) is written by raleval
itself, so ``scripted/rules`` agrees with it by construction. ``real_answers.jsonl`` beside
this module holds answers that real models gave in the study's stored episodes
(``studies/local-models``: HotpotQA, CRAG's dev questions with their pages, the generated
scholar, wiki and CRAG families; every answer type, free text included), each labelled
``right`` or ``wrong`` by a person reading the question, the gold and the answer, with a
one-line reason, before any rule was run on it; and (issue 59) every yes/no answer of both
stored studies that says its yes or no in other words, labelled by hand after the paraphrase
lists were written (docs/judge.md). A verdict is compared as accept (accurate) or
not; the rules may also leave an answer ``ungraded`` (not accepted, counted apart).
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections import defaultdict
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from raleval.answers import AnswerType
from raleval.grading.agreement import ACCURATE, cohen_kappa
from raleval.grading.judge import RULES_SPEC, Judge, judge_answer
from raleval.grading.rules import grade

RIGHT, WRONG = "right", "wrong"
UNGRADED = "ungraded"
# Types whose gold is a short value (not a sentence): the rules must reach 0.95 on them.
SHORT_TYPES = tuple(
    t.value for t in AnswerType if t not in (AnswerType.free_text, AnswerType.long_form)
)


class RealItem(BaseModel):
    """One real answer with the label a person gave it."""

    model_config = ConfigDict(extra="forbid")

    id: str
    source: str  # hotpotqa | crag-dev | crag | scholar | wiki
    run: str  # the stored cell it comes from (studies/local-models/<run>)
    task_id: str
    epoch: int
    family: str
    answer_type: str
    question: str
    golds: list[str]
    elements: list[list[str]] | None = None
    answer: str
    label: str  # right | wrong
    reason: str


class RealAgreement(BaseModel):
    """Agreement of accept / not accept with the hand labels over some items."""

    model_config = ConfigDict(extra="forbid")

    n: int
    right: int  # items labelled right
    accuracy: float
    false_accept: float | None  # share of wrong answers accepted
    false_reject: float | None  # share of right answers not accepted
    ungraded: int  # not accepted because the rules could not decide (rules only)
    kappa: float | None  # Cohen's kappa, accept vs label; None when undefined


class RealResult(BaseModel):
    """One judge's agreement on the real set."""

    model_config = ConfigDict(extra="forbid")

    judge: str
    prompt_version: str
    set_id: str
    n: int
    overall: RealAgreement
    short_answer: RealAgreement  # every type but free text and long form, pooled
    per_type: dict[str, RealAgreement]
    elapsed_s: float


def real_set_path() -> Path:
    return Path(str(resources.files("raleval.grading").joinpath("real_answers.jsonl")))


def load_real_set(path: Path | None = None) -> list[RealItem]:
    """The hand-labelled real answers (``real_answers.jsonl`` unless ``path`` is given)."""
    path = path or real_set_path()
    items = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = RealItem.model_validate_json(line)
        except ValueError as exc:
            raise ValueError(f"{path}:{lineno}: {exc}") from None
        if item.label not in (RIGHT, WRONG):
            raise ValueError(f"{path}:{lineno}: label {item.label!r} is not right or wrong")
        items.append(item)
    return items


def set_id(items: Sequence[RealItem]) -> str:
    text = "\n".join(f"{i.id}\t{i.answer}\t{i.label}" for i in items)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def rules_verdicts(items: Sequence[RealItem]) -> list[str]:
    """raleval's rules on each item, with its question: accurate, missing, incorrect or
    ungraded."""
    return [
        grade(
            i.answer,
            i.golds,
            i.answer_type,
            elements=i.elements,
            question=i.question,
        ).crag
        for i in items
    ]


async def _judge_all(judge: Judge, items: Sequence[RealItem], concurrency: int) -> list[str]:
    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(item: RealItem) -> str:
        async with gate:
            return await judge_answer(
                judge, item.question, item.golds, item.answer, item.answer_type, item.elements
            )

    return list(await asyncio.gather(*(one(i) for i in items)))


def agreement(items: Sequence[RealItem], verdicts: Sequence[str]) -> RealAgreement:
    """Accept (accurate) against the labels."""
    pairs = list(zip(items, verdicts, strict=True))
    truth = [i.label for i, _ in pairs]
    said = [RIGHT if v == ACCURATE else WRONG for _, v in pairs]
    wrong = [s for t, s in zip(truth, said, strict=True) if t == WRONG]
    right = [s for t, s in zip(truth, said, strict=True) if t == RIGHT]
    n = len(pairs)
    return RealAgreement(
        n=n,
        right=len(right),
        accuracy=sum(t == s for t, s in zip(truth, said, strict=True)) / n if n else 0.0,
        false_accept=sum(s == RIGHT for s in wrong) / len(wrong) if wrong else None,
        false_reject=sum(s == WRONG for s in right) / len(right) if right else None,
        ungraded=sum(v == UNGRADED for _, v in pairs),
        kappa=cohen_kappa(truth, said, labels=(RIGHT, WRONG)),
    )


def measure(
    judge: str, prompt_version: str, items: Sequence[RealItem], verdicts: Sequence[str], elapsed
) -> RealResult:
    by_type: dict[str, list[int]] = defaultdict(list)
    for k, item in enumerate(items):
        by_type[item.answer_type].append(k)

    def of(index: Sequence[int]) -> RealAgreement:
        return agreement([items[k] for k in index], [verdicts[k] for k in index])

    short = [k for k, i in enumerate(items) if i.answer_type in SHORT_TYPES]
    return RealResult(
        judge=judge,
        prompt_version=prompt_version,
        set_id=set_id(items),
        n=len(items),
        overall=of(range(len(items))),
        short_answer=of(short),
        per_type={t: of(ks) for t, ks in sorted(by_type.items())},
        elapsed_s=round(elapsed, 2),
    )


def validate_real(
    judge: Judge, items: Sequence[RealItem], concurrency: int = 2
) -> tuple[RealResult, list[str]]:
    """``judge`` over the real set: ``scripted/rules`` grades with the question (and may leave
    an item ungraded); a model judge is asked through :func:`judge_answer`, as in scoring."""
    start = time.monotonic()
    if judge.spec == RULES_SPEC:
        verdicts = rules_verdicts(items)
    else:
        verdicts = asyncio.run(_judge_all(judge, items, concurrency))
    result = measure(judge.spec, judge.prompt_version, items, verdicts, time.monotonic() - start)
    return result, verdicts
