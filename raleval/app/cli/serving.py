"""``raleval serve`` (an environment over HTTP or MCP) and the local stores it and runs keep:
``raleval cache stats|clear|export|import`` and ``raleval wiki build``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from raleval.app.cli.base import (
    app,
    fail,
    user_errors,
)

if TYPE_CHECKING:
    from raleval.cache import ResponseCache

cache_app = typer.Typer(help="Inspect or clear the LLM response cache.", no_args_is_help=True)
app.add_typer(cache_app, name="cache")


CachePath = Annotated[
    Path | None,
    typer.Option("--cache-path", help="the cache file (default: raleval's own)"),
]


def _opened(cache_path: Path | None, existing: bool) -> ResponseCache:
    """The response cache at ``cache_path`` (raleval's own without one). ``existing``: no
    cache there is an error (asked about, not made); else a missing one is created."""
    from raleval.cache import ResponseCache, default_cache_path

    path = cache_path or default_cache_path()
    if existing and not path.is_file():
        fail(f"no response cache at {path}")
    return ResponseCache(path)


@cache_app.command("stats")
def cache_stats(cache_path: CachePath = None) -> None:
    """Entries and size of the response cache, per model."""
    from raleval.app.console import make_console

    stats = _opened(cache_path, existing=cache_path is not None).stats()
    console = make_console()
    console.print(
        f"{stats['path']}: {stats['entries']} responses, {stats['bytes']} bytes", highlight=False
    )
    for model, n in stats["by_model"].items():
        console.print(f"  {model}: {n}", highlight=False)


@cache_app.command("clear")
def cache_clear(
    model: Annotated[str | None, typer.Option(help="only this model's responses")] = None,
    cache_path: CachePath = None,
) -> None:
    """Delete cached responses (all, or one model's)."""
    n = _opened(cache_path, existing=cache_path is not None).clear(model)
    typer.echo(f"removed {n} cached responses")


@cache_app.command("export")
def cache_export(
    file: Annotated[Path, typer.Argument(help="where to write it (.jsonl, or .jsonl.gz)")],
    cache_path: CachePath = None,
) -> None:
    """Write every cached response as JSON lines in key order, to carry a cache to another
    machine (`cache import`): a run config's `cache_path` cache is a study's to keep."""
    import gzip

    from raleval.app.study import write_atomic_bytes

    lines = list(_opened(cache_path, existing=True).export_lines())
    data = "".join(line + "\n" for line in lines).encode("utf-8")
    try:
        write_atomic_bytes(
            file, gzip.compress(data, mtime=0) if file.name.endswith(".gz") else data
        )
    except OSError as err:
        fail(f"could not write {file}: {err}")
    typer.echo(f"{len(lines)} cached responses written to {file}")


@cache_app.command("import")
def cache_import(
    file: Annotated[Path, typer.Argument(help="a `cache export` file (.jsonl or .jsonl.gz)")],
    cache_path: CachePath = None,
) -> None:
    """Add an exported cache's responses to this one. A request this cache already answered
    keeps its own reply; a file with a broken line adds nothing (exit 2, the line named)."""
    from raleval.cache import CacheImportError
    from raleval.store import read_stored_bytes

    if not file.is_file():
        fail(f"no such file: {file}")
    try:
        text = read_stored_bytes(file).decode("utf-8")
    except (OSError, UnicodeDecodeError, EOFError) as err:
        fail(f"{file}: not a cache export ({err})")
    try:
        added, kept = _opened(cache_path, existing=False).import_lines(text.splitlines())
    except CacheImportError as err:
        fail(f"{file}: {err}")
    typer.echo(f"{added} cached responses added, {kept} already there")


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
    except user_errors() as exc:
        fail(str(exc))


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
        fail(f"no such corpus file: {', '.join(missing)}")
    try:
        counts = build_store(out, sources, fmt, progress=sys.stderr.isatty())
    except CorpusFormatError as exc:
        fail(str(exc))
    typer.echo(f"{out}: {counts['pages']} pages added, {counts['merged']} merged by title")
