"""AMiner-like scholar environment: seven APIs over a generated academic world."""

from __future__ import annotations

from functools import lru_cache

from raleval.envs.scholar.tools import build_tools
from raleval.envs.scholar.world import ScholarWorld, generate_world
from raleval.envs.spec import Environment
from raleval.registry import register_env


class ScholarEnv(Environment):
    name = "scholar"
    description = "AMiner-like academic search: searchPerson, getCoauthors, getPersonPubs, ..."

    def __init__(self, world: ScholarWorld) -> None:
        super().__init__(build_tools(world))
        self.world = world


@lru_cache(maxsize=4)
def _world(size: str, seed: int) -> ScholarWorld:
    return generate_world(size, seed)


@register_env("scholar")
def make_scholar_env(size: str = "small", seed: int = 0) -> ScholarEnv:
    """The scholar environment over the world ``(size, seed)``."""
    return ScholarEnv(_world(size, int(seed)))


__all__ = ["ScholarEnv", "ScholarWorld", "generate_world", "make_scholar_env"]
