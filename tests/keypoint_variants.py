"""Long-form oracle answers with one fact changed, for the key-point rules' hallucination
checks (tests/test_keypoint_variants.py; benchmarks/keypoint_variants.py at size).

The oracle's answer to a long-form task is the statements of its key points (what the
executing oracle writes when the gold calls show every value: ``raleval.keypoints.oracle_text``).
Each variant changes one fact of it and names the key points the rules must then contradict:

- ``replaced_entity``: an entity's value replaced by another value of its slot from the world's
  vocabulary (the point's ``choices``: organizations, venues, the scholar's titles and
  coauthors, positions), open-vocabulary slots first;
- ``swapped_numbers``: the values of two numbers (or two years) exchanged, both written beside
  the other's cue;
- ``far_year``: a year replaced by another year, written more than four words after its cue
  in the same sentence.

``shuffled`` is the reference text with its words shuffled: not a correct answer.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from raleval.records import KeyPoint, Task

OPEN_SLOTS = ("phd_institution", "organization", "top_paper", "top_paper_venue", "top_coauthor")
FAR = "— as the records kept at the time plainly show —"


@dataclass(frozen=True)
class Variant:
    kind: str
    answer: str
    changed: tuple[int, ...]  # indices of the key points that must be contradicted


def oracle_answer(points: Sequence[KeyPoint]) -> str:
    return " ".join(p.statement for p in points)


def _with(points: Sequence[KeyPoint], replaced: dict[int, str]) -> str:
    return " ".join(replaced.get(i, p.statement) for i, p in enumerate(points))


def replaced_entity(points: Sequence[KeyPoint], rng: random.Random) -> Variant | None:
    entities = [
        i
        for i, p in enumerate(points)
        if p.kind == "entity" and p.value in p.statement and len(set(p.choices) - {p.value}) > 0
    ]
    open_ = [i for i in entities if points[i].slot in OPEN_SLOTS]
    pool = open_ or entities
    if not pool:
        return None
    i = rng.choice(pool)
    p = points[i]
    others = {q.value.lower() for q in points}
    wrong = [
        c
        for c in p.choices
        if c != p.value and c.lower() not in others and p.value.lower() not in c.lower()
    ]
    if not wrong:
        return None
    new = p.statement.replace(p.value, rng.choice(wrong))
    return Variant("replaced_entity", _with(points, {i: new}), (i,))


def swapped_numbers(points: Sequence[KeyPoint], rng: random.Random) -> Variant | None:
    pairs = [
        (i, j)
        for i, p in enumerate(points)
        for j, q in enumerate(points)
        if i < j
        and p.kind == q.kind
        and p.kind in ("number", "year")
        and p.value != q.value
        and p.statement.count(p.value) == 1
        and q.statement.count(q.value) == 1
    ]
    if not pairs:
        return None
    i, j = rng.choice(pairs)
    a, b = points[i], points[j]
    new = {i: a.statement.replace(a.value, b.value), j: b.statement.replace(b.value, a.value)}
    return Variant("swapped_numbers", _with(points, new), (i, j))


def far_year(points: Sequence[KeyPoint], rng: random.Random) -> Variant | None:
    years = [
        i for i, p in enumerate(points) if p.kind == "year" and p.statement.count(p.value) == 1
    ]
    if not years:
        return None
    i = rng.choice(years)
    p = points[i]
    taken = {q.value for q in points}
    wrong = [str(int(p.value) + d) for d in (-9, -7, -5, -3, -2, -1, 1, 2, 3, 5, 7)]
    wrong = [w for w in wrong if w not in taken]
    new = p.statement.replace(p.value, f"{FAR} {rng.choice(wrong)}")
    return Variant("far_year", _with(points, {i: new}), (i,))


def shuffled(text: str, rng: random.Random) -> str:
    words = text.split()
    rng.shuffle(words)
    return " ".join(words)


MAKERS = (replaced_entity, swapped_numbers, far_year)


def variants(task: Task, seed: int = 0) -> list[Variant]:
    """One variant of each kind the task's key points allow."""
    rng = random.Random(f"{task.id}/{seed}")
    points = task.key_points or []
    return [v for make in MAKERS if (v := make(points, rng)) is not None]
