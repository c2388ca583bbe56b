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

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'raleval' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
