"""What is installed and available: ``raleval list``, ``models`` and the task catalog
(``raleval tasks list|build|expand|load``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from raleval.app.cli.base import (
    app,
    fail,
    plain_doc,
    user_errors,
)

WORLD_OPTIONS = ("backend", "size", "seed")  # the options that choose an environment's world


def default_world(env_entry: object) -> str:
    """`` Default world: size=tiny, seed=0.`` for an environment whose factory chooses its
    world by options (none for one that takes a path or a server)."""
    import inspect

    params = getattr(env_entry, "parameters", lambda: None)() or {}
    shown = [
        f"{k}={params[k].default}"
        for k in WORLD_OPTIONS
        if k in params and params[k].default not in (inspect.Parameter.empty, None)
    ]
    default_tasks = getattr(env_entry, "default_tasks", None)
    text = f" Default world: {', '.join(shown)}." if shown else ""
    return text + (f" Default task set: {default_tasks}." if default_tasks else "")


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

    from rich.markup import escape
    from rich.table import Table

    from raleval import registry
    from raleval.app.console import make_console

    if kind == "tools":
        from raleval.config import parse_key_values

        if env is None:
            fail("list tools needs --env")
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
        make_console().print(table)
        return

    kinds = {
        "envs": registry.envs,
        "workflows": registry.workflows,
        "models": registry.models,
        "tasks": registry.task_families,
        "metrics": registry.metrics,
    }
    if kind not in kinds:
        fail(f"unknown kind {kind!r}; choose one of {', '.join(kinds)}")
    entries: list[tuple[str, str]] = []
    seen: dict[int, int] = {}  # one entry per object: a metric registered under two names
    for name, obj in kinds[kind].load_all().items():
        if not isinstance(obj, Exception) and id(obj) in seen:
            other, desc = entries[seen[id(obj)]]
            entries[seen[id(obj)]] = (f"{other}, {name}", desc)
            continue
        seen[id(obj)] = len(entries)
        if isinstance(obj, Exception):
            desc = f"failed to load: {obj}"
        elif kind == "tasks":
            desc = f"{obj.level.value} {obj.domain}, metric {obj.metric}: {obj.description}"
        else:
            desc = plain_doc(obj)
        if kind == "envs" and not isinstance(obj, Exception):
            desc += default_world(obj)
        if kind == "models" and name == "local":
            desc += embedded_tool_calls()
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


def embedded_tool_calls() -> str:
    """The embedded models and how each one's tool calls are decoded (declared)."""
    from raleval.agents.local import LOCAL_MODELS

    listed = "; ".join(f"{n}: tool calls {w.tool_calls}" for n, w in LOCAL_MODELS.items())
    return f" Embedded ({listed}; raleval models says more)."


@app.command()
def models() -> None:
    """List the embedded local models, whether their weights are installed and how their tool
    calls are decoded."""
    from rich.markup import escape
    from rich.table import Table

    from raleval.agents.local import LOCAL_MODELS, is_installed
    from raleval.app.console import make_console

    table = Table(
        title="local models (local/<name>)",
        caption="any other GGUF file: local/<path>.gguf (its context window from its metadata)",
    )
    for col in ("name", "installed", "size", "RAM", "tool calls", "description"):
        table.add_column(col)
    for name, w in LOCAL_MODELS.items():
        ok = is_installed(w)
        table.add_row(
            name,
            "yes" if ok else escape(f"no: {w.install_hint()}"),
            f"{w.size / 1e6:.0f} MB",
            f"{w.ram_gb:.1f} GB",
            escape(f"{w.tool_calls}: {w.tool_calls_note}"),
            escape(w.description),
        )
    make_console().print(table)


tasks_app = typer.Typer(help="The task catalog: list families, build seasonal test sets.")
app.add_typer(tasks_app, name="tasks")


@tasks_app.command("list")
def tasks_list() -> None:
    """Every task family (level, domain, environment, metric) and every task set."""
    from rich.table import Table

    from raleval import registry
    from raleval.app.console import make_console

    table = Table(title="raleval task families")
    for col in ("family", "level", "domain", "env", "metric", "description"):
        table.add_column(col)
    for name, fam in registry.task_families.load_all().items():
        if isinstance(fam, Exception):
            table.add_row(name, "", "", "", "", f"failed to load: {fam}")
            continue
        table.add_row(name, fam.level.value, fam.domain, fam.env, fam.metric, fam.description)
    console = make_console()
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
    from rich.table import Table

    from raleval.app.console import make_console
    from raleval.tasks.catalog import build_catalog

    folder = out or Path("catalog") / f"{tasks}-{season}"
    try:
        manifest = build_catalog(tasks, folder, season, size, examples, world)
    except user_errors() as exc:
        fail(str(exc))
    table = Table(title=f"{tasks} season {season} (seed {manifest['seed']}) -> {folder}")
    for col in ("family", "level", "env", "test", "examples", "seconds"):
        table.add_column(col)
    for fid, f in manifest["families"].items():
        table.add_row(
            fid, f["level"], f["env"], str(f["test"]), str(f["examples"]), str(f["seconds"])
        )
    make_console().print(table)
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
    except (ModelError, *user_errors()) as exc:
        fail(str(exc))
    write_review_file(out, family, model, entries)
    kept = sum(len(e["candidates"]) for e in entries)
    typer.echo(f"{kept} proposals for {len(entries)} templates -> {out} (for review)")


@tasks_app.command("schema")
def tasks_schema() -> None:
    """Print the JSON schema of a task record: one JSON object a line of a task file
    (``--tasks FILE.jsonl``); docs/tasks.md's task-file section says what each field does."""
    import json

    from raleval.records import Task

    typer.echo(json.dumps(Task.model_json_schema(), indent=2, ensure_ascii=False))


@tasks_app.command("load")
def tasks_load(
    kind: Annotated[
        str,
        typer.Argument(
            help="hotpotqa | 2wiki | musique | kqapro | crag | soay | reval; with a document "
            "collection for --env docs: crud | rageval | rgb | rgb-negative"
        ),
    ],
    path: Annotated[Path, typer.Argument(help="the public task file")],
    out: Annotated[Path, typer.Option(help="raleval tasks JSON lines, for --tasks")] = Path(
        "tasks.jsonl"
    ),
    strict: Annotated[
        bool, typer.Option("--strict", help="fail on the first bad record instead of skipping it")
    ] = False,
    examples: Annotated[
        int,
        typer.Option(
            help="set K items aside as the example pool (OUT's .examples.jsonl), disjoint "
            "from the tasks; runs of OUT show them, solved, as demonstrations. Answerable "
            "items first, one question type (family) at a time"
        ),
    ] = 0,
    unanswerable_examples: Annotated[
        bool,
        typer.Option(
            "--unanswerable-examples",
            help="let the pool hold unanswerable items too (after the answerable ones), "
            "so demonstrations show declining",
        ),
    ] = False,
    env: Annotated[
        str | None,
        typer.Option(help="set aside only items the oracle solves on this environment"),
    ] = None,
    env_option: Annotated[
        list[str] | None, typer.Option("-E", "--env-option", help="environment option key=value")
    ] = None,
) -> None:
    """Convert a public dataset file into raleval task records (bad records are skipped and
    listed with file:line and the reason); ``--examples K`` sets K aside for demonstrations."""
    from raleval.store import write_tasks
    from raleval.tasks.collection_loaders import COLLECTION_LOADERS, load_collection
    from raleval.tasks.demonstrations import pool_path, set_aside
    from raleval.tasks.loaders import TaskFileError, load_report

    try:
        if kind in COLLECTION_LOADERS:
            report = load_collection(kind, path, strict)
        else:
            report = load_report(kind, path, strict)
        corpus = None
        if getattr(report, "collection", None) is not None:
            from raleval.tasks.collection_loaders import write_collection

            # written first: the examples set aside are solved on it (--env docs)
            corpus = write_collection(report, out)
        checker = None
        if env is not None:
            from raleval import registry
            from raleval.config import parse_key_values

            options = parse_key_values(env_option, "-E") if env_option else {}
            if env == "docs" and corpus is not None:
                options.setdefault("corpus", str(corpus))
            checker = registry.envs.get(env)(**options)
        tasks, pool = set_aside(report.tasks, examples, checker, unanswerable_examples)
    except (TaskFileError, *user_errors()) as exc:
        fail(str(exc))
    for skipped in report.skipped[:20]:
        typer.echo(f"skipped {skipped}", err=True)
    if len(report.skipped) > 20:
        typer.echo(f"... and {len(report.skipped) - 20} more skipped", err=True)
    typer.echo(report.summary(), err=True)
    if corpus is not None:
        n_docs = len(report.collection)  # type: ignore[attr-defined]
        typer.echo(f"{n_docs} documents -> {corpus} (run with --env docs)")
    write_tasks(out, tasks)
    typer.echo(f"{len(tasks)} tasks -> {out}")
    if examples:
        write_tasks(pool_path(out), pool)
        typer.echo(f"{len(pool)} examples -> {pool_path(out)}")
        if len(pool) < examples:
            typer.echo(f"only {len(pool)} of {examples} items have a solution to show", err=True)
