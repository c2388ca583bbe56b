"""``--backend processes``: episodes run in worker processes on this machine.

One process of raleval spends 1.6-2 ms of CPU per episode (a bare two-node LangGraph
``ainvoke`` alone costs ~0.7 ms), so it serves at most ~550-600 episodes a second however fast
the model is; more in flight needs more cores (docs/scale.md).

Each worker is a fresh interpreter (``python -m raleval.app.process_backend FD``) that
receives its configuration, the workflow and its episodes through a socket pair, runs
:func:`raleval.app.distributed.stream_episodes` and sends the finished episodes back in
batches; the driver (:func:`raleval.app.distributed.run_on_workers`) alone writes the run
directory, as with Ray. A worker is a new process with the driver's interpreter and
environment variables: it imports raleval and resolves names (environment, model, plugins) as
any new process would, from installed packages and entry points.

Workers ignore Ctrl-C: the driver stops them and everything written stays whole.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from multiprocessing.connection import Connection, Pipe, wait
from typing import Any

from raleval.app.distributed import Done, Item, WorkerError, run_on_workers, stream_episodes
from raleval.app.runner import RunSummary
from raleval.config import RunConfig
from raleval.workflow import Workflow


class _Worker:
    def __init__(self, proc: subprocess.Popen, conn: Connection) -> None:
        self.proc = proc
        self.conn = conn
        self.failed: str | None = None  # why it could not be given its episodes

    def exit_message(self) -> str:
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return "worker process stopped answering"
        if code < 0:
            return f"worker process killed by signal {-code}"
        return f"worker process exited with code {code}"


class ProcessTransport:
    name = "processes"
    lost_cause = "worker_process_lost"

    def __init__(self, config: RunConfig) -> None:
        self._workers: list[_Worker] = []

    def __enter__(self) -> ProcessTransport:
        return self

    def __exit__(self, *exc: object) -> None:
        self.cancel(self._workers)

    def start(self, data: dict[str, Any], workflow: Workflow, chunks: list[list[Item]]) -> list:
        started = []
        for _ in chunks:  # every interpreter starts (imports) at once, before any is fed
            mine, theirs = Pipe(duplex=True)
            proc = subprocess.Popen(
                [sys.executable, "-m", "raleval.app.process_backend", str(theirs.fileno())],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
            )
            theirs.close()
            started.append(_Worker(proc, mine))
        self._workers += started
        for worker, chunk in zip(started, chunks, strict=True):
            try:
                worker.conn.send((data, workflow, chunk))
            except OSError:  # it died while starting
                worker.failed = worker.exit_message()
        return started

    def receive(self, live: list, timeout: float) -> tuple[Any, list[Done] | None] | None:
        for worker in live:
            if worker.failed:
                raise WorkerError(worker, worker.failed)
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
        return worker, payload if kind == "batch" else None

    def cancel(self, streams: list) -> None:
        for worker in streams:
            if worker.proc.poll() is None:
                worker.proc.kill()
            worker.proc.wait()
            worker.conn.close()


def run_processes(config: RunConfig, display: str = "none") -> RunSummary:
    """Run (or resume) ``config`` in ``config.workers`` local worker processes."""
    return run_on_workers(config, ProcessTransport(config), display)


def _worker_main(fd: int) -> None:
    """A worker's body: episodes in from the driver, batches of finished episodes out."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the driver decides when to stop
    conn = Connection(fd)
    data, workflow, items = conn.recv()
    try:
        for batch in stream_episodes(data, workflow, items):
            conn.send(("batch", batch))
    except Exception as exc:
        conn.send(("error", str(exc).splitlines()[0] if str(exc) else type(exc).__name__))
    else:
        conn.send(("end", None))
    conn.close()


if __name__ == "__main__":
    _worker_main(int(sys.argv[1]))
