"""The ``raleval`` application object, its global options, exit codes and error printing:
what every command module shares."""

from __future__ import annotations

import inspect
import sys
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
TIME_LIMIT = 3  # --max-time reached with episodes left: the same command resumes
DEBUG = {"on": False}  # --debug: let tracebacks through


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
    DEBUG["on"] = debug


def fail(message: str, code: int = USER_ERROR) -> None:
    """Print ``error: message`` (user text escaped, never read as Rich markup) and exit."""
    from rich.markup import escape

    from raleval.app.console import make_console

    if DEBUG["on"] and sys.exc_info()[1] is not None:
        import traceback

        traceback.print_exc()
    make_console(stderr=True, soft_wrap=True).print(
        f"[bold red]error:[/] {escape(message)}", highlight=False, emoji=False
    )
    raise typer.Exit(code)


def user_errors() -> tuple[type[BaseException], ...]:
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
        FileExistsError,
        ModelError,
    )


_RST_ROLE = r":[a-z]+:`~?([^`]+)`"


def plain_doc(obj: Any) -> str:
    """The first paragraph of ``obj``'s docstring as one plain line: no RST markup."""
    return plain_text(inspect.getdoc(obj) or "")


def plain_text(doc: str) -> str:
    """The first paragraph of a docstring's text as one plain line: no RST markup."""
    import re

    first = inspect.cleandoc(doc).split("\n\n")[0]
    first = re.sub(_RST_ROLE, r"\1", first)
    first = first.replace("``", "")
    return " ".join(first.split())


def main() -> None:
    """Console-script entry point: an unexpected error is one line (its traceback with
    ``--debug``), a full disk says so."""
    import errno

    try:
        app()
    except KeyboardInterrupt:
        sys.exit(INTERRUPTED)
    except Exception as exc:
        if DEBUG["on"] or "--debug" in sys.argv:
            raise
        from rich.markup import escape

        from raleval.app.console import make_console

        if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
            what = f"no space left on the device ({exc.filename or 'a write'})"
        else:
            what = f"{type(exc).__name__}: {exc}"
        make_console(stderr=True, soft_wrap=True).print(
            f"[bold red]error:[/] {escape(what)} (run again with --debug for the traceback)",
            highlight=False,
            emoji=False,
        )
        sys.exit(FAILED)


def one_line_summaries(typer_app: typer.Typer) -> None:
    """Give every command of ``typer_app`` (and of its groups) its docstring's first paragraph
    as one line for the command lists of ``--help``: Typer keeps the docstring's line breaks
    there, which cut each summary at the source's line ends."""
    for info in typer_app.registered_commands:
        if info.short_help is None and info.callback is not None:
            doc = info.help if isinstance(info.help, str) else info.callback.__doc__
            info.short_help = plain_text(doc or "")
    for group in typer_app.registered_groups:
        if group.typer_instance is not None:
            one_line_summaries(group.typer_instance)
