"""Plugin registries: environments, workflows, model providers, task families, metrics.

Registration is by decorator; the registered name is the CLI name. Built-in plugins are listed
as ``name -> module`` and imported on first use, so importing :mod:`raleval` loads none of them.
Third-party packages add plugins through the entry-point groups ``raleval.<kind>``. A name
``prefix:argument`` that no plugin has resolves to ``get(prefix).parametrized(argument)`` where
the prefix's plugin has that method (``agent:MODULE:FACTORY``, ``command:CMD``).
"""

from __future__ import annotations

import difflib
import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass
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


@dataclass(frozen=True)
class EnvPlugin:
    """A registered environment: its factory and the task set it runs by default. Calling the
    plugin calls the factory."""

    name: str
    factory: Callable[..., Any]
    default_tasks: str | None = None

    def __call__(self, **options: Any) -> Any:
        return self.factory(**options)

    def parameters(self) -> dict[str, inspect.Parameter] | None:
        """The factory's keyword parameters (the ``-E`` options), or None when it cannot be
        inspected (a builtin, a C extension)."""
        try:
            return dict(inspect.signature(self.factory).parameters)
        except (TypeError, ValueError):
            return None

    @property
    def __doc__(self) -> str | None:  # type: ignore[override]  # listings show the factory's
        return self.factory.__doc__


class Registry(Generic[T]):
    """Name -> plugin map with lazy built-ins, entry points and an optional discovery step
    (importing what registers more names) tried before a name is declared unknown."""

    def __init__(
        self,
        kind: str,
        group: str,
        builtins: dict[str, str],
        discover: Callable[[], Any] | None = None,
        adapt: Callable[[str, Any], T] | None = None,
    ) -> None:
        self.kind = kind
        self.group = group
        self._builtins = dict(builtins)
        self._items: dict[str, T] = {}
        self._discover = discover
        self._discovered = False
        self._adapt = adapt

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator: ``@registry.register("name")``."""

        def decorate(obj: T) -> T:
            item = self._adapt(name, obj) if self._adapt else obj
            existing = self._items.get(name)
            if existing is not None and existing is not obj and existing is not item:
                raise ValueError(f"{self.kind} {name!r} is already registered")
            if existing is None:
                self._items[name] = item
            return obj

        return decorate

    def add_builtin(self, name: str, module: str) -> None:
        """Declare where a lazily imported plugin lives."""
        self._builtins[name] = module

    def _entry_points(self) -> dict[str, Any]:
        # read each time: a package installed while the process runs (a notebook) is seen
        return {ep.name: ep for ep in entry_points(group=self.group)}

    def _discover_once(self) -> None:
        if self._discover is not None and not self._discovered:
            self._discovered = True
            self._discover()

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
                self._items[name] = self._adapt(name, loaded) if self._adapt else loaded
            return self._items[name]
        if self._discover is not None and not self._discovered:
            self._discover_once()
            return self.get(name)
        head, sep, argument = name.partition(":")
        if sep and (head in self._items or head in self._builtins or head in eps):
            # ``agent:MODULE:FACTORY``, ``command:CMD``: a plugin that takes an argument
            parametrized = getattr(self.get(head), "parametrized", None)
            if parametrized is not None:
                self._items[name] = parametrized(argument)
                return self._items[name]
        raise UnknownNameError(self.kind, name, self.names())

    def names(self) -> list[str]:
        self._discover_once()
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
        if not isinstance(name, str):
            return False
        # known names answer without a scan of the installed distributions (~15 ms each)
        return name in self._items or name in self._builtins or name in self.names()


# Built-in environments, workflows and providers are declared as entry points in
# pyproject.toml (groups raleval.envs, raleval.workflows, raleval.models), exactly as a
# third-party package declares its own: nothing here names them.
envs: Registry[EnvPlugin] = Registry(
    "env",
    "raleval.envs",
    {},
    # an entry point may name the factory itself rather than a module that registers it
    adapt=lambda name, obj: obj if isinstance(obj, EnvPlugin) else EnvPlugin(name, obj),
)
workflows: Registry[Any] = Registry("workflow", "raleval.workflows", {})
models: Registry[Any] = Registry("model provider", "raleval.models", {})
# Task families and sets live with their environment (envs/<name>/families*.py) and register
# when it is imported: a name not yet known loads every environment first.
task_families: Registry[Any] = Registry(
    "task family", "raleval.task_families", {}, discover=lambda: envs.load_all()
)
task_sets: Registry[Any] = Registry(
    "task set",
    "raleval.task_sets",
    {"reval-12": "raleval.tasks.sets"},  # spans environments: kept with the generic sets
    discover=lambda: envs.load_all(),
)
metrics: Registry[Any] = Registry(
    "metric",
    "raleval.metrics",
    {
        **{
            m: "raleval.grading.metrics"
            for m in ("f1", "em", "numeric", "set_f1", "fields", "crag")
        },
        **{m: "raleval.grading.rules" for m in ("relaxed", "relaxed_f1", "correct")},
        **{m: "raleval.grading.longform" for m in ("rouge_l", "bleu")},
    },
)


def register_env(name: str, *, default_tasks: str | None = None) -> Callable[[Any], Any]:
    """Decorator for an environment factory (``-E key=value`` are its keyword arguments);
    ``default_tasks`` is the task set ``raleval run --env <name>`` runs without --tasks."""

    def decorate(factory: Any) -> Any:
        envs.register(name)(EnvPlugin(name, factory, default_tasks))
        return factory

    return decorate


register_workflow = workflows.register
register_model_provider = models.register
register_task_family = task_families.register
register_task_set = task_sets.register
register_metric = metrics.register
