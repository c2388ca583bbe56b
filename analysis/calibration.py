"""Simulations that check :mod:`raleval.analysis.stats` is calibrated.

A simulated study has ``templates`` templates of ``per_template`` tasks each; a task's chance
of being answered right is ``sigmoid(base + u_template + v_task)`` (normal effects on the logit
scale, so tasks of one template succeed and fail together), and each of its ``epochs`` samples
is a Bernoulli draw. A second system B adds ``shift + w_template + e_task`` on the same logit
scale, so B - A differs by template too. Every check calls the same functions ``raleval
compare`` and the tables call, once per simulated study:

- A/A: one system, two independent samplings of its episodes on the same tasks; the share
  called different at ``alpha`` should be ``alpha`` (the paired test's size).
- null with template effects: B differs from A by template but not on average over the
  population of templates; the unclustered test calls this different too often.
- detection at the minimum detectable difference: B is better by the MDD the paired test
  reports (its median over null studies); the share detected should be the power (80%).
- coverage: the 95% interval of A's mean against the population mean, over fresh templates.

``benchmarks/stats_calibration.py`` runs them at size; tests run them small.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from raleval.analysis.stats import (
    disagrees,
    holm,
    holm_intervals,
    mean_interval,
    paired_difference,
    score_interval,
)


@dataclass(frozen=True)
class Design:
    templates: int = 20
    per_template: int = 5
    epochs: int = 1
    base: float = 0.0  # logit of the typical task's success chance
    template_sd: float = 1.0  # logit sd between templates
    task_sd: float = 0.7  # logit sd between tasks of one template
    diff_template_sd: float = 0.4  # logit sd of B - A between templates
    diff_task_sd: float = 0.3  # logit sd of B - A between tasks of one template

    @property
    def tasks(self) -> int:
        return self.templates * self.per_template

    @property
    def clusters(self) -> np.ndarray:
        return np.repeat(np.arange(self.templates), self.per_template)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):  # a base of -inf (a rate of 0) gives exactly 0
        return 1.0 / (1.0 + np.exp(-x))


def _draw(design: Design, rng: np.random.Generator, shift: float) -> tuple[np.ndarray, np.ndarray]:
    """Per-task success chances of A and B for a fresh draw of templates and tasks."""
    g, m = design.templates, design.per_template
    logit_a = (
        design.base
        + np.repeat(rng.normal(0, design.template_sd, g), m)
        + rng.normal(0, design.task_sd, g * m)
    )
    logit_b = (
        logit_a
        + shift
        + np.repeat(rng.normal(0, design.diff_template_sd, g), m)
        + rng.normal(0, design.diff_task_sd, g * m)
    )
    return _sigmoid(logit_a), _sigmoid(logit_b)


def _task_means(p: np.ndarray, epochs: int, rng: np.random.Generator) -> np.ndarray:
    """Each task's mean verdict over its epochs: the unit of analysis."""
    return (rng.random((len(p), epochs)) < p[:, None]).mean(axis=1)


def population_means(design: Design, shift: float, draws: int = 2_000_000, seed: int = 1):
    """A's and B's mean success chance over the population of templates and tasks (Monte
    Carlo with ``draws`` tasks: standard error below 0.0003)."""
    rng = np.random.default_rng(seed)
    big = Design(**{**design.__dict__, "templates": draws, "per_template": 1})
    pa, pb = _draw(big, rng, shift)
    return float(pa.mean()), float(pb.mean())


def with_rate(design: Design, rate: float, seed: int = 1, draws: int = 400_000) -> Design:
    """``design`` with the base logit that makes A's population mean ``rate`` (bisection to
    1e-6; a rate of 0 is a base of -inf: every task always fails)."""
    if not 0 <= rate < 1:
        raise ValueError("a simulated rate is in [0, 1)")
    if rate == 0:
        return Design(**{**design.__dict__, "base": float("-inf")})
    lo, hi = -15.0, 15.0
    for _ in range(25):
        mid = (lo + hi) / 2
        a, _ = population_means(Design(**{**design.__dict__, "base": mid}), 0.0, draws, seed)
        lo, hi = (mid, hi) if a < rate else (lo, mid)
    return Design(**{**design.__dict__, "base": (lo + hi) / 2})


def shift_for_difference(
    design: Design, target: float, seed: int = 1, draws: int = 400_000
) -> float:
    """The logit shift that makes B's population mean exceed A's by ``target`` (bisection to
    1e-5 on common random numbers, so the search is monotone)."""
    lo, hi = -4.0, 4.0
    for _ in range(20):
        mid = (lo + hi) / 2
        a, b = population_means(design, mid, draws=draws, seed=seed)
        if b - a < target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def aa_rate(
    design: Design, sims: int, seed: int = 0, clustered: bool = True, alpha: float = 0.05
) -> float:
    """Share of A/A comparisons called different at ``alpha``."""
    rng = np.random.default_rng(seed)
    clusters = design.clusters if clustered else None
    hits = 0
    for _ in range(sims):
        pa, _ = _draw(design, rng, 0.0)
        a, b = _task_means(pa, design.epochs, rng), _task_means(pa, design.epochs, rng)
        hits += paired_difference(a, b, clusters, alpha).p < alpha
    return hits / sims


def comparison_rate(
    design: Design,
    sims: int,
    shift: float,
    seed: int = 0,
    clustered: bool = True,
    alpha: float = 0.05,
) -> tuple[float, float]:
    """Share of A-vs-B comparisons called different at ``alpha``, and the median minimum
    detectable difference (80% power) they report."""
    rng = np.random.default_rng(seed)
    clusters = design.clusters if clustered else None
    hits, mdds = 0, []
    for _ in range(sims):
        pa, pb = _draw(design, rng, shift)
        res = paired_difference(
            _task_means(pb, design.epochs, rng),
            _task_means(pa, design.epochs, rng),
            clusters,
            alpha,
        )
        hits += res.p < alpha
        mdds.append(res.mdd)
    defined = [m for m in mdds if m == m]  # a draw with identical differences has none
    return hits / sims, float(np.median(defined)) if defined else float("nan")


def coverage(
    design: Design,
    sims: int,
    seed: int = 0,
    clustered: bool = True,
    level: float = 0.95,
    draws: int = 2_000_000,
    method: str = "t",
) -> float:
    """Share of A's mean intervals that cover A's population mean; ``method`` ``t`` is
    :func:`mean_interval`, ``wilson`` :func:`score_interval` (the tables' interval of F1)."""
    interval = {"t": mean_interval, "wilson": score_interval}[method]
    truth, _ = population_means(design, 0.0, draws=draws)
    rng = np.random.default_rng(seed)
    clusters = design.clusters if clustered else None
    hits = 0
    for _ in range(sims):
        pa, _ = _draw(design, rng, 0.0)
        ci = interval(_task_means(pa, design.epochs, rng), clusters, level)
        hits += ci.low <= truth <= ci.high
    return hits / sims


def holm_family(
    design: Design, sims: int, shifts: list[float], truths: list[float], seed: int = 0
) -> tuple[int, int, float]:
    """Families of ``len(shifts)`` comparisons (fresh tasks each, B shifted by ``shifts[i]``
    on the logit scale, true difference ``truths[i]``), Holm over each family and its adjusted
    intervals (:func:`holm_intervals`): the rows where a verdict and its interval disagree,
    the rows in all, and the share of families whose intervals all cover the true
    differences (a comparison without an interval counts as covering, as it claims nothing)."""
    rng = np.random.default_rng(seed)
    clusters = design.clusters
    bad = rows = covered = 0
    for _ in range(sims):
        results = []
        for shift in shifts:
            pa, pb = _draw(design, rng, shift)
            results.append(
                paired_difference(
                    _task_means(pb, design.epochs, rng),
                    _task_means(pa, design.epochs, rng),
                    clusters,
                )
            )
        adjusted = holm([r.p for r in results])
        intervals = holm_intervals([r.diff for r in results], adjusted)
        bad += sum(disagrees(i, p) for i, p in zip(intervals, adjusted, strict=True))
        rows += len(results)
        covered += all(
            i.low != i.low or i.low <= t <= i.high for i, t in zip(intervals, truths, strict=True)
        )
    return bad, rows, covered / sims


def differing_clusters(design: Design, sims: int, seed: int = 0) -> float:
    """Median number of clusters whose A/A difference is not 0 (two samplings of one system):
    an exact test over C clusters needs 6 of them to differ before it can reject at 0.05
    (``2 / 2^5 > 0.05``), so below that no valid test's A/A rate can reach alpha."""
    rng = np.random.default_rng(seed)
    codes = design.clusters
    counts = []
    for _ in range(sims):
        pa, _ = _draw(design, rng, 0.0)
        d = _task_means(pa, design.epochs, rng) - _task_means(pa, design.epochs, rng)
        counts.append(len(set(codes[d != 0].tolist())))
    return float(np.median(counts))


@dataclass(frozen=True)
class HeteroDesign:
    """Few clusters that differ in size and in how much B - A varies within them: the regime
    of a study's per-level claims (6 or 8 family clusters of 2-8 tasks). Cluster c has
    ``sizes[c]`` tasks and B's logit differs from A's by ``shift + w_c + e_i``, ``w_c ~ N(0,
    diff_sds[c])``; A's logit is ``base + u_c + v_i`` as in :class:`Design`."""

    sizes: tuple[int, ...]
    diff_sds: tuple[float, ...]
    base: float = 0.0
    template_sd: float = 1.0
    task_sd: float = 0.7
    diff_task_sd: float = 0.3
    # each cluster's environment, under an estimand that weighs environments alike (the
    # design's ``estimand: {weights: environment}``); empty: every task weighs the same
    environments: tuple[int, ...] = ()

    @property
    def clusters(self) -> np.ndarray:
        return np.repeat(np.arange(len(self.sizes)), self.sizes)

    @property
    def weights(self) -> np.ndarray:
        """Each task's weight, mean 1: ``n / (E n_e)`` for a task of environment e, as
        :func:`raleval.analysis.study.compare_study` weighs them; all 1 without environments."""
        tasks = int(sum(self.sizes))
        if not self.environments:
            return np.ones(tasks)
        env = np.repeat(np.asarray(self.environments), self.sizes)
        counts = np.bincount(env)
        return tasks / (len(set(self.environments)) * counts[env])

    def draw(self, rng: np.random.Generator, shift: float, n: int = 1) -> tuple:
        """``n`` fresh draws of A's and B's per-task chances, shape (n, tasks)."""
        sizes = np.asarray(self.sizes)
        tasks = int(sizes.sum())
        u = np.repeat(rng.normal(0, self.template_sd, (n, len(sizes))), sizes, axis=1)
        w = np.repeat(rng.normal(0, 1, (n, len(sizes))) * np.asarray(self.diff_sds), sizes, axis=1)
        logit_a = self.base + u + rng.normal(0, self.task_sd, (n, tasks))
        logit_b = logit_a + shift + w + rng.normal(0, self.diff_task_sd, (n, tasks))
        return _sigmoid(logit_a), _sigmoid(logit_b)


def hetero_truth(design: HeteroDesign, shift: float, draws: int = 200_000, seed: int = 1) -> float:
    """The expected task-mean difference B - A of the design (Monte Carlo over ``draws``
    studies; the estimand the claim's interval should cover)."""
    rng = np.random.default_rng(seed)
    total = 0.0
    for start in range(0, draws, 20_000):
        pa, pb = design.draw(rng, shift, min(20_000, draws - start))
        total += float(((pb - pa) * design.weights).mean(axis=1).sum())
    return total / draws


def claim_calibration(
    design: HeteroDesign, sims: int, shift: float = 0.3, seed: int = 0, alpha: float = 0.05
) -> dict[str, float]:
    """A single claim's statistics on ``design``: the coverage of its 95% interval (the t
    interval, the sign-flip interval and their union, what a claim on fewer than
    ``FEW_CLUSTERS`` clusters prints) of the true difference at logit ``shift``, and the A/A
    rejection rates at ``alpha`` of the t test, the sign-flip test and the verdict (the larger
    p of the two on few clusters, the t alone otherwise)."""
    from raleval.analysis.stats import FEW_CLUSTERS, sign_flip_interval, sign_flip_p

    truth = hetero_truth(design, shift, seed=seed + 100)
    clusters = design.clusters
    w = design.weights  # the test runs on the weighted differences, as the claims do
    few = len(design.sizes) < FEW_CLUSTERS
    rng = np.random.default_rng(seed)
    cover = {"t": 0, "flip": 0, "claim": 0}
    reject = {"t": 0, "flip": 0, "verdict": 0}
    for _ in range(sims):
        pa, pb = design.draw(rng, shift)
        a, b = w * _task_means(pa[0], 1, rng), w * _task_means(pb[0], 1, rng)
        res = paired_difference(b, a, clusters, alpha)
        t_ok = res.diff.low <= truth <= res.diff.high
        # on 12 or more clusters a claim is the t test's alone (and 2^C flips grow costly)
        flip_ok = False
        if few:
            flip = sign_flip_interval(b - a, clusters, 1 - alpha)
            flip_ok = flip.low <= truth <= flip.high
        cover["t"] += t_ok
        cover["flip"] += flip_ok
        cover["claim"] += (t_ok or flip_ok) if few else t_ok
        # A/A: two samplings of A's episodes on the same tasks
        pa2, _ = design.draw(rng, 0.0)
        x, y = w * _task_means(pa2[0], 1, rng), w * _task_means(pa2[0], 1, rng)
        aa = paired_difference(x, y, clusters, alpha)
        p_flip = sign_flip_p(x - y, clusters) if few else float("nan")
        reject["t"] += aa.p < alpha
        reject["flip"] += p_flip < alpha
        reject["verdict"] += (max(aa.p, p_flip) if few else aa.p) < alpha
    out = {f"coverage_{k}": v / sims for k, v in cover.items()}
    out.update({f"aa_{k}": v / sims for k, v in reject.items()})
    if not few:  # not computed: the claim is the t test's
        out["coverage_flip"] = out["aa_flip"] = float("nan")
    out["truth"] = truth
    return out
