"""Answer types: what kind of value a task's gold answer is, and how to tell from old records.

A task's answer type decides how an answer is graded (``raleval.grading.rules``): a list is
scored as a set over its elements, a year or a count must be exact, an amount may be written
with separators, currency and scale words. Generators and loaders set the type; a task file
written before types existed gets it from :func:`infer_answer_type`, and the reader warns.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from enum import Enum


class AnswerType(str, Enum):
    """The kind of value a gold answer is."""

    entity = "entity"  # a name: person, organisation, title, place
    list = "list"  # a set of entities, order irrelevant
    count = "count"  # a non-negative integer counted from the data
    number = "number"  # an amount with optional unit and scale (money, market cap, points)
    year = "year"
    date = "date"
    boolean = "boolean"  # yes / no
    free_text = "free_text"  # a sentence, a profile, anything graded by token overlap
    invalid_premise = "invalid_premise"  # the question's premise is false (CRAG)
    long_form = "long_form"  # a text graded by its key points (RAGEval; raleval.keypoints)


# Generators join list golds with ", " (scholar interests, CRAG sets); old files hold that string.
LIST_JOINER = ", "

_YEAR = re.compile(r"^\s*(1[0-9]{3}|2[0-9]{3})\s*$")
_INT = re.compile(r"^\s*\d[\d,]*\s*$")
_NUMBER = re.compile(r"^\s*[-+]?[$€£¥]?\s*\d[\d,]*(\.\d+)?\s*(%|[a-zA-Z]{1,12})?\s*$")
_ISO_DATE = re.compile(r"^\s*\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}(?::\d{2})?)?\s*$")
_YES_NO = {"yes", "no", "true", "false"}
_COUNT_Q = re.compile(r"\bhow many\b|\bnumber of\b|\bcount\b", re.IGNORECASE)
_YEAR_Q = re.compile(r"\b(which|what|in what) year\b|^\s*when\b|\byear\b", re.IGNORECASE)


def infer_answer_type(
    question: str,
    answers: Sequence[str],
    metric: str = "f1",
    question_type: str | None = None,
) -> AnswerType:
    """The answer type a record without one most likely has.

    Rules, first that applies: CRAG's false-premise questions are ``invalid_premise``; a task
    scored by ``set_f1`` is a ``list``; ``fields`` (structured profiles) is ``free_text``; a
    gold of yes/no is ``boolean``; an ISO date is a ``date``; a four-digit number asked with
    "year"/"when" is a ``year``; an integer asked with "how many" / "number of" is a ``count``;
    any other number is a ``number``; a gold longer than twelve words is ``free_text``;
    everything else is an ``entity``.
    """
    gold = answers[0] if answers else ""
    if question_type == "false_premise":
        return AnswerType.invalid_premise
    if metric == "set_f1" or question_type == "set":
        return AnswerType.list
    if metric == "fields":
        return AnswerType.free_text
    low = gold.strip().lower().rstrip(".")
    if low in _YES_NO:
        return AnswerType.boolean
    if _ISO_DATE.match(gold):
        return AnswerType.date
    if _YEAR.match(gold) and _YEAR_Q.search(question):
        return AnswerType.year
    if _INT.match(gold) and _COUNT_Q.search(question):
        return AnswerType.count
    if _NUMBER.match(gold) and any(c.isdigit() for c in gold):
        return AnswerType.number
    if len(gold.split()) > 12:
        return AnswerType.free_text
    return AnswerType.entity


def list_elements(answers: Sequence[str]) -> list[list[str]]:
    """The elements of a list gold written as one joined string (``"a, b, c"``), one alias
    each; the generators' joiner is ``", "``, so an element never contains it."""
    gold = answers[0] if answers else ""
    return [[item.strip()] for item in gold.split(LIST_JOINER) if item.strip()]
