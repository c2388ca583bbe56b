"""The rich Console every command prints with: a terminal gets rich's layout at its width;
anything else (a file, a pipe, a CI log) gets lines that are never wrapped, so a path or a
cause string stays whole for grep and copy-paste."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

# Wide enough for any table raleval prints; rich otherwise assumes 80 columns off a terminal.
UNWRAPPED_WIDTH = 10_000


def make_console(stderr: bool = False, soft_wrap: bool = False) -> Console:
    """A Console on stdout (or stderr) that wraps only on a terminal."""
    from rich.console import Console

    console = Console(stderr=stderr, soft_wrap=soft_wrap)
    if console.is_terminal:
        return console
    return Console(stderr=stderr, soft_wrap=True, width=UNWRAPPED_WIDTH)
