"""Scores and error labels of a stored trajectory: pure, no model or tool call."""

from __future__ import annotations

from raleval import registry
from raleval.analysis.taxonomy import DEFAULT_THRESHOLD, classify
from raleval.records import ErrorType, Task, Termination, Trajectory
from raleval.tasks.metrics import (
    crag_points,
    exact_match,
    f1_score,
    is_abstention,
    is_rejection,
    relaxed_match,
    says_invalid,
)


def rejects_correctly(task: Task, answer: str | None) -> bool:
    """Whether ``answer`` is the right way to decline ``task``: any abstention where the answer
    is absent (RGB), but only "invalid question" on a false premise (CRAG counts "I don't know"
    there as missing)."""
    if not task.tags.answerable:
        return is_rejection(answer)
    if task.tags.question_type == "false_premise":
        return says_invalid(answer)
    return False


def score_trajectory(traj: Trajectory, task: Task, threshold: float | None = None) -> None:
    """Fill ``traj.scores`` and its error label, in place.

    Scores: f1, em, relaxed (R-Eval's F1 >= 0.05), crag (+1 accurate / 0 missing / -1
    hallucinated), missing, and the task's own metric when it is another one (set_f1, numeric,
    fields). Judged CRAG verdicts come from ``raleval score --judge``, never from here.
    """
    abstained = is_abstention(traj.answer)
    traj.scores = {
        "f1": f1_score(traj.answer, task.answers),
        "em": exact_match(traj.answer, task.answers),
        "relaxed": relaxed_match(traj.answer, task.answers),
        "crag": crag_points(traj.answer, task.answers),
        "missing": float(abstained),
    }
    if task.metric not in traj.scores:
        traj.scores[task.metric] = registry.metrics.get(task.metric)(traj.answer, task.answers)
    if rejects_correctly(task, traj.answer) and traj.termination is Termination.finished:
        # CRAG and RGB count a rejection as correct where no answer exists.
        traj.scores.update({"f1": 1.0, "em": 1.0, "relaxed": 1.0, "crag": 1.0, task.metric: 1.0})
        traj.error_type, traj.error_cause = ErrorType.EM, "EM:correct_rejection"
        return
    traj.error_type, traj.error_cause = classify(
        traj, task.answers, threshold or DEFAULT_THRESHOLD, task.evidence
    )
