"""Progress display: a rich bar (episodes, rate, ETA, running F1), plain lines, or nothing."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator
from types import TracebackType
from typing import Any


class _Progress:
    def __init__(self, total: int, title: str) -> None:
        self.total, self.title, self.done = total, title, 0

    def __enter__(self) -> _Progress:
        return self

    def __exit__(
        self, *exc: tuple[type[BaseException] | None, BaseException | None, TracebackType | None]
    ) -> None:
        return None

    def advance(self, running_f1: float, episode: Any = None) -> None:
        self.done += 1


class _Plain(_Progress):
    """One line per finished episode (and a header): readable in CI logs."""

    def __enter__(self) -> _Plain:
        self.start = time.monotonic()
        print(f"{self.title}: {self.total} episodes to run", file=sys.stderr, flush=True)
        return self

    def advance(self, running_f1: float, episode: Any = None) -> None:
        super().advance(running_f1)
        rate = self.done / max(time.monotonic() - self.start, 1e-9)
        what = ""
        if episode is not None:
            label = episode.error_type.value if episode.error_type else "-"
            failure = f", failed: {episode.failure}" if episode.failure else ""
            what = (
                f" {episode.task_id} (epoch {episode.epoch}): {label}, "
                f"F1 {episode.scores.get('f1', 0.0):.2f}, {episode.termination.value}, "
                f"{episode.wall_time_s:.1f} s{failure};"
            )
        print(
            f"[{self.done}/{self.total}]{what} {rate:.2f} episodes/s, running F1 {running_f1:.3f}",
            file=sys.stderr,
            flush=True,
        )


class _Rich(_Progress):
    def __enter__(self) -> _Rich:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self._bar = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rate]}"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            TextColumn("F1 {task.fields[f1]}"),
            transient=False,
        )
        self._bar.__enter__()
        self._id = self._bar.add_task(self.title, total=self.total, rate="", f1="-")
        self.start = time.monotonic()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._bar.__exit__(*exc)

    def advance(self, running_f1: float, episode: Any = None) -> None:
        super().advance(running_f1)
        rate = self.done / max(time.monotonic() - self.start, 1e-9)
        self._bar.update(self._id, advance=1, f1=f"{running_f1:.3f}", rate=f"{rate:.2f} ep/s")


def shown_as(display: str) -> str:
    """The display actually drawn: ``rich`` becomes plain lines when stderr is not a terminal
    (redirected to a file or a pipe, a CI log), where a live bar writes nothing readable."""
    if display == "rich" and not sys.stderr.isatty():
        return "plain"
    return display


class Phases:
    """Says what a run is doing before its first episode (loading a model, building a world,
    generating tasks), so no phase that can take seconds is silent: a spinner in rich mode, a
    line when the phase starts and one with its duration in plain mode, nothing in none."""

    def __init__(self, display: str, title: str) -> None:
        self.display, self.title = shown_as(display), title

    def note(self, text: str) -> None:
        """One line about the run's preparation (nothing in ``--display none``)."""
        if self.display != "none":
            print(f"{self.title}: {text}", file=sys.stderr, flush=True)

    @contextlib.contextmanager
    def __call__(self, what: str) -> Iterator[None]:
        if self.display == "none":
            yield
            return
        start = time.monotonic()
        if self.display == "plain":
            print(f"{self.title}: {what} ...", file=sys.stderr, flush=True)
            yield
            took = time.monotonic() - start
            print(f"{self.title}: {what}: done in {took:.1f} s", file=sys.stderr, flush=True)
            return
        from rich.markup import escape

        from raleval.app.console import make_console

        console = make_console(stderr=True)
        with console.status(f"{escape(what)} ..."):
            yield
        took = time.monotonic() - start
        if took >= 1.0:  # a quick phase needs no line of its own
            console.print(f"{escape(what)}: done in {took:.1f} s", highlight=False)


def make_progress(display: str, total: int, title: str) -> _Progress:
    display = shown_as(display)
    if display == "rich":
        return _Rich(total, title)
    if display == "plain":
        return _Plain(total, title)
    if display == "none":
        return _Progress(total, title)
    raise ValueError(f"--display must be rich, plain or none, not {display!r}")
