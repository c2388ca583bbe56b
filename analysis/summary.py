"""Per-family summary of a run: episodes, accuracy, mean F1/EM, abstentions and the error-type
mix, all read from the per-episode verdicts through ``raleval.analysis.scoring.aggregate``."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

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
    # call-level scores (analysis/calls.py), over the episodes whose task has a gold solution
    call_precision: float | None = None
    call_recall: float | None = None


def summarize(trajectories: Iterable[Trajectory], tasks: dict[str, Task]) -> list[SummaryRow]:
    """Rows per task family plus an ``all`` row (unweighted mean over families)."""
    from raleval.analysis.scoring import aggregate

    groups: dict[str, list[Trajectory]] = defaultdict(list)
    for t in trajectories:
        task = tasks.get(t.task_id)
        groups[task.family if task else "?"].append(t)
    rows: list[SummaryRow] = []
    for family in sorted(groups):
        trajs = groups[family]
        level = next((tasks[t.task_id].level.value for t in trajs if t.task_id in tasks), "?")
        n = len(trajs)
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
            )
        )
    if len(rows) > 1:
        total = SummaryRow("all", "-", n=sum(r.n for r in rows))
        for attr in ("correct", "f1", "em", "missing", "wall_s"):
            setattr(total, attr, sum(getattr(r, attr) for r in rows) / len(rows))
        for r in rows:
            total.labels.update(r.labels)
        for attr in ("call_precision", "call_recall"):
            values = [getattr(r, attr) for r in rows if getattr(r, attr) is not None]
            setattr(total, attr, sum(values) / len(values) if values else None)
        rows.append(total)
    return rows


def _mean_score(trajs: list[Trajectory], key: str) -> float | None:
    values = [t.scores[key] for t in trajs if key in t.scores]
    return sum(values) / len(values) if values else None


def render_table(rows: list[SummaryRow], title: str = "results") -> object:
    """A rich Table of the summary rows."""
    from rich.table import Table

    table = Table(title=title)
    calls = any(r.call_precision is not None for r in rows)
    extra = ("call P", "call R") if calls else ()
    columns = ("family", "level", "n", "correct", "F1", "EM", "missing", *extra, "s/episode")
    for col in (*columns, *LABELS):
        table.add_column(col, justify="left" if col in ("family", "level") else "right")
    for r in rows:
        call_cells = (
            tuple("-" if v is None else f"{100 * v:.1f}" for v in (r.call_precision, r.call_recall))
            if calls
            else ()
        )
        table.add_row(
            r.family,
            r.level,
            str(r.n),
            f"{100 * r.correct:.1f}",
            f"{100 * r.f1:.1f}",
            f"{100 * r.em:.1f}",
            f"{100 * r.missing:.1f}",
            *call_cells,
            f"{r.wall_s:.2f}",
            *(str(r.labels.get(lb, 0)) for lb in LABELS),
        )
    return table
