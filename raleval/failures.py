"""Infrastructure failures: episodes that ended for a reason outside the model under test.

A refused connection, a 5xx or a timeout that outlived the provider's retries, or a bug in the
harness says nothing about the model: such an episode is recorded with its cause in
``Trajectory.failure``, left out of every score by default, retried by
``raleval run --retry-failed`` (or ``raleval retry RUN_DIR``) and makes the run exit 1.

Retries append a new line to ``results.jsonl`` with the next ``attempt`` number; the file
stays append-only and the last attempt per (task, epoch) is the one that counts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from raleval.records import OutcomeKind, Termination, Trajectory

# Model-call causes (``ModelError.cause``) that are the endpoint's fault, not the model's.
INFRA_MODEL_CAUSES = frozenset(
    {"connection_error", "timeout", "rate_limited", "authentication", "missing_extra"}
)


def refused_call_escaped(traj: Trajectory) -> bool:
    """Whether a harness error is a tool call the environment refused, escaping a PAL program
    as an exception (runs before 4bfb0de recorded a program that passed a tool an argument it
    does not take so): the model misused the tool; nothing in the harness failed. A result
    read without its steps (``raleval.store.ResultHead``, resuming) cannot tell: False."""
    steps = getattr(traj, "steps", None)
    if traj.termination is not Termination.harness_error or not steps:
        return False
    last, cause = steps[-1], traj.termination_cause or ""
    return (
        last.kind is OutcomeKind.misuse
        and bool(last.observation)
        and cause.startswith("RuntimeError: ")
        and cause.removeprefix("RuntimeError: ") == last.observation
    )


def failure_cause(traj: Trajectory) -> str | None:
    """The infrastructure cause of ``traj``'s end, or None when the model is accountable."""
    if refused_call_escaped(traj):
        return None
    if traj.failure is not None:
        return traj.failure
    cause = traj.termination_cause or ""
    if traj.termination is Termination.harness_error:
        return "harness_error"
    if traj.termination is Termination.llm_error:
        if cause in INFRA_MODEL_CAUSES:
            return cause
        if cause.startswith("http_5"):
            return cause
        if cause.startswith("provider_exception"):
            return "provider_exception"
    return None


def latest_attempts(trajs: Iterable[Trajectory]) -> list[Trajectory]:
    """The last line per (task, epoch), in the order each key first appeared."""
    latest: dict[tuple[str, int], Trajectory] = {}
    for t in trajs:
        latest[(t.task_id, t.epoch)] = t
    return list(latest.values())


def scored(trajs: Iterable[Trajectory]) -> list[Trajectory]:
    """The latest attempts that count in scores: infrastructure failures left out."""
    return [t for t in latest_attempts(trajs) if failure_cause(t) is None]


def failures_by_cause(trajs: Iterable[Trajectory]) -> Counter[str]:
    """Latest attempts that failed for infrastructure reasons, counted by cause."""
    return Counter(c for t in latest_attempts(trajs) if (c := failure_cause(t)) is not None)
