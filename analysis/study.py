"""A study's headline tables, from its stored cells (``raleval study tables``, docs/study.md).

A study folder holds one cell per environment x workflow x model x task source. The tables put
a system (workflow x model) on a row and merge its cells of one **arm**: the generated arm
(the environments' default task sets) or one loaded file (HotpotQA dev, CRAG dev). Per row:
episodes, F1 with its clustered 95% interval (task means as units, clustered by template;
``raleval.analysis.stats``), the share correct, on a loaded file the episodes the rules left
ungraded (``raleval.grading.freetext``), F1 by R-Eval level, the error-type mix, the
episodes that stopped on unparseable output (the taxonomy's stop reason: ReAct's invalid
format, a PAL program that does not parse), and seconds and tokens per episode. An interval is
shown clipped to [0, 1] (a t interval over few clusters can pass either end; F1 cannot). For
the generated arm a second table compares systems on the tasks both ran: the models on each
workflow and each workflow against ReAct on each model, the clustered paired difference, Holm
over the table's pairs, and the minimum detectable difference (``raleval.analysis.stats``,
checked by simulation in ``benchmarks/stats_calibration.py``). The text is deterministic:
docs/study.md holds a copy and a test recomputes it.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path

from raleval.analysis.compare import run_units
from raleval.analysis.diagnosis import cause_tables, read_diagnoses
from raleval.analysis.runs import Run, find_runs, load_run, unit_interval
from raleval.analysis.stats import holm, paired_difference
from raleval.records import ErrorType, StopReason, Trajectory

GENERATED = "generated"
LEVELS = ("KS", "KU", "KA")
LABELS = [e.value for e in ErrorType]


def arm_of(run: Run) -> str:
    """``generated`` for a cell of the environments' default task sets or a named set, else
    the stem of the task file it ran (``hotpotqa-dev``)."""
    tasks = (run.header.config if run.header else {}).get("tasks")
    if not tasks or not str(tasks).endswith((".jsonl", ".json", ".jsonl.gz")):
        return GENERATED
    name = Path(str(tasks)).name
    return name.split(".", 1)[0]


def merged(runs: list[Run]) -> Run:
    """One run of several cells of a system: their tasks and episodes together."""
    tasks = {k: v for r in runs for k, v in r.tasks.items()}
    results = [t for r in runs for t in r.results]
    attempts = [t for r in runs for t in r.attempts]
    return Run(runs[0].path, runs[0].header, tasks, results, attempts)


def load_study(folder: Path) -> dict[str, dict[tuple[str, str], Run]]:
    """arm -> (workflow, model) -> the system's cells of that arm, merged and rescored."""
    cells: dict[str, dict[tuple[str, str], list[Run]]] = defaultdict(lambda: defaultdict(list))
    for path in find_runs([folder]):
        run = load_run(path)
        run.rescore()
        config = run.header.config if run.header else {}
        key = (str(config.get("workflow", "?")), str(config.get("model", "?")))
        cells[arm_of(run)][key].append(run)
    return {
        arm: {key: merged(runs) for key, runs in sorted(systems.items())}
        for arm, systems in sorted(cells.items(), key=lambda kv: (kv[0] != GENERATED, kv[0]))
    }


def _f1(run: Run, trajs: Iterable[Trajectory]) -> str:
    trajs = list(trajs)
    if not trajs:
        return "-"
    return f"{sum(t.scores.get('f1', 0.0) for t in trajs) / len(trajs):.3f}"


def _row(run: Run) -> dict[str, str]:
    scored = run.scored
    n = len(scored)
    interval = unit_interval(run, scored, lambda t: t.scores.get("f1", 0.0))
    # a t interval over few clusters can pass 0 or 1; F1 cannot: shown clipped
    low, high = max(0.0, interval.low), min(1.0, interval.high)
    ci = "n/a" if interval.low != interval.low else f"[{low:.3f}, {high:.3f}]"
    labels = Counter(t.error_type.value for t in scored if t.error_type)
    levels = defaultdict(list)
    for t in scored:
        task = run.tasks.get(t.task_id)
        if task is not None:
            levels[task.level.value].append(t)
    row = {
        "n": str(n),
        "F1": f"{interval.estimate:.3f}",
        "95% CI": ci,
        "correct": f"{sum(t.scores.get('correct', 0.0) for t in scored) / max(1, n):.3f}",
        # answers the rules could not decide (grading/freetext.py): not correct, not wrong
        "ungraded": str(sum(t.scores.get("ungraded", 0.0) > 0 for t in scored)),
    }
    row.update({lv: _f1(run, levels.get(lv, [])) for lv in LEVELS})
    row.update({lb: f"{100 * labels.get(lb, 0) / max(1, n):.0f}" for lb in LABELS})
    # stopped on output no parser accepted: ReAct's invalid format, PAL's program that does not
    # parse, a planned workflow's plan that is not JSON (the taxonomy's stop reason); apart,
    # PAL's programs that parsed, ran and raised
    unparseable = sum(t.stop_reason is StopReason.unparseable_output for t in scored)
    row["unparseable"] = str(unparseable)
    row["prog. error"] = str(sum(t.stop_reason is StopReason.program_error for t in scored))
    row["s/ep"] = f"{sum(t.wall_time_s for t in scored) / max(1, n):.1f}"
    tokens = sum(t.prompt_tokens + t.completion_tokens for t in scored)
    row["tokens/ep"] = f"{tokens / max(1, n):.0f}"
    row["failed"] = str(len(run.results) - n)
    return row


_TAIL = [*LABELS, "unparseable", "prog. error", "s/ep", "tokens/ep"]
COLUMNS = {  # the generated arm's tasks carry R-Eval levels; a loaded file's need not
    GENERATED: ["n", "F1", "95% CI", "correct", *LEVELS, *_TAIL],
    "real": ["n", "F1", "95% CI", "correct", "ungraded", *_TAIL],
}


def _pairs(systems: dict[tuple[str, str], Run]) -> list[tuple[tuple[str, str], tuple[str, str]]]:
    """The comparisons a study asks: the models on each workflow, and each workflow against
    ReAct on each model (the workflow every model runs)."""
    keys = sorted(systems)
    out = []
    for i, a in enumerate(keys):
        for b in keys[i + 1 :]:
            same_workflow = a[0] == b[0]
            against_react = a[1] == b[1] and "react" in (a[0], b[0])
            if same_workflow or against_react:
                out.append((a, b) if a[0] == b[0] or b[0] != "react" else (b, a))
    return out


def comparison_table(systems: dict[tuple[str, str], Run]) -> list[str]:
    """Markdown rows: each pair of :func:`_pairs` on the tasks both ran, the clustered paired
    difference in F1 (template clusters), its 95% interval, Holm's p over every pair of the
    table, and the minimum difference the shared tasks could detect (80% power)."""
    units = {key: run_units(run) for key, run in systems.items()}
    found = []
    for a, b in _pairs(systems):
        ua, ub = units[a], units[b]
        ids = sorted(set(ua.samples) & set(ub.samples))
        if len(ids) < 2:
            continue
        ma, mb = ua.means, ub.means
        res = paired_difference(
            [ma[k] for k in ids], [mb[k] for k in ids], [ua.clusters[k] for k in ids]
        )
        found.append((a, b, len(ids), res))
    adjusted = holm([r.p for *_, r in found])
    rows = []
    for (a, b, n, res), p_holm in zip(found, adjusted, strict=True):
        d = res.diff
        ci = "n/a" if d.low != d.low else f"[{d.low:+.3f}, {d.high:+.3f}]"
        verdict = "differ" if p_holm == p_holm and p_holm < 0.05 else "inside"
        p_text = "-" if p_holm != p_holm else ("<0.001" if p_holm < 1e-3 else f"{p_holm:.3f}")
        mdd = "-" if res.mdd != res.mdd else f"{res.mdd:.3f}"
        rows.append(
            f"| {a[0]} / {a[1]} | {b[0]} / {b[1]} | {n} | {d.clusters} | {d.estimate:+.3f} "
            f"| {ci} | {p_text} | {mdd} | {verdict} |"
        )
    return rows


def _cause_table(folder: Path) -> list[str]:
    """Markdown lines: the R-Eval label by counterfactual cause over every cell ``raleval
    diagnose`` ran on (docs/diagnosis.md), a row per system, cell and label; none without."""
    out = []
    for path in find_runs([folder]):
        diagnoses = read_diagnoses(path)
        if not diagnoses:
            continue
        [(_, head, rows)] = [t for t in cause_tables(diagnoses) if t[0] == "R-Eval label by cause"]
        if not out:
            out += ["#### why episodes failed: counterfactual replay (`raleval diagnose`)\n"]
            out += [
                "| cell | " + " | ".join(head) + " |",
                "|---|" + "---|" * 2 + "---:|" * (len(head) - 2),
            ]
        for row in sorted(rows, key=lambda r: (r[0], r[1])):
            out.append(f"| {path.name} | " + " | ".join(str(v) for v in row) + " |")
    return [*out, ""] if out else []


def study_tables(folder: Path) -> str:
    """The study's tables as Markdown: one per arm, a row per workflow x model, each followed by
    its paired comparisons (:func:`comparison_table`, Holm over that arm's pairs)."""
    out = []
    for arm, systems in load_study(folder).items():
        columns = COLUMNS[GENERATED if arm == GENERATED else "real"]
        title = "generated task sets" if arm == GENERATED else f"real data: {arm}"
        out.append(f"#### {title}\n")
        out.append("| workflow | model | " + " | ".join(columns) + " |")
        out.append("|---|---|" + "---:|" * len(columns))
        for (workflow, model), run in systems.items():
            row = _row(run)
            out.append(f"| {workflow} | {model} | " + " | ".join(row[c] for c in columns) + " |")
        out.append("")
        rows = comparison_table(systems)
        if rows:
            out.append(f"#### {title}: paired comparisons\n")
            out.append(
                "| A | B | tasks | clusters | F1 A - B | 95% CI | p (Holm) | MDD | verdict |"
            )
            out.append("|---|---|---:|---:|---:|---:|---:|---:|---|")
            out.extend(rows)
            out.append("")
    out.extend(_cause_table(folder))
    return "\n".join(out).rstrip() + "\n"
