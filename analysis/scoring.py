"""Scores and error labels of a stored trajectory: pure, no model or tool call."""

from __future__ import annotations

from raleval.analysis.taxonomy import DEFAULT_THRESHOLD, classify
from raleval.records import Task, Trajectory
from raleval.tasks.metrics import exact_match, f1_score, is_abstention


def score_trajectory(traj: Trajectory, task: Task, threshold: float | None = None) -> None:
    """Fill ``traj.scores`` (f1, em, missing) and its error label, in place."""
    traj.scores = {
        "f1": f1_score(traj.answer, task.answers),
        "em": exact_match(traj.answer, task.answers),
        "missing": float(is_abstention(traj.answer)),
    }
    traj.error_type, traj.error_cause = classify(traj, task.answers, threshold or DEFAULT_THRESHOLD)
