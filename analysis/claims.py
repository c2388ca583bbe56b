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
    compare_systems,
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


def progress(systems: dict[System, Run]) -> dict[System, str]:
    """For each system of an arm that has answered fewer of the arm's tasks than the arm holds
    (a cell stored partial, or cells not yet run): "12 of the arm's 80 tasks so far"."""
    arm_tasks = {k for run in systems.values() for k in run.tasks}
    out = {}
    for system, run in systems.items():
        done = {t.task_id for t in run.results} & arm_tasks
        if len(done) < len(arm_tasks):
            out[system] = f"{len(done)} of the arm's {len(arm_tasks)} tasks so far"
    return out


def claim(t: Tested, unfinished: dict[System, str] | None = None, note: str = "") -> str:
    """One declared comparison as a sentence; its numbers are the comparison table's row. A
    system in ``unfinished`` (:func:`progress`) says how far it is (the comparison then runs on
    the tasks both answered); ``note`` follows the sentence (the sides' format failures,
    :func:`raleval.analysis.format_failures.format_gap_note`)."""
    return _claim(t, unfinished) + (f" Caution: {note}." if note else "")


def _claim(t: Tested, unfinished: dict[System, str] | None) -> str:
    d = t.diff
    level = f", {t.level} tasks only" if t.level else ""
    size = f"{t.tasks} tasks, {d.clusters} clusters{level}"
    for system in (t.a, t.b):
        if unfinished and system in unfinished:
            size += f"; {_workflow(system[0])} on {_model(system[1])}: {unfinished[system]}"
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
    mdd = "" if t.mdd != t.mdd else f"; a difference below {t.mdd:.3f} could go unseen"
    return (
        f"No difference detected between {subject} and {obj}{shared}: F1 {d.estimate:+.3f}"
        f"{interval}, Holm p {p} ({size}{mdd})."
    )


def study_claims(
    folder: Path,
    design: StudyDesign,
    design_name: str,
    format_gap: float = DEFAULT_FORMAT_GAP,
) -> str:
    """Markdown: the declared comparisons' verdicts, arm by arm, each a sentence of
    :func:`claim`; on the default arm, the declared comparisons without data yet."""
    declared = design.declared
    out = [
        f"The {len(declared)} comparisons {design_name} declares: F1, paired on the tasks both "
        f"systems ran, clustered by {design.cluster}; each arm's verdicts are Holm's over its "
        f"declared comparisons, each interval Holm's simultaneous 95%.",
        "",
    ]
    for arm, systems in load_study(folder).items():
        if not arm.startswith(GENERATED) or arm.startswith(f"{GENERATED} ~"):
            continue  # real-data arms are not in the design; a sampled arm compares nothing
        tested = compare_systems(systems, declared, design.cluster)
        tested = [t for t in tested if not t.exploratory]
        found = {(t.a, t.b, t.level) for t in tested}
        # a declared comparison the default arm cannot test yet: a system without episodes, or
        # fewer than two shared tasks
        missing = [c for c in declared if c not in found] if arm == GENERATED else []
        if not tested and not missing:
            continue
        title = (
            "At each workflow's default budgets"
            if arm == GENERATED
            else f"At matched compute, {arm.split('@', 1)[1].strip()} per episode for every "
            "workflow"
        )
        out.append(f"{title}:")
        out.append("")
        unfinished = progress(systems)
        formats = {k: format_failures(run.scored, run.header) for k, run in systems.items()}
        out += [
            f"- {claim(t, unfinished, format_gap_note(formats[t.a], formats[t.b], format_gap))}"
            for t in tested
        ]
        for a, b, level in missing:
            subject, obj, shared = _sides(a, b)
            level_text = f" ({level} tasks)" if level else ""
            out.append(
                f"- Not yet run: {subject} against {obj.removeprefix('on ')}{shared}{level_text}."
            )
        out.append("")
    return "\n".join(out).rstrip() + "\n"
