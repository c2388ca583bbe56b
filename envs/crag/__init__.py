"""CRAG-style mock knowledge-graph environment: 38 APIs in five domains over a generated world,
answered as of each task's query time."""

from __future__ import annotations

import threading
from datetime import date, datetime
from typing import Any

from raleval.environment import Environment, HttpRoute
from raleval.envs.crag.examples import example_calls
from raleval.envs.crag.http import crag_routes
from raleval.envs.crag.tools import build_tools
from raleval.envs.crag.world import DEFAULT_QUERY_DATE, CragWorld, generate_world
from raleval.registry import register_env

# Worlds this big are generated once into the cache (envs/crag/store.py) and reopened from it.
STORED_SIZES = frozenset({"medium", "large"})

_worlds: dict[tuple[str, int, float], CragWorld] = {}
_lock = threading.Lock()


def load_world(size: str = "tiny", seed: int = 0, snr: float = 1 / 30) -> CragWorld:
    """The world ``(size, seed, snr)``, once per process: generated in memory, or for the
    sizes in ``STORED_SIZES`` reopened from the cache (generated and saved on first use)."""
    with _lock:
        key = (size, int(seed), float(snr))
        if key not in _worlds:
            if size in STORED_SIZES:
                from raleval.envs.crag.store import open_world

                world = open_world(size, int(seed), float(snr))
            else:
                world = generate_world(size, int(seed), float(snr))
            world.warm()
            _worlds[key] = world
        return _worlds[key]


def _as_date(value: Any) -> date:
    if value is None:
        return DEFAULT_QUERY_DATE
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    return datetime.fromisoformat(str(value)).date()


class CragEnv(Environment):
    """The mock APIs as of ``as_of``; :meth:`session` re-dates them to a task's query_time."""

    name = "crag"
    description = "CRAG mock KG APIs: open, movie, finance, music, sports (38 endpoints)"

    def __init__(self, world: CragWorld, as_of: date = DEFAULT_QUERY_DATE) -> None:
        super().__init__(build_tools(world, as_of))
        self.world = world
        self.as_of = as_of

    def http_routes(self) -> list[HttpRoute]:
        return crag_routes(self.tools)

    def session(self, task: Any = None) -> CragEnv:
        query_time = getattr(task, "query_time", None)
        if query_time is None or _as_date(query_time) == self.as_of:
            return self
        return CragEnv(self.world, _as_date(query_time))

    def example_calls(self) -> dict[str, dict[str, Any]]:
        return example_calls(self.world, self.as_of)

    def at(self, when: Any) -> CragEnv:
        """The same world answered as of ``when`` (a date, datetime or ISO string)."""
        return CragEnv(self.world, _as_date(when))


@register_env("crag", default_tasks="crag-kg")
def make_crag_env(
    size: str = "tiny", seed: int = 0, snr: float = 1 / 30, as_of: str | None = None
) -> CragEnv:
    """CRAG-shaped world: ``-E size=tiny|small|medium|large``, ``-E seed=N``, ``-E snr=0.0333``
    (signal : noise of entities), ``-E as_of=2024-03-15`` (default query date)."""
    return CragEnv(load_world(size, int(seed), float(snr)), _as_date(as_of))


from raleval.envs.crag import families  # noqa: E402  (registers the task families)

__all__ = ["CragEnv", "CragWorld", "families", "load_world", "make_crag_env"]
