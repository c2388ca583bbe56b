"""Per-family summary of a run: episodes, accuracy, mean F1/EM, abstentions and the error-type
mix, all read from the per-episode verdicts through ``raleval.analysis.scoring.aggregate``."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from raleval.failures import failure_cause, latest_attempts
from raleval.records import ErrorType, Task, Trajectory

LABELS = [e.value for e in ErrorType]


@dataclass
class SummaryRow:
    family: str
    level: str
    n: int = 0
    correct: float = 0.0
    f1: float = 0.0
    em: float = 0.0
    missing: float = 0.0
    wall_s: float = 0.0
    labels: Counter[str] = field(default_factory=Counter)
    failed: int = 0  # episodes that failed for infrastructure reasons: not in the scores
    # call-level scores (analysis/calls.py), over the episodes whose task has a gold solution
    call_precision: float | None = None
    call_recall: float | None = None
    # AgentBoard's progress rate (analysis/progress.py), over episodes whose task stores subgoals
    progress: float | None = None
    family_mean_f1: float | None = None  # the all row: unweighted mean of the families' F1


def summarize(trajectories: Iterable[Trajectory], tasks: dict[str, Task]) -> list[SummaryRow]:
    """Rows per task family plus an ``all`` row: the mean over episodes, as in the report
    (``family_mean_f1`` holds the unweighted mean over families).

    Only the last attempt per (task, epoch) counts, and episodes that failed for
    infrastructure reasons are left out of the scores and counted in ``failed``."""
    from raleval.analysis.scoring import aggregate

    groups: dict[str, list[Trajectory]] = defaultdict(list)
    failed: Counter[str] = Counter()
    for t in latest_attempts(trajectories):
        task = tasks.get(t.task_id)
        family = task.family if task else "?"
        if failure_cause(t) is not None:
            failed[family] += 1
            groups.setdefault(family, [])
        else:
            groups[family].append(t)
    rows: list[SummaryRow] = []
    for family in sorted(groups):
        trajs = groups[family]
        level = next((t.level.value for t in tasks.values() if t.family == family), "?")
        n = len(trajs)
        if n == 0:
            rows.append(SummaryRow(family=family, level=level, failed=failed[family]))
            continue
        agg = aggregate(trajs)["all"]
        rows.append(
            SummaryRow(
                family=family,
                level=level,
                n=n,
                correct=agg.correct,
                f1=agg.f1,
                em=agg.em,
                missing=agg.missing,
                wall_s=sum(t.wall_time_s for t in trajs) / n,
                labels=Counter(t.error_type.value for t in trajs if t.error_type),
                call_precision=_mean_score(trajs, "call_precision"),
                call_recall=_mean_score(trajs, "call_recall"),
                progress=_mean_score(trajs, "progress"),
                failed=failed[family],
            )
        )
    if len(rows) > 1:
        everything = [t for g in groups.values() for t in g]
        total = SummaryRow("all", "-", n=len(everything), failed=sum(failed.values()))
        if everything:
            agg = aggregate(everything)["all"]
            total.correct, total.f1, total.em, total.missing = (
                agg.correct,
                agg.f1,
                agg.em,
                agg.missing,
            )
            total.wall_s = sum(t.wall_time_s for t in everything) / len(everything)
            total.call_precision = _mean_score(everything, "call_precision")
            total.call_recall = _mean_score(everything, "call_recall")
            total.progress = _mean_score(everything, "progress")
        for r in rows:
            total.labels.update(r.labels)
        scored = [r for r in rows if r.n]
        total.family_mean_f1 = sum(r.f1 for r in scored) / len(scored) if scored else 0.0
        rows.append(total)
    return rows


def _mean_score(trajs: list[Trajectory], key: str) -> float | None:
    values = [t.scores[key] for t in trajs if key in t.scores]
    return sum(values) / len(values) if values else None


def render_table(rows: list[SummaryRow], title: str = "results") -> object:
    """Two rich tables, each within 80 columns: scores per family (the ``all`` row is the mean
    over episodes; ``fam. mean`` the unweighted mean of the families' F1), then the label mix.
    ``exact`` is the exact-match metric; ``EM`` is only ever the taxonomy class; ``prog.`` is
    AgentBoard's progress rate (shown when the tasks store their subgoals)."""
    from rich.console import Group
    from rich.table import Table

    calls = any(r.call_precision is not None for r in rows)
    progress = any(r.progress is not None for r in rows)
    failed = any(r.failed for r in rows)
    fam_mean = next((r.family_mean_f1 for r in rows if r.family_mean_f1 is not None), None)
    scores = Table(title=title, padding=(0, 1), collapse_padding=True)
    columns = ["family", "level", "n", *(["failed"] if failed else []), "correct", "F1"]
    columns += ["prog." if progress else "", "exact", "missing"]
    columns += [*(["call P", "call R"] if calls else []), "s/ep"]
    columns = [c for c in columns if c]
    for col in columns:
        scores.add_column(col, justify="left" if col in ("family", "level") else "right")

    def pct(v: float | None) -> str:
        return "-" if v is None else f"{100 * v:.1f}"

    for r in rows:
        cells = [r.family, r.level, str(r.n), *([str(r.failed)] if failed else [])]
        if r.n == 0:  # every episode failed: nothing was scored
            cells += ["-"] * (5 + (2 if calls else 0) + (1 if progress else 0))
            scores.add_row(*cells)
            continue
        cells += [pct(r.correct), pct(r.f1), *([pct(r.progress)] if progress else [])]
        cells += [pct(r.em), pct(r.missing)]
        cells += [pct(r.call_precision), pct(r.call_recall)] if calls else []
        cells.append(f"{r.wall_s:.2f}")
        scores.add_row(*cells)
    if fam_mean is not None:
        scores.caption = f"all: mean over episodes; mean of family F1 {100 * fam_mean:.1f}"
    mix = Table(title="error types (R-Eval taxonomy)", padding=(0, 1), collapse_padding=True)
    mix.add_column("family")
    for lb in LABELS:
        mix.add_column(lb, justify="right")
    for r in rows:
        mix.add_row(r.family, *(str(r.labels.get(lb, 0)) for lb in LABELS))
    return Group(scores, mix)
