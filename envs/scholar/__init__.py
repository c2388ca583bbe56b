"""AMiner-like scholar environment: seven APIs over a generated (or imported) academic world."""

from __future__ import annotations

from pathlib import Path

from raleval.environment import Environment
from raleval.envs.scholar.store import ScholarStore, load_world
from raleval.envs.scholar.tools import build_tools
from raleval.envs.scholar.world import GENERATOR_VERSION
from raleval.registry import register_env


class ScholarEnv(Environment):
    name = "scholar"
    description = "AMiner-like academic search: searchPerson, getCoauthors, getPersonPubs, ..."

    def __init__(self, store: ScholarStore) -> None:
        super().__init__(build_tools(store))
        self.store = store


@register_env("scholar", default_tasks="scholar")
def make_scholar_env(size: str = "small", seed: int = 0, path: str | None = None) -> ScholarEnv:
    """AMiner-like scholar world: ``-E size=tiny|small|large``, ``-E seed=N``, or
    ``-E path=world.sqlite`` for a world imported from an OAG/AMiner dump."""
    store = ScholarStore(Path(path)) if path else load_world(size, int(seed))
    env = ScholarEnv(store)
    env.world_options = (
        {"path": Path(path).name}
        if path
        else {"size": size, "seed": int(seed), "generator": GENERATOR_VERSION}
    )
    return env


# the task families register on import (after the environment: they refer to its store)
from raleval.envs.scholar import families  # noqa: E402

__all__ = ["ScholarEnv", "ScholarStore", "families", "load_world", "make_scholar_env"]
