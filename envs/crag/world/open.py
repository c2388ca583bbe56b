"""Open domain: encyclopedia entities with a summary and an infobox."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any

from raleval.envs.crag.world.common import (
    COUNTRIES,
    NOUNS,
    WORDS,
    UniqueNames,
    noise_names,
    popularity_of,
    random_name,
)

if TYPE_CHECKING:
    from raleval.envs.crag.world import CragWorld


def generate(w: CragWorld, rng: random.Random, n_core: int, noise: int) -> None:
    unique = UniqueNames()
    kinds = [
        ("river", "a river"),
        ("mountain", "a mountain"),
        ("inventor", "an inventor"),
        ("city", "a city"),
        ("novel", "a novel"),
    ]

    def make(r: random.Random) -> str:
        return random_name(r, r.choice([1, 2]))

    for i in range(n_core):
        name = None
        while name is None:
            name = unique.take(make(rng))
        group = [(name, True)] + [
            (n, False) for n in noise_names(rng, name, "open", noise, make, unique)
        ]
        for n, core in group:
            kind, article = rng.choice(kinds)
            facts: dict[str, Any] = {"type": kind, "country": rng.choice(COUNTRIES)}
            if kind in ("river", "mountain"):
                facts["length_km" if kind == "river" else "height_m"] = rng.randint(50, 8000)
            elif kind == "inventor":
                facts["born"] = str(rng.randint(1800, 1990))
                facts["known_for"] = f"the {rng.choice(WORDS).lower()} {rng.choice(NOUNS).lower()}"
            elif kind == "city":
                facts["population"] = rng.randint(10_000, 9_000_000)
            else:
                facts["author"] = random_name(rng)
                facts["published"] = str(rng.randint(1850, 2022))
            text = f"{n} is {article} in {facts['country']}. " + " ".join(
                f"Its {k.replace('_', ' ')} is {v}."
                for k, v in facts.items()
                if k not in ("type", "country")
            )
            w.open_entities[n] = {"summary_text": text, "summary_structured": facts, "core": core}
            w.add_node(
                f"open:{n}",
                type="open",
                domain="open",
                name=n,
                popularity=popularity_of(i),
                core=core,
            )
