"""The app: run orchestration, the command line, the HTTP server and fault injection.

The roof of the house: it may import every layer below (core, envs, agents, tasks, workflows,
analysis) and no layer imports it. Plugins are reached through :mod:`raleval.registry`.
"""

from __future__ import annotations

from typing import Any

__all__ = ["run", "run_sync"]


def __getattr__(name: str) -> Any:
    if name in __all__:  # lazy: `import raleval.app` loads no environment or workflow
        from raleval.app import runner

        return getattr(runner, name)
    raise AttributeError(f"module 'raleval.app' has no attribute {name!r}")
