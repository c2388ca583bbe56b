"""The ``raleval`` command line. Every flag has a ``RALEVAL_*`` environment variable twin."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

app = typer.Typer(
    name="raleval",
    help="Evaluate retrieval-augmented LLMs as tool-using agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# Exit codes: every episode done; some failed for infrastructure or harness reasons (or the
# results could not be written); a usage error; interrupted by Ctrl-C.
OK, FAILED, USER_ERROR, INTERRUPTED = 0, 1, 2, 130
_DEBUG = {"on": False}  # --debug: let tracebacks through


def _version(value: bool) -> None:
    if value:
        from raleval import __version__

        typer.echo(f"raleval {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="print the version"),
    ] = False,
    debug: Annotated[
        bool, typer.Option("--debug", envvar="RALEVAL_DEBUG", help="show tracebacks on errors")
    ] = False,
) -> None:
    """Evaluate retrieval-augmented LLMs as tool-using agents."""
    _DEBUG["on"] = debug


def _fail(message: str, code: int = USER_ERROR) -> None:
    """Print ``error: message`` (user text escaped, never read as Rich markup) and exit."""
    from rich.console import Console
    from rich.markup import escape

    if _DEBUG["on"] and sys.exc_info()[1] is not None:
        import traceback

        traceback.print_exc()
    Console(stderr=True, soft_wrap=True).print(
        f"[bold red]error:[/] {escape(message)}", highlight=False, emoji=False
    )
    raise typer.Exit(code)


def _user_errors() -> tuple[type[BaseException], ...]:
    from raleval.config import ConfigError
    from raleval.model import ModelError
    from raleval.registry import UnknownNameError
    from raleval.store import RecordFileError

    # ModelError here is raised while resolving a model (a missing extra, a bad path)
    return (
        ConfigError,
        UnknownNameError,
        RecordFileError,
        ValueError,
        FileNotFoundError,
        ModelError,
    )


@app.command()
def run(
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            "-m",
            envvar="RALEVAL_MODEL",
            help="provider/name, e.g. scripted/oracle, openai/gpt-4o-mini",
        ),
    ] = None,
    env: Annotated[str | None, typer.Option(envvar="RALEVAL_ENV", help="environment")] = None,
    workflow: Annotated[
        str | None, typer.Option("--workflow", "-w", envvar="RALEVAL_WORKFLOW", help="workflow")
    ] = None,
    tasks: Annotated[
        str | None,
        typer.Option(envvar="RALEVAL_TASKS", help="task set, family id or tasks .jsonl file"),
    ] = None,
    limit: Annotated[
        int | None,
        typer.Option(
            envvar="RALEVAL_LIMIT",
            help="run N tasks taken round-robin across the set's families "
            "(each family's in its seeded generated order); raising N extends a run",
        ),
    ] = None,
    sample_id: Annotated[
        str | None,
        typer.Option(
            "--sample-id", envvar="RALEVAL_SAMPLE_ID", help="run only these task ids (ID,ID,...)"
        ),
    ] = None,
    tasks_per_family: Annotated[
        int | None,
        typer.Option(
            envvar="RALEVAL_TASKS_PER_FAMILY",
            help="tasks generated per family of a generated set (default 100); --limit and "
            "--sample-id choose among them",
        ),
    ] = None,
    seed: Annotated[int | None, typer.Option(envvar="RALEVAL_SEED")] = None,
    max_connections: Annotated[
        int | None,
        typer.Option(envvar="RALEVAL_MAX_CONNECTIONS", help="episodes in flight at once"),
    ] = None,
    max_connections_per_endpoint: Annotated[
        int | None,
        typer.Option(
            envvar="RALEVAL_MAX_CONNECTIONS_PER_ENDPOINT",
            help="concurrent calls per model endpoint",
        ),
    ] = None,
    log_dir: Annotated[Path | None, typer.Option(envvar="RALEVAL_LOG_DIR")] = None,
    run_name: Annotated[str | None, typer.Option(envvar="RALEVAL_RUN_NAME")] = None,
    model_option: Annotated[
        list[str] | None,
        typer.Option(
            "-M", "--model-option", envvar="RALEVAL_MODEL_OPTIONS", help="model option key=value"
        ),
    ] = None,
    env_option: Annotated[
        list[str] | None,
        typer.Option(
            "-E", "--env-option", envvar="RALEVAL_ENV_OPTIONS", help="environment option key=value"
        ),
    ] = None,
    workflow_option: Annotated[
        list[str] | None,
        typer.Option(
            "-W",
            "--workflow-option",
            envvar="RALEVAL_WORKFLOW_OPTIONS",
            help="workflow option key=value (max_steps=10, react_style=two_call, ...)",
        ),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option(
            envvar="RALEVAL_CONFIG", help="YAML file; may list workflows x models x tasks"
        ),
    ] = None,
    display: Annotated[
        str, typer.Option(envvar="RALEVAL_DISPLAY", help="rich | plain | none")
    ] = "rich",
    backend: Annotated[
        str | None,
        typer.Option(envvar="RALEVAL_BACKEND", help="local | ray (shard over a Ray cluster)"),
    ] = None,
    ray_address: Annotated[
        str | None, typer.Option(envvar="RALEVAL_RAY_ADDRESS", help="Ray cluster address")
    ] = None,
    workers: Annotated[
        int | None, typer.Option(envvar="RALEVAL_WORKERS", help="Ray shards / workers")
    ] = None,
    tool_fault_rate: Annotated[
        float | None,
        typer.Option(envvar="RALEVAL_TOOL_FAULT_RATE", help="inject seeded tool faults"),
    ] = None,
    llm_fault_rate: Annotated[
        float | None,
        typer.Option(envvar="RALEVAL_LLM_FAULT_RATE", help="inject seeded model faults"),
    ] = None,
    epochs: Annotated[
        int | None,
        typer.Option(envvar="RALEVAL_EPOCHS", help="repeat every task; reports pass@k, pass^k"),
    ] = None,
    cache: Annotated[
        bool | None,
        typer.Option(
            "--cache/--no-cache",
            envvar="RALEVAL_CACHE",
            help="serve repeated model requests from the response cache (default on)",
        ),
    ] = None,
    allow_foreign_tasks: Annotated[
        bool | None,
        typer.Option(
            "--allow-foreign-tasks",
            envvar="RALEVAL_ALLOW_FOREIGN_TASKS",
            help="run tasks made for another environment or world (refused by default)",
        ),
    ] = None,
    retry_failed: Annotated[
        bool,
        typer.Option(
            "--retry-failed",
            envvar="RALEVAL_RETRY_FAILED",
            help="run again the episodes whose last attempt failed for infrastructure reasons",
        ),
    ] = False,
    force: Annotated[
        bool,
        typer.Option(
            "--force", help="set aside (not delete) a run directory that holds another run"
        ),
    ] = False,
) -> None:
    """Run (or resume) an evaluation and print its results table.

    Exit status: 0 every episode done; 1 some failed for infrastructure reasons (retry them
    with --retry-failed) or results could not be written; 2 usage error; 130 interrupted."""
    from raleval.config import build_config, load_matrix, parse_key_values

    try:
        overrides: dict[str, Any] = {
            "model": model,
            "env": env,
            "workflow": workflow,
            "tasks": tasks,
            "limit": limit,
            "tasks_per_family": tasks_per_family,
            "seed": seed,
            "max_connections": max_connections,
            "max_connections_per_endpoint": max_connections_per_endpoint,
            "log_dir": log_dir,
            "run_name": run_name,
            "cache": cache,
            "epochs": epochs,
            "tool_fault_rate": tool_fault_rate,
            "llm_fault_rate": llm_fault_rate,
            "backend": backend,
            "ray_address": ray_address,
            "workers": workers,
            "allow_foreign_tasks": allow_foreign_tasks,
            "retry_failed": retry_failed or None,
            "force": force or None,
            "sample_ids": [i.strip() for i in sample_id.split(",") if i.strip()]
            if sample_id
            else None,
        }
        for key, pairs, flag in (
            ("model_options", model_option, "-M"),
            ("env_options", env_option, "-E"),
            ("workflow_options", workflow_option, "-W"),
        ):
            if pairs:
                overrides[key] = parse_key_values(pairs, flag)
        if config is not None:
            configs = load_matrix(config, overrides)
        else:
            configs = [build_config({k: v for k, v in overrides.items() if v is not None})]
        _run_all(configs, display, matrix=config is not None and len(configs) > 1)
    except _user_errors() as exc:
        _fail(str(exc))


def _run_all(configs: list[Any], display: str, matrix: bool = False) -> None:
    """Run each configuration (a matrix: then write and print the combined table); exit 1 if
    any left episodes failed (or unwritten)."""
    failed = False
    for cfg in configs:
        failed |= not _run_one(cfg, display)
    if matrix:
        from raleval.app.matrix import matrix_rows, to_markdown, write_matrix

        rows = matrix_rows(configs)
        paths = write_matrix(configs[0].log_dir, rows)
        typer.echo(to_markdown(rows), nl=False)
        typer.echo(f"matrix: {', '.join(str(p) for p in paths)}")
        _matrix_report(configs)
    if failed:
        raise typer.Exit(FAILED)


@app.command()
def retry(
    run_dir: Annotated[Path, typer.Argument(help="a run directory")],
    display: Annotated[
        str, typer.Option(envvar="RALEVAL_DISPLAY", help="rich | plain | none")
    ] = "rich",
) -> None:
    """Run again the episodes of RUN_DIR that failed for infrastructure reasons (the earlier
    attempts stay in results.jsonl; the last attempt per task counts)."""
    from raleval.config import ConfigError, build_config
    from raleval.store import HEADER, read_header

    try:
        header = read_header(run_dir)
        if header is None:
            raise ConfigError(f"{run_dir} has no {HEADER}; is it a run directory?")
        data = dict(header.config)
        if "<redacted>" in json.dumps(data):
            raise ConfigError(
                f"{run_dir}'s header has redacted credentials; run the original command "
                "again with --retry-failed"
            )
        data.update(log_dir=str(run_dir.parent), run_name=run_dir.name, retry_failed=True)
        _run_all([build_config(data, source=str(run_dir / HEADER))], display)
    except _user_errors() as exc:
        _fail(str(exc))


def _exit_interrupted(saved: str) -> None:
    """Exit 130 after Ctrl-C. asyncio.run has just restored Python's SIGINT handler, so
    another Ctrl-C is ignored from here, and the process ends without interpreter finalisation,
    where a stray KeyboardInterrupt could otherwise still land. Every result line is on disk."""
    import os
    import signal

    from raleval.app.runner import stop_child_processes

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    stop_child_processes()  # os._exit skips atexit: no model server may outlive us
    sys.stdout.flush()
    print(f"interrupted: {saved}; resume with: {_command_line()}", file=sys.stderr, flush=True)
    os._exit(INTERRUPTED)


def _command_line() -> str:
    """The command as typed, to run again."""
    import shlex

    return " ".join(["raleval", *(shlex.quote(a) for a in sys.argv[1:])])


def _matrix_report(configs: list[Any]) -> None:
    """One report over every cell of a matrix, in the log dir (beside matrix.md)."""
    from rich.console import Console
    from rich.markup import escape

    from raleval.analysis.report import write_report
    from raleval.store import RESULTS

    dirs = [c.run_dir for c in configs if (c.run_dir / RESULTS).exists()]
    if not dirs:
        return
    try:
        path = write_report(dirs, configs[0].log_dir / "matrix-report.html")
        typer.echo(f"matrix report: {path}")
    except Exception as exc:  # the results are safe; `raleval report` can retry
        Console(stderr=True).print(f"[yellow]no matrix report[/]: {escape(str(exc))}")


def _run_one(cfg: Any, display: str) -> bool:
    """Run one configuration and print its results; False if episodes failed or went
    unwritten (the run is then incomplete, and the exit status 1)."""
    import asyncio

    from rich.console import Console
    from rich.markup import escape

    from raleval.analysis.summary import render_table, summarize
    from raleval.app.runner import run as run_async
    from raleval.store import RESULTS

    console = Console()
    try:
        if cfg.backend == "ray":
            from raleval.app.runner import run_ray

            summary = run_ray(cfg)
        else:
            summary = asyncio.run(run_async(cfg, display=display))
    except KeyboardInterrupt:
        _exit_interrupted(f"finished episodes are saved in {cfg.run_dir}")
    if summary.interrupted:
        _exit_interrupted(f"{summary.ran} episodes finished and saved in {summary.run_dir}")
    if summary.write_error is not None:
        Console(stderr=True, soft_wrap=True).print(
            f"[bold red]error:[/] cannot write results: {escape(summary.write_error)}; the run "
            f"stopped before its next model call ({summary.ran} episodes saved, "
            f"{summary.unwritten} to run again). Free space, then: {escape(_command_line())}",
            highlight=False,
        )
        return False
    from raleval.analysis.report import save_report
    from raleval.analysis.runs import load_run, pass_at_k, robustness_rates

    run = load_run(summary.run_dir)  # read once for the table, pass@k and the report
    rows = summarize(run.results, run.tasks)
    if display != "none":
        console.print(render_table(rows, title=cfg.slug()))
    console.print(
        f"{summary.ran} episodes run, {summary.skipped} already done; "
        f"results in {summary.run_dir / RESULTS}",
        highlight=False,
    )
    for label, rates in robustness_rates(run).items():
        shown = ", ".join(f"{k} {v:.3f}" for k, v in rates.items() if k != "n")
        console.print(f"testbed {label} ({int(rates['n'])} tasks): {shown}", highlight=False)
    passes = pass_at_k(run) if cfg.epochs > 1 else None
    if passes:
        k = int(passes["k"])
        console.print(
            f"over {k} epochs: pass@{k} = {passes['pass@k']:.3f}, "
            f"pass^{k} = {passes['pass^k']:.3f}",
            highlight=False,
        )
    try:
        report = save_report([run], summary.run_dir / "report.html")
        console.print(f"report: {report}", highlight=False)
    except Exception as exc:  # the results are safe on disk; a report can be made later
        Console(stderr=True).print(
            f"[yellow]no report[/]: {escape(str(exc))}; run `raleval report "
            f"{escape(str(summary.run_dir))}` to retry",
            highlight=False,
        )
    return _print_failures(summary.failures, cfg)


def _print_failures(failures: dict[str, int], cfg: Any) -> bool:
    """The failure summary by cause; True when there is none."""
    from rich.console import Console
    from rich.markup import escape

    if not failures:
        return True
    n = sum(failures.values())
    causes = ", ".join(f"{c} {k}" for c, k in sorted(failures.items(), key=lambda x: -x[1]))
    again = _command_line()
    if "--retry-failed" not in again:
        again += " --retry-failed"
    Console(stderr=True, soft_wrap=True).print(
        f"[bold yellow]{n} episode(s) failed for infrastructure reasons[/] (not scored): "
        f"{escape(causes)}\nretry them with: {escape(again)}",
        highlight=False,
    )
    return False


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
) -> None:
    """Shortcut audit: no-tool baselines per family against chance; exit 1 when one wins, 3 when
    none wins but a family has too few items to judge."""
    from rich.console import Console

    from raleval import registry
    from raleval.analysis.audit import audit_table, audit_tasks, dumps, markdown_table
    from raleval.tasks.catalog import load_tasks

    try:
        plugin = registry.envs.get(env)
        spec = tasks or plugin.default_tasks or ""
        environment = plugin(size=world)
        task_list = load_tasks(spec, environment, env, per_family, seed)
        direct = _direct_correct(env, spec, model, world, per_family, seed) if model else None
    except _user_errors() as exc:
        _fail(str(exc))
    report = audit_tasks(
        task_list,
        environment,
        env_name=f"{env}/{world}",
        spec=spec,
        threshold=threshold,
        seed=seed,
        direct=direct,
    )
    if as_json:
        typer.echo(dumps(report))
    elif markdown:
        typer.echo(markdown_table(report))
    else:
        Console().print(audit_table(report))
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
    run_dir: Annotated[Path, typer.Argument(help="a run directory")],
    threshold: Annotated[
        float,
        typer.Option(
            envvar="RALEVAL_THRESHOLD",
            help="F1 at or above which a free-text answer is correct (R-Eval: 0.05)",
        ),
    ] = 0.5,
) -> None:
    """Recompute scores and error types from stored trajectories (no model or tool calls)."""
    from rich.console import Console

    from raleval.analysis.runs import load_run, verdict_changes
    from raleval.analysis.summary import render_table, summarize
    from raleval.store import RESULTS, TASKS, write_atomic

    try:
        run = load_run(run_dir)
        before = [(t.error_type, t.error_cause, t.scores.get("correct")) for t in run.results]
        missing = run.rescore(threshold)
        if missing:
            _fail(f"{missing[0]} is in {RESULTS} but not in {TASKS}")
        scored = run.results
        changes = verdict_changes(before, scored)
        lines = "".join(
            json.dumps(
                {
                    "task_id": t.task_id,
                    "epoch": t.epoch,
                    "scores": t.scores,
                    "error_type": t.error_type.value if t.error_type else None,
                    "error_cause": t.error_cause,
                    "stop_reason": t.stop_reason.value if t.stop_reason else None,
                    "error_subcause": t.error_subcause,
                },
                sort_keys=True,
            )
            + "\n"
            for t in scored
        )
        write_atomic(run_dir / "scores.jsonl", lines)
        console = Console()
        console.print(
            render_table(summarize(scored, run.tasks), title=f"{run_dir} (threshold {threshold})")
        )
        console.print(f"{len(changes)} episode(s) changed label or correctness on re-grading")
        for line in changes:
            console.print(f"  {line}", highlight=False, markup=False)
    except _user_errors() as exc:
        _fail(str(exc))


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
) -> None:
    """Grade one answer against a gold and explain the verdict (the rules episodes use)."""
    from raleval.tasks.grading import grade_cli

    try:
        print(grade_cli(gold, answer, answer_type, as_json))
    except _user_errors() as exc:
        _fail(str(exc))


_RST_ROLE = r":[a-z]+:`~?([^`]+)`"


def plain_doc(obj: Any) -> str:
    """The first paragraph of ``obj``'s docstring as one plain line: no RST markup."""
    import inspect
    import re

    doc = inspect.getdoc(obj) or ""
    first = doc.split("\n\n")[0]
    first = re.sub(_RST_ROLE, r"\1", first)
    first = first.replace("``", "")
    return " ".join(first.split())


@app.command("list")
def list_plugins(
    kind: Annotated[
        str, typer.Argument(help="envs | workflows | models | tasks | metrics | tools")
    ],
    env: Annotated[str | None, typer.Option("--env", help="the environment (tools)")] = None,
    env_option: Annotated[
        list[str] | None, typer.Option("-E", "--env-option", help="environment option key=value")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="tools as JSON")] = False,
) -> None:
    """List registered plugins of one kind with their full descriptions (plain text), or an
    environment's tools (``tools --env E``)."""
    import shutil
    import textwrap

    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from raleval import registry

    if kind == "tools":
        from raleval.config import parse_key_values

        if env is None:
            _fail("list tools needs --env")
        options = parse_key_values(env_option, "-E") if env_option else {}
        catalog = registry.envs.get(env)(**options).catalog()
        if as_json:
            typer.echo(json.dumps(catalog, indent=1, ensure_ascii=False))
            return
        table = Table(title=f"raleval tools of {env}")
        for col in ("name", "parameters", "description", "example"):
            table.add_column(col)
        for tool in catalog:
            params = ", ".join(tool["parameters"].get("properties", {}))
            example = tool["example"] and json.dumps(tool["example"]["arguments"])
            cells = (tool["name"], params, tool["description"], example)
            table.add_row(*(escape(x or "") for x in cells))
        Console().print(table)
        return

    kinds = {
        "envs": registry.envs,
        "workflows": registry.workflows,
        "models": registry.models,
        "tasks": registry.task_families,
        "metrics": registry.metrics,
    }
    if kind not in kinds:
        _fail(f"unknown kind {kind!r}; choose one of {', '.join(kinds)}")
    entries: list[tuple[str, str]] = []
    for name, obj in kinds[kind].load_all().items():
        if isinstance(obj, Exception):
            desc = f"failed to load: {obj}"
        elif kind == "tasks":
            desc = f"{obj.level.value} {obj.domain}, metric {obj.metric}: {obj.description}"
        else:
            desc = plain_doc(obj)
        entries.append((name, desc))
    if kind == "tasks":
        for name in registry.task_sets.names():
            entries.append((name, "task set: " + ", ".join(registry.task_sets.get(name))))
    width = max(60, min(shutil.get_terminal_size((100, 24)).columns, 120))
    pad = min(max(len(n) for n, _ in entries) + 2, 24) if entries else 2
    for name, desc in entries:
        head = name.ljust(pad) if len(name) < pad else name + "\n" + " " * pad
        typer.echo(
            textwrap.fill(
                desc, width, initial_indent=" " * pad, subsequent_indent=" " * pad
            ).replace(" " * pad, head, 1)
        )


@app.command()
def report(
    run_dirs: Annotated[list[Path], typer.Argument(help="one or more run directories")],
    out: Annotated[
        Path | None,
        typer.Option(
            help="output file (default: report-<first run>[-and-N-more].html in the current "
            "directory; never inside a run)"
        ),
    ] = None,
    threshold: Annotated[
        float,
        typer.Option(envvar="RALEVAL_THRESHOLD", help="F1 at or above which an answer matches"),
    ] = 0.5,
) -> None:
    """Write a self-contained HTML report (tables, figures, trajectory viewer)."""
    from raleval.analysis.report import write_report

    try:
        path = write_report(run_dirs, out, threshold)
    except _user_errors() as exc:
        _fail(str(exc))
    typer.echo(f"report: {path}")


@app.command()
def table(
    run_dirs: Annotated[list[Path], typer.Argument(help="one or more run directories")],
    fmt: Annotated[str, typer.Option("--format", help="rich | csv | markdown | latex")] = "rich",
) -> None:
    """Print R-Eval's per-task table (averages and ranks) for the given runs."""
    from rich.console import Console

    from raleval.analysis.runs import load_run, per_task_table

    try:
        t = per_task_table([load_run(p) for p in run_dirs])
    except _user_errors() as exc:
        _fail(str(exc))
    renderers = {"csv": t.to_csv, "markdown": t.to_markdown, "latex": t.to_latex}
    if fmt == "rich":
        Console().print(t.to_rich())
    elif fmt in renderers:
        typer.echo(renderers[fmt](), nl=False)
    else:
        _fail(f"--format must be rich, csv, markdown or latex, not {fmt!r}")


@app.command()
def compare(
    run_a: Annotated[Path, typer.Argument(help="run directory A")],
    run_b: Annotated[Path, typer.Argument(help="run directory B")],
    threshold: Annotated[float, typer.Option(envvar="RALEVAL_THRESHOLD")] = 0.5,
) -> None:
    """Paired comparison of two runs on the tasks they share (bootstrap and McNemar)."""
    from rich.console import Console

    from raleval.analysis.runs import load_run
    from raleval.analysis.stats import compare as paired
    from raleval.analysis.stats import tasks_needed

    try:
        a, b = load_run(run_a), load_run(run_b)
    except _user_errors() as exc:
        _fail(str(exc))
    fa = {(t.task_id, t.epoch): t for t in a.results}
    fb = {(t.task_id, t.epoch): t for t in b.results}
    common = sorted(set(fa) & set(fb))
    if not common:
        _fail("the two runs share no task")
    f1a = [fa[k].scores.get("f1", 0.0) for k in common]
    f1b = [fb[k].scores.get("f1", 0.0) for k in common]
    result = paired(f1a, f1b, [x >= threshold for x in f1a], [x >= threshold for x in f1b])
    diffs = [x - y for x, y in zip(f1a, f1b, strict=True)]
    c = Console()
    c.print(f"A = {a.system} ({run_a})\nB = {b.system} ({run_b})", highlight=False)
    c.print(
        f"{result.n} shared tasks: mean F1 A {result.mean_a:.3f}, B {result.mean_b:.3f}",
        highlight=False,
    )
    c.print(
        f"A - B = {result.diff} (95% paired bootstrap), p = {result.p_bootstrap:.4f}",
        highlight=False,
    )
    c.print(
        f"McNemar on matches (F1 >= {threshold}): A only {result.a_only}, B only "
        f"{result.b_only}, exact p = {result.p_mcnemar:.4f}",
        highlight=False,
    )
    c.print(
        f"tasks needed for a +/-0.05 interval on the difference: {tasks_needed(diffs, 0.05)}",
        highlight=False,
    )


@app.command()
def export(
    run_dir: Annotated[Path, typer.Argument(help="a run directory")],
    fmt: Annotated[str, typer.Option("--format", help="parquet | csv | inspect")] = "parquet",
    out: Annotated[Path, typer.Option(help="output file (steps go beside it)")] = Path(
        "episodes.parquet"
    ),
) -> None:
    """Export a run: episodes (and steps) as Parquet or CSV, or an Inspect AI eval log."""
    from raleval.analysis.export import export_run

    try:
        written = export_run(run_dir, fmt, out)
    except _user_errors() as exc:
        _fail(str(exc))
    for path in written:
        typer.echo(f"wrote {path}")


cache_app = typer.Typer(help="Inspect or clear the LLM response cache.", no_args_is_help=True)
app.add_typer(cache_app, name="cache")


@cache_app.command("stats")
def cache_stats() -> None:
    """Entries and size of the response cache, per model."""
    from rich.console import Console

    from raleval.cache import ResponseCache, default_cache_path

    stats = ResponseCache(default_cache_path()).stats()
    console = Console()
    console.print(
        f"{stats['path']}: {stats['entries']} responses, {stats['bytes']} bytes", highlight=False
    )
    for model, n in stats["by_model"].items():
        console.print(f"  {model}: {n}", highlight=False)


@cache_app.command("clear")
def cache_clear(
    model: Annotated[str | None, typer.Option(help="only this model's responses")] = None,
) -> None:
    """Delete cached responses (all, or one model's)."""
    from raleval.cache import ResponseCache, default_cache_path

    n = ResponseCache(default_cache_path()).clear(model)
    typer.echo(f"removed {n} cached responses")


@app.command()
def serve(
    env: Annotated[str, typer.Option(envvar="RALEVAL_ENV", help="environment to serve")] = "crag",
    env_option: Annotated[
        list[str] | None,
        typer.Option("-E", "--env-option", help="environment option key=value"),
    ] = None,
    host: Annotated[str, typer.Option(envvar="RALEVAL_HOST", help="address to bind")] = "127.0.0.1",
    port: Annotated[int, typer.Option(envvar="RALEVAL_PORT")] = 8000,
    token: Annotated[
        str | None,
        typer.Option(envvar="RALEVAL_API_TOKEN", help="required on every request when set"),
    ] = None,
    mcp: Annotated[
        bool, typer.Option("--mcp", help="serve as an MCP server (the mcp extra)")
    ] = False,
    transport: Annotated[
        str, typer.Option(envvar="RALEVAL_TRANSPORT", help="with --mcp: stdio | http")
    ] = "stdio",
) -> None:
    """Serve an environment over HTTP (CRAG's mock-API routes, POST /tools/{name}, /docs) or,
    with --mcp, as an MCP server over stdio or streamable HTTP (at /mcp)."""
    from raleval import registry
    from raleval.config import parse_key_values

    try:
        if mcp and transport not in ("stdio", "http"):
            raise ValueError(f"--transport must be stdio or http, not {transport!r}")
        if not (mcp and transport == "stdio"):
            from raleval.app.serve import check_bind

            check_bind(host, token)  # before building the env and printing the address
        options = parse_key_values(env_option, "-E") if env_option else {}
        environment = registry.envs.get(env)(**options)
        if mcp:
            from raleval.app import mcp_server

            if transport == "stdio":  # stdout is the protocol's wire: say nothing on it
                import asyncio

                asyncio.run(mcp_server.serve_stdio(environment))
                return
            typer.echo(f"serving {env} over MCP on http://{host}:{port}/mcp")
            mcp_server.serve_http(environment, host, port, token)
            return
        from raleval.app.serve import serve as run_server

        typer.echo(f"serving {env} on http://{host}:{port} (OpenAPI at /docs)")
        run_server(environment, host, port, token)
    except _user_errors() as exc:
        _fail(str(exc))


wiki_app = typer.Typer(help="Build offline Wikipedia stores.", no_args_is_help=True)
app.add_typer(wiki_app, name="wiki")


@wiki_app.command("build")
def wiki_build(
    out: Annotated[Path, typer.Argument(help="the store file to create or extend")],
    sources: Annotated[list[Path], typer.Argument(help="corpus files (format auto-detected)")],
    fmt: Annotated[
        str | None,
        typer.Option(
            "--format", help="pages | hotpotqa | 2wikimultihopqa | musique | xml (default: detect)"
        ),
    ] = None,
) -> None:
    """Build an offline store from JSON-lines pages, HotpotQA / 2Wiki / MuSiQue files or an
    XML dump; use it with ``-E backend=offline -E path=OUT``."""
    from raleval.envs.wiki.loaders import CorpusFormatError, build_store

    missing = [str(s) for s in sources if not s.is_file()]
    if missing:
        _fail(f"no such corpus file: {', '.join(missing)}")
    try:
        counts = build_store(out, sources, fmt, progress=sys.stderr.isatty())
    except CorpusFormatError as exc:
        _fail(str(exc))
    typer.echo(f"{out}: {counts['pages']} pages added, {counts['merged']} merged by title")


@app.command()
def models() -> None:
    """List the embedded local models and whether their weights are installed."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from raleval.agents.local import LOCAL_MODELS, is_installed

    table = Table(title="local models (local/<name>)")
    for col in ("name", "installed", "size", "RAM", "description"):
        table.add_column(col)
    for name, w in LOCAL_MODELS.items():
        ok = is_installed(w)
        table.add_row(
            name,
            "yes" if ok else escape(f"no: {w.install_hint()}"),
            f"{w.size / 1e6:.0f} MB",
            f"{w.ram_gb:.1f} GB",
            escape(w.description),
        )
    Console().print(table)


def main() -> None:
    """Console-script entry point: an unexpected error is one line (its traceback with
    ``--debug``), a full disk says so."""
    import errno

    try:
        app()
    except KeyboardInterrupt:
        sys.exit(INTERRUPTED)
    except Exception as exc:
        if _DEBUG["on"] or "--debug" in sys.argv:
            raise
        from rich.console import Console
        from rich.markup import escape

        if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
            what = f"no space left on the device ({exc.filename or 'a write'})"
        else:
            what = f"{type(exc).__name__}: {exc}"
        Console(stderr=True, soft_wrap=True).print(
            f"[bold red]error:[/] {escape(what)} (run again with --debug for the traceback)",
            highlight=False,
            emoji=False,
        )
        sys.exit(FAILED)


tasks_app = typer.Typer(help="The task catalog: list families, build seasonal test sets.")
app.add_typer(tasks_app, name="tasks")


@tasks_app.command("list")
def tasks_list() -> None:
    """Every task family (level, domain, environment, metric) and every task set."""
    from rich.console import Console
    from rich.table import Table

    from raleval import registry

    table = Table(title="raleval task families")
    for col in ("family", "level", "domain", "env", "metric", "description"):
        table.add_column(col)
    for name, fam in registry.task_families.load_all().items():
        if isinstance(fam, Exception):
            table.add_row(name, "", "", "", "", f"failed to load: {fam}")
            continue
        table.add_row(name, fam.level.value, fam.domain, fam.env, fam.metric, fam.description)
    console = Console()
    console.print(table)
    sets = Table(title="task sets")
    sets.add_column("set")
    sets.add_column("families")
    for name in registry.task_sets.names():
        sets.add_row(name, ", ".join(registry.task_sets.get(name)))
    console.print(sets)


@tasks_app.command("build")
def tasks_build(
    tasks: Annotated[str, typer.Argument(help="task set or family id")] = "reval-12",
    season: Annotated[str, typer.Option(help="season label; the seed is derived from it")] = (
        "2026-11"
    ),
    size: Annotated[int, typer.Option(help="test tasks per family")] = 100,
    examples: Annotated[int, typer.Option(help="k-shot example pool per family")] = 8,
    world: Annotated[str, typer.Option(help="world size of every environment")] = "small",
    out: Annotated[Path | None, typer.Option(help="output folder")] = None,
) -> None:
    """Write test.jsonl, examples.jsonl and manifest.json for a seeded season."""
    from rich.console import Console
    from rich.table import Table

    from raleval.tasks.catalog import build_catalog

    folder = out or Path("catalog") / f"{tasks}-{season}"
    try:
        manifest = build_catalog(tasks, folder, season, size, examples, world)
    except _user_errors() as exc:
        _fail(str(exc))
    table = Table(title=f"{tasks} season {season} (seed {manifest['seed']}) -> {folder}")
    for col in ("family", "level", "env", "test", "examples", "seconds"):
        table.add_column(col)
    for fid, f in manifest["families"].items():
        table.add_row(
            fid, f["level"], f["env"], str(f["test"]), str(f["examples"]), str(f["seconds"])
        )
    Console().print(table)
    typer.echo(f"test.jsonl sha256 {manifest['files']['test.jsonl']}")


@tasks_app.command("expand")
def tasks_expand(
    family: Annotated[str, typer.Argument(help="a family id with surface templates (1-1, 1-3)")],
    model: Annotated[str, typer.Option(help="model spec that proposes the paraphrases")],
    out: Annotated[Path, typer.Option(help="YAML file to review")] = Path("templates.yaml"),
    per_template: Annotated[int, typer.Option(help="proposals kept per template")] = 3,
    world: Annotated[str, typer.Option(help="world size the templates are read from")] = "tiny",
) -> None:
    """Ask a model for new wordings of a family's templates and write them to a file for a
    person to review (no generator or benchmark ever reads it)."""
    import asyncio

    from raleval import registry
    from raleval.agents.agent import resolve_model
    from raleval.model import ModelError
    from raleval.tasks.expand import expand_templates, surface_templates, write_review_file

    try:
        fam = registry.task_families.get(family)
        templates = surface_templates(fam, registry.envs.get(fam.env)(size=world))
        if not templates:
            raise ValueError(
                f"family {family} builds its questions in code, with no surface templates"
            )
        llm = resolve_model(model)
        entries = asyncio.run(expand_templates(templates, llm, per_template))
    except (ModelError, *_user_errors()) as exc:
        _fail(str(exc))
    write_review_file(out, family, model, entries)
    kept = sum(len(e["candidates"]) for e in entries)
    typer.echo(f"{kept} proposals for {len(entries)} templates -> {out} (for review)")


@tasks_app.command("load")
def tasks_load(
    kind: Annotated[
        str, typer.Argument(help="hotpotqa | 2wiki | musique | kqapro | crag | soay | reval")
    ],
    path: Annotated[Path, typer.Argument(help="the public task file")],
    out: Annotated[Path, typer.Option(help="raleval tasks JSON lines, for --tasks")] = Path(
        "tasks.jsonl"
    ),
    strict: Annotated[
        bool, typer.Option("--strict", help="fail on the first bad record instead of skipping it")
    ] = False,
) -> None:
    """Convert a public dataset file into raleval task records (bad records are skipped and
    listed with file:line and the reason)."""
    from raleval.store import write_tasks
    from raleval.tasks.loaders import TaskFileError, load_report

    try:
        report = load_report(kind, path, strict)
    except (TaskFileError, *_user_errors()) as exc:
        _fail(str(exc))
    for skipped in report.skipped[:20]:
        typer.echo(f"skipped {skipped}", err=True)
    if len(report.skipped) > 20:
        typer.echo(f"... and {len(report.skipped) - 20} more skipped", err=True)
    typer.echo(report.summary(), err=True)
    write_tasks(out, report.tasks)
    typer.echo(f"{len(report.tasks)} tasks -> {out}")
