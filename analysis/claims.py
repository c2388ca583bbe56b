"""A study's claims, written from its declared comparisons only (issue 48: the README's claims
cite declared comparisons, and every number in them comes from the stored cells).

``raleval study claims STUDY --design FILE`` prints one sentence per comparison the design
declared, arm by arm (the default budgets, then each matched-compute arm that ran the pair):
which system scores higher when Holm's verdict says they differ, "no difference detected"
with the minimum detectable difference when it does not, and, on the default arm, the declared
comparisons that have no data yet. The numbers are those of ``raleval study tables --design``
(:func:`raleval.analysis.study.compare_systems`): the paired difference in F1 on the tasks
both systems ran, its interval at Holm's simultaneous level, Holm's p. Nothing else is
claimed: a pair the design did not declare is exploratory and is never written here.
"""

from __future__ import annotations

from pathlib import Path

from raleval.analysis.design import StudyDesign
from raleval.analysis.format_failures import DEFAULT_FORMAT_GAP, format_failures, format_gap_note
from raleval.analysis.runs import Run
from raleval.analysis.study import (
    GENERATED,
    System,
    Tested,
    budget_arm_parts,
    compare_study,
    copied_tasks,
    load_study,
    p_text,
)

WORKFLOWS = {
    "react": "ReAct",
    "function_calling": "function calling",
    "pal": "PAL",
    "dfsdt": "DFSDT",
    "direct": "`direct` (no tools)",
    "planned": "`planned`",
}


def _workflow(name: str) -> str:
    return WORKFLOWS.get(name, f"`{name}`")


def _model(name: str) -> str:
    return f"`{name}`"


def _sides(a: System, b: System) -> tuple[str, str, str]:
    """Subject, object and what they share: "ReAct", "`direct` (no tools)", " on `model`"."""
    if a[1] == b[1]:
        return _workflow(a[0]), _workflow(b[0]), f" on {_model(a[1])}"
    if a[0] == b[0]:
        return f"{_workflow(a[0])} on {_model(a[1])}", f"on {_model(b[1])}", ""
    return f"{_workflow(a[0])} on {_model(a[1])}", f"{_workflow(b[0])} on {_model(b[1])}", ""


def _arm_tasks(systems: dict[System, Run]) -> set[str]:
    """The task ids any cell of an arm holds."""
    return {k for run in systems.values() for k in run.tasks}


def progress(systems: dict[System, Run]) -> dict[System, str]:
    """For each system of an arm that has answered fewer of the arm's tasks than the arm holds
    (a cell stored partial, or cells not yet run): "12 of the arm's 80 tasks so far"."""
    arm_tasks = _arm_tasks(systems)
    out = {}
    for system, run in systems.items():
        done = {t.task_id for t in run.results} & arm_tasks
        if len(done) < len(arm_tasks):
            out[system] = f"{len(done)} of the arm's {len(arm_tasks)} tasks so far"
    return out


def _p_detail(t: Tested) -> str:
    """The raw p-values a verdict on few clusters took the larger of."""
    if t.p_flip != t.p_flip:
        return ""
    return f"; before correction t p {p_text(t.p_t)}, sign-flip p {t.p_flip:.4f}"


def _by_env(t: Tested) -> str:
    if len(t.by_env) < 2:
        return ""
    return "; by environment " + ", ".join(f"{env} {x:+.3f}" for env, x in t.by_env)


def claim(t: Tested, unfinished: dict[System, str] | None = None, note: str = "") -> str:
    """One declared comparison as a sentence; its numbers are the comparison table's row. A
    system in ``unfinished`` (:func:`progress`) says how far it is (the comparison then runs on
    the tasks both answered). On few clusters the raw t and sign-flip p follow Holm's; on
    several environments, the difference on each environment's tasks (unweighted means).
    ``note`` follows the sentence (the sides' format failures,
    :func:`raleval.analysis.format_failures.format_gap_note`)."""
    return _claim(t, unfinished) + (f" Caution: {note}." if note else "")


def _claim(t: Tested, unfinished: dict[System, str] | None) -> str:
    d = t.diff
    level = f", {t.level} tasks only" if t.level else ""
    size = f"{t.tasks} tasks, {d.clusters} clusters{level}"
    for system in (t.a, t.b):
        if unfinished and system in unfinished:
            size += f"; {_workflow(system[0])} on {_model(system[1])}: {unfinished[system]}"
    size += _p_detail(t) + _by_env(t)
    p = p_text(t.p)
    if t.verdict == "differ":
        first, second = (t.a, t.b) if d.estimate > 0 else (t.b, t.a)
        subject, obj, shared = _sides(first, second)
        sign = 1 if d.estimate > 0 else -1
        low, high = sorted((sign * d.low, sign * d.high))
        return (
            f"{subject} scores higher than {obj}{shared}: F1 +{abs(d.estimate):.3f} "
            f"[{low:+.3f}, {high:+.3f}], Holm p {p} ({size})."
        )
    subject, obj, shared = _sides(t.a, t.b)
    obj = obj.removeprefix("on ")
    interval = "" if d.low != d.low else f" [{d.low:+.3f}, {d.high:+.3f}]"
    if t.mdd == float("inf"):
        mdd = f"; {d.clusters} clusters cannot reach Holm's level: no difference could be seen"
    else:
        mdd = "" if t.mdd != t.mdd else f"; a difference below {t.mdd:.3f} could go unseen"
    return (
        f"No difference detected between {subject} and {obj}{shared}: F1 {d.estimate:+.3f}"
        f"{interval}, Holm p {p} ({size}{mdd})."
    )


def _without_copies(t: Tested, clean: Tested | None, dropped: int) -> str:
    """The claim's numbers on the tasks where neither system copied a demonstration."""
    if dropped == 0:
        return ""
    tasks = f"{dropped} task" + ("" if dropped == 1 else "s")
    if clean is None:
        return f" Without the {tasks} either copied a demonstration's answer on: too few left."
    d = clean.diff
    interval = "" if d.low != d.low else f" [{d.low:+.3f}, {d.high:+.3f}]"
    return (
        f" Without the {tasks} either copied a demonstration's answer on: F1 "
        f"{d.estimate:+.3f}{interval}, Holm p {p_text(clean.p)}, {clean.verdict}."
    )


def _family(folder: Path, design: StudyDesign):
    """The stored arms, the declared comparisons tested as one Holm family, the same without
    copied answers, and the arms in the order claims list them (the stored arms, then the
    design's arms that have not run)."""
    arms = load_study(folder)
    options = {"weights": design.estimand.weights, "family": design.family}
    family = compare_study(arms, design.declared, design.cluster, **options)
    clean = compare_study(arms, design.declared, design.cluster, drop_copied=True, **options)
    # the arms the design declares: the default budgets' and one per budget of its sweep
    planned = [GENERATED] if design.default_arm else []
    planned += [f"{GENERATED} @ {b} tokens" for b in design.budgets]
    order = [
        arm
        for arm in [*arms, *(a for a in planned if a not in arms)]
        if arm in family or arm in planned  # real-data arms are not in the design
    ]
    return arms, family, clean, planned, order


def _family_line(family: dict[str, list[Tested]], clean: dict[str, list[Tested]]) -> str:
    size = sum(1 for tested in family.values() for t in tested if not t.exploratory)
    arms = sum(1 for v in family.values() if any(not t.exploratory for t in v))
    return (
        f"One correction family: the {size} declared comparisons tested across {arms} arm(s), "
        f"Holm at 0.05 (without copied answers: {sum(len(v) for v in clean.values())})."
    )


def study_claims(
    folder: Path,
    design: StudyDesign,
    design_name: str,
    format_gap: float = DEFAULT_FORMAT_GAP,
) -> str:
    """Markdown: the declared comparisons' verdicts, arm by arm, each a sentence of
    :func:`claim` followed by the same comparison without the copied episodes' tasks; on the
    default arm, the declared comparisons without data yet. Every verdict is Holm's over one
    family, the declared comparisons of every arm that ran them (:func:`compare_study`); the
    last line names it and its size."""
    declared = design.declared
    arms, family, clean, planned, order = _family(folder, design)
    out = [
        f"The {len(declared)} comparisons {design_name} declares: F1, paired on the tasks both "
        f"systems ran, clustered by {design.cluster}; every verdict is Holm's over one family, "
        "the declared comparisons of every arm, each interval Holm's simultaneous 95%. On fewer "
        "than 12 clusters a verdict takes the larger of the t and the exact cluster sign-flip p "
        "(its interval the union of both tests'). Each minimum detectable difference is at the "
        "level Holm's verdicts used; each claim is repeated without the tasks where either "
        "system copied a demonstration's answer (the same comparisons, their own Holm family).",
        "",
    ]
    for arm in order:
        systems = arms.get(arm, {})
        tested = [t for t in family.get(arm, []) if not t.exploratory]
        cleaned = {(t.a, t.b, t.level): t for t in clean.get(arm, [])}
        found = {(t.a, t.b, t.level) for t in tested}
        # a declared comparison a declared arm cannot test yet: a system without episodes, or
        # fewer than two shared tasks
        missing = [c for c in declared if c not in found] if arm in planned else []
        if not tested and not missing:
            continue
        title = "At each workflow's default budgets" if arm == GENERATED else budget_title(arm)
        out.append(f"{title}:")
        out.append("")
        unfinished = progress(systems)
        formats = {k: format_failures(run.scored, run.header) for k, run in systems.items()}
        for t in tested:
            key = (t.a, t.b, t.level)
            dropped = len(_copied_shared(systems, t))
            note = format_gap_note(formats[t.a], formats[t.b], format_gap)
            out.append(
                f"- {claim(t, unfinished, note)}{_without_copies(t, cleaned.get(key), dropped)}"
            )
        for a, b, level in missing:
            subject, obj, shared = _sides(a, b)
            level_text = f" ({level} tasks)" if level else ""
            out.append(
                f"- Not yet run: {subject} against {obj.removeprefix('on ')}{shared}{level_text}."
            )
        out.append("")
    out.append(_family_line(family, clean))
    return "\n".join(out).rstrip() + "\n"


def _column(arm: str) -> str:
    """A table column's title: ``default``, ``1000``, ``4000, demos seed 5``."""
    if arm == GENERATED:
        return "default"
    tokens, seed = budget_arm_parts(arm)
    tokens = tokens.removesuffix(" tokens")
    return f"{tokens}, demos seed {seed}" if seed else tokens


def _row(a: System, b: System, level: str | None) -> str:
    subject, obj, shared = _sides(a, b)
    level_text = f", {level} tasks" if level else ""
    return f"{subject} − {obj.removeprefix('on ')}{shared}{level_text}"


def _cell(t: Tested | None, unfinished: dict[System, str], arm_tasks: int) -> str:
    if t is None:
        return "not run"
    if t.a in unfinished or t.b in unfinished:
        return _cell(t, {}, arm_tasks) + f"; {t.tasks} of {arm_tasks} tasks so far"
    if t.mdd != t.mdd:
        mdd = ""
    else:
        mdd = " (MDD none)" if t.mdd == float("inf") else f" (MDD {t.mdd:.2f})"
    if t.verdict == "differ":
        return f"**{t.diff.estimate:+.3f}**, p {p_text(t.p)}"
    return f"{t.diff.estimate:+.3f}, p {p_text(t.p)}{mdd}"


def study_claims_table(
    folder: Path,
    design: StudyDesign,
    design_name: str,
    format_gap: float = DEFAULT_FORMAT_GAP,
) -> str:
    """The claims of :func:`study_claims` as one table, for a page that has no room for a
    sentence per comparison and arm (the README): a row per declared comparison, a column per
    arm, each cell the paired F1 difference A - B and Holm's p from the same family, bold where
    the verdict is that they differ, else with the minimum detectable difference; then how many
    claims carry a format-failure caution and how many verdicts change without the copied
    answers' tasks. The sentences, intervals and per-environment differences are
    :func:`study_claims`'s."""
    arms, family, clean, planned, order = _family(folder, design)
    shown = [a for a in order if any(not t.exploratory for t in family.get(a, []))]
    shown += [a for a in order if a in planned and a not in shown]
    header = ["comparison (A − B)", *(_column(a) for a in shown)]
    out = [
        f"The {len(design.declared)} comparisons {design_name} declares, at each budget of "
        "tokens per episode: the paired difference in F1 (A − B, each environment weighed as "
        f"the design's estimand says), clustered by {design.cluster}, and Holm's p over one "
        "family (every comparison of every arm; bold: they differ; else the minimum "
        "detectable difference at Holm's level; -: a comparison the arm does not run).",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
    ]
    by_arm = {
        arm: {(t.a, t.b, t.level): t for t in family.get(arm, []) if not t.exploratory}
        for arm in shown
    }
    unfinished = {arm: progress(arms.get(arm, {})) for arm in shown}
    arm_tasks = {arm: len(_arm_tasks(arms.get(arm, {}))) for arm in shown}
    for key in design.declared:
        cells = [
            _cell(by_arm[arm].get(key), unfinished[arm], arm_tasks[arm])
            if arm in planned or key in by_arm[arm]
            else "-"  # an arm that runs some systems only (a second draw of demonstrations)
            for arm in shown
        ]
        if all(c in ("not run", "-") for c in cells):
            continue
        out.append("| " + " | ".join([_row(*key), *cells]) + " |")
    cautions = flips = total = 0
    for arm in shown:
        systems = arms.get(arm, {})
        formats = {k: format_failures(run.scored, run.header) for k, run in systems.items()}
        cleaned = {(t.a, t.b, t.level): t for t in clean.get(arm, [])}
        for key, t in by_arm[arm].items():
            total += 1
            cautions += bool(format_gap_note(formats[t.a], formats[t.b], format_gap))
            other = cleaned.get(key)
            flips += other is not None and other.verdict != t.verdict
    out += [
        "",
        f"In {cautions} of the {total} claims the two sides' shares of calls with a format "
        f"failure differ by more than {format_gap * 100:.0f} points (docs/study.md's sentences "
        "say of which kind); without the tasks where either side copied a demonstration's "
        f"answer, {flips} of the {total} verdicts change.",
        "",
        _family_line(family, clean),
    ]
    return "\n".join(out) + "\n"


def budget_title(arm: str) -> str:
    """``At matched compute, 4000 tokens per episode ...`` for a budget arm, with the
    demonstrations' seed where the arm drew them again."""
    tokens, seed = budget_arm_parts(arm)
    again = f", the demonstrations drawn again with seed {seed}" if seed else ""
    return f"At matched compute, {tokens} per episode for every workflow{again}"


def _copied_shared(systems: dict[System, Run], t: Tested) -> set[str]:
    """The tasks of comparison ``t`` where either system copied a demonstration's answer."""
    copied = copied_tasks(systems[t.a]) | copied_tasks(systems[t.b])
    shared = {x.task_id for x in systems[t.a].scored} & {x.task_id for x in systems[t.b].scored}
    if t.level is not None:
        shared = {k for k in shared if _level(systems[t.a], k) == t.level}
    return copied & shared


def _level(run: Run, task_id: str) -> str | None:
    task = run.tasks.get(task_id)
    return task.level.value if task is not None else None
