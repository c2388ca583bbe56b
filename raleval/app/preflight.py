"""One request to a run's model endpoint before anything is written: a dead URL, a refused key
or a model the server does not list ends the command at once (exit 2) instead of one task at
a time after retries. Models that run in this process or a server raleval starts are not
asked."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from raleval.config import ConfigError


def preflight(model: str, options: dict[str, Any] | None = None) -> None:
    """Raise :class:`ConfigError` (one line: which problem, which URL) when ``model``'s
    endpoint cannot serve a run; return when it can or when the model has no endpoint."""
    from raleval.agents.agent import ModelSpec
    from raleval.agents.endpoint import endpoint_problem, spec_endpoint

    try:
        spec = ModelSpec.parse(model)
    except ValueError:
        return  # the run's own checks say what is wrong with the spec
    target = spec_endpoint(spec.provider, spec.name, dict(options or {}))
    if target is None:
        return
    problem = endpoint_problem(*target)
    if problem is not None:
        raise ConfigError(f"{model}: {problem}")


def preflight_all(configs: Iterable[Any]) -> None:
    """:func:`preflight` once per distinct model (and options) of ``configs``."""
    seen = set()
    for cfg in configs:
        key = (cfg.model, repr(sorted(dict(cfg.model_options).items())))
        if key not in seen:
            seen.add(key)
            preflight(cfg.model, dict(cfg.model_options))
