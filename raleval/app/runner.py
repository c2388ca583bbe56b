"""Running a configuration: lock its run directory, plan once, hand the plan to a backend.

The flow (docs/architecture.md): :func:`raleval.app.plan.resolve_config` names the run
directory, :class:`raleval.app.rundir.RunDirLock` makes this process its only writer,
:func:`raleval.app.plan.make_plan` validates everything before a model loads, and one backend
executes the plan: this process (:mod:`raleval.app.local_backend`), worker processes
(:mod:`raleval.app.process_backend`) or a Ray cluster (:mod:`raleval.app.ray_backend`).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable

from raleval.app.episodes import RunSummary, run_episode, run_scored
from raleval.app.plan import RunPlan, make_plan, resolve_config
from raleval.app.rundir import RunDirLock
from raleval.config import ConfigError, RunConfig

__all__ = ["RunSummary", "run", "run_episode", "run_scored", "run_sync", "stop_child_processes"]

# backend name -> "module:function" taking (plan, display); imported on first use
BACKENDS = {
    "local": "raleval.app.local_backend:execute",
    "processes": "raleval.app.process_backend:execute",
    "ray": "raleval.app.ray_backend:execute",
}


def backend(name: str) -> Callable[[RunPlan, str], RunSummary]:
    """The function that executes a plan on backend ``name``."""
    module, _, function = BACKENDS[name].partition(":")
    return getattr(importlib.import_module(module), function)


def run_sync(config: RunConfig, display: str = "none", deadline: float | None = None) -> RunSummary:
    """Run (or resume) ``config`` on its backend and return its summary. A second run on the
    same run directory is refused (:class:`raleval.app.rundir.RunDirBusy`) while this one
    holds it. No episode starts after ``deadline`` (a ``time.monotonic()`` value, ``raleval
    run --max-time``; the local backend only): those running finish and are written, the rest
    wait for the next run of the same configuration."""
    from raleval.app.progress import Phases

    config = resolve_config(config)
    if deadline is not None and config.backend != "local":
        raise ConfigError("--max-time needs the local backend (--backend local)")
    with RunDirLock(config.run_dir):
        plan = make_plan(config, Phases(display, config.slug()), resolved=True)
        if deadline is not None:
            from raleval.app.local_backend import execute

            return execute(plan, display, deadline)
        return backend(config.backend)(plan, display)


async def run(
    config: RunConfig, display: str = "rich", deadline: float | None = None
) -> RunSummary:
    """:func:`run_sync` for the local backend, inside a running event loop."""
    from raleval.app.local_backend import run_local
    from raleval.app.progress import Phases

    config = resolve_config(config)
    with RunDirLock(config.run_dir):
        plan = make_plan(config, Phases(display, config.slug()), resolved=True)
        return await run_local(plan, display, deadline)


def stop_child_processes() -> None:
    """Terminate the model servers this process started (llama.cpp), if any were started:
    called on the way out of an interrupted run, where ``os._exit`` skips ``atexit``."""
    local = sys.modules.get("raleval.agents.local")
    if local is not None:
        local.stop_servers()
