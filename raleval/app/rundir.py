"""A run directory's state: who may write it, what it holds, what is left to run.

One run per run directory: :class:`RunDirLock` is an advisory ``fcntl`` lock taken before
anything is written and released when the process exits or dies. Nothing here decides how
episodes run; the backends read and write a run directory through these functions.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import os
import platform
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from raleval import __version__
from raleval.config import ConfigError, RunConfig
from raleval.failures import failure_cause, failures_by_cause
from raleval.records import RunHeader, Task
from raleval.redaction import redact
from raleval.store import (
    GZ,
    HEADER,
    RESULTS,
    TASKS,
    RecordFileError,
    ResultHead,
    ResultsFile,
    read_header,
    read_tasks,
    write_header,
    write_tasks,
)

LOCK = ".raleval.lock"  # the run directory's lock file; never moved aside, never removed


class RunDirBusy(ConfigError):
    """Another process holds the run directory's lock."""


class RunDirLock:
    """Exclusive advisory lock on a run directory (``fcntl.flock`` on :data:`LOCK`).

    Taken before anything else is written into the directory; a second holder is refused at
    once with the first one's pid. The kernel releases it when the holding process exits, is
    killed or crashes, so a SIGKILLed run's directory can be resumed immediately. A directory
    this lock created and that got no episode (only the header and the task list, written
    before the model loads) is removed again on release, so a refused run or a failed start (a
    bad model spec, a missing key or weights file) leaves nothing behind.
    """

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self._fd: int | None = None
        self._made: list[Path] = []  # the folders acquire() created, innermost first

    def __enter__(self) -> RunDirLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def acquire(self) -> None:
        for _ in range(5):
            fd = self._open()
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
                os.close(fd)
                raise RunDirBusy(
                    f"another raleval run (pid {holder}) is writing {self.run_dir}; wait for it "
                    "to finish, or give this run another --run-name or --log-dir"
                ) from None
            try:  # a refused run removes the lock file it made: is ours still the one there?
                current = os.stat(self.run_dir / LOCK).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                current = False
            if current:
                break
            os.close(fd)
        else:
            raise ConfigError(f"cannot lock run directory {self.run_dir}: it keeps changing")
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def _open(self) -> int:
        self._made = [p for p in [self.run_dir, *self.run_dir.parents] if not p.exists()]
        try:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            return os.open(self.run_dir / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise ConfigError(f"cannot use run directory {self.run_dir}: {exc}") from None

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        names = {p.name for p in self.run_dir.iterdir()} if self._made else set()
        if names and names <= {LOCK, HEADER, TASKS}:
            with contextlib.suppress(OSError):  # refused or failed before any episode
                for name in [*sorted(names - {LOCK}), LOCK]:
                    (self.run_dir / name).unlink()
                for folder in self._made:  # the log directory too, if this made it
                    folder.rmdir()
        os.close(fd)  # closing the descriptor releases the lock


@functools.cache
def git_revision() -> str | None:
    """The commit checked out when this process first asked: the code it runs. A long run (a
    study's chunk) keeps it for every cell it starts; asked again per cell, a commit made while
    the chunk ran was recorded for cells that never ran its code."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            cwd=Path(__file__).resolve().parent,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def dataset_hash(tasks: list[Task]) -> str:
    h = hashlib.sha256()
    for t in tasks:
        h.update(t.model_dump_json().encode())
        h.update(b"\n")
    return h.hexdigest()


def config_difference(stored: dict[str, Any], now: dict[str, Any]) -> str:
    """The settings that differ between a stored header's config and this run's, briefly."""
    ignore = {"limit", "sample_ids", "retry_failed", "force", "log_dir", "run_name", "cache",
              "cache_path", "backend", "ray_address", "workers", "max_connections",
              "max_connections_per_endpoint"}  # fmt: skip
    keys = [k for k in sorted(set(stored) | set(now)) if k not in ignore]
    diff = [k for k in keys if stored.get(k) != now.get(k)]
    shown = ", ".join(f"{k}={stored.get(k)!r}" for k in diff[:4]) or "(unreadable)"
    mine = ", ".join(f"{k}={now.get(k)!r}" for k in diff[:4])
    return f"{shown}; this run has {mine}" if mine else shown


def set_aside(run_dir: Path) -> Path:
    """Move a run directory's contents into ``superseded-<time>/`` inside it (``--force``);
    the lock file stays where it is."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
    aside = run_dir / f"superseded-{stamp}"
    aside.mkdir()
    for entry in run_dir.iterdir():
        if entry != aside and entry.name != LOCK and not entry.name.startswith("superseded-"):
            entry.rename(aside / entry.name)
    return aside


def check_run_dir(config: RunConfig, set_aside_now: bool = True) -> None:
    """Refuse a run directory that holds another run (or results without a header) unless
    ``force``, which sets its contents aside (only when ``set_aside_now``: a check made before
    the directory's lock is held only looks); nothing is ever overwritten."""
    run_dir = config.run_dir
    if not run_dir.exists():
        return
    try:
        existing = read_header(run_dir)
    except RecordFileError:
        existing = None
    has_data = any((run_dir / f).exists() for f in (RESULTS, TASKS)) or bool(shard_files(run_dir))
    now = redact(config.model_dump(mode="json"))
    if existing is None and (has_data or (run_dir / HEADER).exists()):
        problem = f"{run_dir} holds results without a readable {HEADER}"
    elif existing is not None and existing.fingerprint != config.fingerprint():
        problem = f"{run_dir} holds a run with config {config_difference(existing.config, now)}"
    else:
        return
    if existing is not None and not _has_episodes(run_dir):
        # a start that failed before its first episode (a mistyped -M, missing weights) left
        # only its header and tasks: the corrected command takes the directory over; the
        # left-overs go aside like any other, nothing is overwritten
        if set_aside_now:
            set_aside(run_dir)
        return
    if config.force:
        if set_aside_now:
            set_aside(run_dir)
        return
    raise ConfigError(
        f"{problem}; give this run its own directory with --run-name NAME (or another "
        "--log-dir), or set the old run aside with --force"
    )


def _has_episodes(run_dir: Path) -> bool:
    """Whether any episode was ever written in ``run_dir`` (results, or a worker's shard)."""
    results = run_dir / RESULTS
    if results.exists() and results.stat().st_size > 0:
        return True
    return (run_dir / (RESULTS + GZ)).exists() or bool(shard_files(run_dir))


def recorded_tasks(run_dir: Path) -> list[Task]:
    """The tasks a run directory has recorded so far (none for a new one)."""
    path = run_dir / TASKS
    return read_tasks(path) if path.exists() else []


def open_run_dir(config: RunConfig, tasks: list[Task], header: RunHeader) -> Path:
    """Write what a run directory records before its first episode: every task run so far
    (its recorded ones first, then those this run adds) and, for a new run, its header."""
    run_dir = config.run_dir
    run_dir.mkdir(parents=True, exist_ok=True)
    recorded = recorded_tasks(run_dir)
    known = {t.id for t in recorded}
    added = [t for t in tasks if t.id not in known]
    if added or not (run_dir / TASKS).exists():
        write_tasks(run_dir / TASKS, [*recorded, *added])  # exactly the tasks run so far
    if read_header(run_dir) is None:
        write_header(run_dir, header)
    return run_dir


def new_header(config: RunConfig, tasks: list[Task], decoding: dict[str, Any],
               prompts: dict[str, Any], fingerprint: str | None = None) -> RunHeader:  # fmt: skip
    """The header a new run directory gets: the resolved config, versions, seeds, prompts
    (``fingerprint``: the config's, when the caller has it already)."""
    return RunHeader(
        raleval_version=__version__,
        git_revision=git_revision(),
        created_at=datetime.now(timezone.utc),
        config=redact(config.model_dump(mode="json")),
        fingerprint=fingerprint or config.fingerprint(),
        seeds={"tasks": config.seed}
        | (
            {}
            if config.demonstration_seed is None
            else {"demonstrations": config.demonstration_seed}
        ),
        decoding=decoding,
        dataset_hash=dataset_hash(tasks),
        n_tasks=len(tasks),
        python=sys.version.split()[0],
        platform=platform.platform(),
        prompts=prompts,
    )


def shard_of(task_id: str, epoch: int, count: int) -> int:
    """Which of ``count`` shards runs (task, epoch): stable across processes and machines."""
    digest = hashlib.sha256(f"{task_id}/{epoch}".encode()).digest()
    return int.from_bytes(digest[:4], "big") % count


def shard_files(run_dir: Path) -> list[Path]:
    return sorted(run_dir.glob("results.shard-*.jsonl"))


def latest_heads(run_dir: Path) -> dict[tuple[str, int], ResultHead]:
    """The last attempt per (task, epoch) on disk, as much of it as resuming needs (shards
    included, torn tails repaired)."""
    latest: dict[tuple[str, int], ResultHead] = {}
    for path in [run_dir / RESULTS, *shard_files(run_dir)]:
        f = ResultsFile(path)
        f.repair()
        for t in f.heads():
            old = latest.get((t.task_id, t.epoch))
            if old is None or t.attempt >= old.attempt:
                latest[(t.task_id, t.epoch)] = t
    return latest


def finished_keys(run_dir: Path) -> set[tuple[str, int]]:
    """Episodes on disk in the merged results and in any shard file (repairing torn tails)."""
    return set(latest_heads(run_dir))


def next_attempt(latest: dict[tuple[str, int], ResultHead], task_id: str, epoch: int) -> int:
    """The attempt number of a new run of (task, epoch): one past the last on disk."""
    before = latest.get((task_id, epoch))
    return before.attempt + 1 if before is not None else 0


def pending_episodes(
    run_dir: Path, tasks: list[Task], config: RunConfig
) -> tuple[dict[tuple[str, int], ResultHead], list[tuple[Task, int]]]:
    """What is on disk (the last attempt per task and epoch) and the episodes still to run:
    those with no result, and with ``--retry-failed`` those whose last attempt failed for
    infrastructure reasons. Every backend resumes through this."""
    latest = latest_heads(run_dir)

    def wanted(key: tuple[str, int]) -> bool:
        last = latest.get(key)
        return last is None or (config.retry_failed and failure_cause(last) is not None)

    return latest, [(t, e) for e in range(config.epochs) for t in tasks if wanted((t.id, e))]


def failures_on_disk(run_dir: Path, tasks: list[Task], epochs: int) -> dict[str, int]:
    """Episodes of this run whose last attempt on disk failed, counted by cause."""
    keys = {(t.id, e) for t in tasks for e in range(epochs)}
    return dict(failures_by_cause(h for k, h in latest_heads(run_dir).items() if k in keys))


def merge_shards(run_dir: Path) -> int:
    """Append shard results missing from results.jsonl, then remove the shard files.

    Safe to repeat after a crash: lines already merged are recognised by (task, epoch)."""
    merged = ResultsFile(run_dir / RESULTS)
    merged.repair()
    have = {(t.task_id, t.epoch, t.attempt) for t in merged}
    added = 0
    for path in shard_files(run_dir):
        shard = ResultsFile(path)
        shard.repair()
        for traj in shard:
            if (traj.task_id, traj.epoch, traj.attempt) not in have:
                merged.append(traj)
                have.add((traj.task_id, traj.epoch, traj.attempt))
                added += 1
        path.unlink()
    return added


def newer_than_every_input(output: Path, run_dirs: list[Path]) -> bool:
    """True when ``output`` exists and no file under ``run_dirs`` was written after it (the
    lock, which every run rewrites, and hidden temporary files aside): a report drawn from
    those folders would come out the same, but for a change of raleval itself."""
    try:
        written = output.stat().st_mtime_ns
    except FileNotFoundError:
        return False
    for run_dir in run_dirs:
        for root, _, names in os.walk(run_dir):
            for name in names:
                path = Path(root, name)
                if path == output or name.startswith("."):
                    continue
                with contextlib.suppress(FileNotFoundError):  # a temporary file just renamed
                    if path.stat().st_mtime_ns > written:
                        return False
    return True
