"""CRAG's own grading protocol (its paper, section 4; ``raleval score RUN --protocol crag``).

Each answer is **accurate**, **missing** or **hallucinated**, decided in CRAG's order: an
answer that declines ("I don't know", the phrase grammar) is missing; one equal to a gold
(lower-cased, stripped: CRAG's exact match) is accurate; every other answer goes to the judge,
an LLM in CRAG (``--judge MODEL``). Without a model judge, raleval's typed rules stand in for
it (:func:`raleval.grading.rules.grade`, with the question), and an answer they cannot decide
stays **ungraded**: counted and shown, never guessed. CRAG's score is accuracy minus
hallucination, over all answers (an ungraded answer counts as neither).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from raleval.grading.agreement import ACCURATE, HALLUCINATED, MISSING
from raleval.grading.freetext import UNGRADED
from raleval.grading.judge import Judge, judge_answer
from raleval.grading.rules import DEFAULT_GRAMMAR, PhraseGrammar, grade

PROTOCOL_VERDICTS = (ACCURATE, MISSING, HALLUCINATED, UNGRADED)


def exact(answer: str, golds: Sequence[str]) -> bool:
    """CRAG's exact match: the answer equals a gold, lower-cased and stripped."""
    low = answer.strip().lower()
    return any(low == g.strip().lower() for g in golds)


def rules_protocol_verdict(
    question: str,
    golds: Sequence[str],
    answer: str | None,
    answer_type: str,
    elements: Sequence[Sequence[str]] | None = None,
    answerable: bool = True,
    grammar: PhraseGrammar = DEFAULT_GRAMMAR,
) -> str:
    """The protocol's verdict with the rules in the judge's place."""
    if grammar.abstains(answer) and answerable:
        return MISSING
    if answer is not None and exact(answer, golds):
        return ACCURATE
    v = grade(
        answer,
        golds,
        answer_type,
        elements=elements,
        answerable=answerable,
        grammar=grammar,
        question=question,
    )
    if v.correct:
        return ACCURATE
    if v.abstained:
        return MISSING
    return UNGRADED if v.ungraded else HALLUCINATED


async def protocol_verdict(
    judge: Judge | None,
    question: str,
    golds: Sequence[str],
    answer: str | None,
    answer_type: str,
    elements: Sequence[Sequence[str]] | None = None,
    answerable: bool = True,
    grammar: PhraseGrammar = DEFAULT_GRAMMAR,
) -> str:
    """The protocol's verdict: missing, then exact match, then ``judge`` (the rules when
    ``judge`` is None or ``scripted/rules``, so that ungraded answers stay ungraded)."""
    from raleval.grading.judge import RULES_SPEC

    if judge is None or judge.spec == RULES_SPEC or not answerable:
        return rules_protocol_verdict(
            question, golds, answer, answer_type, elements, answerable, grammar
        )
    if grammar.abstains(answer):
        return MISSING
    assert answer is not None
    if exact(answer, golds):
        return ACCURATE
    return await judge_answer(judge, question, golds, answer, answer_type, elements, grammar)


def protocol_summary(verdicts: Sequence[str]) -> dict[str, Any]:
    """Counts and CRAG's rates over ``verdicts``: accuracy, missing, hallucination, ungraded
    (shares of all answers) and score = accuracy - hallucination."""
    n = len(verdicts)
    share = {v: (sum(x == v for x in verdicts) / n if n else 0.0) for v in PROTOCOL_VERDICTS}
    return {
        "n": n,
        "accuracy": share[ACCURATE],
        "missing": share[MISSING],
        "hallucination": share[HALLUCINATED],
        "ungraded": share[UNGRADED],
        "score": share[ACCURATE] - share[HALLUCINATED],
        "counts": {v: sum(x == v for x in verdicts) for v in PROTOCOL_VERDICTS},
    }
