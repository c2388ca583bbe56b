"""R-Eval's error taxonomy, computed from a stored trajectory alone.

- match: answer F1 against the gold aliases >= ``threshold`` (default 0.5; R-Eval's code used
  0.05, available as :data:`REVAL_THRESHOLD`).
- useful: a gold alias, normalised, appears as a whole token sequence in an OBSERVATION a tool
  returned. The model's own thoughts and its Finish line never count (R-Eval's code counted
  them, which made every correct answer "grounded").

=====  =========================================================================
EM     match and useful
AM     match, not useful (answered from memory)
GE     no match, useful (the evidence was retrieved but the answer is wrong)
RE     no match, not useful, the episode ended normally
TE     no match, not useful, interrupted by the agent's improper tool use
ME     no match, not useful, interrupted by a fault outside the agent's control
=====  =========================================================================

One refinement: an episode cut off by a fault outside the agent's control before the agent
gave any answer is ME even when evidence had been retrieved; GE means the agent generated a
wrong answer from the evidence, which it never got the chance to do.

Every label carries a cause, e.g. ``TE:invalid_format`` or ``ME:llm_error:empty_response``.
"""

from __future__ import annotations

from collections.abc import Sequence

from raleval.records import ErrorType, OutcomeKind, Termination, Trajectory
from raleval.tasks.metrics import f1_score
from raleval.text import contains_tokens, normalize_answer

DEFAULT_THRESHOLD = 0.5
REVAL_THRESHOLD = 0.05

# Terminations caused by the agent's own tool use.
_TOOL_USE = {
    Termination.step_limit,
    Termination.context_limit,
    Termination.invalid_format,
    Termination.program_error,
}
# Terminations caused by something outside the agent's control.
_OUTSIDE = {
    Termination.llm_error,
    Termination.tool_fault,
    Termination.timeout,
    Termination.interrupted,
    Termination.harness_error,
}


def evidence_found(trajectory: Trajectory, golds: Sequence[str]) -> bool:
    """Whether a gold alias appears, token-aligned, in an observation returned by a tool."""
    needles = [normalize_answer(g).split() for g in golds]
    needles = [n for n in needles if n]
    if not needles:
        return False
    for step in trajectory.steps:
        if step.kind is not OutcomeKind.ok or not step.observation or step.tool in (None, "Finish"):
            continue
        tokens = normalize_answer(step.observation).split()
        if any(contains_tokens(tokens, n) for n in needles):
            return True
    return False


def _tool_use_cause(trajectory: Trajectory) -> str:
    for step in reversed(trajectory.steps):
        if step.kind in (OutcomeKind.misuse, OutcomeKind.parse_error) and step.cause:
            return step.cause
    return ""


def classify(
    trajectory: Trajectory,
    golds: Sequence[str],
    threshold: float = DEFAULT_THRESHOLD,
    evidence: Sequence[str] | None = None,
) -> tuple[ErrorType, str]:
    """Label one trajectory; returns ``(error type, cause)``.

    ``evidence`` replaces the golds in the "useful" test for answers that need not appear in
    any observation (a yes/no verdict, a count, a chosen option).
    """
    match = f1_score(trajectory.answer, golds) >= threshold
    useful = evidence_found(trajectory, evidence or golds)
    if match:
        return (ErrorType.EM, "EM:grounded") if useful else (ErrorType.AM, "AM:from_memory")
    term = trajectory.termination
    if useful and not (term in _OUTSIDE and trajectory.answer is None):
        return ErrorType.GE, "GE:evidence_ignored"
    if term in _TOOL_USE:
        detail = _tool_use_cause(trajectory)
        cause = term.value if not detail or detail == term.value else f"{term.value}:{detail}"
        return ErrorType.TE, f"TE:{cause}"
    if term in _OUTSIDE:
        detail = trajectory.termination_cause
        cause = f"{term.value}:{detail}" if detail and detail != term.value else term.value
        return ErrorType.ME, f"ME:{cause}"
    return ErrorType.RE, "RE:wrong_answer"
