"""Per-family summary of a run: episodes, accuracy, mean F1/EM, abstentions and the error-type
mix, all read from the per-episode verdicts through ``raleval.analysis.scoring.aggregate``;
mean F1 with the half-width of its 95% interval, clustered by template (task means over epochs
as units: ``raleval.analysis.stats.score_interval``, Wilson on the clustered effective size)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from raleval.analysis.demonstrations import COPIED
from raleval.analysis.runs import cluster_of
from raleval.analysis.scoring import KP_COMPLETENESS, KP_HALLUCINATION, KP_IRRELEVANCE
from raleval.analysis.stats import SCORE_INTERVAL, Interval, score_interval
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
    ungraded: float = 0.0  # share the rules could not decide (grading/freetext.py)
    wall_s: float = 0.0
    labels: Counter[str] = field(default_factory=Counter)
    failed: int = 0  # episodes that failed for infrastructure reasons: not in the scores
    copied: int = 0  # answers copied from a demonstration (analysis/demonstrations.py)
    # call-level scores (analysis/calls.py), over the episodes whose task has a gold solution
    call_precision: float | None = None
    call_recall: float | None = None
    # AgentBoard's progress rate (analysis/progress.py), over episodes whose task stores subgoals
    progress: float | None = None
    family_mean_f1: float | None = None  # the all row: unweighted mean of the families' F1
    # what the scored episodes used and cost (totals): tokens, US dollars at the model's price
    # (None when any episode's price is unknown), compute seconds of a model on this machine
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None
    compute_s: float | None = None
    f1_ci: Interval | None = None  # clustered 95% interval of the mean F1
    # long-form answers (RAGEval's key-point shares; CRUD-RAG's overlap with the reference),
    # over the episodes whose task has key points
    completeness: float | None = None
    kp_hallucination: float | None = None
    irrelevance: float | None = None
    rouge_l: float | None = None
    bleu: float | None = None


def _long_form(row: SummaryRow, trajs: list[Trajectory]) -> None:
    """Fill ``row``'s long-form means from the episodes that have them."""
    row.completeness = _mean_score(trajs, KP_COMPLETENESS)
    row.kp_hallucination = _mean_score(trajs, KP_HALLUCINATION)
    row.irrelevance = _mean_score(trajs, KP_IRRELEVANCE)
    row.rouge_l = _mean_score(trajs, "rouge_l")
    row.bleu = _mean_score(trajs, "bleu")


def _usage(row: SummaryRow, trajs: list[Trajectory]) -> None:
    """Fill ``row``'s token, cost and compute totals from ``trajs``."""
    row.prompt_tokens = sum(t.prompt_tokens for t in trajs)
    row.completion_tokens = sum(t.completion_tokens for t in trajs)
    costs = [t.cost_usd for t in trajs]
    row.cost_usd = sum(c for c in costs if c is not None) if trajs and None not in costs else None
    compute = [t.compute_s for t in trajs if t.compute_s is not None]
    row.compute_s = sum(compute) if compute else None


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
            row := SummaryRow(
                family=family,
                level=level,
                n=n,
                correct=agg.correct,
                f1=agg.f1,
                em=agg.em,
                missing=agg.missing,
                ungraded=agg.ungraded,
                wall_s=sum(t.wall_time_s for t in trajs) / n,
                labels=Counter(t.error_type.value for t in trajs if t.error_type),
                copied=copied_count(trajs),
                call_precision=_mean_score(trajs, "call_precision"),
                call_recall=_mean_score(trajs, "call_recall"),
                progress=_mean_score(trajs, "progress"),
                failed=failed[family],
                f1_ci=_f1_interval(trajs, tasks),
            )
        )
        _usage(row, trajs)
        _long_form(row, trajs)
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
            total.ungraded = agg.ungraded
            total.wall_s = sum(t.wall_time_s for t in everything) / len(everything)
            total.call_precision = _mean_score(everything, "call_precision")
            total.call_recall = _mean_score(everything, "call_recall")
            _usage(total, everything)
            _long_form(total, everything)
            total.f1_ci = _f1_interval(everything, tasks)
            total.progress = _mean_score(everything, "progress")
        for r in rows:
            total.labels.update(r.labels)
            total.copied += r.copied
        scored = [r for r in rows if r.n]
        total.family_mean_f1 = sum(r.f1 for r in scored) / len(scored) if scored else 0.0
        rows.append(total)
    return rows


def _f1_interval(trajs: list[Trajectory], tasks: dict[str, Task]) -> Interval:
    per_task: dict[str, list[float]] = defaultdict(list)
    for t in trajs:
        per_task[t.task_id].append(t.scores.get("f1", 0.0))
    ids = sorted(per_task)
    return score_interval(
        [sum(per_task[k]) / len(per_task[k]) for k in ids],
        [cluster_of(tasks.get(k), k) for k in ids],
    )


def copied_count(trajs: Iterable[Trajectory]) -> int:
    """Episodes whose answer was a demonstration's, not the gold (analysis/demonstrations.py)."""
    return sum(t.scores.get(COPIED, 0.0) > 0 for t in trajs)


def _mean_score(trajs: list[Trajectory], key: str) -> float | None:
    values = [t.scores[key] for t in trajs if key in t.scores]
    return sum(values) / len(values) if values else None


# One line under the label mix: what each of R-Eval's labels means (docs/taxonomy.md)
LABEL_LEGEND = (
    "EM right, from tool evidence; AM right, without it; GE wrong despite evidence; "
    "RE wrong, nothing found (or a budget ran out); TE misuse or unparseable output; "
    "ME model or tool failed; copied: answers that were a demonstration's answer, not the gold"
)
TIME_NOTE = (
    "s/ep: mean wall-clock seconds per episode; episodes overlap (--max-connections), "
    "so a run takes less than n x s/ep; miss: share of answers that abstained"
)


def render_table(rows: list[SummaryRow], title: str = "results") -> object:
    """Two rich tables, each within 80 columns: scores per family (the ``all`` row is the mean
    over episodes; ``fam. mean`` the unweighted mean of the families' F1), then the label mix.
    ``exact`` is the exact-match metric (in the report and exports; the console table leaves it
    out to stay within 80 columns); ``EM`` is only ever the taxonomy class; ``prog.`` is
    AgentBoard's progress rate (shown when the tasks store their subgoals). Scores are
    fractions with three decimals, as in the matrix and the README."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    calls = any(r.call_precision is not None for r in rows)
    progress = any(r.progress is not None for r in rows)
    failed = any(r.failed for r in rows)
    ungraded = any(r.ungraded for r in rows)
    fam_mean = next((r.family_mean_f1 for r in rows if r.family_mean_f1 is not None), None)
    scores = Table(title=title, padding=(0, 1), collapse_padding=True)
    columns = ["family", "level", "n", *(["failed"] if failed else []), "correct", "F1", "±"]
    # "miss": the missing rate (abstentions); exact match is left to the report: with the full
    # word and it the table would pass 80 columns
    columns += ["prog." if progress else "", "miss", "ungr." if ungraded else ""]
    columns += [*(["call P", "call R"] if calls else []), "s/ep"]
    columns = [c for c in columns if c]
    for col in columns:
        scores.add_column(col, justify="left" if col in ("family", "level") else "right")

    def frac(v: float | None) -> str:
        return "-" if v is None else f"{v:.3f}"

    for r in rows:
        cells = [r.family, r.level, str(r.n), *([str(r.failed)] if failed else [])]
        if r.n == 0:  # every episode failed: nothing was scored
            cells += ["-"] * (5 + (2 if calls else 0) + (1 if progress else 0) + int(ungraded))
            scores.add_row(*cells)
            continue
        ci = r.f1_ci
        half = "-" if ci is None or ci.low != ci.low else f"{ci.half_width:.3f}"
        cells += [frac(r.correct), frac(r.f1), half, *([frac(r.progress)] if progress else [])]
        cells += [frac(r.missing), *([frac(r.ungraded)] if ungraded else [])]
        cells += [frac(r.call_precision), frac(r.call_recall)] if calls else []
        cells.append(f"{r.wall_s:.2f}")
        scores.add_row(*cells)
    scores.caption = f"±: half the width of F1's {SCORE_INTERVAL}, clustered by template" + (
        "; ungr.: share the rules could not decide (not correct)" if ungraded else ""
    )
    if fam_mean is not None:
        scores.caption = (
            f"all: mean over episodes; mean of family F1 {fam_mean:.3f}; {scores.caption}"
        )
    mix = Table(title="error types (R-Eval taxonomy)", padding=(0, 1), collapse_padding=True)
    mix.add_column("family")
    for lb in [*LABELS, "copied"]:
        mix.add_column(lb, justify="right")
    for r in rows:
        mix.add_row(r.family, *(str(r.labels.get(lb, 0)) for lb in LABELS), str(r.copied))
    # the notes as lines of their own, not captions: a caption wraps to its table's width
    parts = [scores, Text(TIME_NOTE)]
    long_form = long_form_table(rows)
    if long_form is not None:
        parts += [long_form, Text(LONG_FORM_NOTE)]
    parts += [mix, Text(LABEL_LEGEND)]
    cost = cost_table(rows)
    return Group(*parts) if cost is None else Group(*parts, cost)


LONG_FORM_NOTE = (
    "complete / halluc. / irrel.: shares of the key points the answer states, contradicts, "
    "leaves out (RAGEval); correct: complete >= 0.8 and none contradicted; F1, ROUGE-L, BLEU: "
    "against the reference text (docs/longform.md)"
)


def long_form_table(rows: list[SummaryRow]) -> object | None:
    """RAGEval's key-point shares beside F1 (and CRUD-RAG's ROUGE-L and BLEU where scored)
    for the families with long-form answers; None when there are none."""
    from rich.table import Table

    shown = [r for r in rows if r.n and r.completeness is not None]
    if not shown:
        return None
    if any(r.completeness is None for r in rows if r.n and r.family != "all"):
        shown = [r for r in shown if r.family != "all"]  # its other columns mix in short answers
    extra = [("ROUGE-L", "rouge_l"), ("BLEU", "bleu")]
    extra = [(h, k) for h, k in extra if any(getattr(r, k) is not None for r in shown)]
    table = Table(title="long-form answers (key points)", padding=(0, 1), collapse_padding=True)
    columns = ["family", "n", "correct", "complete", "halluc.", "irrel.", "F1"]
    for col in [*columns, *(h for h, _ in extra)]:
        table.add_column(col, justify="left" if col == "family" else "right")

    def frac(v: float | None) -> str:
        return "-" if v is None else f"{v:.3f}"

    for r in shown:
        cells = [r.family, str(r.n), frac(r.correct), frac(r.completeness)]
        cells += [frac(r.kp_hallucination), frac(r.irrelevance), frac(r.f1)]
        cells += [frac(getattr(r, k)) for _, k in extra]
        table.add_row(*cells)
    return table


def usd(value: float | None) -> str:
    """US dollars to the millionth (a token at $1 per million tokens)."""
    return "-" if value is None else f"{value:.6f}"


def cost_table(rows: list[SummaryRow]) -> object | None:
    """Tokens and what they cost per family (totals and per episode), with the compute
    seconds of a model on this machine; None when no episode recorded a cost."""
    from rich.table import Table

    shown = [r for r in rows if r.n]
    if not any(r.cost_usd is not None or r.compute_s is not None for r in shown):
        return None
    compute = any(r.compute_s is not None for r in shown)
    table = Table(title="tokens and cost", padding=(0, 1), collapse_padding=True)
    columns = ["family", "n", "tokens in", "tokens out", "USD", "USD/ep"]
    columns += ["compute s/ep"] if compute else []
    for col in columns:
        table.add_column(col, justify="left" if col == "family" else "right")
    for r in shown:
        per_ep = None if r.cost_usd is None else r.cost_usd / r.n
        cells = [r.family, str(r.n), str(r.prompt_tokens), str(r.completion_tokens)]
        cells += [usd(r.cost_usd), usd(per_ep)]
        if compute:
            cells.append("-" if r.compute_s is None else f"{r.compute_s / r.n:.3f}")
        table.add_row(*cells)
    table.caption = "USD = (in x price_in + out x price_out) / 1M"
    return table
