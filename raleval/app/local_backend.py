"""The local backend: a plan's episodes in this process's event loop, ``--max-connections`` at
once, each written to ``results.jsonl`` as it finishes.

Re-running the same configuration resumes: finished (task, epoch) pairs are skipped and a torn
last line is repaired. A run with nothing left to do loads no model.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import time
from typing import Any

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
)
from raleval.app.plan import RunPlan
from raleval.app.rundir import (
    failures_on_disk,
    merge_shards,
    next_attempt,
    open_run_dir,
    pending_episodes,
)
from raleval.concurrency import AdaptiveLimit, adaptive_limit, episode_room
from raleval.records import AgentSpec, Task
from raleval.scheduling import Turns
from raleval.store import RESULTS, ResultsFile, ResultsWriter

GRACE_S = 5.0  # after Ctrl-C, episodes in flight get this long to finish before cancellation


def execute(plan: RunPlan, display: str = "none", deadline: float | None = None) -> RunSummary:
    """The backend entry: :func:`run_local` in a new event loop."""
    return asyncio.run(run_local(plan, display, deadline))


async def run_local(
    plan: RunPlan, display: str = "rich", deadline: float | None = None
) -> RunSummary:
    """Run (or resume) ``plan``'s episodes here and return the run's summary. No episode
    starts after ``deadline`` (a ``time.monotonic()`` value)."""
    from raleval.app.progress import Phases, make_progress

    config = plan.config
    run_dir = open_run_dir(config, list(plan.tasks), plan.header)
    merge_shards(run_dir)  # a run directory left by a version whose Ray workers wrote shards
    results = ResultsFile(run_dir / RESULTS)
    tasks = list(plan.tasks)
    latest, pending = pending_episodes(run_dir, tasks, config)
    tally = Tally()
    stopping = asyncio.Event()
    writer: ResultsWriter | None = None
    if pending:  # a finished run loads no model
        with Phases(display, config.slug())(f"loading model {config.model}"):
            model = resolve_model(config, run_dir)
        model, env, faults, cache = episode_stack(config, model, plan.env)
        agent = AgentSpec(workflow=config.workflow, model=config.model, env=config.env)
        graph = episode_graph(plan.workflow, model, env)
        progress = make_progress(display, total=len(pending), title=config.slug())
        limit = adaptive_limit(config, model, episode_slots(config, model, len(pending)), run_dir)
        writer = await _run_pending(
            plan, pending, latest, (model, env, agent, graph), results, tally, progress, stopping,
            limit, deadline,
        )  # fmt: skip
        if cache is not None:
            cache.close()
        await close_session(env)  # the environment's connections (MCP servers it started)
        await model.aclose()  # release HTTP connections inside the loop that opened them
    else:
        faults = None
    write_error = None
    if writer is not None and writer.error is not None:
        write_error = f"{writer.error.strerror or writer.error} ({results.path})"
    unwritten = writer.unwritten if writer is not None else 0
    total = len(tasks) * config.epochs
    return RunSummary(
        run_dir=run_dir,
        total=total,
        skipped=total - len(pending),
        ran=tally.ran - unwritten,
        mean_f1=tally.mean_f1,
        by_termination=tally.terminations,
        by_error_type=tally.labels,
        faults=faults,
        interrupted=stopping.is_set() and write_error is None,
        failures=failures_on_disk(run_dir, tasks, config.epochs),
        write_error=write_error,
        unwritten=unwritten,
    )


async def _run_pending(
    plan: RunPlan,
    pending: list[tuple[Task, int]],
    latest: dict[Any, Any],
    stack: tuple[Any, Any, AgentSpec, Any],
    results: ResultsFile,
    tally: Tally,
    progress: Any,
    stopping: asyncio.Event,
    limit: AdaptiveLimit | None = None,
    deadline: float | None = None,
) -> ResultsWriter:
    """Run ``pending`` with ``stack`` (model, environment, agent, graph) until done, Ctrl-C or
    a write error, admitting episodes by ``limit`` when adaptive (``--max-connections auto``);
    returns the writer (closed: every finished episode is on disk)."""
    model, env, agent, graph = stack
    workflow = plan.workflow
    queue: asyncio.Queue[tuple[Task, int]] = asyncio.Queue()
    for item in pending:
        queue.put_nowait(item)
    turns = Turns()  # episodes do their harness work in arrival order (raleval.scheduling)
    workers: list[asyncio.Task[None]] = []

    def on_write_error(exc: OSError) -> None:
        # Stop before the next model call: nothing more can be saved. Episodes in flight are
        # cancelled (not written) and run again when the run is resumed.
        stopping.set()
        for w in workers:
            w.cancel()

    writer = ResultsWriter(results, on_error=on_write_error)

    async def worker() -> None:
        # One turn for the slot (raleval.scheduling): an episode's end and the next one's
        # start are one stretch of harness work, with no hand-over between them.
        async with turns.turn():
            while True:
                if stopping.is_set() or (deadline is not None and time.monotonic() >= deadline):
                    return
                try:
                    task, epoch = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                attempt = next_attempt(latest, task.id, epoch)
                async with episode_room(limit):
                    traj = await run_scored(
                        task, model, env, workflow, agent, epoch, attempt, graph
                    )
                writer.put(traj)
                tally.add(traj)
                progress.advance(tally.mean_f1 or 0.0, traj)

    def cancel_running() -> None:
        # cancelled episodes are not written, so a resume reruns them, and every line on
        # disk stays whole
        for w in workers:
            w.cancel()

    def on_interrupt() -> None:
        if not stopping.is_set():
            stopping.set()
            print(
                f"\nstopping: no new episodes; running ones get {GRACE_S:.0f} s to finish, then "
                "are cancelled (Ctrl-C again to stop at once)",
                file=sys.stderr,
                flush=True,
            )
            loop.call_later(GRACE_S, cancel_running)
        else:
            cancel_running()

    loop = asyncio.get_running_loop()
    try:
        loop.add_signal_handler(signal.SIGINT, on_interrupt)
        handling_sigint = True
    except (NotImplementedError, RuntimeError, ValueError):  # not the main thread / platform
        handling_sigint = False

    with progress, long_lived_heap():
        n_workers = episode_slots(plan.config, model, len(pending))
        workers.extend(asyncio.ensure_future(worker()) for _ in range(n_workers))
        try:
            await asyncio.gather(*workers, return_exceptions=False)
        except asyncio.CancelledError:
            pass
        finally:
            await writer.close()  # every finished episode is on disk before we return
            if handling_sigint:
                loop.remove_signal_handler(signal.SIGINT)
                if stopping.is_set():
                    # Stopping, with every line on disk complete: further Ctrl-Cs are ignored
                    # process-wide (any thread may receive the signal) while we wind down.
                    signal.signal(signal.SIGINT, signal.SIG_IGN)
    return writer
