"""``raleval diagnose``: why a run's failed episodes failed, by counterfactual replay."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any

import typer

from raleval.app.cli.base import app, fail, user_errors


def print_diagnosis_tables(run_dirs: list[Path], fmt: str = "rich") -> None:
    """The cause tables and the R-Eval label by cause cross-tab of the runs' diagnoses."""
    from rich.markup import escape
    from rich.table import Table

    from raleval.analysis.diagnosis import cause_tables, read_diagnoses, replay_calls

    per_run = {p: read_diagnoses(p) for p in run_dirs}
    diagnoses = [d for ds in per_run.values() for d in ds]
    if not diagnoses:
        fail(f"no {', '.join(map(str, run_dirs))} has a diagnosis.jsonl: run raleval diagnose")
    from raleval.app.console import make_console

    console = make_console()
    for title, header, rows in cause_tables(diagnoses):
        if fmt == "csv":
            typer.echo(f"# {title}")
            typer.echo(",".join(header))
            for row in rows:
                typer.echo(",".join(str(c) for c in row))
            continue
        table = Table(title=title)
        for h in header:
            table.add_column(h, justify="left" if h in ("system", "family", "level") else "right")
        for row in rows:  # names come from task files and model specs: never markup
            table.add_row(*(escape(str(c)) for c in row))
        console.print(table)
    calls, hits = replay_calls(diagnoses)
    typer.echo(f"replay model calls recorded: {calls} ({hits} answered by the response cache)")
    from raleval.analysis.runs import load_run

    for path, ds in per_run.items():  # the tables count diagnosed episodes: say when not all
        diagnosed = {(d.task_id, d.epoch) for d in ds}
        episodes = {(t.task_id, t.epoch) for t in load_run(path).scored}
        rest = len(episodes - diagnosed)
        if rest:
            typer.echo(
                f"{path}: {len(episodes & diagnosed)} of {len(episodes)} episodes "
                f"diagnosed; the tables leave out the other {rest} (`raleval diagnose "
                f"{path}` diagnoses them)"
            )


@app.command()
def diagnose(
    run_dir: Annotated[Path, typer.Argument(help="a run directory")],
    model: Annotated[
        str | None,
        typer.Option("--model", "-m", help="replay with this model (default: the run's own)"),
    ] = None,
    limit: Annotated[
        int | None, typer.Option(help="diagnose at most N more episodes", min=1)
    ] = None,
    time_limit: Annotated[
        float | None,
        typer.Option(
            "--time-limit",
            help="wall-clock seconds per replay instead of the run's time_limit_s; episodes "
            "the run's clock stopped, and those a harness limit left undecided, are then "
            "replayed too, without --fresh",
            min=1,
        ),
    ] = None,
    samples: Annotated[
        int | None,
        typer.Option(
            help="replays of each intervention and of its control (the unchanged prefix); a "
            "cause needs the intervention's success rate to beat the control's "
            "(docs/diagnosis.md). Default: 3 at temperature > 0; at temperature 0 one, a fix "
            "asked twice, and any other number is honoured too",
            min=1,
        ),
    ] = None,
    gold_retrieval: Annotated[
        str,
        typer.Option(
            help="what gold retrieval puts in at the departure: 'path', the rest of the gold "
            "path; 'one-call', the next gold call only",
        ),
    ] = "path",
    fresh: Annotated[
        bool,
        typer.Option(
            help="set the existing diagnosis.jsonl aside (renamed, kept) and diagnose again"
        ),
    ] = False,
) -> None:
    """Replay the run's failed episodes under interventions (clean interface, gold retrieval,
    evidence in hand) and record each one's cause in diagnosis.jsonl (docs/diagnosis.md)."""
    from raleval.app.diagnose import diagnose_sync, set_aside

    began: dict[tuple[str, int], float] = {}

    def starting(traj: Any, n: int, total: int) -> None:
        began[(traj.task_id, traj.epoch)] = time.monotonic()
        label = traj.error_type.value if traj.error_type else "-"
        typer.echo(f"[{n}/{total}] {traj.task_id} [{label}]: replaying ...")

    def show(d: Any) -> None:
        took = time.monotonic() - began.get((d.task_id, d.epoch), time.monotonic())
        typer.echo(
            f"  {d.task_id} [{d.label}] -> {d.cause.value}  "
            f"({len(d.replays)} replays, {d.llm_calls} model calls, {d.cache_hits} cached; "
            f"{took:.1f} s)"
        )

    started = time.monotonic()
    try:
        if not (run_dir / "results.jsonl").exists():
            fail(f"{run_dir} has no results.jsonl; is it a run directory?")
        if fresh:
            aside = set_aside(run_dir)
            if aside is not None:
                typer.echo(f"set aside: {aside}")
        if gold_retrieval not in ("path", "one-call"):
            fail(f"--gold-retrieval is 'path' or 'one-call', not {gold_retrieval!r}")
        summary = diagnose_sync(
            run_dir,
            model,
            limit,
            show,
            time_limit,
            samples,
            starting,
            whole_path=gold_retrieval == "path",
        )
    except user_errors() as exc:
        fail(str(exc))
    typer.echo(
        f"diagnosed {summary.diagnosed} episodes ({summary.skipped} already diagnosed) in "
        f"{time.monotonic() - started:.1f} s; replay model calls: {summary.llm_calls}, of "
        f"them {summary.cache_hits} from the response cache, "
        f"{summary.llm_calls - summary.cache_hits} sent to the model"
    )
    if summary.nondeterministic:
        typer.echo(
            f"the model is not deterministic at temperature 0: it answered the same request "
            f"two ways in {summary.nondeterministic} episodes (cause: unstable)"
        )
    print_diagnosis_tables([run_dir])
