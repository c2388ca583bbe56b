"""The run directory on disk: ``header.json``, ``tasks.jsonl``, ``results.jsonl``.

A stored copy of a finished run (``raleval study store``) keeps the two JSON-lines files
gzip-compressed (``tasks.jsonl.gz``, ``results.jsonl.gz``); they are read the same way.

Results are append-only JSON lines, one complete line per finished episode, flushed and fsynced.
A run killed mid-write leaves at most one torn last line; reopening cuts it off, so a resumed
run neither loses nor duplicates an episode.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
import os
import re
import threading
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from raleval.records import RunHeader, Task, Termination, Trajectory

HEADER = "header.json"
TASKS = "tasks.jsonl"
RESULTS = "results.jsonl"
TIMING = "timing.jsonl"  # a timing pass's episodes (raleval.app.timing; read by study tables)
GZ = ".gz"  # a finished run's files stored compressed: results.jsonl.gz, tasks.jsonl.gz


def stored_file(run_dir: Path, name: str) -> Path:
    """``run_dir/name``, or its compressed copy ``name.gz`` when only that exists."""
    plain = run_dir / name
    packed = run_dir / (name + GZ)
    return packed if not plain.exists() and packed.exists() else plain


def read_stored_bytes(path: Path) -> bytes:
    """The bytes of ``path``, decompressed when it is a stored ``.gz`` copy."""
    data = path.read_bytes()
    return gzip.decompress(data) if path.name.endswith(GZ) else data


M = TypeVar("M", bound=BaseModel)


class RecordFileError(ValueError):
    """A broken line in a JSON-lines file; names the file, the line and the field at fault."""


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` so that readers see the old or the new file, never half."""
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _describe(exc: ValidationError) -> str:
    return "; ".join(
        f"field {'.'.join(str(p) for p in e['loc']) or '(record)'}: {e['msg']}"
        for e in exc.errors()
    )


_JSON_COLUMN = re.compile(r"line \d+ column (\d+)")


def _where(path: Path, lineno: int, exc: ValidationError) -> str:
    """``file:line`` or, for a JSON syntax error, ``file:line:column``."""
    for e in exc.errors():
        if e["type"] == "json_invalid":
            m = _JSON_COLUMN.search(str(e.get("ctx", {}).get("error", "")))
            if m:
                return f"{path}:{lineno}:{m.group(1)}"
    return f"{path}:{lineno}"


def read_tasks(path: Path) -> list[Task]:
    """Read a tasks JSON-lines file; a broken line fails with its path, line and field."""
    tasks: list[Task] = []
    try:
        data = read_stored_bytes(path)
    except (OSError, EOFError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise RecordFileError(f"cannot read task file {path}: {why}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise RecordFileError(
            f"{path}:{line}:{column}: not UTF-8 (byte 0x{data[exc.start]:02x}); "
            "save the file as UTF-8"
        ) from None
    inferred: Counter[str] = Counter()
    # split on newlines only: str.splitlines also splits on U+2028, U+0085 and other
    # characters a JSON string may hold unescaped, which would cut a task in two
    for lineno, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            task = Task.model_validate_json(line)
            tasks.append(task)
            if '"answer_type"' not in line:  # written before answer types: it was inferred
                inferred[task.answer_type.value] += 1
        except ValidationError as exc:
            raise RecordFileError(
                f"{_where(path, lineno, exc)}: invalid task: {_describe(exc)}"
            ) from None
    if inferred:
        mix = ", ".join(f"{k}: {v}" for k, v in sorted(inferred.items()))
        warnings.warn(
            f"{path}: {sum(inferred.values())} task(s) have no answer_type (written before answer "
            f"types); inferred {mix}",
            AnswerTypeInferredWarning,
            stacklevel=2,
        )
    return tasks


class AnswerTypeInferredWarning(UserWarning):
    """A task file older than answer types was read; the types were inferred."""


def write_tasks(path: Path, tasks: Iterable[Task]) -> None:
    write_atomic(path, "".join(t.model_dump_json() + "\n" for t in tasks))


def write_header(run_dir: Path, header: RunHeader) -> None:
    write_atomic(run_dir / HEADER, header.model_dump_json(indent=2) + "\n")


def read_header(run_dir: Path) -> RunHeader | None:
    path = run_dir / HEADER
    if not path.exists():
        return None
    try:
        return RunHeader.model_validate_json(path.read_text(encoding="utf-8"))
    except ValidationError as exc:
        raise RecordFileError(f"{path}: invalid run header: {_describe(exc)}") from exc


class ResultHead(BaseModel):
    """What resuming needs of a result line: which episode, which attempt, and whether it
    failed for infrastructure reasons. Parsed without the steps and calls, it is a few hundred
    bytes where the whole trajectory is tens of kilobytes (a 100k-episode run's resume would
    otherwise hold gigabytes before its first episode)."""

    model_config = ConfigDict(extra="ignore")

    task_id: str
    epoch: int = 0
    attempt: int = 0
    termination: Termination
    termination_cause: str | None = None
    failure: str | None = None


def result_line(trajectory: Trajectory) -> str:
    """A trajectory as its line of results.jsonl (no newline). fallback=repr: a value no JSON
    type holds (a model's stray Python literal in an argument) is written as its repr instead
    of failing the batch it sits in."""
    return trajectory.model_dump_json(fallback=repr)


class ResultsFile:
    """Append-only ``results.jsonl`` with crash-safe reopening."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def repair(self) -> int:
        """Cut a torn (unterminated or unparsable) last line; return the bytes removed."""
        if not self.path.exists():
            return 0
        with open(self.path, "rb+") as fh:
            data = fh.read()
            keep = len(data)
            if data and not data.endswith(b"\n"):
                keep = data.rfind(b"\n") + 1
            # A complete but corrupt last line (a crash inside a filesystem block) is cut too.
            last_start = data.rfind(b"\n", 0, max(keep - 1, 0)) + 1
            if keep > last_start:
                try:
                    json.loads(data[last_start:keep])
                except ValueError:
                    keep = last_start
            if keep < len(data):
                fh.truncate(keep)
                fh.flush()
                os.fsync(fh.fileno())
            return len(data) - keep

    def __iter__(self) -> Iterator[Trajectory]:
        return self._parse(Trajectory)

    def heads(self) -> Iterator[ResultHead]:
        """Each line's :class:`ResultHead`, in file order."""
        return self._parse(ResultHead)

    def _parse(self, model: type[M]) -> Iterator[M]:
        """Each non-empty line as ``model``; a line that does not validate names its place."""
        if not self.path.exists():
            return
        opener = gzip.open if self.path.name.endswith(GZ) else open
        with opener(self.path, "rt", encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    yield model.model_validate_json(line)
                except ValidationError as exc:
                    raise RecordFileError(
                        f"{_where(self.path, lineno, exc)}: invalid result: {_describe(exc)}"
                    ) from None

    def finished_keys(self) -> set[tuple[str, int]]:
        """(task id, epoch) of every episode already on disk."""
        return {(t.task_id, t.epoch) for t in self}

    def append(self, trajectory: Trajectory) -> None:
        self.append_many([trajectory])

    def append_many(self, trajectories: list[Trajectory]) -> None:
        """Complete lines in one write, then one fsync: a crash leaves every line whole or the
        last one torn, and a torn line is cut by repair() on the next start."""
        self.append_lines([result_line(t) for t in trajectories])

    def append_lines(self, lines: list[str]) -> None:
        """:meth:`append_many` for trajectories already encoded (one JSON object per string,
        no newline): a worker process encodes, the driver writes."""
        text = "".join(line + "\n" for line in lines)
        with self._lock, open(self.path, "a", encoding="utf-8") as fh:
            size = fh.tell()
            try:
                fh.write(text)
                fh.flush()
                os.fsync(fh.fileno())
            except OSError:
                # a full disk may have taken part of the batch: cut it, so the file ends with
                # the last whole line written before (truncating needs no free space)
                with contextlib.suppress(OSError):
                    os.truncate(self.path, size)
                raise


class ResultsWriter:
    """Writes finished episodes in the order they finish, from one worker thread, so a slow
    fsync never stalls the episodes in flight; episodes that finish during a write go out
    together in the next one (one fsync for all of them)."""

    def __init__(self, results: ResultsFile, on_error: Callable[[OSError], None] | None = None):
        self.results = results
        self._queue: asyncio.Queue[Trajectory | None] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        # A write that fails (a full disk) stops writing: ``error`` holds why, ``on_error`` is
        # told at once (the runner stops the run), and later episodes are counted, not written.
        self.error: OSError | None = None
        self.unwritten = 0
        self._on_error = on_error

    def put(self, trajectory: Trajectory) -> None:
        if self._task is None:
            self._task = asyncio.ensure_future(self._run())
        self._queue.put_nowait(trajectory)

    async def _run(self) -> None:
        while True:
            batch = [await self._queue.get()]
            while not self._queue.empty():
                batch.append(self._queue.get_nowait())
            done = batch[-1] is None
            lines = [t for t in batch if t is not None]
            if lines and self.error is None:
                # a thread runs to its end: even if this task is cancelled, the batch is whole
                try:
                    await asyncio.to_thread(self.results.append_many, lines)
                except OSError as exc:
                    self.error = exc
                    if self._on_error is not None:
                        self._on_error(exc)
            if self.error is not None:
                self.unwritten += len(lines)
            if done:
                return

    async def close(self) -> None:
        """Write everything put so far, then stop."""
        if self._task is not None:
            self._queue.put_nowait(None)
            await self._task
