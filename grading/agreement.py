"""The three CRAG verdicts and agreement between two raters of them (no model, no I/O), shared
by the judges (``raleval.grading.judge``) and the report (``raleval.analysis.judging``)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

ACCURATE, MISSING, HALLUCINATED = "accurate", "missing", "hallucinated"
VERDICTS = (ACCURATE, MISSING, HALLUCINATED)


def cohen_kappa(
    a: Sequence[str], b: Sequence[str], labels: Sequence[str] = VERDICTS
) -> float | None:
    """Cohen's kappa (Cohen 1960, "A coefficient of agreement for nominal scales"):
    (p_o - p_e) / (1 - p_e) with p_e from the two raters' marginals. ``None`` when p_e is 1
    (both raters always give the same single label: agreement is then not informative)."""
    if len(a) != len(b):
        raise ValueError("kappa needs two ratings per item")
    if not a:
        return None
    index = {lab: i for i, lab in enumerate(labels)}
    m = np.zeros((len(labels), len(labels)))
    for x, y in zip(a, b, strict=True):
        m[index[x], index[y]] += 1
    n = m.sum()
    p_o = np.trace(m) / n
    p_e = float((m.sum(axis=1) / n) @ (m.sum(axis=0) / n))
    if p_e >= 1.0:
        return None
    return float((p_o - p_e) / (1 - p_e))
