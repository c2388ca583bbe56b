"""Answers copied from a demonstration: an episode whose answer is the answer of one of its
family's demonstrations (the solved examples its prompt showed) and not the gold.

A small model shown one solved example per family often answers every question of the family
with the example's answer (SmolLM2 with ReAct did in 59 of 100 generated episodes). Such an
answer is neither retrieved nor known; the flag (``scores["copied_demonstration"]``) says so
beside the label, and every table counts it. A yes/no or number answer equal to a
demonstration's is flagged even when it is right (a guess and a copy look alike there); a
study's claims are given with and without the flagged tasks.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence
from typing import Any

from raleval.records import Task, Trajectory
from raleval.text import normalize_answer

COPIED = "copied_demonstration"  # the key in Trajectory.scores: 1.0 flagged, 0.0 not

# Where each workflow's rendered demonstration states its answer (its render_example): ReAct's
# Finish[...], function calling's and DFSDT's Finish call, direct and planned "Answer:",
# PAL's final_result (a literal only: an expression's value is not in the text).
_RENDERED_ANSWER = (
    re.compile(r"Finish\[(.*)\]\s*$", re.S),
    re.compile(r"Call: Finish\((\{.*\})\)\s*$", re.S),
    re.compile(r"^Answer: (.*)$", re.M),
    re.compile(r"^final_result = (.*)$", re.M),
)


def rendered_answer(text: str) -> str | None:
    """The answer a rendered demonstration shows, or None where it is not a literal."""
    for pattern in _RENDERED_ANSWER:
        found = pattern.findall(text)
        if not found:
            continue
        value = found[-1].strip()
        if pattern is _RENDERED_ANSWER[1]:
            try:
                call = ast.literal_eval(value.replace("null", "None"))
            except (ValueError, SyntaxError):
                return None
            value = call.get("answer", call.get("final_answer")) if isinstance(call, dict) else None
            return None if value is None else str(value)
        if pattern is _RENDERED_ANSWER[3]:
            try:
                return str(ast.literal_eval(value))
            except (ValueError, SyntaxError):
                return None  # an expression over the results
        return value
    return None


def demonstration_answers(prompts: Mapping[str, Any] | None) -> dict[str, list[str]]:
    """Family -> the answers of the demonstrations a run showed: the header's ``answers``
    (recorded since issue 45), else read back from the rendered demonstrations."""
    prompts = prompts or {}
    stored = prompts.get("answers")
    if stored:
        return {family: [str(a) for a in answers] for family, answers in stored.items()}
    out: dict[str, list[str]] = {}
    for family, texts in (prompts.get("rendered") or {}).items():
        answers = [a for a in (rendered_answer(t) for t in texts) if a]
        if answers:
            out[family] = answers
    return out


def _number(text: str) -> float | None:
    """``text`` as a number ("1,200", "3.0", "-2"), or None when it is not one."""
    try:
        value = float(text.replace(",", "").strip())
    except ValueError:
        return None
    return value if value == value else None  # "nan" is no number


def _same(said: str, other: str) -> bool:
    """Equal once normalised, or the same number written two ways ("3" and "3.0"; the
    numbers are read before normalising, which drops the decimal point)."""
    if normalize_answer(said) == normalize_answer(other):
        return True
    a, b = _number(said.strip().rstrip(".")), _number(other.strip().rstrip("."))
    return a is not None and a == b


def closed_answer(answer: str | None) -> bool:
    """A yes/no or a number: an answer a guess hits as often as a copy."""
    said = (answer or "").strip().rstrip(".")
    return normalize_answer(said) in ("yes", "no") or _number(said) is not None


def copied_demonstration(answer: str | None, golds: Sequence[str], shown: Sequence[str]) -> bool:
    """Whether ``answer`` is one of the ``shown`` demonstration answers (compared normalised,
    numbers by value). An open answer (a name, a title) that is also a gold is not a copy: the
    demonstrations come from another world, so it was found. A yes/no or number answer counts
    even when it is the gold (issue 62: ReAct answered its demonstration's "yes" on all 8
    tasks of wiki 2-1 and 2-2, right on 5): a copy and a guess look alike there, and leaving
    only the wrong copies out of a comparison would raise the copier's F1."""
    said = answer or ""
    if not normalize_answer(said):
        return False
    if not closed_answer(said) and any(_same(said, g) for g in golds):
        return False
    return any(_same(said, a) for a in shown)


def flag_copied(traj: Trajectory, task: Task, answers: Mapping[str, Sequence[str]]) -> None:
    """Set ``traj.scores["copied_demonstration"]`` (1.0 or 0.0) where the task's family was
    shown demonstrations; leave it unset where it was shown none. An open answer graded
    correct is never flagged (a grader's alias may match what normalising does not)."""
    shown = answers.get(task.family)
    if not shown:
        traj.scores.pop(COPIED, None)
        return
    copied = copied_demonstration(traj.answer, task.answers, shown)
    closed = closed_answer(traj.answer)
    traj.scores[COPIED] = float(copied and (closed or not traj.scores.get("correct")))
