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
        list[Path], typer.Argument(help="run directories, or folders of them (a study)")
    ],
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
    from raleval.app.study import cells_under

    try:
        path = write_report([c for p in run_dirs for c in cells_under(p)], out, threshold)
    except user_errors() as exc:
        fail(str(exc))
    typer.echo(f"report: {path}")


@app.command()
def table(
    run_dirs: Annotated[
        list[Path], typer.Argument(help="run directories, or folders of them (a study)")
    ],
    fmt: Annotated[str, typer.Option("--format", help="rich | csv | markdown | latex")] = "rich",
) -> None:
    """Print R-Eval's per-task table (averages and ranks) for the given runs."""
    from rich.console import Console

    from raleval.analysis.runs import load_run, per_task_table
    from raleval.app.study import cells_under

    try:
        t = per_task_table([load_run(c) for p in run_dirs for c in cells_under(p)])
    except user_errors() as exc:
        fail(str(exc))
    renderers = {"csv": t.to_csv, "markdown": t.to_markdown, "latex": t.to_latex}
    if fmt == "rich":
        Console().print(t.to_rich())
    elif fmt in renderers:
        typer.echo(renderers[fmt](), nl=False)
    else:
        fail(f"--format must be rich, csv, markdown or latex, not {fmt!r}")


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
    except user_errors() as exc:
        fail(str(exc))
    fa = {(t.task_id, t.epoch): t for t in a.results}
    fb = {(t.task_id, t.epoch): t for t in b.results}
    common = sorted(set(fa) & set(fb))
    if not common:
        fail("the two runs share no task")
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
    except user_errors() as exc:
        fail(str(exc))
    for path in written:
        typer.echo(f"wrote {path}")
