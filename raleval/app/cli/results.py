"""Reading finished runs: ``raleval report``, ``table``, ``compare`` and ``export``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from raleval.app.cli.base import (
    app,
    fail,
    user_errors,
)


@app.command()
def report(
    run_dirs: Annotated[
        list[Path],
        typer.Argument(help="run directories, log or study directories holding runs, Inspect logs"),
    ],
    out: Annotated[
        Path | None,
        typer.Option(
            help="output file (default: report-<first run>[-and-N-more].html beside the first "
            "run, or under ./runs for a stored study, numbered rather than overwritten; never "
            "inside a run)"
        ),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="replace an existing --out file")] = False,
    threshold: Annotated[
        float,
        typer.Option(envvar="RALEVAL_THRESHOLD", help="F1 at or above which an answer matches"),
    ] = 0.5,
    png: Annotated[
        Path | None,
        typer.Option(
            help="also write the report's figures as PNG files into this folder (for a "
            "README or a paper; default: none)"
        ),
    ] = None,
) -> None:
    """Write a self-contained HTML report (tables, figures, trajectory viewer)."""
    from raleval.analysis.report import write_report
    from raleval.app.study import cells_under

    try:
        cells = [c for p in run_dirs for c in cells_under(p)]
        if out is None and cells and not (cells[0] / "results.jsonl").exists():
            # a study stored in the repository (gzipped cells): the report goes under runs/
            # here, never into the stored study's folder
            from raleval.analysis.report import default_report_path

            Path("runs").mkdir(exist_ok=True)
            out = default_report_path(cells, Path("runs").resolve())
        path = write_report(cells, out, threshold, png_dir=png, replace=force)
    except user_errors() as exc:
        fail(str(exc))
    typer.echo(f"report: {path}")
    if png is not None:
        typer.echo(f"figures: {png}/*.png")


@app.command()
def table(
    run_dirs: Annotated[
        list[Path],
        typer.Argument(help="run directories, log or study directories holding runs, Inspect logs"),
    ],
    fmt: Annotated[str, typer.Option("--format", help="rich | csv | markdown | latex")] = "rich",
    ci: Annotated[
        bool | None,
        typer.Option(
            "--ci/--no-ci",
            help="each mean with ± its 95% interval, clustered by template (default: on for "
            "rich, off for csv, markdown and latex)",
        ),
    ] = None,
    diagnosis: Annotated[
        bool, typer.Option("--diagnosis", help="the causes of failure (raleval diagnose)")
    ] = False,
) -> None:
    """Print R-Eval's per-task table (averages and ranks) for the given runs."""
    from raleval.analysis.runs import find_runs, load_run, per_task_table
    from raleval.app.console import make_console

    if diagnosis:
        from raleval.app.cli.diagnosis import print_diagnosis_tables

        try:
            found = find_runs(run_dirs)
        except user_errors() as exc:
            fail(str(exc))
        print_diagnosis_tables(found, fmt)
        return

    try:
        runs = [load_run(p) for p in find_runs(run_dirs)]
        t = per_task_table(runs)
    except user_errors() as exc:
        fail(str(exc))
    renderers = {"csv": t.to_csv, "markdown": t.to_markdown, "latex": t.to_latex}
    if fmt == "rich":
        make_console().print(t.to_rich(ci=ci))
        _print_progress_and_testbeds(runs)
    elif fmt in renderers:
        typer.echo(renderers[fmt](ci=bool(ci)), nl=False)
    else:
        fail(f"--format must be rich, csv, markdown or latex, not {fmt!r}")


def _print_progress_and_testbeds(runs: list) -> None:  # type: ignore[type-arg]
    """F1 and progress rate per family and level, and testbed rates beside the untouched set's."""
    from rich.console import Console
    from rich.table import Table

    from raleval.analysis.runs import label_rows, progress_rows, testbed_rows
    from raleval.records import ErrorType

    console = Console()
    for title, header, rows in (
        ("R-Eval labels: the codebook's / the strict reading's (docs/taxonomy.md)",
         ["system", "set", "n", *(e.value for e in ErrorType)], label_rows(runs)),
        ("F1 and progress rate (AgentBoard)", ["system", "family", "level", "n", "F1", "progress"],
         progress_rows(runs)),
        ("testbeds beside the untouched set", ["system", "set", "n", "rates"], testbed_rows(runs)),
    ):  # fmt: skip
        if not rows:
            continue
        table = Table(title=title, padding=(0, 1))
        for col in header:
            table.add_column(col)
        for row in rows:
            table.add_row(*row)
        console.print(table)


@app.command()
def compare(
    run_dirs: Annotated[
        list[Path],
        typer.Argument(
            help="two or more run directories or Inspect logs (A B [C ...]), or a log directory"
        ),
    ],
    threshold: Annotated[float, typer.Option(envvar="RALEVAL_THRESHOLD")] = 0.5,
    cluster: Annotated[
        str,
        typer.Option(
            help="auto (a task's declared cluster, else its template) | family | task (none) | "
            "a task metadata key (e.g. person_id)"
        ),
    ] = "auto",
    alpha: Annotated[float, typer.Option(help="significance level (Holm over all pairs)")] = 0.05,
    power: Annotated[float, typer.Option(help="power for the minimum detectable difference")] = 0.8,
    format_gap: Annotated[
        float,
        typer.Option(
            min=0.0,
            max=1.0,
            help="a verdict whose runs' format-failure rates (model calls cut at max_tokens, "
            "unparseable or repeating a call) differ by more than this share says so",
        ),
    ] = 0.10,
    metric: Annotated[
        str,
        typer.Option(
            help="the score compared: f1, or any stored score (em, correct, an Inspect log's "
            "own inspect_<scorer>, e.g. inspect_match)"
        ),
    ] = "f1",
) -> None:
    """Every pair of runs on their shared tasks: clustered paired t test on F1 or --metric
    (tasks of one template are one cluster; with epochs a task's mean is the unit),
    Holm-corrected p-values, the minimum detectable difference, and each run's between-epoch
    flip rate. Run directories and Inspect logs (.eval, .json) alike."""
    from raleval.analysis.compare import compare_runs, render_comparison, run_units, verdict_lines
    from raleval.analysis.format_failures import format_failures
    from raleval.analysis.runs import find_runs, load_run
    from raleval.app.console import make_console

    try:
        found = find_runs(run_dirs)
        if len(found) < 2:
            fail("compare needs at least two run directories")
        runs = [load_run(p) for p in found]
        if not any(metric in t.scores for r in runs for t in r.scored):
            fail(f"no run has a score named {metric!r} (--metric)")
        units = [
            run_units(r, threshold, cluster, metric, label=str(p))
            for r, p in zip(runs, found, strict=True)
        ]
        formats = [format_failures(r.scored, r.header) for r in runs]
    except (*user_errors(), ValueError) as exc:
        fail(str(exc))
    result = compare_runs(units, alpha, power)
    if not result.pairs:
        fail("no two runs share a task")
    letters = [chr(ord("A") + i) if i < 26 else f"R{i}" for i in range(len(units))]
    c = make_console()
    for letter, u, f in zip(letters, units, formats, strict=True):
        fmt = f"; format failures {f.text()} of {f.calls} model calls" if f.calls else ""
        c.print(f"{letter} = {u.system} ({u.label}{fmt})", highlight=False, markup=False)
    c.print(render_comparison(result, letters))
    for line in verdict_lines(result, letters, formats, format_gap):
        c.print(line, highlight=False, markup=False)
    paths = " ".join(str(u.label) for u in units)
    c.print(
        f"transcripts side by side, right-against-wrong tasks first: raleval view {paths}",
        highlight=False,
        markup=False,
    )


@app.command()
def export(
    run_dir: Annotated[
        Path, typer.Argument(help="a run directory, or a log directory: every run below it")
    ],
    fmt: Annotated[str, typer.Option("--format", help="parquet | csv | inspect")] = "parquet",
    out: Annotated[
        Path | None,
        typer.Option(
            help="output file; steps go beside it (<name>.steps.<format>)",
            show_default="<run or log dir>.episodes.parquet|.csv beside it, numbered rather "
            "than overwritten; an Inspect log per run beside it, named as Inspect names its logs",
        ),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="replace an existing --out file")] = False,
) -> None:
    """Export a run: episodes (and steps) as Parquet or CSV, or an Inspect AI eval log."""
    from raleval.analysis.export import MissingExtraError, export_run

    try:
        written = export_run(run_dir, fmt, out, replace=force)
    except (*user_errors(), MissingExtraError) as exc:
        fail(str(exc))
    for path in written:
        typer.echo(f"wrote {path}")


@app.command()
def view(
    run_dirs: Annotated[
        list[Path] | None,
        typer.Argument(help="run directories, log or study directories holding runs, Inspect logs"),
    ] = None,
    host: Annotated[
        str, typer.Option(help="address to serve on (this machine only by default)")
    ] = ("127.0.0.1"),
    port: Annotated[int, typer.Option(help="port (0: any free one)")] = 8765,
    task: Annotated[
        str | None,
        typer.Option(help="also print the address of this task's transcripts side by side"),
    ] = None,
    epoch: Annotated[int, typer.Option(help="the epoch of --task")] = 0,
) -> None:
    """Serve a local web viewer of runs: every episode listed and filtered (run, family, level,
    label, cause, copied demonstration), each read only when opened, pairs of runs and two or
    more runs' transcripts of one task side by side. Reads lazily: opens 100,000 episodes in
    seconds. Stop it with Ctrl-C."""
    import asyncio
    from urllib.parse import urlencode

    from raleval.analysis.runs import find_runs
    from raleval.app.viewer import serve_viewer

    try:
        found = find_runs(run_dirs or [Path("runs")])
    except user_errors() as exc:
        fail(str(exc))

    def ready(url: str) -> None:
        typer.echo(f"raleval view: {len(found)} run(s) at {url} (Ctrl-C stops it)")
        for i, path in enumerate(found):
            typer.echo(f"  run {i}: {path}")
        if task is not None and len(found) > 1:
            query = urlencode({"runs": ",".join(map(str, range(len(found)))), "task": task,
                               "epoch": epoch})  # fmt: skip
            typer.echo(f"side by side: {url}?{query}")

    try:
        asyncio.run(serve_viewer(found, host, port, ready))
    except KeyboardInterrupt:
        pass
    except OSError as exc:
        fail(f"cannot serve on {host}:{port}: {exc.strerror or exc}")
