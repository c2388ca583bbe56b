"""Wiki KU families over the generated concept taxonomy, in the spirit of COPEN.

- 2-1 conceptual similarity: "Is X a kind of Y?" (Y the parent, the root two hops up, a sibling
  concept or another root; half the answers are no).
- 2-2 conceptual properties: "Is X P?" for concepts and subconcepts, where a subconcept either
  overrides P or inherits it (the parent's page must then be read).
- 2-3 conceptualization in context: which of two concepts of one category an ambiguous name
  belongs to, given a sentence stating a property only one of them has.

Gold answers come from the taxonomy; the gold calls are executed and a task is kept only if
its evidence strings were all retrieved.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from raleval.envs.wiki.concepts import ROOTS, Concept, ConceptWorld, concept_world
from raleval.envs.wiki.families.common import Question, register_wiki_families, search
from raleval.records import Level


def _yn(v: bool) -> str:
    return "yes" if v else "no"


def _subs(w: ConceptWorld) -> list[Concept]:
    return [c for c in w.concepts.values() if c.parent is not None]


def _kind_parent(w: ConceptWorld, rng: random.Random) -> Question:
    c = rng.choice(_subs(w))
    return Question(
        f"Is {c.name} a kind of {c.parent}?",
        "yes",
        [search(c.title)],
        [f"kind of {c.parent}"],
        "kind_of",
    )


def _kind_root(w: ConceptWorld, rng: random.Random) -> Question:
    c = rng.choice(_subs(w))
    parent = w.concepts[c.parent or ""]
    return Question(
        f"Is {c.name} a kind of {c.root}?",
        "yes",
        [search(c.title), search(parent.title)],
        [f"kind of {c.parent}", f"kind of {c.root}"],
        "kind_of",
    )


def _kind_other_root(w: ConceptWorld, rng: random.Random) -> Question:
    c = rng.choice(_subs(w))
    parent = w.concepts[c.parent or ""]
    other = rng.choice([r for r in ROOTS if r != c.root])
    return Question(
        f"Is {c.name} a kind of {other}?",
        "no",
        [search(c.title), search(parent.title)],
        [f"kind of {c.parent}", f"kind of {c.root}"],
        "kind_of",
    )


def _kind_sibling(w: ConceptWorld, rng: random.Random) -> Question:
    c = rng.choice(_subs(w))
    siblings = [
        x.name
        for x in w.concepts.values()
        if x.parent is None and x.root == c.root and x.name != c.parent
    ]
    return Question(
        f"Is {c.name} a kind of {rng.choice(siblings)}?",
        "no",
        [search(c.title)],
        [f"kind of {c.parent}"],
        "kind_of",
    )


def _prop_evidence(c: Concept, prop: str) -> str:
    return prop if c.props[prop] else f"not {prop}"


def _prop_concept(w: ConceptWorld, rng: random.Random) -> Question:
    c = rng.choice([x for x in w.concepts.values() if x.parent is None])
    prop = rng.choice(list(c.props))
    return Question(
        f"Is {c.name} {prop}? Answer yes or no.",
        _yn(c.props[prop]),
        [search(c.title)],
        [_prop_evidence(c, prop)],
        "property",
    )


def _prop_override(w: ConceptWorld, rng: random.Random) -> Question | None:
    c = rng.choice(_subs(w))
    if c.override is None:
        return None
    return Question(
        f"Is {c.name} {c.override}? Answer yes or no.",
        _yn(c.props[c.override]),
        [search(c.title)],
        [f"{c.name} {'is' if c.props[c.override] else 'is not'} {c.override}"],
        "property_override",
    )


def _prop_inherited(w: ConceptWorld, rng: random.Random) -> Question:
    c = rng.choice(_subs(w))
    parent = w.concepts[c.parent or ""]
    prop = rng.choice([p for p in c.props if p != c.override])
    return Question(
        f"Is {c.name} {prop}? Answer yes or no.",
        _yn(c.props[prop]),
        [search(c.title), search(parent.title)],
        [f"kind of {c.parent}", _prop_evidence(parent, prop)],
        "property_inherited",
    )


def _in_context(w: ConceptWorld, rng: random.Random) -> Question:
    inst = rng.choice(w.instances)
    (_, first), (_, second) = inst.meanings
    a, b = w.concepts[first], w.concepts[second]
    prop = rng.choice([p for p in a.props if a.props[p] != b.props[p]])
    answer = first if a.props[prop] else second
    options = sorted([first, second], key=lambda _: rng.random())
    return Question(
        f'In the sentence "The {inst.name} we saw was {prop}.", which concept does '
        f"{inst.name} belong to: {options[0]} or {options[1]}?",
        answer,
        [search(inst.name), search(a.title), search(b.title)],
        [f"{inst.name} ({first})", prop],
        "in_context",
    )


MAKERS: dict[str, list[Callable[[ConceptWorld, random.Random], Question | None]]] = {
    "2-1": [_kind_parent, _kind_other_root, _kind_root, _kind_sibling],
    "2-2": [_prop_concept, _prop_override, _prop_inherited],
    "2-3": [_in_context],
}


_DESCRIPTIONS = {
    "2-1": "Wiki KU: is X a kind of Y (COPEN CSJ-style, over an invented taxonomy)",
    "2-2": "Wiki KU: does a concept have a property, inherited or overridden (COPEN CPJ-style)",
    "2-3": "Wiki KU: which concept an ambiguous name belongs to in context (COPEN CiC-style)",
}
FAMILIES = register_wiki_families(
    "wiki-ku", Level.KU, _DESCRIPTIONS, MAKERS, lambda meta: concept_world(int(meta["seed"]))
)
