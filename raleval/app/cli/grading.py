"""``raleval audit``, ``score`` and ``grade``: shortcut audits of task sets and grading of
answers outside a run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from raleval.app.cli.base import (
    app,
    fail,
    user_errors,
)


@app.command()
def audit(
    env: Annotated[str, typer.Option(envvar="RALEVAL_ENV", help="environment")] = "scholar",
    tasks: Annotated[
        str | None, typer.Option(help="task set, family id or tasks .jsonl (default: the env's)")
    ] = None,
    model: Annotated[
        str | None,
        typer.Option("--model", "-m", help="also run the no-tool `direct` workflow with it"),
    ] = None,
    threshold: Annotated[
        float, typer.Option(help="fail a family whose baseline beats chance by more than this")
    ] = 0.10,
    world: Annotated[str, typer.Option(help="world size (tiny, small, large)")] = "small",
    per_family: Annotated[int, typer.Option(help="generated tasks per family")] = 100,
    seed: Annotated[int, typer.Option(help="generation seed (the split seed too)")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="print the report as JSON")] = False,
    markdown: Annotated[bool, typer.Option(help="print a Markdown table")] = False,
    context: Annotated[
        int | None,
        typer.Option(help="also report per family the share answerable in view at this window"),
    ] = None,
    view_workflow: Annotated[
        str, typer.Option(help="the workflow whose view --context measures")
    ] = "react",
) -> None:
    """Shortcut audit: no-tool baselines per family against chance; exit 1 when one wins, 3 when
    none wins but a family has too few items to judge. With ``--context N``, a column of the
    share of each family's tasks whose answer the workflow shows at N tokens."""
    from raleval import registry
    from raleval.analysis.audit import audit_table, audit_tasks, dumps, markdown_table
    from raleval.app.console import make_console
    from raleval.tasks.catalog import load_tasks

    try:
        plugin = registry.envs.get(env)
        spec = tasks or plugin.default_tasks or ""
        environment = plugin(size=world)
        task_list = load_tasks(spec, environment, env, per_family, seed)
        direct = _direct_correct(env, spec, model, world, per_family, seed) if model else None
        in_view = None
        if context is not None:
            from raleval.app.views import answerable_in_view

            in_view = answerable_in_view(task_list, environment, context, view_workflow, env, seed)
    except user_errors() as exc:
        fail(str(exc))
    report = audit_tasks(
        task_list,
        environment,
        env_name=f"{env}/{world}",
        spec=spec,
        threshold=threshold,
        seed=seed,
        direct=direct,
        in_view=in_view,
        context=context,
        view_workflow=view_workflow,
    )
    if as_json:
        typer.echo(dumps(report))
    elif markdown:
        typer.echo(markdown_table(report))
    else:
        make_console().print(audit_table(report))
    if report.failed:
        raise typer.Exit(1)
    if not report.passed:  # nothing failed, but a family was too small to judge
        raise typer.Exit(3)


def _direct_correct(
    env: str, spec: str, model: str, world: str, per_family: int, seed: int
) -> dict[str, bool]:
    """Per-task correctness of the no-tool ``direct`` workflow with ``model``."""
    from raleval.analysis.runs import load_run
    from raleval.app.runner import run_sync
    from raleval.config import build_config

    cfg = build_config(
        {
            "model": model,
            "env": env,
            "workflow": "direct",
            "tasks": spec,
            "tasks_per_family": per_family,
            "seed": seed,
            "env_options": {"size": world},
            "run_name": f"audit-direct-{env}-{world}-{seed}",
        }
    )
    summary = run_sync(cfg)
    run = load_run(summary.run_dir)
    return {r.task_id: r.scores.get("correct", 0.0) >= 1.0 for r in run.results}


@app.command()
def score(
    run_dirs: Annotated[
        list[Path],
        typer.Argument(help="run directories, log directories holding runs, Inspect logs"),
    ],
    threshold: Annotated[
        float,
        typer.Option(
            envvar="RALEVAL_THRESHOLD",
            help="F1 at or above which a free-text answer counts as correct (typed answers: "
            "entities, counts, dates, lists, follow their own rule). 0.05 reproduces R-Eval's "
            "error analysis (its code's f1_threshold; the paper states no number), where one "
            "shared word in twenty makes a match; 0.5, the default, asks for half the words. "
            "Report the threshold beside the labels",
        ),
    ] = 0.5,
    judge: Annotated[
        list[str] | None,
        typer.Option(
            help="also grade with this judge (scripted/rules or a model spec; repeat for a "
            "panel); its spec, prompt version and validated kappa go into scores.jsonl"
        ),
    ] = None,
    score_option: Annotated[
        list[str] | None,
        typer.Option(
            "--score-option",
            "-S",
            help="scoring option key=value, repeatable: profile=standard|crud|rageval, the "
            "definition of long-form ROUGE-L and BLEU (crud: CRUD-RAG's code; rageval: "
            "RAGEval's ROUGE-L; docs/longform.md)",
        ),
    ] = None,
    metric: Annotated[
        list[str] | None,
        typer.Option(
            "--metric",
            help="also score every episode with this registered metric (repeatable): a "
            "built-in (raleval list metrics), an entry point in raleval.metrics, or "
            "FILE.py:NAME / MODULE:NAME, whose @register_metric(NAME) is imported first "
            "(docs/extending.md)",
        ),
    ] = None,
    protocol: Annotated[
        str,
        typer.Option(
            help="rules: raleval's typed grading; crag: also CRAG's protocol (exact match, "
            "then the judge: --judge MODEL, else the rules, leaving what they cannot decide "
            "ungraded), its accurate/missing/hallucinated and score = accuracy - hallucination"
        ),
    ] = "rules",
) -> None:
    """Recompute scores and error types from stored trajectories (no model or tool calls,
    except the judge's when --judge is given); each run's scores go to its scores.jsonl."""
    if protocol not in ("rules", "crag"):
        fail(f"--protocol takes rules or crag, not {protocol!r}")
    from raleval.analysis.runs import find_runs

    options = score_options(score_option or [])
    try:
        found = find_runs(run_dirs)
        metrics = {name: fn for name, fn in map(resolve_metric, metric or [])}
    except user_errors() as exc:
        fail(str(exc))
    for run_dir in found:
        score_run(run_dir, threshold, judge, protocol=protocol, metrics=metrics, **options)


def resolve_metric(target: str) -> tuple[str, Any]:
    """(name, function) of ``--metric``: a registered name, or ``FILE.py:NAME`` /
    ``MODULE:NAME`` whose module registers NAME when imported (``@register_metric``)."""
    from raleval import registry
    from raleval.config import ConfigError

    module, sep, name = target.rpartition(":")
    if sep:
        from raleval.workflows.external import import_module_or_file

        try:
            import_module_or_file(module)
        except (ImportError, OSError, SyntaxError) as exc:
            raise ConfigError(f"--metric {target!r}: cannot import {module}: {exc}") from exc
    else:
        name = target
    try:
        return name, registry.metrics.get(name)
    except LookupError as exc:
        raise ConfigError(f"--metric {target!r}: {exc}") from None


SCORE_OPTIONS = ("profile",)


def score_options(pairs: list[str]) -> dict[str, str]:
    """``-S key=value`` pairs as keyword arguments of :func:`score_run`; an unknown key, a
    pair without ``=`` or an unknown profile ends the command with the choices."""
    from raleval.grading.longform import check_profile

    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or key not in SCORE_OPTIONS:
            fail(f"-S takes key=value with key one of {', '.join(SCORE_OPTIONS)}; got {pair!r}")
        out[key] = value.strip()
    try:
        check_profile(out.get("profile", "standard"))
    except ValueError as exc:
        fail(str(exc))
    return out


def score_run(
    run_dir: Path,
    threshold: float,
    judge: list[str] | None,
    protocol: str = "rules",
    profile: str = "standard",
    metrics: dict[str, Any] | None = None,
) -> None:
    """``raleval score`` of one run directory (long-form overlap metrics by ``profile``;
    ``protocol`` crag adds CRAG's protocol verdicts)."""
    from raleval.analysis.runs import evidence_disagreements, load_run, verdict_changes
    from raleval.analysis.summary import render_table, summarize
    from raleval.app.console import make_console
    from raleval.store import RESULTS, TASKS, write_atomic

    try:
        run = load_run(run_dir)
        before = [(t.error_type, t.error_cause, t.scores.get("correct")) for t in run.results]
        missing = run.rescore(threshold, profile)
        inspect_log = run_dir.is_file()  # an Inspect log: a sample without a target is ungraded
        if missing and not inspect_log:
            fail(f"{missing[0]} is in {RESULTS} but not in {TASKS}")
        scored = run.results
        for name, fn in (metrics or {}).items():  # --metric: (prediction, golds) -> float
            for t in scored:
                t.scores[name] = float(fn(t.answer, run.tasks[t.task_id].answers))
        changes = verdict_changes(before, scored)
        disagreements = evidence_disagreements(scored, run.tasks)
        judged: list[dict | None] = [None] * len(scored)
        key_points = (0, 0)
        if judge:
            from raleval.app.cli.judging import (
                agreement_line,
                judge_free_key_points,
                judge_run_verdicts,
            )

            about, judged = judge_run_verdicts(run, judge)
            key_points = judge_free_key_points(run, judge)
        crag: list[str | None] = [None] * len(scored)
        if protocol == "crag":
            crag = crag_protocol_verdicts(run, judge)
        lines = "".join(
            json.dumps(
                {
                    "task_id": t.task_id,
                    "epoch": t.epoch,
                    "scores": t.scores,
                    "error_type": t.error_type.value if t.error_type else None,
                    "error_cause": t.error_cause,
                    "strict_error_type": t.strict_error_type.value if t.strict_error_type else None,
                    "strict_error_cause": t.strict_error_cause,
                    "stop_reason": t.stop_reason.value if t.stop_reason else None,
                    "error_subcause": t.error_subcause,
                    **({"judge": j} if j else {}),
                    **({"metric_profile": profile} if profile != "standard" else {}),
                    **({"crag_protocol": c} if c else {}),
                },
                sort_keys=True,
            )
            + "\n"
            for t, j, c in zip(scored, judged, crag, strict=True)
        )
        # an Inspect log is never rewritten: its scores go beside it
        out = run_dir.with_name(f"{run_dir.name}.scores.jsonl") if inspect_log else None
        write_atomic(out or run_dir / "scores.jsonl", lines)
        console = make_console()
        shown = f"threshold {threshold}" + (f", profile {profile}" if profile != "standard" else "")
        console.print(render_table(summarize(scored, run.tasks), title=f"{run_dir} ({shown})"))
        console.print(f"{len(changes)} episode(s) changed label or correctness on re-grading")
        for line in changes:
            console.print(f"  {line}", highlight=False, markup=False)
        if disagreements:
            console.print(
                f"{len(disagreements)} task(s) whose evidence disagrees with the world "
                "(their labels rest on it; rebuild the task set):"
            )
            for line in disagreements:
                console.print(f"  {line}", highlight=False, markup=False)
        if protocol == "crag":
            console.print(crag_protocol_line(crag, judge), highlight=False, markup=False)
        if judge:
            kappa = about["kappa"]
            console.print(
                f"judge {about['spec']} (prompt {about['prompt_version']}; validated kappa "
                f"{'not measured: run raleval judge validate' if kappa is None else f'{kappa:.3f}'}"
                f"): {agreement_line(judged)}",
                highlight=False,
                markup=False,
            )
        if key_points[0]:
            console.print(
                f"free-text key points judged on {key_points[0]} episode(s) (RAGEval's "
                f"completeness, hallucination, irrelevance; {key_points[1]} unreadable "
                "replies counted irrelevant)",
                highlight=False,
                markup=False,
            )
    except user_errors() as exc:
        fail(str(exc))


def crag_protocol_verdicts(run, judge_specs: list[str] | None) -> list[str | None]:
    """CRAG's protocol verdict on every scored episode of ``run`` (None where its task is
    missing); the judge is the model panel ``judge_specs`` names, else the rules."""
    import asyncio

    from raleval.cache import default_cache_path
    from raleval.grading.crag_protocol import protocol_verdict
    from raleval.grading.judge import resolve_judge

    judge = resolve_judge(judge_specs, cache_path=default_cache_path()) if judge_specs else None

    async def all_verdicts() -> list[str | None]:
        out: list[str | None] = []
        for t in run.results:
            task = run.tasks.get(t.task_id)
            if task is None:
                out.append(None)
                continue
            out.append(
                await protocol_verdict(
                    judge,
                    task.question,
                    task.answers,
                    t.answer,
                    (task.answer_type.value if task.answer_type else "entity"),
                    task.elements,
                    task.tags.answerable,
                )
            )
        return out

    try:
        return asyncio.run(all_verdicts())
    finally:
        if judge is not None:
            judge.close()


def crag_protocol_line(verdicts: list[str | None], judge_specs: list[str] | None) -> str:
    """One line: CRAG's rates and score over the judged episodes."""
    from raleval.grading.crag_protocol import protocol_summary

    s = protocol_summary([v for v in verdicts if v is not None])
    c = s["counts"]
    by = "+".join(judge_specs) if judge_specs else "scripted/rules (no model judge)"
    return (
        f"CRAG protocol (exact match, then {by}) on {s['n']} episode(s): accurate "
        f"{c['accurate']}, missing {c['missing']}, hallucinated {c['hallucinated']}, "
        f"ungraded {c['ungraded']}; accuracy {s['accuracy']:.3f}, hallucination "
        f"{s['hallucination']:.3f}, score {s['score']:+.3f}"
        + (" (ungraded answers need a model judge: --judge MODEL)" if c["ungraded"] else "")
    )


@app.command()
def grade(
    gold: Annotated[
        list[str],
        typer.Option(help="gold answer; repeat for aliases (for --type list: a JSON array)"),
    ],
    answer: Annotated[str, typer.Option(help="the answer to grade")],
    answer_type: Annotated[
        str,
        typer.Option(
            "--type", help="auto (inferred from the gold) |entity|list|count|number|year|..."
        ),
    ] = "auto",
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
    question: Annotated[
        str,
        typer.Option(
            help="the question: never graded as part of the answer, and free text is graded "
            "on what the gold says beyond it (without it, free text is correct only on EM)"
        ),
    ] = "",
) -> None:
    """Grade one answer against a gold and explain the verdict (the rules episodes use)."""
    from raleval.grading.rules import grade_cli

    try:
        print(grade_cli(gold, answer, answer_type, as_json, question))
    except user_errors() as exc:
        fail(str(exc))
