"""Comparing runs: every pair of systems on the tasks they share, with clustered paired tests,
Holm-corrected p-values and minimum detectable differences, and how many tasks and epochs a
study needs (``raleval compare`` and ``raleval power``). The statistics are those of
:mod:`raleval.analysis.stats`; this module only turns stored episodes into their units.

The unit is the task: a task that ran k epochs scores the mean of its k samples, and tasks
that share a cluster (:func:`cluster_of`) are one cluster for the standard errors.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import combinations

import numpy as np

from raleval.analysis.format_failures import DEFAULT_FORMAT_GAP, FormatFailures, format_gap_note
from raleval.analysis.runs import Run, cluster_of
from raleval.analysis.stats import (
    DIFFERENCE_INTERVAL,
    HOLM_INTERVAL,
    MEAN_INTERVAL,
    SCORE_INTERVAL,
    EpochSpread,
    Interval,
    design_effect,
    epoch_spread,
    holm,
    holm_intervals,
    mcnemar_exact,
    mean_interval,
    paired_difference,
    score_interval,
    tasks_for_power,
)


@dataclass
class RunUnits:
    """One run's per-task scores (the metric's mean over the task's epochs)."""

    system: str
    label: str
    samples: dict[str, list[float]]  # task id -> the metric per epoch
    verdicts: dict[str, list[bool]]  # task id -> matched (metric >= threshold) per epoch
    clusters: dict[str, str]  # task id -> cluster

    @property
    def means(self) -> dict[str, float]:
        return {k: float(np.mean(v)) for k, v in self.samples.items()}

    def mean(self) -> Interval:
        ids = sorted(self.samples)
        means = self.means
        values = [means[k] for k in ids]
        # a score in [0, 1] gets the interval that holds near 0 and 1 (docs/statistics.md)
        bounded = all(0.0 <= v <= 1.0 for v in values)
        return (score_interval if bounded else mean_interval)(
            values, [self.clusters[k] for k in ids]
        )

    def spread(self) -> EpochSpread | None:
        return epoch_spread(self.samples, self.verdicts)


def run_units(
    run: Run, threshold: float = 0.5, cluster: str = "auto", metric: str = "f1", label: str = ""
) -> RunUnits:
    """Per-task units of a run's scored episodes (infrastructure failures left out)."""
    samples: dict[str, list[float]] = defaultdict(list)
    for t in sorted(run.scored, key=lambda t: (t.task_id, t.epoch)):
        samples[t.task_id].append(float(t.scores.get(metric, 0.0)))
    return RunUnits(
        system=run.system,
        label=label or str(run.path),
        samples=dict(samples),
        verdicts={k: [x >= threshold for x in v] for k, v in samples.items()},
        clusters={k: cluster_of(run.tasks.get(k), k, cluster) for k in samples},
    )


@dataclass
class PairResult:
    a: int  # index into Comparison.runs
    b: int
    tasks: int
    clusters: int
    mean_a: float
    mean_b: float
    diff: Interval  # A - B, clustered t interval
    diff_unclustered: Interval
    p: float
    p_holm: float
    mdd: float  # minimum detectable difference at ``power``
    diff_holm: Interval | None = None  # A - B at Holm's simultaneous level (holm_intervals)
    a_only: int | None = None  # McNemar on matches, single-epoch pairs only
    b_only: int | None = None
    p_mcnemar: float | None = None


@dataclass
class Comparison:
    runs: list[RunUnits]
    pairs: list[PairResult] = field(default_factory=list)
    alpha: float = 0.05
    power: float = 0.8


def compare_runs(runs: Sequence[RunUnits], alpha: float = 0.05, power: float = 0.8) -> Comparison:
    """Every pair of runs on the tasks both scored: the clustered paired difference, its
    p-value, Holm's adjustment over all pairs, and the minimum detectable difference."""
    out = Comparison(list(runs), alpha=alpha, power=power)
    for i, j in combinations(range(len(runs)), 2):
        a, b = runs[i], runs[j]
        ids = sorted(set(a.samples) & set(b.samples))
        if not ids:
            continue
        ma, mb = a.means, b.means
        xa, xb = [ma[k] for k in ids], [mb[k] for k in ids]
        clusters = [a.clusters[k] for k in ids]
        res = paired_difference(xa, xb, clusters, alpha, power)
        plain = paired_difference(xa, xb, None, alpha, power)
        pair = PairResult(
            i, j, len(ids), res.diff.clusters, float(np.mean(xa)), float(np.mean(xb)),
            res.diff, plain.diff, res.p, float("nan"), res.mdd,
        )  # fmt: skip
        if all(len(a.verdicts[k]) == len(b.verdicts[k]) == 1 for k in ids):
            pair.a_only = sum(a.verdicts[k][0] and not b.verdicts[k][0] for k in ids)
            pair.b_only = sum(b.verdicts[k][0] and not a.verdicts[k][0] for k in ids)
            pair.p_mcnemar = mcnemar_exact(pair.a_only, pair.b_only)
        out.pairs.append(pair)
    for pair, adjusted in zip(out.pairs, holm([p.p for p in out.pairs]), strict=True):
        pair.p_holm = adjusted
    adjusted_intervals = holm_intervals([p.diff for p in out.pairs], [p.p_holm for p in out.pairs])
    for pair, interval in zip(out.pairs, adjusted_intervals, strict=True):
        pair.diff_holm = interval
    return out


@dataclass
class PowerPlan:
    """Tasks needed per epoch count, from a pilot's variance."""

    diff: float
    tasks: int  # the pilot's tasks
    clusters: int
    pilot_epochs: int
    var_between: float  # omega^2: between-task variance of the (true) difference
    var_within: float | None  # sigma_A^2 + sigma_B^2 per sample; None without epochs
    deff: float
    source: str  # how the difference's variance was obtained
    needed: dict[int, int] = field(default_factory=dict)  # epochs -> tasks


def power_plan(
    runs: Sequence[RunUnits],
    diff: float,
    correlation: float = 0.5,
    epochs: Sequence[int] = (1, 2, 3, 5, 10),
    alpha: float = 0.05,
    power: float = 0.8,
) -> PowerPlan:
    """Tasks x epochs needed to detect ``diff`` (Miller, section 5), from one pilot run or two.

    Two runs: the variance of their per-task differences, split into between-task
    (``omega^2``) and between-epoch parts when the runs have several epochs. One run: a second
    system is assumed to have the same variances and per-task ``correlation`` with it (Miller,
    section 4.2: ``Var(A - B) = Var(A) + Var(B) - 2 Cov(A, B)``), so ``omega^2 = 2 (1 - rho)
    Var(x)`` and ``sigma^2`` is twice the pilot's between-epoch variance. Clustering enters as
    the pilot's design effect."""
    first = runs[0]
    if len(runs) >= 2:
        second = runs[1]
        ids = sorted(set(first.samples) & set(second.samples))
        if len(ids) < 2:
            raise ValueError("the two pilot runs share fewer than two tasks")
        ma, mb = first.means, second.means
        d = np.asarray([ma[k] - mb[k] for k in ids])
        sa = first.spread()
        sb = second.spread()
        within = None if sa is None or sb is None else sa.within_var + sb.within_var
        k0 = min(len(first.samples[k]) for k in ids)
        total = float(d.var(ddof=1))
        source = f"paired differences of {first.system} and {second.system}"
    else:
        ids = sorted(first.samples)
        if len(ids) < 2:
            raise ValueError("the pilot run scored fewer than two tasks")
        m = first.means
        d = np.asarray([m[k] for k in ids])
        s = first.spread()
        within = None if s is None else 2 * s.within_var
        k0 = min(len(v) for v in first.samples.values())
        total = 2 * (1 - correlation) * float(d.var(ddof=1))
        source = f"one run ({first.system}), assumed correlation {correlation:g} between systems"
    # the pilot's task-mean variance holds sigma^2 / k0 of epoch noise; the rest is omega^2
    between = total if within is None else max(0.0, total - within / k0)
    clusters = [first.clusters[k] for k in ids]
    deff = design_effect(d, clusters)
    plan = PowerPlan(diff, len(ids), len(set(clusters)), k0, between, within, deff, source)
    for k in epochs if within is not None else (k0,):
        plan.needed[k] = tasks_for_power(
            diff, between, within or 0.0, k, deff, alpha=alpha, power=power
        )
    return plan


def _p(p: float | None) -> str:
    if p is None or p != p:
        return "-"
    return "<0.0001" if p < 1e-4 else f"{p:.4f}"


def render_comparison(cmp: Comparison, letters: Sequence[str]) -> object:
    """Two rich tables: each run's mean with its clustered interval and between-epoch spread,
    then each pair's difference, p-values (raw and Holm) and minimum detectable difference."""
    from rich import box
    from rich.console import Group
    from rich.table import Table

    level = f"{100 * (1 - cmp.alpha):g}%"

    def ci(i: Interval | None, floor: float, sign: str = "") -> str:
        # a t interval over few clusters can pass the ends of F1's range: shown clipped
        if i is None or i.low != i.low:
            return "n/a"
        low, high = max(floor, i.low), min(1.0, i.high)
        return f"[{low:{sign}.3f}, {high:{sign}.3f}]"

    runs = Table(
        title="runs (unit: a task's mean over its epochs)",
        box=box.SIMPLE_HEAD,
        padding=(0, 1),
        show_edge=False,
    )
    for col in ("run", "tasks", "clusters", "mean", f"{level} CI", "epochs", "epoch sd"):
        runs.add_column(col, justify="left" if col == "run" else "right", no_wrap=True)
    runs.add_column("flips", justify="right", no_wrap=True)
    runs.caption = f"CI: the {SCORE_INTERVAL} for scores in [0, 1], else the {MEAN_INTERVAL} "
    runs.caption += "clipped to F1's range; epoch sd: between-epoch "
    runs.caption += "sd of a task's score; flips: share of tasks whose match differs across epochs"
    for letter, r in zip(letters, cmp.runs, strict=True):
        mean, spread = r.mean(), r.spread()
        runs.add_row(
            letter, str(len(r.samples)), str(mean.clusters), f"{mean.estimate:.3f}",
            ci(mean, 0.0),
            str(spread.epochs) if spread else "1",
            f"{spread.within_var**0.5:.3f}" if spread else "-",
            f"{100 * spread.flip_rate:.1f}%" if spread else "-",
        )  # fmt: skip
    pairs = Table(
        title=f"pairs: clustered paired t test, Holm over {len(cmp.pairs)} comparison"
        + ("s" if len(cmp.pairs) != 1 else ""),
        box=box.SIMPLE_HEAD,
        padding=(0, 1),
        show_edge=False,
    )
    columns = ("pair", "tasks", "A - B", f"{level} CI", "Holm CI", "p", "p Holm", "MDD", "McNemar")
    for col in columns:
        pairs.add_column(col, justify="left" if col == "pair" else "right", no_wrap=True)
    for p in cmp.pairs:
        pairs.add_row(
            f"{letters[p.a]}-{letters[p.b]}", str(p.tasks), f"{p.diff.estimate:+.3f}",
            ci(p.diff, -1.0, "+"), ci(p.diff_holm, -1.0, "+"), _p(p.p), _p(p.p_holm),
            "-" if p.mdd != p.mdd else f"{p.mdd:.3f}",
            _p(p.p_mcnemar),
        )  # fmt: skip
    pairs.caption = (
        f"MDD: the smallest true difference this many tasks detect with {100 * cmp.power:g}% "
        f"power at alpha {cmp.alpha:g}; CI: the {DIFFERENCE_INTERVAL} of A - B; Holm CI: its "
        f"{HOLM_INTERVAL} (docs/statistics.md); McNemar: exact, unclustered, on matches "
        "(single-epoch runs only)"
    )
    return Group(runs, pairs)


def verdict_lines(
    cmp: Comparison,
    letters: Sequence[str],
    formats: Sequence[FormatFailures] | None = None,
    format_gap: float = DEFAULT_FORMAT_GAP,
) -> list[str]:
    """One line per pair saying what the test allows one to conclude: which run is better
    (Holm-adjusted p below alpha), or that no difference was detected and how large one could
    have gone unseen (the MDD). With each run's ``formats``, a pair whose format-failure rates
    differ by more than ``format_gap`` gets a line saying so after its verdict."""
    out = []
    for p in cmp.pairs:
        out.append(_verdict(cmp, p, letters))
        note = format_gap_note(formats[p.a], formats[p.b], format_gap) if formats else ""
        if note:
            out.append(f"  {letters[p.a]}-{letters[p.b]}: {note}")
    return out


def _verdict(cmp: Comparison, p: PairResult, letters: Sequence[str]) -> str:
    a, b = letters[p.a], letters[p.b]
    if p.p_holm == p.p_holm and p.p_holm < cmp.alpha:
        better, worse = (a, b) if p.diff.estimate > 0 else (b, a)
        held = _p(p.p_holm) if p.p_holm < 1e-4 else f"{_p(p.p_holm)} < {cmp.alpha:g}"
        return (
            f"verdict {a}-{b}: {better} scores higher than {worse} ({a} - {b} = "
            f"{p.diff.estimate:+.3f}, Holm p {held})"
        )
    unseen = "" if p.mdd != p.mdd else f"; a true difference under {p.mdd:.3f} could go unseen"
    return (
        f"verdict {a}-{b}: no difference detected ({a} - {b} = {p.diff.estimate:+.3f}, Holm p "
        f"{_p(p.p_holm)} >= {cmp.alpha:g}{unseen})"
    )
