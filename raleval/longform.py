"""What a generated long-form task must pass before it is emitted (docs/longform.md, Families).

The long-form families of every environment (profile, summary, continuation, correction) draw
their key points from the world and run their gold calls; these checks, shared by all of them,
decide whether the task is fit to emit:

- 3 to 8 key points (:data:`MIN_POINTS`, :data:`MAX_POINTS`), no two numbers or years of
  them equal (a number written once beside a cue the two share would be bound to both);
- the reference text covers every key point and contradicts none;
- the executing oracle's answer (the statements of the key points the gold calls' observations
  show, :func:`raleval.keypoints.oracle_text`) covers every key point and contradicts none: the
  task is solvable through the tools;
- the question, read as an answer (what a baseline that echoes the question writes), states no key
  point and writes no key point's value anywhere: no value is guessable from the question (it may
  name another value of a slot, which the echo then contradicts). A correction task is the exception
  by design: its question is the statement to correct, so it states the values that are right (they
  cover their key points) and the planted wrong ones, which must each be *contradicted* by the
  rules, so the echo is never aligned (it hallucinates) and the correct value of a planted slot is
  never in the question.
"""

from __future__ import annotations

from collections.abc import Sequence

from raleval.keypoints import judge_key_points, oracle_text, score_key_points, writes_value
from raleval.records import KeyPoint

MIN_POINTS = 3
MAX_POINTS = 8


def unstated(points: Sequence[KeyPoint], text: str) -> list[KeyPoint]:
    """The key points whose value ``text`` does not write anywhere (a question that names a
    value gives that key point away, whether or not it names the slot: such points are dropped
    before a task is built)."""
    return [p for p in points if not writes_value(p, text)]


def rejection(
    points: Sequence[KeyPoint],
    reference: str,
    observations: Sequence[str],
    question: str,
    planted: Sequence[int] = (),
) -> str | None:
    """Why a long-form task must not be emitted, or None when it passes every check above.
    ``planted``: for a correction task, the indices of the key points whose value the
    question's statement gets wrong."""
    if not MIN_POINTS <= len(points) <= MAX_POINTS:
        return f"{len(points)} key points, not {MIN_POINTS}-{MAX_POINTS}"
    numbers = [p.value for p in points if p.kind in ("number", "year")]
    if len(set(numbers)) < len(numbers):
        return f"two numeric key points share a value: {numbers}"
    ref = score_key_points(reference, points)
    if ref.completeness != 1.0 or ref.hallucination != 0.0:
        return f"the reference does not state every key point: {ref.verdicts}"
    answer = oracle_text(points, observations)
    oracle = score_key_points(answer, points)
    if oracle.completeness != 1.0 or oracle.hallucination != 0.0:
        return f"the gold calls do not show every key point: {oracle.verdicts}"
    echo = judge_key_points(question, points)
    for i, verdict in enumerate(echo):
        if not planted:
            # the question gives no value away; naming another value of a slot (the scholar's
            # own organization beside "doctorate") only makes the echo contradict it
            if verdict == "covered" or writes_value(points[i], question):
                return f"the question read as an answer: key point {i} is given away"
            continue
        want = "contradicted" if i in planted else "covered"
        if verdict != want:
            return f"the question read as an answer: key point {i} is {verdict}, not {want}"
    return None
