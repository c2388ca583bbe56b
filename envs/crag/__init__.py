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
from raleval.envs.crag.world import (
    DEFAULT_QUERY_DATE,
    GENERATOR_VERSION,
    CragWorld,
    generate_world,
)
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

    def __init__(
        self, world: CragWorld, as_of: date = DEFAULT_QUERY_DATE, domain_tools: bool = False
    ) -> None:
        super().__init__(build_tools(world, as_of))
        self.world = world
        self.as_of = as_of
        # A deviation from CRAG, off by default: an episode sees only its question's domain's
        # tools (``-E domain_tools=true``) instead of all 38 (a small model's prompt).
        self.domain_tools = domain_tools

    def http_routes(self) -> list[HttpRoute]:
        return crag_routes(self.tools)

    def session(self, task: Any = None) -> CragEnv:
        query_time = getattr(task, "query_time", None)
        env = self
        if query_time is not None and _as_date(query_time) != self.as_of:
            env = self.at(query_time)
        domain = question_domain(task) if self.domain_tools else None
        return env.only_domain(domain) if domain else env

    def example_calls(self) -> dict[str, dict[str, Any]]:
        return example_calls(self.world, self.as_of)

    def at(self, when: Any) -> CragEnv:
        """The same world answered as of ``when`` (a date, datetime or ISO string)."""
        env = CragEnv(self.world, _as_date(when), self.domain_tools)
        env.world_options = self.world_options
        return env

    def only_domain(self, domain: str) -> CragEnv:
        """The same APIs restricted to one domain's (``finance_*``...)."""
        env = CragEnv(self.world, self.as_of, self.domain_tools)
        env.world_options = self.world_options
        env.tools = [t for t in env.tools if t.name.startswith(f"{domain}_")]
        env._by_name = {t.name: t for t in env.tools}
        return env


def question_domain(task: Any) -> str | None:
    """The CRAG domain of a task (``crag/finance`` -> ``finance``), if it names one."""
    domain = str(getattr(task, "domain", "") or "")
    name = domain.split("/", 1)[1] if domain.startswith("crag/") else ""
    return name if name in DOMAINS else None


DOMAINS = ("open", "movie", "finance", "music", "sports")


@register_env("crag", default_tasks="crag-kg")
def make_crag_env(
    size: str = "tiny",
    seed: int = 0,
    snr: float = 1 / 30,
    as_of: str | None = None,
    domain_tools: object = False,
) -> CragEnv:
    """CRAG-shaped world: ``-E size=tiny|small|medium|large``, ``-E seed=N``, ``-E snr=0.0333``
    (signal : noise of entities), ``-E as_of=2024-03-15`` (default query date);
    ``-E domain_tools=true`` offers each question only its domain's tools (not CRAG's way)."""
    only = str(domain_tools).strip().lower() in ("1", "true", "yes", "on")
    env = CragEnv(load_world(size, int(seed), float(snr)), _as_date(as_of), only)
    env.world_options = {
        "size": size,
        "seed": int(seed),
        "snr": f"{float(snr):.6g}",
        "generator": GENERATOR_VERSION,
    }
    return env


from raleval.envs.crag import families  # noqa: E402  (registers the task families)

__all__ = ["CragEnv", "CragWorld", "families", "load_world", "make_crag_env"]
