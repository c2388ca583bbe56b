"""``--backend ray``: episodes run on a Ray cluster's workers; the driver alone writes the run.

Workers need no shared disk: each is a Ray streaming generator running
:func:`raleval.app.distributed.stream_episodes`, whose batches travel through Ray's object
store to the driver (:func:`raleval.app.distributed.run_on_workers`), which writes them.
Ray's own task retry is off: a retried generator would send episodes again under indexes the
driver already consumed; the driver's rounds re-send what a lost worker never returned.
"""

from __future__ import annotations

import os
from typing import Any

from raleval.app.distributed import Done, Item, WorkerError, run_on_workers, stream_episodes
from raleval.app.episodes import RunSummary
from raleval.app.plan import RunPlan
from raleval.config import ConfigError, RunConfig
from raleval.workflow import Workflow


class RayTransport:
    name = "ray"
    lost_cause = "ray_worker_lost"

    def __init__(self, config: RunConfig) -> None:
        try:
            import ray
        except ImportError as exc:
            raise ConfigError('--backend ray needs Ray: pip install "raleval[ray]"') from exc
        self._ray = ray
        self._config = config
        self._started_here = False

    def __enter__(self) -> RayTransport:
        if not self._ray.is_initialized():  # a caller's cluster (tests, notebooks) is kept
            env_vars = {k: v for k, v in os.environ.items() if k.startswith("RALEVAL_")}
            self._ray.init(
                address=self._config.ray_address,
                num_cpus=None if self._config.ray_address else self._config.workers,
                include_dashboard=False,
                log_to_driver=False,
                runtime_env={"env_vars": env_vars},
            )
            self._started_here = True
        return self

    def __exit__(self, *exc: object) -> None:
        if self._started_here:
            self._ray.shutdown()

    def start(self, data: dict[str, Any], workflow: Workflow, chunks: list[list[Item]]) -> list:
        remote = self._ray.remote(max_retries=0)(stream_episodes)
        workflow_ref = self._ray.put(workflow)
        return [remote.remote(data, workflow_ref, chunk) for chunk in chunks]

    def receive(self, live: list, timeout: float) -> tuple[Any, list[Done] | None] | None:
        ready, _ = self._ray.wait(live, num_returns=1, timeout=timeout)
        if not ready:
            return None
        stream = ready[0]
        try:
            return stream, self._ray.get(next(stream))
        except StopIteration:
            return stream, None
        except Exception as exc:  # the worker died or its episodes' set-up failed
            cause = getattr(exc, "cause", None) or exc  # a RayTaskError wraps the worker's
            first = str(cause).splitlines()[0] if str(cause) else ""
            if not isinstance(cause, RuntimeError):  # the worker's own message says it
                first = f"{type(cause).__name__}: {first}"
            raise WorkerError(stream, first) from None

    def cancel(self, streams: list) -> None:
        for stream in streams:
            self._ray.cancel(stream, force=True)


def execute(plan: RunPlan, display: str = "none") -> RunSummary:
    """Run (or resume) ``plan`` on Ray; the driver is the only writer of the run directory."""
    return run_on_workers(plan, RayTransport(plan.config), display)
