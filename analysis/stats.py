"""Statistics R-Eval's tables lack: clustered intervals, paired tests, power, sample sizes.

The formulas follow Evan Miller, "Adding Error Bars to Evals: A Statistical Approach to Language
Model Evaluations" (arXiv 2411.00640, 2024) and Inspect AI's ``stderr(cluster=...)``
(``inspect_ai/scorer/_metrics/std.py``); docs/statistics.md writes them out. The unit of
analysis is the task: with several epochs a task's score is the mean of its samples, and tasks
that share a template (or declare a cluster) are one cluster. Nothing here resamples, so a
report is reproducible. ``scipy.stats`` is imported where used (it takes a third of a second).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

# Every interval raleval prints, named once: tables, the report and compare take their captions
# from here, and docs/statistics.md gives each one's formula and sources.
SCORE_INTERVAL = "95% Wilson interval on the clustered effective size"  # F1, EM, rates
MEAN_INTERVAL = "95% clustered t interval"  # seconds, tokens, USD: unbounded means
AVERAGE_INTERVAL = "95% interval of an unweighted mean of family means (combined)"
DIFFERENCE_INTERVAL = "95% clustered paired t interval"
HOLM_INTERVAL = "Holm-simultaneous 95% interval (agrees with the Holm verdict)"
FEW_CLUSTERS = 12  # below this many clusters a claim also carries the exact sign-flip p


@dataclass(frozen=True)
class Interval:
    estimate: float
    low: float
    high: float
    # for a t interval: its standard error, degrees of freedom and number of clusters
    se: float = float("nan")
    df: float = float("nan")
    clusters: int = 0

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2

    def __str__(self) -> str:
        if self.low != self.low:  # NaN: one task (or one cluster) has no spread to measure
            return f"{self.estimate:.3f} [n/a]"
        return f"{self.estimate:.3f} [{self.low:.3f}, {self.high:.3f}]"


def mcnemar_exact(a_only: int, b_only: int) -> float:
    """Two-sided exact McNemar test on the discordant pairs (binomial, p = 0.5)."""
    n = a_only + b_only
    if n == 0:
        return 1.0
    k = min(a_only, b_only)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return min(1.0, 2 * tail)


# --- clustered intervals, paired differences, multiple comparisons and power -----------------


def _codes(clusters: Sequence[object] | None, n: int) -> np.ndarray:
    """Cluster labels as integer codes; ``None`` puts every observation in its own cluster."""
    if clusters is None:
        return np.arange(n)
    if len(clusters) != n:
        raise ValueError(f"{len(clusters)} cluster labels for {n} values")
    return np.unique(np.asarray([str(c) for c in clusters]), return_inverse=True)[1]


def clustered_se(values: Sequence[float], clusters: Sequence[object] | None = None) -> float:
    """Standard error of the mean, robust to correlation within clusters.

    Miller (arXiv 2411.00640), eq. 4 and Appendix A, with the finite-cluster factor C/(C-1)
    that Inspect AI's ``stderr(cluster=...)`` applies::

        SE = sqrt( C/(C-1) * sum_c ( sum_{i in c} (s_i - mean) )^2 ) / n

    With every observation its own cluster this is the usual ``sd(ddof=1) / sqrt(n)``. NaN for
    fewer than two clusters (no spread between clusters to measure).
    """
    x = np.asarray(values, dtype=float)
    n = len(x)
    codes = _codes(clusters, n)
    c = int(codes.max()) + 1 if n else 0
    if c < 2:
        return float("nan")
    sums = np.bincount(codes, weights=x - x.mean(), minlength=c)
    return float(math.sqrt(c / (c - 1) * float(np.sum(sums**2))) / n)


def mean_interval(
    values: Sequence[float], clusters: Sequence[object] | None = None, level: float = 0.95
) -> Interval:
    """Mean with a t interval on the clustered standard error, C - 1 degrees of freedom
    (Miller's eq. 4 uses the normal quantile; with few clusters the t quantile keeps the
    coverage nominal, which ``benchmarks/stats_calibration.py`` checks)."""
    from scipy import stats as st

    x = np.asarray(values, dtype=float)
    if len(x) == 0:
        return Interval(float("nan"), float("nan"), float("nan"))
    c = int(_codes(clusters, len(x)).max()) + 1
    se = clustered_se(x, clusters)
    m = float(x.mean())
    if se != se:
        return Interval(m, float("nan"), float("nan"), se, float("nan"), c)
    df = c - 1
    h = float(st.t.ppf(0.5 + level / 2, df)) * se
    return Interval(m, m - h, m + h, se, float(df), c)


def score_interval(
    values: Sequence[float], clusters: Sequence[object] | None = None, level: float = 0.95
) -> Interval:
    """Mean of scores in [0, 1] (F1, EM, a match) with a Wilson score interval on the
    clustered effective sample size: the interval of a rate that holds in small cells, near 0
    or 1 and with few clusters (docs/statistics.md, "Intervals of a cell").

    Korn & Graubard (1998, Survey Methodology 24(2)) for the effective size of a clustered
    rate, ``n* = p(1-p) / SE_cl^2`` (at most n; n when p is 0 or 1), times their degrees-of-
    freedom factor ``(t_{n-1} / t_{C-1})^2``; Wilson (1927, JASA 22) for the interval on n*,
    the choice Dean & Pagano (2015, J. Survey Stat. Methodol. 3) found closest to nominal among
    design-adjusted binomial intervals. A score in [0, 1] with mean p has variance at most
    p(1-p), so on F1 the interval is the one a right-or-wrong score would get. A cell where
    every task scored 0 gets [0, 3.84 / (n* + 3.84)], not [0, 0]. ``se``, ``df`` and
    ``clusters`` are the t interval's (:func:`mean_interval`), which averages combine."""
    from scipy import stats as st

    x = np.asarray(values, dtype=float)
    t_ci = mean_interval(x, clusters, level)
    if t_ci.low != t_ci.low:  # no task, or one cluster: no spread to size the interval by
        return t_ci
    if x.min() < 0 or x.max() > 1:
        raise ValueError("score_interval takes scores in [0, 1]; use mean_interval")
    n, p, se = len(x), t_ci.estimate, t_ci.se
    n_eff = min(n, p * (1 - p) / se**2) if se > 0 and 0 < p < 1 else float(n)
    q = 0.5 + level / 2
    n_eff *= (float(st.t.ppf(q, n - 1)) / float(st.t.ppf(q, t_ci.df))) ** 2
    z2 = float(st.norm.ppf(q)) ** 2
    centre = (p + z2 / (2 * n_eff)) / (1 + z2 / n_eff)
    half = math.sqrt(z2) / (1 + z2 / n_eff) * math.sqrt(p * (1 - p) / n_eff + z2 / (4 * n_eff**2))
    # at p = 0 (or 1) the near end is exactly 0 (1); rounding must not lift it off
    low = 0.0 if p == 0 else max(0.0, centre - half)
    high = 1.0 if p == 1 else min(1.0, centre + half)
    return Interval(p, low, high, t_ci.se, t_ci.df, t_ci.clusters)


@dataclass(frozen=True)
class PairedDifference:
    diff: Interval  # mean(a - b) over the shared units, clustered t interval
    p: float  # two-sided, for "no difference": the clustered t test's
    mdd: float  # minimum detectable difference at the given power (two-sided alpha)
    # the exact cluster sign-flip p (:func:`sign_flip_p`), on fewer than FEW_CLUSTERS clusters
    p_flip: float = float("nan")

    @property
    def p_verdict(self) -> float:
        """The p a claim's verdict takes: the more conservative of the t and sign-flip p."""
        return self.p if self.p_flip != self.p_flip else max(self.p, self.p_flip)


def paired_difference(
    a: Sequence[float],
    b: Sequence[float],
    clusters: Sequence[object] | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
) -> PairedDifference:
    """Paired test of mean(a - b) on the same units (Miller, section 4.2: the SE of the
    differences, ``sqrt(SE_a^2 + SE_b^2 - 2 Cov(a, b))``, is the SE of the per-unit
    differences), clustered as in :func:`clustered_se`, t with C - 1 degrees of freedom. On
    fewer than :data:`FEW_CLUSTERS` clusters the exact sign-flip p comes beside it."""
    from scipy import stats as st

    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    diff = mean_interval(d, clusters, 1 - alpha)
    if diff.se != diff.se:
        p = float("nan")
    elif diff.se == 0:
        # every cluster moved by the same amount: the t statistic is infinite, but C clusters
        # cannot make a difference certain. The exact sign-flip test over clusters: only the
        # two all-same-sign flips reach the observed sum, p = 2 / 2^C (3 clusters: 0.25).
        p = 1.0 if diff.estimate == 0 else min(1.0, 2.0 ** (1 - diff.clusters))
    else:
        p = float(2 * st.t.sf(abs(diff.estimate) / diff.se, diff.df))
    # an SE of 0 says nothing about the noise a difference would have to beat: no MDD (0 would
    # claim that any difference, however small, is detected)
    mdd = (
        float("nan")
        if diff.se == 0
        else minimum_detectable_difference(diff.se, diff.df, alpha, power)
    )
    p_flip = sign_flip_p(d, clusters) if 2 <= diff.clusters < FEW_CLUSTERS else float("nan")
    return PairedDifference(diff, p, mdd, p_flip)


def _cluster_sums(
    d: Sequence[float], clusters: Sequence[object] | None, weights: Sequence[float] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Per cluster: the sum of the values and of their weights (1 each without ``weights``)."""
    x = np.asarray(d, dtype=float)
    codes = _codes(clusters, len(x))
    c = int(codes.max()) + 1 if len(x) else 0
    w = np.ones(len(x)) if weights is None else np.asarray(weights, dtype=float)
    return np.bincount(codes, weights=x, minlength=c), np.bincount(codes, weights=w, minlength=c)


def _flip_signs(c: int) -> np.ndarray:
    """Every one of the 2^c sign vectors (rows), +1 / -1."""
    bits = (np.arange(2**c)[:, None] >> np.arange(c)[None, :]) & 1
    return 1.0 - 2.0 * bits


def sign_flip_p(
    d: Sequence[float],
    clusters: Sequence[object] | None = None,
    delta: float = 0.0,
    weights: Sequence[float] | None = None,
) -> float:
    """Exact two-sided cluster sign-flip randomisation p for "the mean difference is
    ``delta``": every one of the 2^C ways of flipping the sign of each cluster's summed
    deviation ``sum_{i in c} (d_i - delta)``, the share whose total is at least as far from 0
    as the observed (Fisher 1935's randomisation test on clusters; Canay, Romano & Shaikh 2017,
    Econometrica 85, for its validity with few, heterogeneous clusters under symmetry). With C
    clusters no p is below 2 / 2^C. More than 20 clusters: NaN (the t test is the claim's).
    ``weights``: ``d`` holds weighted values ``w_i x_i`` of a weighted mean, and a cluster's
    deviation is ``sum w_i (x_i - delta)``."""
    sums, sizes = _cluster_sums(d, clusters, weights)
    c = len(sums)
    if c < 1 or c > 20:
        return float("nan")
    dev = sums - delta * sizes
    observed = abs(float(dev.sum()))
    flipped = np.abs(_flip_signs(c) @ dev)
    # a relative tolerance: flips that tie with the observed total count as reaching it
    return float(np.mean(flipped >= observed - 1e-12 * max(1.0, observed)))


def sign_flip_interval(
    d: Sequence[float],
    clusters: Sequence[object] | None = None,
    level: float = 0.95,
    bounds: tuple[float, float] = (-1.0, 1.0),
    weights: Sequence[float] | None = None,
) -> Interval:
    """The differences ``delta`` the sign-flip test (:func:`sign_flip_p`) does not reject at
    ``1 - level``, found by bisection on each side of the mean; ``bounds`` is the range a mean
    difference can take (-1 to 1 for scores in [0, 1]). When the test cannot reject at that
    level at all (2 / 2^C >= 1 - level) the interval is the whole range: so few clusters say
    nothing about the size of a difference at that level."""
    x = np.asarray(d, dtype=float)
    sums, sizes = _cluster_sums(x, clusters, weights)
    est = float(sums.sum() / sizes.sum())
    c = len(sums)
    alpha = 1 - level
    lo_bound, hi_bound = min(bounds[0], est), max(bounds[1], est)
    if c > 20 or 2.0 ** (1 - c) >= alpha - 1e-15:
        return Interval(est, lo_bound, hi_bound, clusters=c)

    def accepted(delta: float) -> bool:
        return sign_flip_p(x, clusters, delta, weights) > alpha

    def edge(inside: float, outside: float) -> float:
        if accepted(outside):
            return outside
        for _ in range(50):  # 2^-50 of the range: far below the three places printed
            mid = (inside + outside) / 2
            inside, outside = (mid, outside) if accepted(mid) else (inside, mid)
        return inside

    return Interval(est, edge(est, lo_bound), edge(est, hi_bound), clusters=c)


def holm_level(p_holm: Sequence[float], alpha: float = 0.05) -> float:
    """The level Holm's step-down compared the first comparison it left open against,
    ``alpha / (m - k)`` with k comparisons rejected: the level an open claim's verdict used,
    so its minimum detectable difference is taken there (alpha when every one was rejected)."""
    tested = [p for p in p_holm if p == p]
    rejected = sum(p < alpha for p in tested)
    return alpha / max(1, len(tested) - rejected)


def minimum_detectable_difference(
    se: float, df: float = float("inf"), alpha: float = 0.05, power: float = 0.8
) -> float:
    """The smallest true difference a two-sided test at ``alpha`` detects with probability
    ``power``, given the difference's standard error (Miller, section 5, eq. 9 solved for
    delta): ``MDD = (t_{1-alpha/2} + t_{power}) * SE``; about 2.8 SE at 80% power and 5%."""
    from scipy import stats as st

    if se != se:
        return float("nan")
    return float((st.t.ppf(1 - alpha / 2, df) + st.t.ppf(power, df)) * se)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment (Holm 1979): the i-th smallest of m p-values becomes
    ``max_{j<=i} min(1, (m - j + 1) p_(j))``; it controls the family-wise error rate at
    alpha for any dependence between the tests. NaN p-values stay NaN and do not count."""
    p = np.asarray(pvalues, dtype=float)
    out = np.full(len(p), float("nan"))
    idx = [i for i in np.argsort(p, kind="stable") if p[i] == p[i]]
    running = 0.0
    for rank, i in enumerate(idx):
        running = max(running, min(1.0, (len(idx) - rank) * float(p[i])))
        out[i] = running
    return [float(v) for v in out]


def holm_intervals(
    diffs: Sequence[Interval],
    p_holm: Sequence[float],
    alpha: float = 0.05,
    samples: Sequence[
        tuple[Sequence[float], Sequence[object] | None, Sequence[float] | None] | None
    ]
    | None = None,
) -> list[Interval]:
    """Intervals of paired differences that agree with Holm's verdicts.

    Each difference gets Bonferroni's simultaneous interval, level ``1 - alpha / m`` over the
    m comparisons, unless that holds 0 where Holm rejects; then the level is ``1 - alpha /
    m'``, with m' the comparisons Holm leaves open (1 when it rejects them all): a rejected
    comparison has p < alpha / m' (Holm 1979's step-down order), so that interval excludes 0.
    A comparison Holm leaves open has p >= alpha / m' >= alpha / m: its interval holds 0.
    Narrowing only the rejected comparisons follows Strassburger & Bretz (2008, Stat. Med.
    27), whose exact simultaneous bounds for Holm say no more than the sign there;
    ``benchmarks/stats_calibration.py`` measures the family-wise coverage. ``diffs`` are t
    intervals (:func:`paired_difference`); an SE of 0 (every cluster moved alike, p from the
    sign-flip test) gives the point when rejected and no interval otherwise.

    ``samples`` (per row, the differences, their clusters and weights, or None) marks the rows whose
    verdict took the sign-flip p too (fewer than :data:`FEW_CLUSTERS` clusters): their interval
    is the union of the t interval and the sign-flip one (:func:`sign_flip_interval`) at the
    same level, so it holds 0 exactly when either test does not reject; scores in [0, 1]
    assumed, it is cut to [-1, 1]."""
    from scipy import stats as st

    if len(diffs) != len(p_holm):
        raise ValueError(f"{len(diffs)} differences for {len(p_holm)} p-values")
    samples = samples or [None] * len(diffs)
    tested = sum(1 for p in p_holm if p == p)
    open_ = sum(1 for p in p_holm if p == p and p >= alpha)
    out = []
    for d, p, sample in zip(diffs, p_holm, samples, strict=True):
        if d.se != d.se or p != p:
            out.append(Interval(d.estimate, float("nan"), float("nan"), d.se, d.df, d.clusters))
            continue
        if d.se == 0 and sample is None:
            point = d.estimate if p < alpha or d.estimate == 0 else float("nan")
            out.append(Interval(d.estimate, point, point, d.se, d.df, d.clusters))
            continue

        def at(level_alpha: float, d: Interval = d, sample=sample) -> tuple[float, float]:
            h = float(st.t.ppf(1 - level_alpha / 2, d.df)) * d.se
            low, high = d.estimate - h, d.estimate + h
            if sample is not None and d.clusters < FEW_CLUSTERS:
                values, groups, weights = sample
                flip = sign_flip_interval(values, groups, 1 - level_alpha, weights=weights)
                # the union, within the range a difference of scores can take (-1 to 1)
                low, high = max(-1.0, min(low, flip.low)), min(1.0, max(high, flip.high))
            return low, high

        low, high = at(alpha / tested)
        if p < alpha and low <= 0 <= high:  # rejected, yet Bonferroni's interval holds 0
            low, high = at(alpha / max(open_, 1))
        out.append(Interval(d.estimate, low, high, d.se, d.df, d.clusters))
    return out


def disagrees(interval: Interval, p_holm: float, alpha: float = 0.05) -> bool:
    """True when a Holm verdict (p < alpha: differ) and its adjusted interval say otherwise
    (an interval that excludes 0 beside "inside", or holds 0 beside "differ")."""
    if p_holm != p_holm:
        return False
    excludes = interval.low == interval.low and (interval.low > 0 or interval.high < 0)
    return excludes != (p_holm < alpha)


@dataclass(frozen=True)
class EpochSpread:
    """How much a task's score moves between epochs (samples of the same task)."""

    tasks: int  # tasks with two or more epochs
    epochs: int  # the most epochs any task has
    within_var: float  # mean over tasks of the between-epoch variance (ddof=1): sigma^2
    between_var: float  # variance of the task means across tasks
    flip_rate: float  # share of tasks whose verdict differs across epochs


def epoch_spread(
    samples: dict[str, Sequence[float]], verdicts: dict[str, Sequence[bool]]
) -> EpochSpread | None:
    """Within- and between-task variance (Miller, section 3.2: with K samples per task the
    mean's variance is ``(Var(x) + E[sigma_i^2] / K) / n``) and the per-task flip rate.
    ``None`` when no task has two samples."""
    multi = {k: np.asarray(v, dtype=float) for k, v in samples.items() if len(v) >= 2}
    if not multi:
        return None
    means = np.asarray([np.mean(v) for v in samples.values()], dtype=float)
    flips = [len(set(verdicts[k])) > 1 for k in multi]
    return EpochSpread(
        tasks=len(multi),
        epochs=max(len(v) for v in multi.values()),
        within_var=float(np.mean([v.var(ddof=1) for v in multi.values()])),
        between_var=float(means.var(ddof=1)) if len(means) > 1 else float("nan"),
        flip_rate=sum(flips) / len(flips),
    )


def design_effect(values: Sequence[float], clusters: Sequence[object] | None) -> float:
    """Variance inflation from clustering: (clustered SE / unclustered SE)^2 (Kish's design
    effect; Miller, section 3.1). 1 without clusters; NaN when either SE is undefined."""
    se_c = clustered_se(values, clusters)
    se_i = clustered_se(values, None)
    if se_c != se_c or se_i != se_i:
        return float("nan")
    return 1.0 if se_i == 0 else (se_c / se_i) ** 2


def tasks_for_power(
    diff: float,
    var_between: float,
    var_within: float = 0.0,
    epochs: int = 1,
    deff: float = 1.0,
    alpha: float = 0.05,
    power: float = 0.8,
) -> int:
    """Tasks needed for a paired two-sided test at ``alpha`` to detect a true difference
    ``diff`` with probability ``power`` (Miller, section 5, eq. 10)::

        n = ((z_{1-alpha/2} + z_{power}) / diff)^2 * (omega^2 + (sigma_A^2 + sigma_B^2) / K)

    ``var_between`` is omega^2, the variance across tasks of the true per-task difference;
    ``var_within`` is sigma_A^2 + sigma_B^2, the between-epoch variance of one sample's
    difference; ``epochs`` is K. ``deff`` scales for clustering (tasks per cluster held as in
    the pilot)."""
    from scipy import stats as st

    if diff <= 0:
        raise ValueError("the difference to detect must be positive")
    z = float(st.norm.ppf(1 - alpha / 2) + st.norm.ppf(power))
    var = max(0.0, var_between) + max(0.0, var_within) / max(1, epochs)
    return max(2, math.ceil((z / diff) ** 2 * var * (deff if deff == deff else 1.0)))


def combine_means(
    parts: Sequence[Interval], level: float = 0.95, weights: Sequence[float] | None = None
) -> Interval:
    """Interval of the mean of independent means (R-Eval's averages over task families, which
    share no task), unweighted or with ``weights`` summing to 1: ``SE = sqrt(sum w_f^2 SE_f^2)``
    (``w_f = 1 / F`` unweighted), with Welch-Satterthwaite degrees of freedom
    ``(sum w_f^2 SE_f^2)^2 / sum(w_f^4 SE_f^4 / df_f)``. NaN if a part has no SE."""
    from scipy import stats as st

    f = len(parts)
    w = [1 / f] * f if weights is None else [float(x) for x in weights]
    if len(w) != f or (f and not math.isclose(sum(w), 1.0)):
        raise ValueError("combine_means needs one weight per part, summing to 1")
    used = [(wi, p) for wi, p in zip(w, parts, strict=True) if wi > 0]  # a 0 weight: left out
    est = sum(wi * p.estimate for wi, p in used) if f else math.nan
    clusters = sum(p.clusters for p in parts)
    if not f or any(p.se != p.se for _, p in used):
        return Interval(est, float("nan"), float("nan"), float("nan"), float("nan"), clusters)
    terms = [((wi * p.se) ** 2, p.df) for wi, p in used]
    var = sum(t for t, _ in terms)
    se = math.sqrt(var)
    if var == 0:
        return Interval(est, est, est, 0.0, float("inf"), clusters)
    df = var**2 / sum(t**2 / d for t, d in terms if t > 0)
    h = float(st.t.ppf(0.5 + level / 2, df)) * se
    return Interval(est, est - h, est + h, se, df, clusters)
