"""AMiner-like scholar environment: seven APIs over a generated (or imported) academic world."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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

    def example_calls(self) -> dict[str, dict[str, Any]]:
        """Calls about the most cited person who has papers (and that person's top paper)."""
        person_id, name = self.store.query(
            "SELECT p.id, p.name FROM persons p WHERE EXISTS "
            "(SELECT 1 FROM authorship a WHERE a.person = p.rowid) "
            "ORDER BY p.n_citation DESC, p.id LIMIT 1"
        )[0]
        pub_id, title = self.store.person_pubs_with_authors(person_id)[0][:2]
        return {
            "searchPerson": {"name": name},
            "searchPublication": {"publication_info": title},
            "getCoauthors": {"person_id": person_id},
            "getPersonInterest": {"person_id": person_id},
            "getPublication": {"pub_id": pub_id},
            "getPersonBasicInfo": {"person_id": person_id},
            "getPersonPubs": {"person_id": person_id},
        }


@register_env("scholar", default_tasks="scholar")
def make_scholar_env(size: str = "small", seed: int = 0, path: str | None = None) -> ScholarEnv:
    """AMiner-like scholar world: ``-E size=tiny|small|medium|large``, ``-E seed=N``, or
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
from raleval.envs.scholar import families, longform  # noqa: E402

__all__ = [
    "ScholarEnv",
    "ScholarStore",
    "families",
    "load_world",
    "longform",
    "make_scholar_env",
]
