"""Episodes run in worker processes; the driver alone writes the run directory.

Two backends share this driver: ``--backend processes`` (worker processes on this machine,
:mod:`raleval.app.process_backend`) and ``--backend ray`` (a Ray cluster's workers,
:mod:`raleval.app.ray_backend`). Each is a :class:`Transport`: it starts one stream per chunk
of episodes and hands the driver whatever a stream delivers next.

A worker receives a configuration that names no run directory, the configured workflow (with
its demonstrations) and a list of (task, epoch, attempt) items; it builds the environment and
the model itself, runs the episodes with asyncio as a local run does, scores them, and streams
them back in batches as they finish, each already a complete result line (the driver only
checks and appends it: encoding a trajectory costs more than the write). A 100k-episode run
never holds its results in a worker.

Exactly once: the driver writes an episode only if this run has not written it already; a
worker that dies loses only what it had not yet streamed, and the driver sends the episodes it
never received to a new worker (up to :data:`ROUNDS` rounds). Resuming skips what is on disk,
as a local run does.
"""

from __future__ import annotations

import asyncio
import collections
import signal
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from raleval.app.episodes import (
    RunSummary,
    Tally,
    close_session,
    episode_graph,
    episode_slots,
    episode_stack,
    long_lived_heap,
    resolve_model,
    run_scored,
    tally_fields,
)
from raleval.app.plan import RunPlan, build_env
from raleval.app.rundir import (
    failures_on_disk,
    merge_shards,
    next_attempt,
    open_run_dir,
    pending_episodes,
    shard_of,
)
from raleval.config import RunConfig
from raleval.records import AgentSpec, Task
from raleval.scheduling import Turns, outside_turn
from raleval.store import RESULTS, ResultHead, ResultsFile, result_line
from raleval.workflow import Workflow

ROUNDS = 3  # a lost worker's unreceived episodes are sent out again at most this often
POLL_S = 0.2  # how often the driver looks up from waiting for batches (to notice Ctrl-C)
BATCH_S = 0.05  # a worker gathers what finishes within this long into one message
# What a worker's configuration names as its log directory: nothing can be created under a
# file, so a code path that tried to write a run directory on a worker would fail loudly.
NO_RUN_DIR = "/dev/null/no-run-directory-on-workers"

Item = tuple[Task, int, int]  # (task, epoch, attempt): the attempt number is the driver's


@dataclass(frozen=True)
class Done:
    """A finished, scored episode as a worker returns it: its key, what the run's tally counts,
    and its result line (JSON, no newline)."""

    task_id: str
    epoch: int
    f1: float
    termination: str
    error_type: str | None
    line: str


class Transport(Protocol):
    """How episodes reach workers and come back."""

    name: str  # says which backend in messages ("processes", "ray")
    lost_cause: str  # failure cause of episodes no worker returned in ROUNDS rounds

    def __enter__(self) -> Transport:
        """Make the workers' home ready (a Ray cluster); ``__exit__`` stops every worker."""
        ...

    def __exit__(self, *exc: object) -> None: ...

    def start(self, data: dict[str, Any], workflow: Workflow, chunks: list[list[Item]]) -> list:
        """Start one stream per chunk; return the streams."""
        ...

    def receive(self, live: list, timeout: float) -> tuple[Any, list[Done] | None] | None:
        """Wait up to ``timeout`` seconds for any stream of ``live``: (stream, batch), or
        (stream, None) when it ended; None if nothing came. A stream that failed raises
        :class:`WorkerError`."""
        ...

    def cancel(self, streams: list) -> None:
        """Stop the streams' workers at once."""
        ...


class Stopped(Exception):
    """Ctrl-C: the driver stops the workers; what is written stays, a resume runs the rest."""


class WorkerError(Exception):
    """A stream's worker died or raised; ``stream`` is the one that ended."""

    def __init__(self, stream: Any, message: str) -> None:
        super().__init__(message)
        self.stream = stream


class Feed:
    """The episodes a worker holds and has not started. A Ray worker's are all it will get; a
    process worker's driver adds more as it returns finished ones (:meth:`add`) and says when
    there are no more (:meth:`close`), so that workers finish together instead of one running
    the last of a fixed share while the other idles."""

    def __init__(self, items: list[Item], more_coming: bool = False) -> None:
        self.todo: collections.deque[Item] = collections.deque(items)
        self.closed = not more_coming
        self._changed: asyncio.Event | None = None

    def add(self, items: list[Item]) -> None:
        self.todo.extend(items)
        self._wake()

    def close(self) -> None:
        self.closed = True
        self._wake()

    def _wake(self) -> None:
        if self._changed is not None:
            self._changed.set()

    def listen(self) -> None:
        """Called in the worker's event loop before its episodes start: a feed that receives
        episodes while they run starts listening for them here."""

    def stop_listening(self) -> None:
        """Called in the worker's event loop once its episodes are done."""

    def pop(self) -> Item | None:
        """The next episode if one is here, else None (without waiting)."""
        return self.todo.popleft() if self.todo else None

    async def next(self) -> Item | None:
        """The next episode to run, waiting for the driver's next ones; None when done."""
        while not self.todo:
            if self.closed:
                return None
            self._changed = self._changed or asyncio.Event()
            self._changed.clear()
            await self._changed.wait()
        return self.todo.popleft()


# What stream_episodes yields once the worker is set up (model, environment, graph, scoring):
# an empty batch. Its consumer may hold the worker there (the processes backend starts every
# worker's episodes together); the episodes start when the generator is resumed.
READY: list[Done] = []


async def _run_items(
    config: RunConfig, workflow: Workflow, feed: Feed, out: asyncio.Queue, go: asyncio.Event
) -> None:
    """Run ``feed``'s episodes as a local run would (``max_connections`` at once), scored, into
    ``out``; ``READY`` first, once set up, and nothing runs before ``go`` is set."""
    model = resolve_model(config)
    env = build_env(config.env, config.env_options)
    model, env, _faults, cache = episode_stack(config, model, env)
    agent = AgentSpec(workflow=config.workflow, model=config.model, env=config.env)
    graph = episode_graph(workflow, model, env)
    out.put_nowait(READY)
    await go.wait()
    feed.listen()

    turns = Turns()  # episodes do their harness work in arrival order (raleval.scheduling)

    async def worker() -> None:
        # One turn for the slot (see raleval.scheduling): an episode's end and the next one's
        # start are one stretch of harness work, with no hand-over between them; waiting for
        # the driver's next episodes happens outside it.
        async with turns.turn():
            while (item := feed.pop() or await outside_turn(feed.next())) is not None:
                task, epoch, attempt = item
                traj = await run_scored(task, model, env, workflow, agent, epoch, attempt, graph)
                f1, termination, label = tally_fields(traj)
                out.put_nowait(
                    Done(traj.task_id, traj.epoch, f1, termination, label, result_line(traj))
                )

    n = episode_slots(config, model, len(feed.todo))
    try:
        with long_lived_heap():
            await asyncio.gather(*(worker() for _ in range(n)))
    finally:
        feed.stop_listening()
        if cache is not None:
            cache.close()
        await close_session(env)
        await model.aclose()


def stream_episodes(
    config_data: dict[str, Any], workflow: Workflow, items: list[Item] | Feed
) -> Iterator[list[Done]]:
    """Run ``items`` and yield the finished episodes in batches (a worker's body): first
    :data:`READY` (empty) once set up, then batches.

    The asyncio loop runs while the generator waits for the next batch; between batches it
    pauses only for as long as the transport takes to send one (and, with a :class:`Feed`,
    to hand over more episodes)."""
    config = RunConfig.model_validate(config_data)
    feed = items if isinstance(items, Feed) else Feed(items)
    loop = asyncio.new_event_loop()
    out: asyncio.Queue[Any] = asyncio.Queue()
    go = asyncio.Event()
    producer = loop.create_task(_run_items(config, workflow, feed, out, go))
    try:
        while True:
            getter = loop.create_task(out.get())
            loop.run_until_complete(
                asyncio.wait({getter, producer}, return_when=asyncio.FIRST_COMPLETED)
            )
            if getter.done() and getter.result() is READY:
                yield READY
                go.set()
                continue
            if getter.done():
                # a little longer: what finishes meanwhile goes in the same message
                loop.run_until_complete(asyncio.wait({producer}, timeout=BATCH_S))
                batch = [getter.result()]
            else:
                getter.cancel()
                loop.run_until_complete(asyncio.gather(getter, return_exceptions=True))
                batch = []
            while not out.empty():
                batch.append(out.get_nowait())
            if batch:
                yield batch
            if producer.done() and out.empty():
                try:
                    producer.result()
                except Exception as exc:
                    # said in a plain exception: a worker's own type (UnknownNameError) may
                    # not survive the trip back to the driver
                    raise RuntimeError(f"{type(exc).__name__}: {exc}") from None
                return
    finally:
        if not producer.done():
            producer.cancel()
            loop.run_until_complete(asyncio.gather(producer, return_exceptions=True))
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()


def worker_config(config: RunConfig) -> dict[str, Any]:
    """The configuration a worker receives: the run's, naming no run directory."""
    return config.model_dump(mode="json") | {"backend": "local", "log_dir": NO_RUN_DIR}


def run_on_workers(plan: RunPlan, transport: Transport, display: str = "none") -> RunSummary:
    """Run (or resume) ``plan`` over ``transport``'s workers; only this process writes."""
    from raleval.app.progress import make_progress

    config, tasks, workflow = plan.config, list(plan.tasks), plan.workflow
    run_dir = open_run_dir(config, tasks, plan.header)
    merge_shards(run_dir)  # shard files of a run started by an older raleval
    results = ResultsFile(run_dir / RESULTS)
    latest, pending = pending_episodes(run_dir, tasks, config)
    tally = Tally()
    remaining, lost_because, write_error, interrupted = pending, [], None, False
    if pending:
        # Ctrl-C sets a flag the driver reads between batches, so it never lands inside a
        # write; the workers ignore it and are stopped on the way out of `with`.
        stop = threading.Event()
        here = threading.current_thread() is threading.main_thread()
        previous = signal.signal(signal.SIGINT, lambda *_: stop.set()) if here else None
        try:
            with transport, make_progress(display, len(pending), config.slug()) as progress:
                remaining, lost_because, write_error = _run_rounds(
                    transport, config, workflow, pending, results, latest, tally, stop, progress
                )
        except Stopped:
            interrupted = True
            print(
                "\nstopping: episodes in flight are dropped; a resume runs every episode "
                "not written",
                file=sys.stderr,
                flush=True,
            )
        finally:
            if here:  # None: a handler not set from Python; Python's own then
                restore = previous if previous is not None else signal.default_int_handler
                signal.signal(signal.SIGINT, restore)
    keys = {(t.id, e) for t in tasks for e in range(config.epochs)}
    failures = failures_on_disk(run_dir, tasks, config.epochs)
    if remaining and write_error is None and not interrupted:
        failures[transport.lost_cause] = len(remaining)
    return RunSummary(
        run_dir=run_dir,
        total=len(keys),
        skipped=len(keys) - len(pending),
        ran=tally.ran,
        mean_f1=tally.mean_f1,
        by_termination=tally.terminations,
        by_error_type=tally.labels,
        failures=failures,
        interrupted=interrupted,
        write_error=write_error,
        unwritten=len(remaining) if write_error else 0,
        worker_errors=lost_because,
    )


def _run_rounds(
    transport: Transport,
    config: RunConfig,
    workflow: Workflow,
    pending: list[tuple[Task, int]],
    results: ResultsFile,
    latest: dict[tuple[str, int], ResultHead],
    tally: Tally,
    stop: threading.Event,
    progress: Any,
) -> tuple[list[tuple[Task, int]], list[str], str | None]:
    """Send ``pending`` to the workers, again for what a lost worker did not return, and write
    what comes back. Returns the episodes still unreturned, why workers were lost, and a write
    error that stopped the run (None if none)."""
    data = worker_config(config)
    written: set[tuple[str, int]] = set()
    lost_because: list[str] = []
    remaining = pending
    for _ in range(ROUNDS):
        if not remaining:
            break
        chunks: list[list[Item]] = [[] for _ in range(config.workers)]
        for task, epoch in remaining:
            attempt = next_attempt(latest, task.id, epoch)
            chunks[shard_of(task.id, epoch, config.workers)].append((task, epoch, attempt))
        streams = transport.start(data, workflow, [c for c in chunks if c])
        try:
            errors = _receive(transport, streams, results, written, tally, stop, progress)
        except OSError as exc:  # a full disk: stop; what is not written runs on resume
            transport.cancel(streams)
            remaining = [(t, e) for t, e in remaining if (t.id, e) not in written]
            return remaining, lost_because, f"{exc.strerror or exc} ({results.path})"
        remaining = [(t, e) for t, e in remaining if (t.id, e) not in written]
        for error in dict.fromkeys(errors):  # the cause, not only a count of lost episodes
            print(
                f"{transport.name}: a worker ended early ({len(remaining)} episode(s) not "
                f"returned): {error}",
                file=sys.stderr,
                flush=True,
            )
        lost_because += errors
    return remaining, lost_because, None


def _receive(
    transport: Transport,
    streams: list,
    results: ResultsFile,
    written: set[tuple[str, int]],
    tally: Tally,
    stop: threading.Event,
    progress: Any,
) -> list[str]:
    """Write every batch the workers' streams deliver, each episode once; return why any
    stream ended early (a worker that died or raised). Raises :class:`Stopped` on Ctrl-C."""
    errors: list[str] = []
    live = list(streams)
    while live:
        if stop.is_set():
            raise Stopped
        try:
            got = transport.receive(live, POLL_S)
        except WorkerError as exc:
            live.remove(exc.stream)
            errors.append(str(exc))
            continue
        if got is None:
            continue
        stream, batch = got
        if batch is None:
            live.remove(stream)
            continue
        fresh = []
        for done in batch:
            key = (done.task_id, done.epoch)
            if key in written:
                continue  # sent again by a worker of a later round: written once
            written.add(key)
            fresh.append(done)
        if fresh:
            try:
                results.append_lines([d.line for d in fresh])
            except OSError:
                written.difference_update((d.task_id, d.epoch) for d in fresh)
                raise
            for done in fresh:
                tally.count(done.f1, done.termination, done.error_type)
                progress.advance(tally.mean_f1 or 0.0)
    return errors
