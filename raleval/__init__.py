"""raleval: evaluate retrieval-augmented LLMs as tool-using agents.

The top-level package stays light: records and registries are imported lazily on attribute
access, and no environment, workflow, provider or plotting code is loaded at import time.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "Task": "raleval.records",
    "Trajectory": "raleval.records",
    "Result": "raleval.records",
    "Step": "raleval.records",
    "LLMCall": "raleval.records",
    "RunHeader": "raleval.records",
    "ToolCall": "raleval.records",
    "Level": "raleval.records",
    "Termination": "raleval.records",
    "OutcomeKind": "raleval.records",
    "ErrorType": "raleval.records",
    "register_env": "raleval.registry",
    "register_workflow": "raleval.registry",
    "register_model_provider": "raleval.registry",
    "register_task_family": "raleval.registry",
    "register_task_set": "raleval.registry",
    "register_metric": "raleval.registry",
    "RunConfig": "raleval.config",
}

__all__ = ["__version__", "evaluate", *_EXPORTS]


def evaluate(
    env: str | None = None,
    model: str | None = None,
    workflow: str | None = None,
    tasks: str | None = None,
    limit: int | None = None,
    env_options: dict[str, Any] | None = None,
    log_dir: str | None = None,
    **settings: Any,
) -> Any:
    """Run what ``raleval run`` runs and return an ``Evaluation``: ``.episodes`` (a pandas
    DataFrame, one row per episode: ``score_f1``, ``error_type``, ...) and ``.run_dir``.
    Any other :class:`raleval.config.RunConfig` field is a keyword (``workflow_options``,
    ``model_options``, ``run_name``, ``epochs``, ...); ``preflight=False`` skips the endpoint
    check, ``report=False`` the HTML report. ``None`` keeps the command's default."""
    # The app is imported on the call, by name: ``import raleval`` stays free of it, and the
    # layers below the app, which import this package for its registry, keep no path to it
    # (import-linter follows a function-level import; docs/architecture.md).
    run = importlib.import_module("raleval.app.evaluate").evaluate
    return run(
        env=env, model=model, workflow=workflow, tasks=tasks, limit=limit,
        env_options=env_options, log_dir=log_dir, **settings,
    )  # fmt: skip


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'raleval' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
