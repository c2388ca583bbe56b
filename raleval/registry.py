"""Plugin registries: environments, workflows, model providers, task families, metrics.

Registration is by decorator; the registered name is the CLI name. Built-in plugins are listed
as ``name -> module`` and imported on first use, so importing :mod:`raleval` loads none of them.
Third-party packages add plugins through the entry-point groups ``raleval.<kind>``.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class UnknownNameError(LookupError):
    """A name that no registry entry answers to; the message carries suggestions."""

    def __init__(self, kind: str, name: str, known: list[str]) -> None:
        self.kind, self.name, self.known = kind, name, known
        close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
        hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        listing = ", ".join(sorted(known)) or "(none)"
        super().__init__(f"unknown {kind} {name!r}.{hint} Known {kind}s: {listing}")


class Registry(Generic[T]):
    """Name -> plugin map with lazy built-ins and entry points."""

    def __init__(self, kind: str, group: str, builtins: dict[str, str]) -> None:
        self.kind = kind
        self.group = group
        self._builtins = dict(builtins)
        self._items: dict[str, T] = {}
        self._entry_points_loaded = False

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator: ``@registry.register("name")``."""

        def decorate(obj: T) -> T:
            existing = self._items.get(name)
            if existing is not None and existing is not obj:
                raise ValueError(f"{self.kind} {name!r} is already registered")
            self._items[name] = obj
            return obj

        return decorate

    def add_builtin(self, name: str, module: str) -> None:
        """Declare where a lazily imported plugin lives."""
        self._builtins[name] = module

    def _entry_points(self) -> dict[str, Any]:
        return {ep.name: ep for ep in entry_points(group=self.group)}

    def get(self, name: str) -> T:
        if name in self._items:
            return self._items[name]
        if name in self._builtins:
            importlib.import_module(self._builtins[name])
            if name in self._items:
                return self._items[name]
            raise RuntimeError(
                f"module {self._builtins[name]} did not register {self.kind} {name!r}"
            )
        eps = self._entry_points()
        if name in eps:
            loaded = eps[name].load()
            # An entry point may point at a module that registers itself, or at the object.
            if name not in self._items:
                self._items[name] = loaded
            return self._items[name]
        raise UnknownNameError(self.kind, name, self.names())

    def names(self) -> list[str]:
        return sorted(set(self._items) | set(self._builtins) | set(self._entry_points()))

    def load_all(self) -> dict[str, T]:
        """Import every known plugin (for listings); broken plugins are reported, not fatal."""
        out: dict[str, T] = {}
        for name in self.names():
            try:
                out[name] = self.get(name)
            except Exception as exc:  # a third-party plugin must not break `raleval list`
                out[name] = exc  # type: ignore[assignment]
        return out

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self.names()


envs: Registry[Any] = Registry(
    "env",
    "raleval.envs",
    {
        "scholar": "raleval.envs.scholar",
        "wiki": "raleval.envs.wiki",
        "crag": "raleval.envs.crag",
        "remote": "raleval.envs.remote",
        "mcp": "raleval.envs.mcp",
    },
)
workflows: Registry[Any] = Registry(
    "workflow",
    "raleval.workflows",
    {
        "react": "raleval.workflows.react",
        "function_calling": "raleval.workflows.function_calling",
        "pal": "raleval.workflows.pal",
        "dfsdt": "raleval.workflows.dfsdt",
        "direct": "raleval.workflows.baselines",
        "planned": "raleval.workflows.baselines",
    },
)
models: Registry[Any] = Registry(
    "model provider",
    "raleval.models",
    {
        "scripted": "raleval.agents.scripted",
        "openai": "raleval.agents.openai_compat",
        "openai-compatible": "raleval.agents.openai_compat",
        "local": "raleval.agents.local",
        "hf": "raleval.agents.hf",
        "vllm": "raleval.agents.vllm_engine",
    },
)
task_families: Registry[Any] = Registry(
    "task family",
    "raleval.task_families",
    {
        "1-1": "raleval.envs.wiki.families.ks",
        "1-2": "raleval.envs.wiki.families.ks",
        "2-1": "raleval.envs.wiki.families.ku",
        "2-2": "raleval.envs.wiki.families.ku",
        "2-3": "raleval.envs.wiki.families.ku",
        "3-1": "raleval.envs.wiki.families.ka",
        "3-2": "raleval.envs.wiki.families.ka",
        "3-3": "raleval.envs.wiki.families.ka",
        "3-4": "raleval.envs.wiki.families.ka",
        "1-3": "raleval.envs.scholar.families",
        "2-4": "raleval.envs.scholar.families",
        "3-5": "raleval.envs.scholar.families",
        "crag-simple": "raleval.envs.crag.families.simple",
        **{
            f: "raleval.envs.crag.families.types"
            for f in (
                "crag-condition",
                "crag-set",
                "crag-comparison",
                "crag-aggregation",
                "crag-multihop",
                "crag-postproc",
                "crag-false-premise",
            )
        },
    },
)
task_sets: Registry[Any] = Registry(
    "task set",
    "raleval.task_sets",
    {
        "scholar-ks": "raleval.envs.scholar.families",
        "scholar": "raleval.envs.scholar.families",
        "wiki-ks": "raleval.envs.wiki.families.ks",
        "reval-12": "raleval.tasks.sets",
        "wiki-ka": "raleval.envs.wiki.families.ka",
        "wiki-ku": "raleval.envs.wiki.families.ku",
        "crag-kg-simple": "raleval.envs.crag.families.simple",
        "crag-kg": "raleval.envs.crag.families.types",
    },
)
metrics: Registry[Any] = Registry(
    "metric",
    "raleval.metrics",
    {
        **{m: "raleval.tasks.metrics" for m in ("f1", "em", "numeric", "set_f1", "fields", "crag")},
        **{m: "raleval.tasks.grading" for m in ("relaxed", "relaxed_f1", "correct")},
    },
)

register_env = envs.register
register_workflow = workflows.register
register_model_provider = models.register
register_task_family = task_families.register
register_task_set = task_sets.register
register_metric = metrics.register
