"""A study's headline tables, from its stored cells (``raleval study tables``, docs/study.md).

A study folder holds one cell per environment x workflow x model x task source. The tables put
a system (workflow x model) on a row and merge its cells of one **arm**: the generated arm
(the environments' default task sets) or one loaded file (HotpotQA dev, CRAG dev). Per row:
episodes, F1 with its clustered 95% interval (task means as units, clustered by template;
``raleval.analysis.stats``), the share correct, on a loaded file the episodes the rules left
ungraded (``raleval.grading.freetext``), F1 by R-Eval level, the error-type mix, the
episodes that stopped on unparseable output (the taxonomy's stop reason: ReAct's invalid
format, a PAL program that does not parse), and seconds and tokens per episode. F1's interval
is Wilson's on the clustered effective size (``score_interval``): inside [0, 1], and not
[0, 0] for a cell where every task scored 0. For each arm a second table compares systems on
the tasks both ran: the models on each workflow and each workflow against ReAct on each model,
the clustered paired difference with its interval at Holm's simultaneous level, Holm over the
table's pairs, and the minimum detectable difference (``raleval.analysis.stats``,
checked by simulation in ``benchmarks/stats_calibration.py``). The text is deterministic:
docs/study.md holds a copy and a test recomputes it.
"""

from __future__ import annotations

import json
import math
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from raleval.analysis.compare import RunUnits, run_units
from raleval.analysis.demonstrations import COPIED
from raleval.analysis.diagnosis import cause_tables, read_diagnoses
from raleval.analysis.format_failures import (
    DEFAULT_FORMAT_GAP,
    FormatFailures,
    format_failures,
    format_gap_note,
)
from raleval.analysis.runs import Run, find_runs, load_run, pass_at_k, unit_interval
from raleval.analysis.stats import (
    Interval,
    PairedDifference,
    holm,
    holm_intervals,
    holm_level,
    minimum_detectable_difference,
    paired_difference,
    sign_flip_p,
)
from raleval.analysis.taxonomy import BUDGETS
from raleval.records import ErrorType, StopReason, Trajectory
from raleval.store import TIMING

GENERATED = "generated"
DEMONSTRATION_SEED = "with demonstration seed"  # an arm's name: demonstrations drawn again
LEVELS = ("KS", "KU", "KA")
LABELS = [e.value for e in ErrorType]


def arm_of(run: Run) -> str:
    """``generated`` for a cell of the environments' default task sets or a named set, else
    the stem of the task file it ran (``hotpotqa-dev``); a cell run at a matched token budget
    (``max_episode_tokens``) is an arm of its own, ``generated @ N tokens``."""
    config = run.header.config if run.header else {}
    tasks = config.get("tasks")
    budget = (config.get("workflow_options") or {}).get("max_episode_tokens")
    demo = config.get("demonstration_seed")
    # another draw of the demonstrations: an arm of its own, never merged with the first's
    redrawn = "" if demo is None else f" {DEMONSTRATION_SEED} {demo}"
    if not tasks or not str(tasks).endswith((".jsonl", ".json", ".jsonl.gz")):
        if budget is not None:
            return f"{GENERATED} @ {budget} tokens{redrawn}"
        sampled = sampling_of(config)
        if redrawn:
            return f"{GENERATED} ~ {sampled or 'greedy'},{redrawn}"
        return GENERATED if sampled is None else f"{GENERATED} ~ {sampled}"
    name = Path(str(tasks)).name
    return name.split(".", 1)[0]


def sampling_of(config: dict) -> str | None:
    """``temperature 0.7, 3 epochs`` for a cell that samples its model or repeats its tasks
    (run-to-run consistency: an arm of its own, never merged with the greedy cells); ``None``
    for greedy decoding, one epoch."""
    epochs = int(config.get("epochs", 1) or 1)
    temperature = (config.get("workflow_options") or {}).get("temperature")
    if epochs == 1 and not temperature:
        return None
    return f"temperature {temperature or 0}, {epochs} epoch{'s' if epochs > 1 else ''}"


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
        for arm, systems in sorted(
            cells.items(), key=lambda kv: (not kv[0].startswith(GENERATED), kv[0])
        )
    }


def _f1(run: Run, trajs: Iterable[Trajectory]) -> str:
    trajs = list(trajs)
    if not trajs:
        return "-"
    return f"{sum(t.scores.get('f1', 0.0) for t in trajs) / len(trajs):.3f}"


def _row(run: Run, formats: FormatFailures) -> dict[str, str]:
    """One table row of ``run``; ``formats`` is its format failures (the comparisons read
    them too: counted once)."""
    scored = run.scored
    n = len(scored)
    interval = unit_interval(run, scored, lambda t: t.scores.get("f1", 0.0), score=True)
    ci = "n/a" if interval.low != interval.low else f"[{interval.low:.3f}, {interval.high:.3f}]"
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
    # stopped by a limit of the harness (steps, time, tokens or cost, the context window):
    # at matched compute, the budget rather than the workflow ending the episode
    row["at budget"] = str(sum(t.stop_reason in BUDGETS for t in scored))
    # answers that were a demonstration's answer and not the gold (analysis/demonstrations.py)
    row["copied"] = str(sum(t.scores.get(COPIED, 0.0) > 0 for t in scored))
    # the harness's share: model calls cut at max_tokens, unparseable or repeating a call
    row["fmt fail"] = formats.text()
    # of them, the calls cut at max_tokens, and how many of those were looping when cut
    row["cut"] = formats.cut_text()
    row["s/ep"] = f"{sum(t.wall_time_s for t in scored) / max(1, n):.1f}"
    tokens = unit_interval(run, scored, lambda t: t.prompt_tokens + t.completion_tokens)
    row["tokens/ep"] = f"{tokens.estimate:.0f}" if n else "0"
    # cost as tokens, machine-independent, with its interval (a t interval: tokens are no rate),
    # cut at 0: one long episode among short ones widens it past a count's floor
    low = max(0.0, tokens.low)
    ci = "n/a" if tokens.low != tokens.low else f"[{low:.0f}, {tokens.high:.0f}]"
    row["tokens CI"] = ci
    row["calls/ep"] = f"{sum(t.n_llm_calls for t in scored) / max(1, n):.1f}"
    counted = [t.budget_tokens for t in scored if t.budget_tokens is not None]
    row["budget tok/ep"] = f"{sum(counted) / len(counted):.0f}" if counted else "-"
    row["failed"] = str(len(run.results) - n)
    # the share of tasks some epoch / every epoch answered correctly (k = epochs per task)
    passes = pass_at_k(run)
    row["pass@k"] = "-" if passes is None else f"{passes['pass@k']:.3f}"
    row["pass^k"] = "-" if passes is None else f"{passes['pass^k']:.3f}"
    return row


_TAIL = [
    *LABELS, "unparseable", "prog. error", "copied", "fmt fail", "s/ep", "tokens/ep", "tokens CI",
    "calls/ep",
]  # fmt: skip
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


Declared = list[tuple[tuple[str, str], tuple[str, str], str | None]]
System = tuple[str, str]


@dataclass(frozen=True)
class Tested:
    """One comparison of two systems on the tasks both ran (of ``level`` only, when given).
    ``diff`` is the paired difference in F1, A - B; a declared comparison carries its interval
    at Holm's simultaneous level and Holm's p over its family (the design's declared
    comparisons on every arm, :func:`compare_study`), an exploratory one its unadjusted 95%
    interval and raw p. ``p_t`` and ``p_flip`` are the raw clustered t and exact sign-flip p
    (the latter on fewer than ``FEW_CLUSTERS`` clusters); the verdict took the larger. ``mdd``
    is taken at the level the verdict used (:func:`raleval.analysis.stats.holm_level`); inf
    where the sign-flip test cannot reach that level on so few clusters. ``by_env`` is the
    difference on each environment's tasks, ``family`` the size of the Holm family."""

    a: System
    b: System
    level: str | None
    tasks: int
    diff: Interval
    p: float
    mdd: float
    exploratory: bool = False
    p_t: float = float("nan")
    p_flip: float = float("nan")
    family: int = 0
    by_env: tuple[tuple[str, float], ...] = ()

    @property
    def verdict(self) -> str:
        if self.exploratory:
            return "exploratory"
        return "differ" if self.p == self.p and self.p < 0.05 else "inside"


@dataclass(frozen=True)
class _Pair:
    """A comparison's raw test, before its family's adjustment."""

    a: System
    b: System
    level: str | None
    res: PairedDifference
    d: list[float]  # per-task differences, A - B
    clusters: list[str]
    envs: list[str]
    weights: list[float] | None = None  # per task, mean 1, under an estimand that weighs


def _level_of(run: Run, task_id: str) -> str | None:
    task = run.tasks.get(task_id)
    return task.level.value if task is not None else None


def _env_of(run: Run, task_id: str) -> str:
    task = run.tasks.get(task_id)
    return task.domain.split("/", 1)[0] if task is not None else "?"


def copied_tasks(run: Run) -> set[str]:
    """Task ids where some scored episode of ``run`` answered a demonstration's answer."""
    return {t.task_id for t in run.scored if t.scores.get(COPIED, 0.0) > 0}


def _pair(
    systems: dict[System, Run],
    units: dict[System, RunUnits],
    a: System,
    b: System,
    level: str | None,
    drop_copied: bool = False,
    weights: str = "task",
) -> _Pair | None:
    """The paired test of A - B on the tasks both ran (of ``level``); ``drop_copied`` leaves
    out the tasks where either system copied a demonstration's answer. ``weights``
    ``environment`` makes the estimand the unweighted mean of the environments' mean
    differences: task i of environment e weighs ``n / (E n_e)``, and the test runs on the
    weighted differences (a weighted mean is the plain mean of ``w_i d_i`` when the w_i average
    1; its clustered SE is then the linearised one)."""
    if a not in units or b not in units:
        return None
    ua, ub = units[a], units[b]
    ids = sorted(set(ua.samples) & set(ub.samples))
    if level is not None:
        ids = [k for k in ids if _level_of(systems[a], k) == level]
    if drop_copied:
        dropped = copied_tasks(systems[a]) | copied_tasks(systems[b])
        ids = [k for k in ids if k not in dropped]
    if len(ids) < 2:
        return None
    ma, mb = ua.means, ub.means
    d = [ma[k] - mb[k] for k in ids]
    clusters = [str(ua.clusters[k]) for k in ids]
    envs = [_env_of(systems[a], k) for k in ids]
    if weights == "task":
        res = paired_difference([ma[k] for k in ids], [mb[k] for k in ids], clusters)
        return _Pair(a, b, level, res, d, clusters, envs)
    if weights != "environment":
        raise ValueError(f"unknown estimand weights {weights!r}: task or environment")
    count = Counter(envs)
    w = [len(ids) / (len(count) * count[e]) for e in envs]
    res = paired_difference(
        [wi * ma[k] for wi, k in zip(w, ids, strict=True)],
        [wi * mb[k] for wi, k in zip(w, ids, strict=True)],
        clusters,
    )
    if res.p_flip == res.p_flip:  # the sign-flip p of the weighted mean (equal at 0 anyway)
        weighted = [wi * x for wi, x in zip(w, d, strict=True)]
        res = replace(res, p_flip=sign_flip_p(weighted, clusters, 0.0, w))
    return _Pair(a, b, level, res, d, clusters, envs, w)


def _claim_mdd(res: PairedDifference, alpha: float, power: float = 0.8) -> float:
    """The MDD at ``alpha`` (the level the verdict used); inf when the verdict took the
    sign-flip p and C clusters cannot reach ``alpha`` (its smallest p is 2 / 2^C)."""
    d = res.diff
    if d.se != d.se or d.se == 0:
        return float("nan")
    if res.p_flip == res.p_flip and 2.0 ** (1 - d.clusters) >= alpha:
        return float("inf")
    return minimum_detectable_difference(d.se, d.df, alpha, power)


def _weighted(r: _Pair) -> list[float]:
    """The values the test ran on: the differences, times their weights under a weighting."""
    if r.weights is None:
        return r.d
    return [w * x for w, x in zip(r.weights, r.d, strict=True)]


def _adjusted(found: list[_Pair], alpha: float = 0.05) -> list[Tested]:
    """One Holm family over ``found``: each verdict on the more conservative of the t and
    sign-flip p, its interval at Holm's simultaneous level (the union with the sign-flip
    interval where that p counted), its MDD at the level Holm's verdicts used."""
    adjusted = holm([r.res.p_verdict for r in found])
    samples = [
        (_weighted(r), r.clusters, r.weights) if r.res.p_flip == r.res.p_flip else None
        for r in found
    ]
    intervals = holm_intervals([r.res.diff for r in found], adjusted, alpha, samples)
    level = holm_level(adjusted, alpha)
    out = []
    for r, p_holm, interval in zip(found, adjusted, intervals, strict=True):
        by_env: dict[str, list[float]] = defaultdict(list)
        for env, x in zip(r.envs, r.d, strict=True):
            by_env[env].append(x)
        envs = tuple((e, sum(v) / len(v)) for e, v in sorted(by_env.items()))
        out.append(
            Tested(
                r.a, r.b, r.level, len(r.d), interval, p_holm, _claim_mdd(r.res, level),
                p_t=r.res.p, p_flip=r.res.p_flip, family=len(found), by_env=envs,
            )
        )  # fmt: skip
    return out


def _exploratory(
    systems: dict[System, Run], units: dict[System, RunUnits], declared: Declared
) -> list[Tested]:
    """Every pair of :func:`_pairs` the design did not declare: unadjusted, no verdict."""
    asked = {(a, b, lv) for a, b, lv in declared} | {(b, a, lv) for a, b, lv in declared}
    out = []
    for a, b in _pairs(systems):
        r = None if (a, b, None) in asked else _pair(systems, units, a, b, None)
        if r is not None:
            res = r.res
            out.append(
                Tested(a, b, None, len(r.d), res.diff, res.p, res.mdd, exploratory=True,
                       p_t=res.p, p_flip=res.p_flip)
            )  # fmt: skip
    return out


def compare_systems(
    systems: dict[System, Run], declared: Declared | None = None, cluster: str = "auto"
) -> list[Tested]:
    """Each tested pair of one arm on the tasks both ran: the clustered paired difference in
    F1, its interval at Holm's simultaneous level (it holds 0 exactly when the verdict is
    "inside": :func:`raleval.analysis.stats.holm_intervals`), Holm's p over the arm's tested
    pairs, and the minimum difference the shared tasks could detect (80% power).

    Without ``declared`` the pairs of :func:`_pairs` are tested. With a design's declared
    comparisons (A, B, level or None), exactly those are tested, Holm over them (a declared
    pair a system of this arm lacks is left out); every other pair of
    :func:`_pairs` follows, unadjusted (its 95% interval and raw p), marked exploratory. A
    study's claims take one family over every arm instead: :func:`compare_study`."""
    units = {key: run_units(run, cluster=cluster) for key, run in systems.items()}
    tested = [(a, b, None) for a, b in _pairs(systems)] if declared is None else list(declared)
    found = [r for r in (_pair(systems, units, *t) for t in tested) if r is not None]
    out = _adjusted(found)
    if declared is not None:
        out += _exploratory(systems, units, declared)
    return out


def family_arms(arms: dict[str, dict[System, Run]]) -> list[str]:
    """The arms whose declared comparisons are claims: the generated arm and every budget arm
    (a sampled arm measures consistency; a real-data file is not in the design)."""
    return [a for a in arms if a.startswith(GENERATED) and not a.startswith(f"{GENERATED} ~")]


def compare_study(
    arms: dict[str, dict[System, Run]],
    declared: Declared,
    cluster: str,
    drop_copied: bool = False,
    weights: str = "task",
    family: str = "study",
) -> dict[str, list[Tested]]:
    """A study's declared comparisons on every arm of :func:`family_arms`, Holm over all of
    them at once (one family over everything the study claims, issue 62: an arm that repeats
    another's comparison does not get a fresh alpha), then each arm's exploratory pairs.
    ``drop_copied``: the same family on the tasks where neither system copied a
    demonstration's answer (a sensitivity analysis beside the claims). ``weights`` is the
    design's estimand (:func:`_pair`); ``family`` ``arm`` gives each arm a Holm family of its
    own instead (what studies before issue 62 did)."""
    found: list[tuple[str, _Pair]] = []
    units_of = {}
    for arm in family_arms(arms):
        systems = arms[arm]
        units_of[arm] = {key: run_units(run, cluster=cluster) for key, run in systems.items()}
        for t in declared:
            r = _pair(systems, units_of[arm], *t, drop_copied=drop_copied, weights=weights)
            if r is not None:
                found.append((arm, r))
    if family == "study":
        tested = _adjusted([r for _, r in found])
    elif family == "arm":
        by_arm = {arm: _adjusted([r for a, r in found if a == arm]) for arm in units_of}
        tested = [by_arm[arm].pop(0) for arm, _ in found]
    else:
        raise ValueError(f"unknown correction family {family!r}: study or arm")
    out: dict[str, list[Tested]] = {arm: [] for arm in units_of}
    for (arm, _), t in zip(found, tested, strict=True):
        out[arm].append(t)
    if not drop_copied:
        for arm, units in units_of.items():
            out[arm] += _exploratory(arms[arm], units, declared)
    return out


def p_text(p: float) -> str:
    """A p-value as the tables print it: '-' for none, '<0.001', else three places."""
    return "-" if p != p else ("<0.001" if p < 1e-3 else f"{p:.3f}")


def comparison_table(
    tested: list[Tested],
    formats: dict[System, FormatFailures] | None = None,
    format_gap: float = DEFAULT_FORMAT_GAP,
) -> list[str]:
    """Markdown rows of tested pairs (:func:`compare_systems`, :func:`compare_study`): pair,
    shared tasks and clusters, the difference, its interval, p (Holm's, or raw for an
    exploratory pair), the raw t and sign-flip p, MDD, verdict; with ``formats`` (each
    system's format failures), a verdict whose sides' rates differ by more than
    ``format_gap`` says so."""
    rows = []
    for t in tested:
        d = t.diff
        ci = "n/a" if d.low != d.low else f"[{d.low:+.3f}, {d.high:+.3f}]"
        p_shown = p_text(t.p) + (" (raw)" if t.exploratory else "")
        raw = p_text(t.p_t) + ("" if t.p_flip != t.p_flip else f" / {p_text(t.p_flip)}")
        note = format_gap_note(formats[t.a], formats[t.b], format_gap) if formats else ""
        note = f"; {note}" if note else ""
        rows.append(
            f"| {_name(t.a, t.level)} | {_name(t.b, t.level)} | {t.tasks} | {d.clusters} "
            f"| {d.estimate:+.3f} | {ci} | {p_shown} | {raw} | {mdd_text(t.mdd)} "
            f"| {t.verdict}{note} |"
        )
    return rows


def mdd_text(mdd: float) -> str:
    """An MDD as the tables print it: '-' for none, 'any' where no difference is detectable."""
    return "-" if mdd != mdd else ("any" if mdd == float("inf") else f"{mdd:.3f}")


def _name(system: System, level: str | None) -> str:
    return f"{system[0]} / {system[1]}" + (f" ({level})" if level else "")


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


def study_tables(
    folder: Path,
    declared: Declared | None = None,
    cluster: str = "auto",
    timing: Path | None = None,
    format_gap: float = DEFAULT_FORMAT_GAP,
    weights: str = "task",
    family_of: str = "study",
) -> str:
    """The study's tables as Markdown: one per arm, a row per workflow x model, each followed by
    its paired comparisons (:func:`comparison_table`, Holm over that arm's tested pairs; with
    a design's ``declared`` comparisons, those on the generated arm, the rest exploratory).

    A study run under a design (``declared``) compares cost as tokens and model calls per
    episode: its cells ran two episodes at once on a shared machine, so their seconds are left
    out; wall time comes from a timing pass (``timing``: a folder of ``timing.jsonl`` files,
    :func:`timing_table`)."""
    out = []
    arms = load_study(folder)
    family = (
        compare_study(arms, declared, cluster, weights=weights, family=family_of)
        if declared is not None
        else {}
    )
    for arm, systems in arms.items():
        generated = arm.startswith(GENERATED)
        columns = list(COLUMNS[GENERATED if generated else "real"])  # a copy: edited below
        if declared is not None:  # tokens and calls are the cost; the budgets' share beside
            columns = [c for c in columns if c != "s/ep"]
            columns.insert(columns.index("prog. error") + 1, "at budget")
            columns.insert(columns.index("fmt fail") + 1, "cut")
        if any(t.budget_tokens is not None for r in systems.values() for t in r.scored):
            # what the budget counted (new tokens, where it counts them) beside every token
            columns.insert(columns.index("tokens CI") + 1, "budget tok/ep")
        if arm == GENERATED:
            title = "generated task sets"
        elif arm.startswith(f"{GENERATED} ~"):  # sampled, several epochs: consistency
            title = f"generated task sets, sampled: {arm.split('~', 1)[1].strip()}"
            columns = [*columns[:4], "pass@k", "pass^k", *columns[4:]]
        elif generated:  # the matched-compute arm, beside the default budgets' table
            tokens, seed = budget_arm_parts(arm)
            title = f"generated task sets, matched compute: {tokens} per episode"
            if seed:  # another draw of the demonstrations
                title += f", demonstrations drawn with seed {seed}"
        else:
            title = f"real data: {arm}"
        out.append(f"#### {title}\n")
        out.append("| workflow | model | " + " | ".join(columns) + " |")
        out.append("|---|---|" + "---:|" * len(columns))
        formats = {key: format_failures(run.scored, run.header) for key, run in systems.items()}
        for (workflow, model), run in systems.items():
            row = _row(run, formats[workflow, model])
            out.append(f"| {workflow} | {model} | " + " | ".join(row[c] for c in columns) + " |")
        out.append("")
        if arm in family:
            tested = family[arm]
        elif declared is not None and generated:  # a sampled arm: the declared pairs, alone
            tested = compare_systems(systems, declared, cluster)
        else:
            tested = compare_systems(systems)
        rows = comparison_table(tested, formats, format_gap)
        if rows:
            out.append(f"#### {title}: paired comparisons\n")
            out.append(
                "| A | B | tasks | clusters | F1 A - B | Holm 95% CI | p (Holm) "
                "| p t / sign-flip (raw) | MDD | verdict |"
            )
            out.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
            out.extend(rows)
            family_text = (
                f" over the {family[arm][0].family} declared comparisons of every arm"
                if family.get(arm)
                else ""
            )
            out.append(
                f"\n*verdict*: *differ* where Holm's p{family_text} is below 0.05 (its Holm 95% "
                "CI then leaves out 0), else *inside* (no difference detected: one smaller than "
                "the MDD, taken at the level Holm's verdicts used, could go unseen). On fewer "
                "than 12 clusters the verdict takes the larger of the clustered t p and the "
                "exact cluster sign-flip p, and the interval is the union of both tests' "
                "intervals; an MDD of *any*: so few clusters cannot reach that level. A verdict "
                "whose systems' format-failure rates (*fmt fail*: model calls cut at max_tokens, "
                "unparseable or repeating a call) differ by more than "
                f"{100 * format_gap:g} points says so beside it"
            )
            if declared is not None and generated:
                out.append(
                    "\n*exploratory*: a pair the design did not declare: its raw p and "
                    "unadjusted 95% interval, no verdict"
                )
            out.append("")
    if declared is not None:
        out.append(
            "Seconds per episode are not compared from these cells (two episodes at once under "
            "`nice` on a shared machine): cost is tokens and model calls per episode; wall "
            "time comes from a timing pass (`raleval study timing`). *cut*: the model calls "
            "cut at max_tokens, of the cell's calls; in brackets those whose reply was looping "
            "when cut (it ended in two or more copies of one unit, numbers that count up "
            "aside). A loop is the model's, though what let it start may still be the "
            "harness's (a reply nothing stopped after its one call).\n"
        )
        out.extend(cut_cells(folder))
    out.extend(budget_table(arms))
    if timing is not None:
        out.extend(timing_table(timing))
    out.extend(_cause_table(folder))
    return "\n".join(out).rstrip() + "\n"


def _timed_rows(folder: Path) -> Iterator[tuple[str, dict]]:
    """(environment, line) of every timed episode of a timing pass: the lines of each
    ``timing.jsonl`` under ``folder`` that have wall seconds, the environment the folder
    holding the file, as the pass writes them."""
    for log in sorted(folder.rglob(TIMING)):
        for line in log.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            if row.get("wall_time_s") is not None:
                yield log.parent.name, row


def timing_table(folder: Path) -> list[str]:
    """The timing pass's table (``raleval study timing``, every ``timing.jsonl`` under
    ``folder``): per cell, its episodes (run one at a time, interleaved) and the families they
    cover, the median and range of their wall seconds, the load average before them (median
    and highest, to two decimals rounded down), the episodes whose wait for a low load timed
    out, and those whose answer differs from the scored episode's (``-`` where the pass was
    not checked); and where the time went, the shares of the cell's wall seconds spent in
    model calls and in tools (the rest is the harness's own; ``-`` for lines written before
    they said). Empty when there is none."""
    rows: dict[tuple[str, str, str], list[dict]] = {}
    for env, row in _timed_rows(folder):
        rows.setdefault((env, row["workflow"], row["model"]), []).append(row)
    if not rows:
        return []
    out = [
        "#### timing pass: one episode at a time, cells interleaved\n",
        "| env | workflow | model | episodes | families | median s | range s "
        "| median load before | max load before | load wait timed out | answer differs "
        "| in model calls | in tools |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for (env, workflow, model), got in sorted(rows.items()):
        wall = [r["wall_time_s"] for r in got]
        loads = [r["load_before"] for r in got if r.get("load_before") is not None]
        load = _load_text(statistics.median(loads)) if loads else "-"
        top = _load_text(max(loads)) if loads else "-"
        families = {r.get("family") for r in got} - {None}
        checked = [r["matches_scored"] for r in got if r.get("matches_scored") is not None]
        differs = str(sum(not m for m in checked)) if checked else "-"
        timed_out = sum(bool(r.get("load_timed_out")) for r in got)
        out.append(
            f"| {env} | {workflow} | {model} | {len(got)} | {len(families) or '-'} "
            f"| {statistics.median(wall):.1f} | {min(wall):.1f}-{max(wall):.1f} | {load} "
            f"| {top} | {timed_out} | {differs} | {_share(got, 'model_time_s')} "
            f"| {_share(got, 'tool_time_s')} |"
        )
    out.append("")
    return out


def _load_text(load: float) -> str:
    """A load average to two decimals, rounded down: a load of 1.497 under a limit of 1.5
    must not read as the limit."""
    return f"{math.floor(load * 100 + 1e-9) / 100:.2f}"  # 1e-9: 0.29 * 100 is 28.999...


def _share(rows: list[dict], field: str) -> str:
    """``field``'s seconds over the rows' wall seconds, as a percentage; ``-`` where a row
    does not say (a pass written before its lines split the time)."""
    if any(r.get(field) is None for r in rows):
        return "-"
    wall = sum(r["wall_time_s"] for r in rows)
    return f"{100 * sum(r[field] for r in rows) / wall:.0f}%" if wall > 0 else "-"


def budget_arm_parts(arm: str) -> tuple[str, str]:
    """A budget arm's name (:func:`arm_of`) taken apart: its budget as written and the seed its
    demonstrations were drawn again with, or "" (``generated @ 4000 tokens with demonstration
    seed 5`` gives ``("4000 tokens", "5")``)."""
    tokens, _, seed = arm.split("@", 1)[1].strip().partition(f" {DEMONSTRATION_SEED} ")
    return tokens, seed


def budget_of(arm: str) -> int | None:
    """The token budget of a budget arm (``generated @ 4000 tokens``), else None."""
    if not arm.startswith(f"{GENERATED} @ ") or DEMONSTRATION_SEED in arm:
        return None  # a redrawn-demonstrations arm is no point of the sweep
    try:
        return int(arm.split("@", 1)[1].split()[0])
    except ValueError:
        return None


def budget_series(
    arms: dict[str, dict[System, Run]],
) -> dict[str, dict[int, tuple[float, float, float]]]:
    """``workflow/model`` -> budget -> (F1, low, high) over the budget arms: the F1-against-
    budget curve of each system (its interval the tables' Wilson one on family clusters)."""
    out: dict[str, dict[int, tuple[float, float, float]]] = defaultdict(dict)
    for arm, systems in arms.items():
        budget = budget_of(arm)
        if budget is None:
            continue
        for (workflow, model), run in systems.items():
            scored = run.scored
            if not scored:
                continue
            ci = unit_interval(run, scored, lambda t: t.scores.get("f1", 0.0), score=True)
            out[f"{workflow}/{model}"][budget] = (ci.estimate, ci.low, ci.high)
    return dict(out)


# the share of a cell's model calls cut at max_tokens above which ``cut_cells`` names it
CUT_SHARE = 0.05


def cut_cells(folder: Path, share: float = CUT_SHARE) -> list[str]:
    """Markdown: every cell (run directory) of the study with more than ``share`` of its model
    calls cut at max_tokens, with how many of them were looping when cut."""
    over, n = [], 0
    for path in find_runs([folder]):
        run = load_run(path)
        n += 1
        counts = format_failures(run.results, run.header)
        if counts.calls and counts.cut > share * counts.calls:
            over.append(f"- `{path.name}` ({counts.cut_text()})")
    title = f"#### Cells with more than {100 * share:g}% of their model calls cut at max_tokens\n"
    if not over:
        return [title, f"None of the {n} cells.\n"]
    return [title, *over, ""]


def budget_table(arms: dict[str, dict[System, Run]]) -> list[str]:
    """Markdown: F1 with its 95% interval per system (row) and budget (column), for a study
    with two or more budget arms; empty otherwise."""
    series = budget_series(arms)
    budgets = sorted({b for points in series.values() for b in points})
    if len(budgets) < 2:
        return []
    out = [
        "#### F1 against the token budget per episode (budget sweep)\n",
        "| system | " + " | ".join(f"{b} tokens" for b in budgets) + " |",
        "|---|" + "---:|" * len(budgets),
    ]
    for name, points in sorted(series.items()):
        cells = []
        for b in budgets:
            if b not in points:
                cells.append("-")
                continue
            f1, low, high = points[b]
            ci = "" if low != low else f" [{low:.3f}, {high:.3f}]"
            cells.append(f"{f1:.3f}{ci}")
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    out.append("")
    return out


def timed_seconds(folder: Path) -> dict[str, dict[str, list[float]]]:
    """``workflow/model`` -> environment -> the wall seconds of its timing-pass episodes (every
    ``timing.jsonl`` under ``folder``, its environment the folder holding it, as the pass
    writes them), those whose answer differs from the scored episode's left out: they timed
    another episode than the one scored."""
    out: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for env, row in _timed_rows(folder):
        if row.get("matches_scored") is not False:
            out[f"{row['workflow']}/{row['model']}"][env].append(float(row["wall_time_s"]))
    return {name: dict(envs) for name, envs in out.items()}


def timing_points(
    folder: Path, systems: dict[System, Run]
) -> tuple[dict[str, tuple[float, float, float, float]], list[str], dict]:
    """The time-versus-F1 figure's points from a timing pass: per system of the arm the pass
    timed, (mean timed seconds, its 95% interval, the arm's F1), the Pareto front (faster and
    better), and each point's F1 interval and n (the figure's ``extras``).

    The seconds estimate what the F1 does, the mean over the arm's scored tasks: each
    environment's timed mean weighs its share of the system's scored tasks (a pass times a
    different share of each environment's tasks), its interval the weighted combination of the
    environments' t intervals (:func:`raleval.analysis.stats.combine_means`). Environments the
    pass has not timed yet are left out and the weights of the rest renormalised; timed
    episodes of an environment the arm did not score weigh nothing."""
    from raleval.analysis.stats import combine_means, mean_interval

    timed = timed_seconds(folder)
    points, extras = {}, {}
    for (workflow, model), run in systems.items():
        name = f"{workflow}/{model}"
        if name not in timed or not run.scored:
            continue
        share = Counter(_env_of(run, t.task_id) for t in run.scored)
        envs = sorted(e for e in timed[name] if share[e])
        if not envs:
            continue
        total = sum(share[e] for e in envs)
        t = combine_means(
            [mean_interval(timed[name][e]) for e in envs], weights=[share[e] / total for e in envs]
        )
        low, high = (t.low, t.high) if t.low == t.low else (t.estimate, t.estimate)
        f1 = unit_interval(run, run.scored, lambda x: x.scores.get("f1", 0.0), score=True)
        points[name] = (t.estimate, max(0.0, low), high, f1.estimate)
        extras[name] = (f1.low, f1.high, len(run.scored))
    front, best = [], -1.0
    for name, (_, _, _, f1) in sorted(points.items(), key=lambda kv: (kv[1][0], -kv[1][3])):
        if f1 > best:
            front.append(name)
            best = f1
    return points, front, extras
