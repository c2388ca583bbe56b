"""Each key point of a long-form episode as the viewer shows it: the fact, its verdict
(covered / missing / contradicted) and the words of the answer that decided it.

The verdicts are the rules' (:func:`raleval.keypoints.judge_key_points`), recomputed from the
stored answer, so they are the ones the episode was graded by. The words are a reader's
pointer into the answer: for a covered point the value or alias the answer writes, for a
contradicted one the answer's sentence that names the point's slot (a cue), for a missing one
nothing. Free-text key points of loaded benchmarks (``metadata["key_points"]``) are listed
unjudged: only a model judge decides them (``raleval.grading.keypoint_judge``).
"""

from __future__ import annotations

import re
from typing import Any

from raleval.keypoints import judge_key_points, numbers_in

_SENTENCE = re.compile(r"[^.!?。！？;；\n]+[.!?。！？;；]?")
MAX_WORDS = 200  # characters of a deciding sentence shown


def _stated(point: Any, answer: str) -> str:
    if point.kind in ("number", "year"):
        try:
            want = float(point.value.replace(",", ""))
        except ValueError:
            return point.value
        for m in re.finditer(r"\d[\d,]*(?:\.\d+)?", answer):
            if numbers_in(m.group(0)) == [want]:
                return m.group(0)
        return point.value
    low = answer.lower()
    for name in (point.value, *point.aliases):
        at = low.find(name.lower())
        if name and at >= 0:
            return answer[at : at + len(name)]
    return point.value


def _cue_sentence(point: Any, answer: str) -> str:
    for sentence in _SENTENCE.findall(answer):
        words = re.findall(r"\w+", sentence.lower())
        if any(
            all(any(w.startswith(part) for w in words) for part in re.findall(r"\w+", cue.lower()))
            for cue in point.cues
        ):
            return sentence.strip()[:MAX_WORDS]
    return ""


def key_point_rows(task: Any, answer: str | None) -> list[dict[str, str]]:
    """One row per key point of ``task``: ``point``, ``verdict`` and ``words``."""
    text = answer or ""
    if task is None:
        return []
    if task.key_points:
        verdicts = judge_key_points(text, task.key_points)
        rows = []
        for point, verdict in zip(task.key_points, verdicts, strict=True):
            words = ""
            if verdict == "covered":
                words = _stated(point, text)
            elif verdict == "contradicted":
                words = _cue_sentence(point, text)
            rows.append({"point": point.statement, "verdict": verdict, "words": words})
        return rows
    free = task.metadata.get("key_points") if isinstance(task.metadata, dict) else None
    if isinstance(free, list):
        return [{"point": str(p), "verdict": "not judged", "words": ""} for p in free]
    return []


def long_form_reason(rows: list[dict[str, str]], cause: str | None) -> str:
    """The viewer's "why" line for a long-form episode: its key points, not a gold string."""
    n = len(rows)
    covered = sum(r["verdict"] == "covered" for r in rows)
    contradicted = sum(r["verdict"] == "contradicted" for r in rows)
    return (
        f"long form: {covered} of {n} key points covered, {contradicted} contradicted, "
        f"{n - covered - contradicted} missing. Cause: {cause or '-'}."
    )
