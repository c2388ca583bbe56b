"""R-Eval's tables from per-task scores: averages, ranks, and their renderings.

A table has one row per system (workflow + LLM) and one column per task family. Domain and
overall averages are unweighted means over tasks (R-Eval's Table 3: 9 Wikipedia tasks, 3
AMiner tasks, all 12); level averages (KS / KU / KA) per domain likewise. Ranks are computed
per column with the "average" method (ties share the mean of their positions), 1 = best.

A table may carry each cell's interval (``intervals``: clustered t intervals from
``raleval.analysis.runs.per_task_table``); an average's interval combines its families'
(:meth:`RevalTable.average_intervals`), and ``rows(ci=True)`` prints ``mean ±half-width``.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from raleval.analysis.format_failures import FormatFailures
from raleval.analysis.stats import AVERAGE_INTERVAL, SCORE_INTERVAL, Interval, combine_means

# R-Eval's 12 tasks: family id -> (domain, level)
REVAL_TASKS: dict[str, tuple[str, str]] = {
    "1-1": ("wiki", "KS"),
    "1-2": ("wiki", "KS"),
    "2-1": ("wiki", "KU"),
    "2-2": ("wiki", "KU"),
    "2-3": ("wiki", "KU"),
    "3-1": ("wiki", "KA"),
    "3-2": ("wiki", "KA"),
    "3-3": ("wiki", "KA"),
    "3-4": ("wiki", "KA"),
    "1-3": ("aminer", "KS"),
    "2-4": ("aminer", "KU"),
    "3-5": ("aminer", "KA"),
}


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def average_ranks(values: Mapping[str, float], higher_is_better: bool = True) -> dict[str, float]:
    """Rank with ties sharing the mean position (1 = best); NaN values rank last."""

    def key(k: str) -> float:
        v = values[k]
        if v != v:  # NaN
            return float("inf")
        return -v if higher_is_better else v

    order = sorted(values, key=key)
    ranks: dict[str, float] = {}
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and key(order[j + 1]) == key(order[i]):
            j += 1
        for k in order[i : j + 1]:
            ranks[k] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def ordinal(rank: float) -> str:
    if rank != int(rank):
        return f"{rank:g}"
    n = int(rank)
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


@dataclass
class RevalTable:
    """Per-task scores (0-100) per system, with R-Eval's averages and ranks."""

    scores: dict[str, dict[str, float]]  # system -> family -> score
    tasks: dict[str, tuple[str, str]] = field(default_factory=lambda: dict(REVAL_TASKS))
    # system -> US dollars per episode (None: unknown price); a ``usd_per_ep`` column follows
    # the ranks when some system's tokens cost money
    costs: dict[str, float | None] = field(default_factory=dict)
    # system -> family -> the score's interval (same units), when the table was built from runs
    intervals: dict[str, dict[str, Interval]] = field(default_factory=dict)
    # system -> its model calls' format failures (raleval.analysis.format_failures): a
    # ``fmt_fail`` column, the share of calls cut, unparseable or repeated, follows
    format_failures: dict[str, FormatFailures] = field(default_factory=dict)

    @property
    def shows_cost(self) -> bool:
        return any(c for c in self.costs.values())

    @property
    def shows_format(self) -> bool:
        return any(f.calls for f in self.format_failures.values())

    @property
    def systems(self) -> list[str]:
        return list(self.scores)

    @property
    def families(self) -> list[str]:
        present = {f for s in self.scores.values() for f in s}
        return [f for f in self.tasks if f in present] + sorted(present - set(self.tasks))

    def _avg(self, system: str, keep: Callable[[str], bool]) -> float:
        row = self.scores[system]
        return mean([row[f] for f in self.families if f in row and keep(f)])

    def averages(self) -> dict[str, dict[str, float]]:
        """system -> {avg_<domain>, avg_all, <domain>_<level>}"""
        out: dict[str, dict[str, float]] = {}
        present = set(self.families)
        domains = list(dict.fromkeys(d for f, (d, _) in self.tasks.items() if f in present))
        for s in self.systems:
            row: dict[str, float] = {}
            for d in domains:
                row[f"avg_{d}"] = self._avg(s, lambda f, d=d: self.tasks.get(f, ("?",))[0] == d)
                for level in ("KS", "KU", "KA"):
                    if any(self.tasks.get(f) == (d, level) for f in present):
                        row[f"{d}_{level}"] = self._avg(
                            s, lambda f, d=d, lv=level: self.tasks.get(f) == (d, lv)
                        )
            row["avg_all"] = self._avg(s, lambda f: True)
            out[s] = row
        return out

    def average_intervals(self) -> dict[str, dict[str, Interval]]:
        """system -> average column -> its interval: the unweighted mean of independent family
        means (families share no task), combined by :func:`stats.combine_means`."""
        avgs = self.averages()
        out: dict[str, dict[str, Interval]] = {}
        for s, row in avgs.items():
            cells = self.intervals.get(s, {})
            out[s] = {}
            for col in row:
                if col == "avg_all":
                    fams = list(self.families)
                elif col.startswith("avg_"):
                    d = col[4:]
                    fams = [f for f in self.families if self.tasks.get(f, ("?",))[0] == d]
                else:
                    d, level = col.rsplit("_", 1)
                    fams = [f for f in self.families if self.tasks.get(f) == (d, level)]
                parts = [cells[f] for f in fams if f in self.scores[s]]
                if parts and len(parts) == sum(f in self.scores[s] for f in fams):
                    out[s][col] = combine_means(parts)
        return out

    def ranks(self) -> dict[str, dict[str, float]]:
        """system -> {rank_<column>} for every average column."""
        avgs = self.averages()
        columns = next(iter(avgs.values())).keys() if avgs else []
        out: dict[str, dict[str, float]] = {s: {} for s in self.systems}
        for col in columns:
            ranked = average_ranks({s: avgs[s][col] for s in self.systems})
            name = col.replace("avg_", "")
            for s, r in ranked.items():
                out[s][f"rank_{name}"] = r
        return out

    def rows(self, precision: int = 1, ci: bool = False) -> tuple[list[str], list[list[str]]]:
        """Header and body; with ``ci`` every mean reads ``mean ±half-width`` of its 95%
        interval (``±n/a`` where it has none: one task, or one cluster)."""
        avgs, ranks = self.averages(), self.ranks()
        avg_ci = self.average_intervals() if ci else {}
        domains = (
            [k[4:] for k in next(iter(avgs.values())) if k.startswith("avg_") and k != "avg_all"]
            if avgs
            else []
        )
        header = [
            "system",
            *self.families,
            *[f"avg_{d}" for d in domains],
            "avg_all",
            *[f"rank_{d}" for d in domains],
            "rank_all",
            *(["usd_per_ep"] if self.shows_cost else []),
            *(["fmt_fail"] if self.shows_format else []),
        ]

        def cell(value: float, interval: Interval | None) -> str:
            text = f"{value:.{precision}f}"
            if not ci:
                return text
            if interval is None or interval.low != interval.low:
                return text + " ±n/a"
            return f"{text} ±{interval.half_width:.{precision}f}"

        body = []
        for s in self.systems:
            cells = [s]
            fam_ci = self.intervals.get(s, {})
            cells += [
                cell(self.scores[s][f], fam_ci.get(f)) if f in self.scores[s] else "-"
                for f in self.families
            ]
            sys_ci = avg_ci.get(s, {})
            cells += [cell(avgs[s][f"avg_{d}"], sys_ci.get(f"avg_{d}")) for d in domains]
            cells.append(cell(avgs[s]["avg_all"], sys_ci.get("avg_all")))
            cells += [ordinal(ranks[s][f"rank_{d}"]) for d in domains]
            cells.append(ordinal(ranks[s]["rank_all"]))
            if self.shows_cost:
                cost = self.costs.get(s)
                cells.append("-" if cost is None else f"{cost:.6f}")
            if self.shows_format:
                cells.append(self.format_failures.get(s, FormatFailures()).text())
            body.append(cells)
        return header, body

    def to_csv(self, ci: bool = False) -> str:
        header, body = self.rows(ci=ci)
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(body)
        return buf.getvalue()

    def to_markdown(self, ci: bool = False) -> str:
        header, body = self.rows(ci=ci)
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(r) + " |" for r in body]
        return "\n".join(lines) + "\n"

    def to_latex(self, ci: bool = False) -> str:
        header, body = self.rows(ci=ci)

        def esc(t: str) -> str:
            return (
                t.replace("_", r"\_").replace("&", r"\&").replace("%", r"\%").replace("±", r"$\pm$")
            )

        lines = [
            r"\begin{tabular}{l" + "r" * (len(header) - 1) + "}",
            r"\toprule",
            " & ".join(esc(h) for h in header) + r" \\",
            r"\midrule",
        ]
        lines += [" & ".join(esc(c) for c in r) + r" \\" for r in body]
        lines += [r"\bottomrule", r"\end{tabular}"]
        return "\n".join(lines) + "\n"

    def to_rich(self, title: str = "R-Eval table", ci: bool | None = None) -> object:
        """A rich table; with intervals (the default when the table has them) every mean reads
        ``mean ±half-width`` of its clustered 95% interval."""
        from rich.markup import escape
        from rich.table import Table

        ci = bool(self.intervals) if ci is None else ci
        header, body = self.rows(ci=ci)
        body = [[escape(c) for c in r] for r in body]
        if ci:
            title += (
                f" (±: half the width of a family's {SCORE_INTERVAL}, an average's "
                f"{AVERAGE_INTERVAL}; clustered by template)"
            )
        table = Table(title=title)
        for h in header:
            table.add_column(h, justify="left" if h == "system" else "right")
        for r in body:
            table.add_row(*r)
        return table
