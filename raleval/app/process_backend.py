"""``--backend processes``: episodes run in worker processes on this machine.

One process of raleval spends 1.3-2.5 ms of CPU per episode on the 2-core machine measured (a
one-node LangGraph ``ainvoke`` alone ~0.5-0.9 ms), so it serves at most ~500-700 episodes a
second however fast the model is; more in flight needs more cores (docs/scale.md).

Each worker is a fresh interpreter (``raleval.app.process_backend``, on the driver's
``sys.path``) that receives its configuration, the workflow and its episodes through a socket
pair, runs :func:`raleval.app.distributed.stream_episodes` and sends the finished episodes back
in batches; the driver (:func:`raleval.app.distributed.run_on_workers`) alone writes the run
directory, as with Ray. A worker is a new process with the driver's interpreter and environment
variables: it imports raleval and resolves names (environment, model, plugins) as any new
process would, from installed packages and entry points.

Each worker first sets itself up (imports, environment, model, graph) and says so; the driver
starts every worker's episodes together once all are ready, so that no worker runs alone while
another is still importing. Each worker then holds ``2 x --max-connections`` episodes at most
(its slots and as many waiting) and the driver hands it more as it returns finished ones: the
workers drain together instead of one finishing a fixed share while the other idles.

Workers ignore Ctrl-C: the driver stops them and everything written stays whole.
"""

from __future__ import annotations

import asyncio
import collections
import json
import math
import signal
import subprocess
import sys
from multiprocessing.connection import Connection, Pipe, wait
from typing import Any

from raleval.app.distributed import (
    READY,
    Done,
    Feed,
    Item,
    WorkerError,
    run_on_workers,
    stream_episodes,
)
from raleval.app.episodes import RunSummary
from raleval.app.plan import RunPlan
from raleval.config import RunConfig
from raleval.workflow import Workflow


class _Worker:
    def __init__(self, proc: subprocess.Popen, conn: Connection) -> None:
        self.proc = proc
        self.conn = conn
        self.failed: str | None = None  # why it could not be given its episodes
        self.ready = False  # set up, waiting for the driver's word to start
        self.started = False  # told to start
        self.closed = False  # told that no more episodes will come

    def exit_message(self) -> str:
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return "worker process stopped answering"
        if code < 0:
            return f"worker process killed by signal {-code}"
        return f"worker process exited with code {code}"


# A worker imports what the driver imported: it starts on the driver's ``sys.path``. Started
# with ``python -m``, Python would put the working directory first, and a ``raleval/`` folder
# there (a checkout, another version) would be the workers' raleval while the driver ran the
# installed one (seen in the throughput benchmark's baseline mode; ``-P`` would avoid it only
# from Python 3.11).
_BOOT = (
    "import json, sys; sys.path[:] = json.loads(sys.argv[1]); "
    "from raleval.app.process_backend import _worker_main; _worker_main(int(sys.argv[2]))"
)


class ProcessTransport:
    name = "processes"
    lost_cause = "worker_process_lost"

    def __init__(self, config: RunConfig) -> None:
        self._workers: list[_Worker] = []
        self._todo: collections.deque[Item] = collections.deque()  # not yet handed out

    def __enter__(self) -> ProcessTransport:
        return self

    def __exit__(self, *exc: object) -> None:
        self.cancel(self._workers)

    def start(self, data: dict[str, Any], workflow: Workflow, chunks: list[list[Item]]) -> list:
        """One worker per chunk; the chunks are pooled and handed out on demand."""
        started = []
        for _ in chunks:  # every interpreter starts (imports) at once, before any is fed
            mine, theirs = Pipe(duplex=True)
            proc = subprocess.Popen(
                [sys.executable, "-c", _BOOT, json.dumps(sys.path), str(theirs.fileno())],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
            )
            theirs.close()
            started.append(_Worker(proc, mine))
        self._workers += started
        self._todo = collections.deque(item for chunk in chunks for item in chunk)
        # each worker: its slots busy and as many waiting, or an even share if that is less
        share = min(math.ceil(len(self._todo) / max(1, len(started))), 2 * data["max_connections"])
        for worker in started:
            first = self._take(share)
            worker.closed = not self._todo
            self._send(worker, (data, workflow, first, not worker.closed))
        return started

    def _take(self, n: int) -> list[Item]:
        return [self._todo.popleft() for _ in range(min(n, len(self._todo)))]

    def _send(self, worker: _Worker, message: Any) -> None:
        if worker.failed:
            return
        try:
            worker.conn.send(message)
        except OSError:  # it died: receive() says so
            worker.failed = worker.exit_message()

    def receive(self, live: list, timeout: float) -> tuple[Any, list[Done] | None] | None:
        for worker in live:
            if worker.failed:
                raise WorkerError(worker, worker.failed)
        if all(w.ready for w in live):  # every live worker set up: start them together
            for worker in live:
                if not worker.started:
                    worker.started = True
                    self._send(worker, ("go", None))
        ready = wait([w.conn for w in live], timeout)
        if not ready:
            return None
        worker = next(w for w in live if w.conn is ready[0])
        try:
            kind, payload = worker.conn.recv()
        except (EOFError, OSError):
            raise WorkerError(worker, worker.exit_message()) from None
        if kind == "error":
            raise WorkerError(worker, payload)
        if kind == "ready":
            worker.ready = True
            return None
        if kind == "batch":
            # as many new episodes as it finished; once none are left, say so
            if not worker.closed:
                more = self._take(len(payload))
                worker.closed = not self._todo
                self._send(worker, ("more", more) if more else ("last", None))
                if more and worker.closed:
                    self._send(worker, ("last", None))
            return worker, payload
        return worker, None

    def cancel(self, streams: list) -> None:
        for worker in streams:
            if worker.proc.poll() is None:
                worker.proc.kill()
            worker.proc.wait()
            worker.conn.close()


def execute(plan: RunPlan, display: str = "none") -> RunSummary:
    """Run (or resume) ``plan`` in ``plan.config.workers`` local worker processes."""
    return run_on_workers(plan, ProcessTransport(plan.config), display)


class _PipeFeed(Feed):
    """A worker's episodes, topped up by the driver through the worker's end of the pipe: its
    event loop reads the driver's messages as they arrive (a reader on the pipe), so that a
    worker whose episodes all finished still hears of the next ones."""

    def __init__(self, conn: Connection, items: list[Item], more_coming: bool) -> None:
        super().__init__(items, more_coming)
        self._conn = conn

    def take(self, message: tuple[str, Any]) -> None:
        kind, payload = message
        if kind == "more":
            self.add(payload)
        elif kind == "last":
            self.close()

    def _readable(self) -> None:
        while self._conn.poll():
            self.take(self._conn.recv())

    def listen(self) -> None:
        if not self.closed:
            asyncio.get_running_loop().add_reader(self._conn.fileno(), self._readable)

    def stop_listening(self) -> None:
        asyncio.get_running_loop().remove_reader(self._conn.fileno())


def _worker_main(fd: int) -> None:
    """A worker's body: episodes in from the driver, batches of finished episodes out."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the driver decides when to stop
    conn = Connection(fd)
    data, workflow, items, more_coming = conn.recv()
    feed = _PipeFeed(conn, items, more_coming)
    try:
        for batch in stream_episodes(data, workflow, feed):
            if batch is READY:  # set up: wait until every worker is
                conn.send(("ready", None))
                while (message := conn.recv())[0] != "go":
                    feed.take(message)
                continue
            conn.send(("batch", batch))
    except Exception as exc:
        conn.send(("error", str(exc).splitlines()[0] if str(exc) else type(exc).__name__))
    else:
        conn.send(("end", None))
    conn.close()


if __name__ == "__main__":
    _worker_main(int(sys.argv[1]))
