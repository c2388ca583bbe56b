"""``raleval run`` and ``raleval retry``: run one configuration or a matrix, report failures by
cause, and say how to resume."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from raleval.app.cli.base import (
    FAILED,
    INTERRUPTED,
    TIME_LIMIT,
    app,
    fail,
    user_errors,
)

# ``raleval run --help`` groups its options in these panels; every option shows its default
# (the RunConfig default it stands for: tests/test_cli_help.py checks they agree) and has a
# RALEVAL_<NAME> environment twin, named once in the command's help instead of per option.
MODEL, ENV, TASKS, BUDGETS, OUTPUT, DISTRIBUTION = (
    "Model and workflow",
    "Environment",
    "Tasks",
    "Budgets and fault injection",
    "Output and resuming",
    "Distribution",
)
_OPT = {"show_envvar": False}

RUN_HELP = (
    "Run (or resume) an evaluation and print its results table.\n\n"
    "Every option but --force also reads an environment variable: RALEVAL_ and its name "
    "in capitals (RALEVAL_MODEL, RALEVAL_LIMIT, RALEVAL_MODEL_OPTIONS for -M, ...).\n\n"
    "Exit status: 0 every episode done; 1 some failed for infrastructure reasons (retry them "
    "with --retry-failed) or results could not be written; 2 usage error; 130 interrupted."
)


@app.command(help=RUN_HELP)
def run(
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            "-m",
            envvar="RALEVAL_MODEL",
            help="provider/name: local/qwen2.5-0.5b, local/PATH.gguf, scripted/oracle, "
            "openai/gpt-4o-mini, openai-compatible/NAME@URL (raleval list models)",
            show_default="local/qwen2.5-0.5b",
            rich_help_panel=MODEL,
            **_OPT,
        ),
    ] = None,
    model_option: Annotated[
        list[str] | None,
        typer.Option(
            "-M",
            "--model-option",
            envvar="RALEVAL_MODEL_OPTIONS",
            help="model option key=value, repeatable (n_ctx=8192, timeout_s=120, ...)",
            show_default="the provider's",
            rich_help_panel=MODEL,
            **_OPT,
        ),
    ] = None,
    workflow: Annotated[
        str | None,
        typer.Option(
            "--workflow",
            "-w",
            envvar="RALEVAL_WORKFLOW",
            help="react, function_calling, pal, dfsdt, direct or planned",
            show_default="react",
            rich_help_panel=MODEL,
            **_OPT,
        ),
    ] = None,
    workflow_option: Annotated[
        list[str] | None,
        typer.Option(
            "-W",
            "--workflow-option",
            envvar="RALEVAL_WORKFLOW_OPTIONS",
            help="workflow option key=value, repeatable (max_steps=10, shots=1, ...)",
            show_default="the workflow's",
            rich_help_panel=MODEL,
            **_OPT,
        ),
    ] = None,
    cache: Annotated[
        bool | None,
        typer.Option(
            "--cache/--no-cache",
            envvar="RALEVAL_CACHE",
            help="answer repeated model requests from the response cache",
            show_default="--cache",
            rich_help_panel=MODEL,
            **_OPT,
        ),
    ] = None,
    env: Annotated[
        str | None,
        typer.Option(
            envvar="RALEVAL_ENV",
            help="environment: scholar, wiki, crag, crag-pages, remote, mcp or a plugin "
            "(raleval list envs)",
            show_default="scholar",
            rich_help_panel=ENV,
            **_OPT,
        ),
    ] = None,
    env_option: Annotated[
        list[str] | None,
        typer.Option(
            "-E",
            "--env-option",
            envvar="RALEVAL_ENV_OPTIONS",
            help="environment option key=value, repeatable (size=tiny, seed=3, ...)",
            show_default="the environment's",
            rich_help_panel=ENV,
            **_OPT,
        ),
    ] = None,
    tasks: Annotated[
        str | None,
        typer.Option(
            envvar="RALEVAL_TASKS",
            help="task set, family id or tasks .jsonl file; SET@TESTBED for a testbed",
            show_default="the environment's set",
            rich_help_panel=TASKS,
            **_OPT,
        ),
    ] = None,
    limit: Annotated[
        int | None,
        typer.Option(
            envvar="RALEVAL_LIMIT",
            help="run N tasks taken round-robin across the set's families (each family's "
            "in its seeded order); raising N extends a run",
            show_default="all",
            rich_help_panel=TASKS,
            **_OPT,
        ),
    ] = None,
    sample_id: Annotated[
        str | None,
        typer.Option(
            "--sample-id",
            envvar="RALEVAL_SAMPLE_ID",
            help="run only these task ids (ID,ID,...)",
            show_default="all",
            rich_help_panel=TASKS,
            **_OPT,
        ),
    ] = None,
    tasks_per_family: Annotated[
        int | None,
        typer.Option(
            envvar="RALEVAL_TASKS_PER_FAMILY",
            help="tasks generated per family of a generated set; --limit and --sample-id "
            "choose among them",
            show_default="100",
            rich_help_panel=TASKS,
            **_OPT,
        ),
    ] = None,
    seed: Annotated[
        int | None,
        typer.Option(
            envvar="RALEVAL_SEED",
            help="seed of task generation, demonstrations and fault injection",
            show_default="0",
            rich_help_panel=TASKS,
            **_OPT,
        ),
    ] = None,
    epochs: Annotated[
        int | None,
        typer.Option(
            envvar="RALEVAL_EPOCHS",
            help="repeat every task; reports pass@k and pass^k",
            show_default="1",
            rich_help_panel=TASKS,
            **_OPT,
        ),
    ] = None,
    allow_foreign_tasks: Annotated[
        bool | None,
        typer.Option(
            "--allow-foreign-tasks",
            envvar="RALEVAL_ALLOW_FOREIGN_TASKS",
            help="run tasks made for another environment or world (refused otherwise)",
            show_default="off",
            rich_help_panel=TASKS,
            **_OPT,
        ),
    ] = None,
    max_connections: Annotated[
        str | None,
        typer.Option(
            envvar="RALEVAL_MAX_CONNECTIONS",
            help="episodes in flight at once, or auto: found from the endpoint's 429/503 "
            "answers (AIMD), recorded in concurrency.jsonl",
            show_default="8",
            rich_help_panel=BUDGETS,
            **_OPT,
        ),
    ] = None,
    max_connections_per_endpoint: Annotated[
        int | None,
        typer.Option(
            envvar="RALEVAL_MAX_CONNECTIONS_PER_ENDPOINT",
            help="concurrent calls per model endpoint",
            show_default="no cap",
            rich_help_panel=BUDGETS,
            **_OPT,
        ),
    ] = None,
    tool_fault_rate: Annotated[
        float | None,
        typer.Option(
            envvar="RALEVAL_TOOL_FAULT_RATE",
            help="share of tool calls answered by a seeded injected fault",
            show_default="0.0",
            rich_help_panel=BUDGETS,
            **_OPT,
        ),
    ] = None,
    llm_fault_rate: Annotated[
        float | None,
        typer.Option(
            envvar="RALEVAL_LLM_FAULT_RATE",
            help="share of model calls answered by a seeded injected fault",
            show_default="0.0",
            rich_help_panel=BUDGETS,
            **_OPT,
        ),
    ] = None,
    log_dir: Annotated[
        Path | None,
        typer.Option(
            envvar="RALEVAL_LOG_DIR",
            help="folder that holds the run directories",
            show_default="runs",
            rich_help_panel=OUTPUT,
            **_OPT,
        ),
    ] = None,
    run_name: Annotated[
        str | None,
        typer.Option(
            envvar="RALEVAL_RUN_NAME",
            help="name of the run's directory in the log directory",
            show_default="from env, workflow, model, tasks",
            rich_help_panel=OUTPUT,
            **_OPT,
        ),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option(
            envvar="RALEVAL_CONFIG",
            help="YAML file of these options; may list workflows x models x tasks",
            show_default="none",
            rich_help_panel=OUTPUT,
            **_OPT,
        ),
    ] = None,
    display: Annotated[
        str,
        typer.Option(
            envvar="RALEVAL_DISPLAY",
            help="progress display: rich (plain lines when stderr is not a terminal), plain "
            "or none",
            rich_help_panel=OUTPUT,
            **_OPT,
        ),
    ] = "rich",
    retry_failed: Annotated[
        bool,
        typer.Option(
            "--retry-failed",
            envvar="RALEVAL_RETRY_FAILED",
            help="run again the episodes whose last attempt failed for infrastructure reasons",
            show_default="off",
            rich_help_panel=OUTPUT,
            **_OPT,
        ),
    ] = False,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="set aside (not delete) a run directory that holds another run",
            show_default="off",
            rich_help_panel=OUTPUT,
        ),
    ] = False,
    backend: Annotated[
        str | None,
        typer.Option(
            envvar="RALEVAL_BACKEND",
            help="local (this process), processes (--workers processes) or ray",
            show_default="local",
            rich_help_panel=DISTRIBUTION,
            **_OPT,
        ),
    ] = None,
    workers: Annotated[
        int | None,
        typer.Option(
            envvar="RALEVAL_WORKERS",
            help="worker processes of the processes and ray backends",
            show_default="2",
            rich_help_panel=DISTRIBUTION,
            **_OPT,
        ),
    ] = None,
    ray_address: Annotated[
        str | None,
        typer.Option(
            envvar="RALEVAL_RAY_ADDRESS",
            help="Ray cluster to join",
            show_default="a local Ray",
            rich_help_panel=DISTRIBUTION,
            **_OPT,
        ),
    ] = None,
    preflight: Annotated[
        bool,
        typer.Option(
            "--preflight/--no-preflight",
            envvar="RALEVAL_PREFLIGHT",
            help="ask the model's endpoint once (GET /models) before anything is written: "
            "unreachable, a refused key or a model it does not list exits 2 at once",
            rich_help_panel=MODEL,
            **_OPT,
        ),
    ] = True,
    max_time: Annotated[
        float | None,
        typer.Option(
            "--max-time",
            envvar="RALEVAL_MAX_TIME",
            min=1,
            help="seconds after which no episode (nor matrix cell) starts; running ones finish "
            "and are saved, and the command exits 3: run it again to resume (long studies in "
            "chunks)",
            show_default="no limit",
            rich_help_panel=OUTPUT,
            **_OPT,
        ),
    ] = None,
) -> None:
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
        if preflight:  # one request per model, before any run directory is made
            from raleval.app.preflight import preflight_all

            preflight_all(configs)
        deadline = None
        if max_time is not None:
            import time

            from raleval.config import ConfigError

            if any(c.backend != "local" for c in configs):
                raise ConfigError("--max-time needs the local backend (--backend local)")
            deadline = time.monotonic() + max_time
        _run_all(
            configs, display, matrix=config is not None and len(configs) > 1, deadline=deadline
        )
    except user_errors() as exc:
        fail(str(exc))


def _run_all(
    configs: list[Any], display: str, matrix: bool = False, deadline: float | None = None
) -> None:
    """Run each configuration (a matrix: then write and print the combined table); exit 1 if
    any left episodes failed (or unwritten), else 3 if ``deadline`` stopped the run early."""
    import time

    from raleval.app.plan import check_config, resolve_config
    from raleval.app.runner import stop_child_processes

    if len(configs) > 1:  # every cell checked before the first runs: not hours later
        for cfg in configs:
            check_config(resolve_config(cfg))
    failed = False
    unfinished = 0  # configurations the deadline stopped or kept from starting
    for i, cfg in enumerate(configs):
        if deadline is not None and time.monotonic() >= deadline:
            unfinished += 1
            continue
        ok, complete = _run_one(cfg, display, deadline)
        failed |= not ok
        unfinished += not complete
        if not any(_same_model(cfg, later) for later in configs[i + 1 :]):
            # no later cell asks for this model: its llama.cpp server (an embedded model)
            # would otherwise hold its memory, and count as a busy server when the next
            # model's starts (OversubscribedWarning), until the whole matrix ends
            stop_child_processes()
    if matrix:
        from raleval.app.matrix import matrix_rows, to_markdown, write_matrix

        rows = matrix_rows(configs)
        paths = write_matrix(configs[0].log_dir, rows)
        typer.echo(to_markdown(rows), nl=False)
        typer.echo(f"matrix: {', '.join(str(p) for p in paths)}")
        _matrix_report(configs)
    if failed:
        raise typer.Exit(FAILED)
    if unfinished:
        typer.echo(
            f"--max-time reached: {unfinished} of {len(configs)} configuration(s) not finished; "
            f"resume with: {_command_line()}",
            err=True,
        )
        raise typer.Exit(TIME_LIMIT)


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
    except user_errors() as exc:
        fail(str(exc))


def _same_model(a: Any, b: Any) -> bool:
    """Whether two cells run the same model with the same options (one model server)."""
    return bool(a.model == b.model and a.model_options == b.model_options)


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
    from rich.markup import escape

    from raleval.analysis.report import write_report
    from raleval.app.console import make_console
    from raleval.app.rundir import newer_than_every_input
    from raleval.store import RESULTS

    dirs = [c.run_dir for c in configs if (c.run_dir / RESULTS).exists()]
    if not dirs:
        return
    path = configs[0].log_dir / "matrix-report.html"
    if newer_than_every_input(path, dirs):  # a resumed matrix with nothing new: seconds saved
        typer.echo(f"matrix report: {path} (kept: no cell changed since it was written)")
        return
    try:
        path = write_report(dirs, path, replace=True)  # the matrix's own report, redrawn
        typer.echo(f"matrix report: {path}")
    except Exception as exc:  # the results are safe; `raleval report` can retry
        make_console(stderr=True).print(f"[yellow]no matrix report[/]: {escape(str(exc))}")


def _run_one(cfg: Any, display: str, deadline: float | None = None) -> tuple[bool, bool]:
    """Run one configuration and print its results. Returns (ok, complete): ok is False if
    episodes failed or went unwritten (exit status 1); complete is False if ``deadline``
    stopped it with episodes left."""
    from rich.markup import escape

    from raleval.analysis.summary import render_table, summarize
    from raleval.app.console import make_console
    from raleval.app.runner import run_sync
    from raleval.store import RESULTS

    console = make_console()
    try:
        summary = run_sync(cfg, display, deadline)
    except KeyboardInterrupt:
        _exit_interrupted(f"finished episodes are saved in {cfg.run_dir}")
    if summary.interrupted:
        _exit_interrupted(f"{summary.ran} episodes finished and saved in {summary.run_dir}")
    if summary.write_error is not None:
        make_console(stderr=True, soft_wrap=True).print(
            f"[bold red]error:[/] cannot write results: {escape(summary.write_error)}; the run "
            f"stopped before its next model call ({summary.ran} episodes saved, "
            f"{summary.unwritten} to run again). Free space, then: {escape(_command_line())}",
            highlight=False,
        )
        return False, True
    complete = summary.skipped + summary.ran >= summary.total
    if not (summary.run_dir / RESULTS).exists():  # --max-time came before its first episode
        console.print(f"no episode started; nothing in {summary.run_dir} yet", highlight=False)
        return True, complete
    from raleval.analysis.report import save_report
    from raleval.analysis.runs import load_run, pass_at_k, robustness_rates, untouched_rates
    from raleval.app.rundir import newer_than_every_input

    run = load_run(summary.run_dir)  # read once for the table, pass@k and the report
    rows = summarize(run.results, run.tasks)
    if display != "none":
        console.print(render_table(rows, title=cfg.slug()))
    console.print(
        f"{summary.ran} episodes run, {summary.skipped} already done; "
        f"results in {summary.run_dir / RESULTS}",
        highlight=False,
    )
    if cfg.max_connections == "auto":
        from raleval.concurrency import LOG_NAME, settled

        level = settled(summary.run_dir)
        if level is not None:
            console.print(
                f"max-connections auto: settled at {level.get('settled', level['limit'])} "
                f"({summary.run_dir / LOG_NAME})",
                highlight=False,
            )
    for label, rates in robustness_rates(run).items():
        shown = ", ".join(f"{k} {v:.3f}" for k, v in rates.items() if k != "n")
        if rates.get("reached") == 0.0:  # inject on a workflow whose model reads no result
            shown = (
                f"does not apply to {cfg.workflow}: the planted instruction reached none of its "
                "model's prompts, so no utility or attack success is reported"
            )
        console.print(f"testbed {label} ({int(rates['n'])} tasks): {shown}", highlight=False)
    if (untouched := untouched_rates(run)) is not None:  # the run of the set without @testbed
        shown = ", ".join(f"{k} {v:.3f}" for k, v in untouched.items() if k != "n")
        console.print(f"untouched set ({int(untouched['n'])} tasks): {shown}", highlight=False)
    passes = pass_at_k(run) if cfg.epochs > 1 else None
    if passes:
        k = int(passes["k"])
        console.print(
            f"over {k} epochs: pass@{k} = {passes['pass@k']:.3f}, "
            f"pass^{k} = {passes['pass^k']:.3f}",
            highlight=False,
        )
    report = summary.run_dir / "report.html"
    if summary.ran == 0 and newer_than_every_input(report, [summary.run_dir]):
        # a resumed matrix re-drew every finished cell's report (~1 s a cell) for nothing
        console.print(f"report: {report} (kept: nothing in the run changed)", highlight=False)
    else:
        try:
            save_report([run], report)
            console.print(f"report: {report}", highlight=False)
        except Exception as exc:  # the results are safe on disk; a report can be made later
            make_console(stderr=True).print(
                f"[yellow]no report[/]: {escape(str(exc))}; run `raleval report "
                f"{escape(str(summary.run_dir))}` to retry",
                highlight=False,
            )
    return _print_failures(summary.failures, cfg), complete


def _print_failures(failures: dict[str, int], cfg: Any) -> bool:
    """The failure summary by cause; True when there is none."""
    from rich.markup import escape

    from raleval.app.console import make_console

    if not failures:
        return True
    n = sum(failures.values())
    causes = ", ".join(f"{c} {k}" for c, k in sorted(failures.items(), key=lambda x: -x[1]))
    again = _command_line()
    if "--retry-failed" not in again:
        again += " --retry-failed"
    make_console(stderr=True, soft_wrap=True).print(
        f"[bold yellow]{n} episode(s) failed for infrastructure reasons[/] (not scored): "
        f"{escape(causes)}\nretry them with: {escape(again)}",
        highlight=False,
    )
    return False
