"""Studies kept in the repository: ``raleval study store`` copies finished cells compactly,
``raleval study restore`` unpacks them into a log directory to resume the study."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from raleval.app.cli.base import INTERRUPTED, app, fail, user_errors

study_app = typer.Typer(help="Studies kept in the repository: compact copies of finished runs.")
app.add_typer(study_app, name="study")


@study_app.command("store")
def study_store(
    run_dirs: Annotated[
        list[Path], typer.Argument(help="run directories, or log directories holding them")
    ],
    into: Annotated[Path, typer.Option(help="the study folder (e.g. studies/local-models)")],
    partial: Annotated[bool, typer.Option("--partial", help="store unfinished cells too")] = False,
    unfinished_into: Annotated[
        Path | None,
        typer.Option(
            help="store unfinished cells with an episode on disk here instead (e.g. "
            "studies/<study>.partial): a new machine resumes them; a cell's copy here is "
            "removed once the cell is stored finished"
        ),
    ] = None,
) -> None:
    """Copy each finished run (every episode on disk) into INTO/<run name> as header.json,
    tasks.jsonl.gz (no page HTML) and results.jsonl.gz; unfinished runs are listed and left,
    or stored apart with --unfinished-into."""
    import shutil

    from raleval.app.study import cell_state, cells_under, store_cell

    if partial and unfinished_into is not None:
        fail("--partial stores unfinished cells into INTO; --unfinished-into apart: not both")
    try:
        for cell in [c for p in run_dirs for c in cells_under(p)]:
            state = cell_state(cell)
            failed = f", {state.failed} failed" if state.failed else ""
            target = into
            if not (state.finished or partial):
                if unfinished_into is None or state.done == 0:
                    typer.echo(f"left {cell.name}: {state.done} of {state.total} episodes{failed}")
                    continue
                target = unfinished_into
            dest = store_cell(cell, target)
            stale = unfinished_into / cell.name if unfinished_into is not None else None
            if target == into and stale is not None and stale.is_dir():
                shutil.rmtree(stale)  # the finished copy in INTO supersedes it
                if not any(stale.parent.iterdir()):
                    stale.parent.rmdir()
            size = sum(f.stat().st_size for f in dest.iterdir())
            kind = "stored" if target == into else "stored unfinished"
            typer.echo(
                f"{kind} {cell.name}: {state.done} of {state.total} episodes{failed}, "
                f"{size / 1e3:.0f} kB -> {dest}"
            )
    except (OSError, ValueError, *user_errors()) as exc:
        fail(str(exc))


@study_app.command("restore")
def study_restore(
    study: Annotated[Path, typer.Argument(help="a study folder (e.g. studies/local-models)")],
    into: Annotated[
        Path, typer.Option(help="the log directory the study runs in (runs/study-<name>)")
    ],
) -> None:
    """Unpack the study's stored cells into INTO as run directories, so that `raleval run
    --config studies/<study>.yaml --log-dir INTO` resumes the study instead of running its
    stored cells again (a fresh clone has no runs/). A cell INTO already holds is kept."""
    from raleval.app.study import cell_state, cells_under, restore_cell

    try:
        cells = [c for c in cells_under(study) if c != study]
        if not cells:
            fail(f"{study} holds no stored cells")
        for cell in cells:
            dest = restore_cell(cell, into)
            if dest is None:
                typer.echo(f"kept {into / cell.name}: it already holds a run")
                continue
            state = cell_state(dest)
            typer.echo(f"restored {cell.name}: {state.done} of {state.total} episodes")
    except (OSError, ValueError, *user_errors()) as exc:
        fail(str(exc))


def _markers(block: str) -> tuple[str, str]:
    return f"<!-- {block}:start -->", f"<!-- {block}:end -->"


def write_block(into: Path, block: str, text: str) -> None:
    """Rewrite the lines between ``<!-- BLOCK:start -->`` and ``<!-- BLOCK:end -->`` of a
    Markdown file with ``text``; the rest of the file is kept byte for byte."""
    start, end = _markers(block)
    try:
        page = into.read_text(encoding="utf-8")
    except OSError as exc:
        fail(f"cannot read {into}: {exc}")
    if page.count(start) != 1 or page.count(end) != 1 or page.index(start) > page.index(end):
        fail(f"{into} needs one {start} line before one {end} line")
    head, rest = page.split(start, 1)
    tail = rest.split(end, 1)[1]
    into.write_text(f"{head}{start}\n{text}{end}{tail}", encoding="utf-8")


def emit(text: str, into: Path | None, block: str, what: str) -> None:
    """Print ``text``, or with ``into`` write it into that file's block (:func:`write_block`)."""
    if into is None:
        typer.echo(text, nl=False)
        return
    write_block(into, block, text)
    typer.echo(f"{what} written into {into}")


INTO_HELP = (
    "rewrite the block between <!-- BLOCK:start --> and <!-- BLOCK:end --> of this Markdown "
    "file instead of printing (default: print)"
)


# tables' and claims' --format-gap: one option, one help text
FormatGap = Annotated[
    float,
    typer.Option(
        min=0.0,
        max=1.0,
        help="a verdict whose systems' format-failure rates (model calls cut at "
        "max_tokens, unparseable or repeating a call) differ by more than this share says so",
    ),
]


@study_app.command("tables")
def study_tables_command(
    folder: Annotated[Path, typer.Argument(help="a study folder (studies/<study>) or log dir")],
    into: Annotated[Path | None, typer.Option(help=INTO_HELP)] = None,
    block: Annotated[str, typer.Option(help="the block's name, for --into")] = "study-tables",
    design: Annotated[
        Path | None,
        typer.Option(
            help="a design file: test exactly its declared comparisons on the generated arm, "
            "clustered at its level; every other pair is marked exploratory"
        ),
    ] = None,
    timing: Annotated[
        Path | None,
        typer.Option(help="a timing pass's folder (raleval study timing --out): its table too"),
    ] = None,
    format_gap: FormatGap = 0.10,
) -> None:
    """Print the study's headline tables as Markdown: a row per workflow x model, one table per
    arm (generated task sets, each real-data file), F1 with clustered 95% intervals, F1 by
    level, the error-type mix, unparseable endings, seconds (without a design) and tokens per
    episode."""
    from raleval.analysis.study import study_tables

    if not folder.exists():
        fail(f"no study folder {folder}")
    if timing is not None and not timing.is_dir():
        fail(f"no timing folder {timing}")
    try:
        if design is None:
            text = study_tables(folder, timing=timing, format_gap=format_gap)
        else:
            from raleval.analysis.design import load_design

            plan = load_design(design)
            text = study_tables(
                folder,
                plan.declared,
                plan.cluster,
                timing,
                format_gap=format_gap,
                weights=plan.estimand.weights,
                family_of=plan.family,
            )
    except user_errors() as exc:
        fail(str(exc))
    emit(text, into, block, "tables")


@study_app.command("claims")
def study_claims_command(
    folder: Annotated[Path, typer.Argument(help="a study folder (studies/<study>) or log dir")],
    design: Annotated[Path, typer.Option(help="the study's design file, declared before it ran")],
    into: Annotated[Path | None, typer.Option(help=INTO_HELP)] = None,
    block: Annotated[str, typer.Option(help="the block's name, for --into")] = "study-claims",
    format_gap: FormatGap = 0.10,
    table: Annotated[
        bool,
        typer.Option(
            "--table",
            help="one table instead of a sentence per claim: a row per declared comparison, a "
            "column per arm, each cell the F1 difference and Holm's p (for the README)",
        ),
    ] = False,
) -> None:
    """The study's claims as Markdown, from its declared comparisons only: per arm, a sentence
    per comparison (which system scores higher when Holm's verdict says they differ, else no
    difference detected and the MDD), and the declared comparisons with no data yet; with
    --table, the same verdicts as one table."""
    from raleval.analysis.claims import study_claims, study_claims_table
    from raleval.analysis.design import load_design

    if not folder.exists():
        fail(f"no study folder {folder}")
    try:
        write = study_claims_table if table else study_claims
        text = write(folder, load_design(design), f"`{design.as_posix()}`", format_gap)
    except user_errors() as exc:
        fail(str(exc))
    emit(text, into, block, "claims")


@study_app.command("plan")
def study_plan(
    design: Annotated[Path, typer.Argument(help="a design file (studies/<study>.design.yaml)")],
    pilot: Annotated[
        Path, typer.Option(help="a pilot's or a stored study's folder of cells to size it by")
    ],
    arm: Annotated[
        str, typer.Option(help="the pilot's arm: 'generated' or a real-data file's stem")
    ] = "generated",
    measured: Annotated[
        Path | None,
        typer.Option(
            help="the study's own stored cells so far (a budget sweep under way): their "
            "seconds per episode replace the pilot's estimate where they ran"
        ),
    ] = None,
) -> None:
    """Before a study runs: each declared comparison's minimum detectable difference at the
    planned size (from the pilot's paired differences) and the machine time of its cells;
    while it runs, with --measured, the same with the time its finished cells took."""
    from raleval.analysis.design import load_design, plan_design, render_plan
    from raleval.analysis.study import budget_of, load_study

    if not pilot.exists():
        fail(f"no pilot folder {pilot}")
    try:
        declared = load_design(design)
        arms = load_study(pilot)
        if arm not in arms:
            fail(f"{pilot} has no arm {arm!r}; it has: {', '.join(arms) or 'none'}")
        done: dict[int, Any] = {}
        if measured is not None:
            for name, systems in load_study(measured).items():
                budget = budget_of(name)
                if budget is not None:
                    done[budget] = systems
        plan = plan_design(declared, arms[arm], done)
        typer.echo(render_plan(plan, declared), nl=False)
    except (OSError, *user_errors()) as exc:
        fail(str(exc))


@study_app.command("timing")
def study_timing(
    config: Annotated[Path, typer.Option(help="the study's run config (YAML, as raleval run)")],
    out: Annotated[Path, typer.Option(help="folder for the timing cells and timing.jsonl")],
    per_cell: Annotated[
        int | None, typer.Option(help="the first N tasks per cell (default: --per-family)")
    ] = None,
    per_family: Annotated[
        int | None,
        typer.Option(help="tasks of every family per cell (default: enough for 5 per cell)"),
    ] = None,
    max_load: Annotated[
        float, typer.Option(help="wait before each episode until the 1-minute load is below")
    ] = 1.5,
    load_timeout: Annotated[
        float, typer.Option(help="seconds to wait for the load at most (then run, recorded)")
    ] = 900.0,
    scored: Annotated[
        Path | None,
        typer.Option(help="the study folder whose scored answers each timed answer must match"),
    ] = None,
) -> None:
    """The timing pass: wall time apart from the study, one episode at a time, every cell of an
    environment on the same tasks (every family) in interleaved order, each episode after the
    load fell below --max-load, the load and the wait recorded per episode and, with --scored,
    whether its answer is the scored episode's (``out/<env>/timing.jsonl``; resumable)."""
    from collections import defaultdict

    from raleval.app.timing import timing_pass
    from raleval.config import load_matrix

    if scored is not None and not scored.is_dir():
        fail(f"no study folder {scored}")
    try:
        groups: dict[tuple[str, str], list] = defaultdict(list)
        for cfg in load_matrix(config, {}):
            full = cfg.with_defaults()
            groups[(full.env, str(full.tasks))].append(cfg)
        one_set_per_env = len(groups) == len({env for env, _ in groups})
        for (env, tasks), cells in groups.items():
            folder = out / (env if one_set_per_env else f"{env}-{Path(tasks).stem}")
            log = timing_pass(cells, folder, per_cell, per_family, max_load, load_timeout, scored)
            typer.echo(f"wrote {log}")
    except KeyboardInterrupt as exc:
        typer.echo(f"{exc or 'interrupted'}; the same command resumes", err=True)
        raise typer.Exit(INTERRUPTED) from None
    except (OSError, ValueError, *user_errors()) as exc:
        fail(str(exc))


@study_app.command("figures")
def study_figures(
    folder: Annotated[Path, typer.Argument(help="a study folder (studies/<study>) or log dir")],
    into: Annotated[Path, typer.Option(help="folder for the PNG files (e.g. docs/study)")],
    arm: Annotated[
        str,
        typer.Option(help="which arm: 'generated' or a real-data file's stem (hotpotqa-dev)"),
    ] = "generated",
    figure: Annotated[
        list[str] | None,
        typer.Option(
            help="only this figure (repeatable): radar-<workflow>, bars, progress, errors, "
            "tokens, deployment, budgets (default: all)"
        ),
    ] = None,
    timing: Annotated[
        Path | None,
        typer.Option(
            help="a timing pass's folder: the deployment figure (time versus F1) takes its "
            "seconds from it instead of the cells' own"
        ),
    ] = None,
) -> None:
    """Write the report's figures for one arm of the study as PNG files (a radar per workflow,
    F1 by domain x level, the error-type mix, tokens and time versus F1), each system's cells
    merged as in the tables: what the README shows."""
    from raleval.analysis import plots
    from raleval.analysis.report import save_figures
    from raleval.analysis.study import budget_series, load_study, timing_points

    if not folder.exists():
        fail(f"no study folder {folder}")
    if timing is not None and not timing.is_dir():
        fail(f"no timing folder {timing}")
    wanted = set(figure or ())
    try:
        arms = load_study(folder)
        if arm not in arms and not (wanted and wanted <= {"budgets"}):
            fail(f"{folder} has no arm {arm!r}; it has: {', '.join(arms) or 'none'}")
        # figures drawn here rather than by the report: time from a timing pass, and the
        # budget sweep's curves (over every budget arm, not one arm)
        own = {"budgets"} | ({"deployment"} if timing is not None else set())
        rest = [f for f in figure or () if f not in own]
        written = []
        if arm in arms and (rest or not figure):
            written = save_figures(list(arms[arm].values()), into, rest)
            written = [p for p in written if p.stem not in own]
        into.mkdir(parents=True, exist_ok=True)
        with plots.rendered_as("png"):
            if timing is not None and (not figure or "deployment" in wanted):
                points, front, extras = timing_points(timing, arms[arm])
                if points:
                    path = into / "deployment.png"
                    path.write_bytes(plots.deployment(points, front, extras))
                    written.append(path)
            series = budget_series(arms)
            if (not figure or "budgets" in wanted) and series:
                path = into / "budgets.png"
                path.write_bytes(plots.budget_curves(series))
                written.append(path)
    except (OSError, *user_errors()) as exc:
        fail(str(exc))
    if figure and len(written) < len(figure):
        missing = sorted(set(figure) - {p.stem for p in written})
        fail(f"no figure named {', '.join(missing)} for arm {arm!r}")
    for path in written:
        typer.echo(f"wrote {path}")
