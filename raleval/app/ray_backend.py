"""``--backend ray``: episodes run on a Ray cluster's workers; the driver alone writes the run.

Workers need no shared disk. Each one receives a configuration that names no run directory,
the configured workflow (with its demonstrations) and a list of (task, epoch) pairs; it builds
the environment and the model itself, runs the episodes with asyncio as a local run does,
scores them, and streams the finished trajectories back to the driver (a Ray streaming
generator: batches as they finish, so a 100k-episode run never holds its results in a
worker). The driver appends each batch to ``results.jsonl`` with one fsync.

Exactly once: the driver writes an episode only if this run has not written it already; a
worker that dies loses only what it had not yet streamed, and the driver sends the episodes it
never received to a new worker (up to :data:`ROUNDS` rounds). Resuming skips what is on disk,
as a local run does.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Iterator
from typing import Any

from raleval.app.runner import (
    RunSummary,
    Tally,
    _close_session,
    _open_run_dir,
    _prepare,
    build_env,
    episode_stack,
    failures_on_disk,
    merge_shards,
    pending_episodes,
    run_episode,
    run_prompts,
    shard_of,
)
from raleval.config import ConfigError, RunConfig
from raleval.failures import failure_cause
from raleval.records import AgentSpec, Task, Trajectory
from raleval.store import RESULTS, ResultHead, ResultsFile
from raleval.workflow import Workflow

ROUNDS = 3  # a lost worker's unreceived episodes are sent out again at most this often
BATCH_S = 0.05  # a worker gathers what finishes within this long into one message
LOST = "ray_worker_lost"  # failure cause of episodes no worker returned in ROUNDS rounds
# What a worker's configuration names as its log directory: nothing can be created under a
# file, so a code path that tried to write a run directory on a worker would fail loudly.
NO_RUN_DIR = "/dev/null/no-run-directory-on-ray-workers"


async def _run_items(
    config: RunConfig,
    workflow: Workflow,
    items: list[tuple[Task, int]],
    out: asyncio.Queue[Trajectory],
) -> None:
    """Run ``items`` as a local run would (``max_connections`` at once), scored, into ``out``."""
    from raleval.agents.agent import resolve_model
    from raleval.analysis.scoring import score_trajectory

    model = resolve_model(config.model, dict(config.model_options), run_dir=None)
    env = build_env(config.env, config.env_options)
    model, env, _faults, cache = episode_stack(config, model, env)
    agent = AgentSpec(workflow=config.workflow, model=config.model, env=config.env)
    graph = workflow.build(model, env)
    todo = list(reversed(items))

    async def worker() -> None:
        while todo:
            task, epoch = todo.pop()
            traj = await run_episode(task, model, env, workflow, agent, epoch=epoch, graph=graph)
            score_trajectory(traj, task)
            traj.failure = failure_cause(traj)
            out.put_nowait(traj)

    n = min(config.max_connections, max(1, len(items)))
    n = min(n, model.capabilities.max_concurrency or n)
    try:
        await asyncio.gather(*(worker() for _ in range(n)))
    finally:
        if cache is not None:
            cache.close()
        await _close_session(env)
        await model.aclose()


def stream_episodes(
    config_data: dict[str, Any], workflow: Workflow, items: list[tuple[Task, int]]
) -> Iterator[list[Trajectory]]:
    """Run ``items`` and yield the finished trajectories in batches (a Ray worker's body).

    The asyncio loop runs while the generator waits for the next batch; between batches it
    pauses only for as long as Ray takes to send one."""
    config = RunConfig.model_validate(config_data)
    loop = asyncio.new_event_loop()
    out: asyncio.Queue[Trajectory] = asyncio.Queue()
    producer = loop.create_task(_run_items(config, workflow, items, out))
    try:
        while True:
            getter = loop.create_task(out.get())
            loop.run_until_complete(
                asyncio.wait({getter, producer}, return_when=asyncio.FIRST_COMPLETED)
            )
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


def run_ray(config: RunConfig) -> RunSummary:
    """Run (or resume) ``config`` on Ray; the driver is the only writer of the run directory."""
    try:
        import ray
    except ImportError as exc:
        raise ConfigError('--backend ray needs Ray: pip install "raleval[ray]"') from exc

    config = config.with_defaults()
    env, tasks, workflow = _prepare(config)
    run_dir = _open_run_dir(config, tasks, workflow.config, run_prompts(env, workflow))
    del env  # the driver runs no episode
    merge_shards(run_dir)  # shard files of a run started by an older raleval
    results = ResultsFile(run_dir / RESULTS)
    latest, pending = pending_episodes(run_dir, tasks, config)
    env_vars = {k: v for k, v in os.environ.items() if k.startswith("RALEVAL_")}
    started_here = bool(pending) and not ray.is_initialized()  # nothing to run: no cluster
    if started_here:
        ray.init(
            address=config.ray_address,
            num_cpus=None if config.ray_address else config.workers,
            include_dashboard=False,
            log_to_driver=False,
            runtime_env={"env_vars": env_vars},
        )
    tally = Tally()
    remaining, lost_because, write_error = pending, [], None
    if pending:
        try:
            remaining, lost_because, write_error = _run_rounds(
                ray, config, workflow, pending, results, latest, tally
            )
        finally:
            if started_here:
                ray.shutdown()
    keys = {(t.id, e) for t in tasks for e in range(config.epochs)}
    failures = failures_on_disk(run_dir, tasks, config.epochs)
    if remaining and write_error is None:
        failures[LOST] = len(remaining)
    return RunSummary(
        run_dir=run_dir,
        total=len(keys),
        skipped=len(keys) - len(pending),
        ran=tally.ran,
        mean_f1=tally.mean_f1,
        by_termination=tally.terminations,
        by_error_type=tally.labels,
        failures=failures,
        write_error=write_error,
        unwritten=len(remaining) if write_error else 0,
        worker_errors=lost_because,
    )


def _run_rounds(
    ray: Any,
    config: RunConfig,
    workflow: Workflow,
    pending: list[tuple[Task, int]],
    results: ResultsFile,
    latest: dict[tuple[str, int], ResultHead],
    tally: Tally,
) -> tuple[list[tuple[Task, int]], list[str], str | None]:
    """Send ``pending`` to the workers, again for what a lost worker did not return, and write
    what comes back. Returns the episodes still unreturned, why workers were lost, and a write
    error that stopped the run (None if none)."""
    # Retries are the driver's: Ray re-running a generator would send episodes again under
    # indexes the driver already consumed.
    remote = ray.remote(max_retries=0)(stream_episodes)
    data = worker_config(config)
    workflow_ref = ray.put(workflow)
    written: set[tuple[str, int]] = set()
    lost_because: list[str] = []
    remaining = pending
    for _ in range(ROUNDS):
        if not remaining:
            break
        chunks: list[list[tuple[Task, int]]] = [[] for _ in range(config.workers)]
        for task, epoch in remaining:
            chunks[shard_of(task.id, epoch, config.workers)].append((task, epoch))
        streams = [remote.remote(data, workflow_ref, chunk) for chunk in chunks if chunk]
        try:
            errors = _receive(ray, streams, results, latest, written, tally)
        except OSError as exc:  # a full disk: stop; what is not written runs on resume
            for stream in streams:
                ray.cancel(stream, force=True)
            remaining = [(t, e) for t, e in remaining if (t.id, e) not in written]
            return remaining, lost_because, f"{exc.strerror or exc} ({results.path})"
        remaining = [(t, e) for t, e in remaining if (t.id, e) not in written]
        for error in dict.fromkeys(errors):  # the cause, not only a count of lost episodes
            print(
                f"ray: a worker ended early ({len(remaining)} episode(s) not returned): {error}",
                file=sys.stderr,
                flush=True,
            )
        lost_because += errors
    return remaining, lost_because, None


def _receive(
    ray: Any,
    streams: list[Any],
    results: ResultsFile,
    latest: dict[tuple[str, int], ResultHead],
    written: set[tuple[str, int]],
    tally: Tally,
) -> list[str]:
    """Write every batch the workers' streams deliver, each episode once; return why any
    stream ended early (a worker that died or raised)."""
    errors: list[str] = []
    live = list(streams)
    while live:
        ready, _ = ray.wait(live, num_returns=1)
        stream = ready[0]
        try:
            batch = ray.get(next(stream))
        except StopIteration:
            live.remove(stream)
            continue
        except Exception as exc:  # the worker died or its episodes' set-up failed
            live.remove(stream)
            cause = getattr(exc, "cause", None) or exc  # a RayTaskError wraps the worker's
            first = str(cause).splitlines()[0] if str(cause) else ""
            errors.append(
                first if isinstance(cause, RuntimeError) else f"{type(cause).__name__}: {first}"
            )
            continue
        fresh = []
        for traj in batch:
            key = (traj.task_id, traj.epoch)
            if key in written:
                continue  # sent again by a worker of a later round: written once
            before = latest.get(key)
            traj.attempt = before.attempt + 1 if before is not None else 0
            written.add(key)
            fresh.append(traj)
        if fresh:
            try:
                results.append_many(fresh)
            except OSError:
                written.difference_update((t.task_id, t.epoch) for t in fresh)
                raise
            for traj in fresh:
                tally.add(traj)
    return errors
