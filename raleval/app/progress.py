"""Progress display: a rich bar (episodes, rate, ETA, running F1), plain lines, or nothing."""

from __future__ import annotations

import sys
import time
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

    def advance(self, running_f1: float) -> None:
        self.done += 1


class _Plain(_Progress):
    """One line every 5% (and at the end): readable in CI logs."""

    def __enter__(self) -> _Plain:
        self.start = time.monotonic()
        print(f"{self.title}: {self.total} episodes to run", file=sys.stderr, flush=True)
        return self

    def advance(self, running_f1: float) -> None:
        super().advance(running_f1)
        step = max(1, self.total // 20)
        if self.done % step == 0 or self.done == self.total:
            rate = self.done / max(time.monotonic() - self.start, 1e-9)
            print(
                f"{self.title}: {self.done}/{self.total} episodes, {rate:.2f}/s, "
                f"running F1 {running_f1:.3f}",
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

    def advance(self, running_f1: float) -> None:
        super().advance(running_f1)
        rate = self.done / max(time.monotonic() - self.start, 1e-9)
        self._bar.update(self._id, advance=1, f1=f"{running_f1:.3f}", rate=f"{rate:.2f} ep/s")


def make_progress(display: str, total: int, title: str) -> _Progress:
    if display == "rich":
        return _Rich(total, title)
    if display == "plain":
        return _Plain(total, title)
    if display == "none":
        return _Progress(total, title)
    raise ValueError(f"--display must be rich, plain or none, not {display!r}")
