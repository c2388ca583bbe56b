"""An invented concept taxonomy for the generated encyclopedia (COPEN-style KU tasks).

Eight real root categories (mineral, songbird, ...) each get invented concepts ("Dravelite is a
kind of mineral") with a truth value for every property of the root's pool, and invented
subconcepts ("Ostran dravelite is a kind of dravelite") that inherit their parent's properties
and may override one. Ambiguous instances share one name across two roots ("Morrow" is a
dravelite and a tellin warbler), with a disambiguation page, for conceptualization in context.
The names are invented, so the answers can only come from the pages.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, field

ROOTS: dict[str, tuple[list[str], list[str]]] = {
    # root -> (property pool, context sentences with {x} for an instance)
    "mineral": (
        ["crystalline", "magnetic", "soluble in water", "translucent", "radioactive", "brittle"],
        ["The jeweller polished a piece of {x} until it shone.", "Miners dug {x} out of the hill."],
    ),
    "songbird": (
        [
            "migratory",
            "nocturnal",
            "brightly coloured",
            "a seed eater",
            "a cavity nester",
            "social",
        ],
        ["At dawn a {x} sang from the hedge.", "The {x} built its nest under the eaves."],
    ),
    "string instrument": (
        ["bowed", "fretted", "plucked", "electrically amplified", "played on the lap", "ancient"],
        ["She tuned her {x} before the concert.", "The {x} carried the melody in the quartet."],
    ),
    "fermented beverage": (
        ["alcoholic", "carbonated", "served hot", "made from rice", "aged in oak", "sweet"],
        ["He poured a glass of {x} at dinner.", "The brewery sold {x} in tall bottles."],
    ),
    "sailing vessel": (
        ["ocean going", "flat bottomed", "square rigged", "steel hulled", "motorised", "fast"],
        ["The {x} left the harbour at high tide.", "Storms forced the {x} to shorten sail."],
    ),
    "woven textile": (
        ["waterproof", "woollen", "hand loomed", "indigo dyed", "fire resistant", "coarse"],
        ["The tailor cut a coat from {x}.", "A bolt of {x} lay on the loom."],
    ),
    "folk dance": (
        ["performed in pairs", "drum accompanied", "circular", "ceremonial", "barefoot", "fast"],
        ["The villagers danced the {x} at the harvest feast.", "Couples learned the {x}."],
    ),
    "flowering shrub": (
        ["evergreen", "frost hardy", "fragrant", "poisonous", "thorny", "deciduous"],
        ["The gardener pruned the {x} in spring.", "Bees swarmed the {x} in bloom."],
    ),
}

_ONSETS = ["dr", "v", "k", "t", "m", "br", "s", "qu", "l", "z", "th", "gr", "p", "n", "w"]
_NUCLEI = ["a", "e", "i", "o", "u", "ai", "ei", "ou", "ae"]
_CODAS = ["", "n", "r", "l", "s", "v", "th", "nd", "rk"]
_SUFFIX = {
    "mineral": "ite",
    "songbird": " warbler",
    "string instrument": "ola",
    "fermented beverage": "ka",
    "sailing vessel": " sloop",
    "woven textile": "ine",
    "folk dance": "anza",
    "flowering shrub": "ia",
}


def _word(rng: random.Random, syllables: int) -> str:
    return "".join(
        rng.choice(_ONSETS) + rng.choice(_NUCLEI) + rng.choice(_CODAS) for _ in range(syllables)
    )


@dataclass
class Concept:
    name: str  # lower case, e.g. "dravelite" or "ostran dravelite"
    root: str
    parent: str | None  # None: a concept directly under the root
    props: dict[str, bool]
    override: str | None = None  # the property a subconcept changes
    year: int = 0

    @property
    def title(self) -> str:
        return self.name[0].upper() + self.name[1:]


@dataclass
class Instance:
    name: str
    meanings: list[tuple[str, str]]  # (root, concept name)


@dataclass
class ConceptWorld:
    concepts: dict[str, Concept] = field(default_factory=dict)
    instances: list[Instance] = field(default_factory=list)

    def children(self, name: str) -> list[Concept]:
        return [c for c in self.concepts.values() if c.parent == name]


def concept_world(seed: int, per_root: int = 4, subs: int = 3, instances: int = 80) -> ConceptWorld:
    rng = random.Random(f"concepts/{seed}")
    w = ConceptWorld()
    used: set[str] = set()

    def fresh(make) -> str:
        while True:
            name = make()
            if name not in used:
                used.add(name)
                return name

    for root, (pool, _) in ROOTS.items():
        for _ in range(per_root):
            name = fresh(lambda root=root: _word(rng, 2) + _SUFFIX[root])
            props = {p: rng.random() < 0.5 for p in pool}
            w.concepts[name] = Concept(name, root, None, props, year=rng.randint(1820, 1990))
            for _ in range(subs):
                sub = fresh(lambda name=name: f"{_word(rng, 2)}an {name}")
                child = dict(props)
                override = rng.choice(pool) if rng.random() < 0.6 else None
                if override:
                    child[override] = not child[override]
                w.concepts[sub] = Concept(
                    sub, root, name, child, override, year=rng.randint(1850, 2010)
                )
    level1 = [c for c in w.concepts.values() if c.parent is None]
    roots = list(ROOTS)
    for _ in range(instances):
        r1, r2 = rng.sample(roots, 2)
        name = fresh(lambda: _word(rng, 2).capitalize())
        c1 = rng.choice([c for c in level1 if c.root == r1])
        c2 = rng.choice([c for c in level1 if c.root == r2])
        w.instances.append(Instance(name, [(r1, c1.name), (r2, c2.name)]))
    return w


def _plural(name: str) -> str:
    return name + "s"


def _listing(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def concept_pages(w: ConceptWorld) -> Iterator[tuple[str, str]]:
    """(title, text) of every concept, subconcept, instance and disambiguation page."""
    for c in w.concepts.values():
        if c.parent is None:
            yes = [p for p, v in c.props.items() if v]
            no = [f"not {p}" for p, v in c.props.items() if not v]
            lead = f"{c.title} is a kind of {c.root}, first described in {c.year}."
            facts = []
            if yes:
                facts.append(f"{_plural(c.title)} are {_listing(yes)}.")
            if no:
                facts.append(f"{_plural(c.title)} are {_listing(no)}.")
            kinds = [k.name for k in w.children(c.name)]
            body = f"Kinds of {c.name}: {_listing(kinds)}." if kinds else ""
            yield c.title, "\n\n".join(x for x in [lead + " " + " ".join(facts), body] if x)
        else:
            lead = f"{c.title} is a kind of {c.parent}, first described in {c.year}."
            if c.override:
                verb = "is" if c.props[c.override] else "is not"
                lead += f" Unlike other {_plural(c.parent)}, {c.name} {verb} {c.override}."
                lead += f" In every other respect it is like other {_plural(c.parent)}."
            else:
                lead += f" It has all the properties of other {_plural(c.parent)}."
            yield c.title, lead
    for inst in w.instances:
        meanings = []
        for root, concept in inst.meanings:
            title = f"{inst.name} ({root})"
            meanings.append(f"{title}, a {concept}")
            yield title, f"{inst.name} is a {concept}, a kind of {root}."
        yield inst.name, f"{inst.name} may refer to:\n\n" + "\n\n".join(meanings)
