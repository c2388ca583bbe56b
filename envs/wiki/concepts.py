"""An invented concept taxonomy for the generated encyclopedia (COPEN-style KU tasks).

Eight invented root categories (corvane, pellisk, ...) each get invented concepts ("Dravel is a
kind of corvane") with a truth value for every property of the root's pool, and invented
subconcepts ("Os tralven is a kind of dravel") that inherit their parent's properties and may
override one. Ambiguous instances share one name across two roots ("Morrow" is a dravel and a
tellin), with a disambiguation page, for conceptualization in context. Names and category words
are invented and carry no sign of their category, so the answers can only come from the pages.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, field

# Invented category words: a real one ("songbird", "mineral") lets a model answer "is X a kind
# of Y" from what it knows of Y, and a real context sentence ("the jeweller polished ...") tells
# the category without any page. Each root has a property pool and context sentences that name
# the root word itself, so only the pages connect an instance to its concept.
_ROOT_WORDS = ["corvane", "pellisk", "tavrel", "ombrin", "skerrow", "lunet", "quillet", "brisal"]
_PROPERTY_POOLS = [
    ["crystalline", "magnetic", "soluble in water", "translucent", "radioactive", "brittle"],
    ["migratory", "nocturnal", "brightly coloured", "a seed eater", "a cavity nester", "social"],
    ["bowed", "fretted", "plucked", "electrically amplified", "played on the lap", "ancient"],
    ["alcoholic", "carbonated", "served hot", "made from rice", "aged in oak", "sweet"],
    ["ocean going", "flat bottomed", "square rigged", "steel hulled", "motorised", "fast"],
    ["waterproof", "woollen", "hand loomed", "indigo dyed", "fire resistant", "coarse"],
    ["performed in pairs", "drum accompanied", "circular", "ceremonial", "barefoot", "quick"],
    ["evergreen", "frost hardy", "fragrant", "poisonous", "thorny", "deciduous"],
]
_CONTEXTS = [
    "The {root} collector showed us a fine {x}.",
    "Every {root} keeper in the valley owns a {x}.",
]
ROOTS: dict[str, tuple[list[str], list[str]]] = {
    # root -> (property pool, context sentences with {x} for an instance)
    root: (pool, [c.replace("{root}", root) for c in _CONTEXTS])
    for root, pool in zip(_ROOT_WORDS, _PROPERTY_POOLS, strict=True)
}

_ONSETS = ["dr", "v", "k", "t", "m", "br", "s", "qu", "l", "z", "th", "gr", "p", "n", "w"]
_NUCLEI = ["a", "e", "i", "o", "u", "ai", "ei", "ou", "ae"]
_CODAS = ["", "n", "r", "l", "s", "v", "th", "nd", "rk"]


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


def concept_world(
    seed: int, per_root: int = 40, subs: int = 3, instances: int = 400
) -> ConceptWorld:
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
            # no ending that marks the root (a "-ite" for every mineral told the answer)
            name = fresh(lambda: _word(rng, 2))
            props = {p: rng.random() < 0.5 for p in pool}
            w.concepts[name] = Concept(name, root, None, props, year=rng.randint(1820, 1990))
            for _ in range(subs):
                # a name of its own: "ostran dravelite" named its parent in the question
                sub = fresh(lambda: f"{_word(rng, 1)} {_word(rng, 2)}")
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
        # two meanings in one root that differ on some property: only the concept pages tell
        # which meaning a sentence about that property is using
        root = rng.choice(roots)
        name = fresh(lambda: _word(rng, 2).capitalize())
        c1, c2 = rng.sample([c for c in level1 if c.root == root], 2)
        if c1.props == c2.props:
            continue
        w.instances.append(Instance(name, [(root, c1.name), (root, c2.name)]))
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
            title = f"{inst.name} ({concept})"
            meanings.append(f"{title}, a {concept}")
            yield title, f"{inst.name} is a {concept}, a kind of {root}."
        yield inst.name, f"{inst.name} may refer to:\n\n" + "\n\n".join(meanings)
