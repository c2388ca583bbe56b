"""Statistics R-Eval's tables lack: confidence intervals, paired tests, sample sizes.

All resampling is seeded, so a report is reproducible.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

Z95 = 1.959963984540054


@dataclass(frozen=True)
class Interval:
    estimate: float
    low: float
    high: float

    def __str__(self) -> str:
        return f"{self.estimate:.3f} [{self.low:.3f}, {self.high:.3f}]"


def bootstrap_ci(
    values: Sequence[float], n_boot: int = 2000, seed: int = 0, level: float = 0.95
) -> Interval:
    """Percentile bootstrap interval of the mean."""
    x = np.asarray(values, dtype=float)
    if len(x) == 0:
        return Interval(float("nan"), float("nan"), float("nan"))
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, len(x), size=(n_boot, len(x)))].mean(axis=1)
    alpha = (1 - level) / 2
    return Interval(
        float(x.mean()), float(np.quantile(means, alpha)), float(np.quantile(means, 1 - alpha))
    )


@dataclass(frozen=True)
class PairedComparison:
    n: int
    mean_a: float
    mean_b: float
    diff: Interval  # mean(a - b) with its bootstrap interval
    p_bootstrap: float  # two-sided, for "no difference"
    a_only: int  # items matched by a but not by b
    b_only: int
    p_mcnemar: float


def paired_bootstrap(
    a: Sequence[float], b: Sequence[float], n_boot: int = 5000, seed: int = 0
) -> tuple[Interval, float]:
    """Interval of mean(a - b) over the same items and a two-sided bootstrap p-value."""
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    if len(d) == 0:
        return Interval(float("nan"), float("nan"), float("nan")), float("nan")
    rng = np.random.default_rng(seed)
    means = d[rng.integers(0, len(d), size=(n_boot, len(d)))].mean(axis=1)
    # p-value of the centred bootstrap: how often a null-shifted mean is as extreme
    centred = means - d.mean()
    p = float(np.mean(np.abs(centred) >= abs(d.mean()))) if d.any() else 1.0
    return Interval(
        float(d.mean()), float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))
    ), p


def mcnemar_exact(a_only: int, b_only: int) -> float:
    """Two-sided exact McNemar test on the discordant pairs (binomial, p = 0.5)."""
    n = a_only + b_only
    if n == 0:
        return 1.0
    k = min(a_only, b_only)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return min(1.0, 2 * tail)


def compare(
    a: Sequence[float],
    b: Sequence[float],
    match_a: Sequence[bool],
    match_b: Sequence[bool],
    seed: int = 0,
) -> PairedComparison:
    """Two systems on the same items: scores (F1) and binary matches."""
    if not (len(a) == len(b) == len(match_a) == len(match_b)):
        raise ValueError("paired comparison needs the same items for both systems")
    diff, p = paired_bootstrap(a, b, seed=seed)
    a_only = sum(1 for x, y in zip(match_a, match_b, strict=True) if x and not y)
    b_only = sum(1 for x, y in zip(match_a, match_b, strict=True) if y and not x)
    return PairedComparison(
        len(a),
        float(np.mean(a)) if len(a) else float("nan"),
        float(np.mean(b)) if len(b) else float("nan"),
        diff,
        p,
        a_only,
        b_only,
        mcnemar_exact(a_only, b_only),
    )


def tasks_needed(values: Sequence[float], margin: float, z: float = Z95) -> int:
    """Tasks needed so the 95% interval of the mean has half-width ``margin``."""
    x = np.asarray(values, dtype=float)
    sd = float(x.std(ddof=1)) if len(x) > 1 else 0.5
    return max(1, math.ceil((z * sd / margin) ** 2))
