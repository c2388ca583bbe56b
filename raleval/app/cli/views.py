"""``raleval tasks fit``: a task set built for a context window, without the tasks whose
answer the workflow cannot show at it (``raleval.app.views``)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Annotated

import typer

from raleval.app.cli.base import fail, user_errors
from raleval.app.cli.catalog import tasks_app


@tasks_app.command("fit")
def tasks_fit(
    tasks: Annotated[str, typer.Argument(help="task set, family id or tasks .jsonl")],
    context: Annotated[int, typer.Option(help="the context window, in tokens")],
    out: Annotated[Path, typer.Option(help="tasks .jsonl to write (run it with --tasks)")],
    env: Annotated[str, typer.Option(envvar="RALEVAL_ENV", help="environment")] = "scholar",
    workflow: Annotated[str, typer.Option(help="the workflow whose view decides")] = "react",
    world: Annotated[
        str | None, typer.Option(help="world size (default: the environment's own)")
    ] = None,
    per_family: Annotated[int, typer.Option(help="generated tasks per family")] = 100,
    seed: Annotated[int, typer.Option(help="generation seed")] = 0,
) -> None:
    """Keep the tasks whose answer ``workflow`` shows at ``--context`` tokens (the executing
    oracle answers them from its view) and say how many each family kept."""
    from rich.table import Table

    from raleval import registry
    from raleval.app.console import make_console
    from raleval.app.views import answerable_in_view
    from raleval.store import write_tasks
    from raleval.tasks.catalog import load_tasks

    try:
        plugin = registry.envs.get(env)
        environment = plugin(size=world) if world else plugin()
        task_list = load_tasks(tasks, environment, env, per_family, seed)
        shown = answerable_in_view(task_list, environment, context, workflow, env, seed)
    except user_errors() as exc:
        fail(str(exc))
    kept = [t for t in task_list if shown[t.id]]
    write_tasks(out, kept)
    total, fits = Counter(t.family for t in task_list), Counter(t.family for t in kept)
    table = Table(title=f"{tasks} at {context} tokens in {workflow}'s view -> {out}")
    for col in ("family", "kept", "of", "left out"):
        table.add_column(col)
    for family, n in total.items():
        table.add_row(family, str(fits[family]), str(n), str(n - fits[family]))
    console = make_console()
    console.print(table)
    console.print(f"kept {len(kept)} of {len(task_list)} tasks")
