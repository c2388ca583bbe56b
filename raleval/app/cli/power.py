"""``raleval power``: how many tasks and epochs a study needs, from a pilot run's variance."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from raleval.app.cli.base import app, fail, user_errors


@app.command()
def power(
    runs: Annotated[
        list[Path],
        typer.Option(
            "--runs",
            help="a pilot run (a second system is assumed to correlate --corr with it), or two "
            "pilot runs of the systems to compare",
        ),
    ],
    diff: Annotated[float, typer.Option(help="the true F1 difference to detect")] = 0.05,
    corr: Annotated[
        float, typer.Option(help="one pilot run: assumed per-task correlation of two systems")
    ] = 0.5,
    epochs: Annotated[str, typer.Option(help="epoch counts to plan for")] = "1,2,3,5,10",
    cluster: Annotated[str, typer.Option(help="as for compare")] = "auto",
    alpha: Annotated[float, typer.Option()] = 0.05,
    power: Annotated[float, typer.Option("--power")] = 0.8,
    threshold: Annotated[float, typer.Option(envvar="RALEVAL_THRESHOLD")] = 0.5,
) -> None:
    """Tasks x epochs needed to detect --diff with a paired test (Miller 2024, section 5)."""
    from raleval.analysis.compare import power_plan, run_units
    from raleval.analysis.runs import load_run

    if len(runs) > 2:
        fail("power takes one or two pilot runs")
    try:
        ks = sorted({int(k) for k in epochs.split(",") if k.strip()})
    except ValueError:
        fail(f"--epochs must be comma-separated whole numbers, not {epochs!r}")
    if not ks or ks[0] < 1:
        fail("--epochs must list positive epoch counts")
    try:
        units = [run_units(load_run(p), threshold, cluster, label=str(p)) for p in runs]
        plan = power_plan(units, diff, corr, ks, alpha, power)
    except (*user_errors(), ValueError) as exc:
        fail(str(exc))
    if plan.var_between == 0 and not plan.var_within:
        fail(
            "the pilot's scores do not vary from task to task, so they say nothing about how "
            "many tasks a study needs"
        )
    echo = typer.echo
    echo(f"pilot: {plan.tasks} tasks in {plan.clusters} clusters, {plan.pilot_epochs} epoch(s)")
    echo(f"variance of the difference from {plan.source}")
    echo(f"  between tasks (omega^2): {plan.var_between:.4f}")
    if plan.var_within is None:
        echo("  between epochs: not measured (the pilot has one epoch per task; run it with")
        echo("  --epochs 2 or more to see what repeated samples buy)")
    else:
        echo(f"  between epochs (sigma_A^2 + sigma_B^2): {plan.var_within:.4f}")
    echo(f"  design effect of clustering: {plan.deff:.2f}")
    echo(f"to detect {diff:g} with {100 * power:g}% power at alpha {alpha:g} (two-sided, paired):")
    for k, n in plan.needed.items():
        echo(f"  {k:>3} epoch(s): {n} tasks ({n * k} episodes per system)")
