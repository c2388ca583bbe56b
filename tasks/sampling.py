"""Which tasks a run takes from its task set: ``--limit N`` (stratified) and ``--sample-id``.

``--limit N`` takes tasks round-robin across families, in the order the families appear in the
set, each family's tasks in their generated order (generators draw with the run's ``--seed``,
so the sample is seeded). ``--limit 9`` over three families runs three of each; a larger limit
takes a superset of a smaller one, so a run can be extended by raising it.

With ``sample_seed`` (a study's declared design, docs/study.md) each family's tasks are first
put in a seeded random order, so the sample is random within each family rather than its
first-k: the first tasks a generator makes can sit closest to its demonstration. The order
depends only on the seed, the family and its task ids, never on the workflow or model, so
every cell of an environment draws the same tasks.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence

from raleval.config import ConfigError
from raleval.records import Task


def _shuffled(family: str, tasks: list[Task], seed: int) -> list[Task]:
    """``tasks`` in a random order fixed by ``seed`` and the family (a string seed: Python's
    ``random`` hashes it with SHA-512, the same on every machine and run)."""
    key = hashlib.sha256(f"{seed}:{family}".encode()).hexdigest()
    order = sorted(tasks, key=lambda t: t.id)  # independent of the order generated or loaded
    random.Random(key).shuffle(order)
    return order


def stratified(
    tasks: Sequence[Task], limit: int | None, sample_seed: int | None = None
) -> list[Task]:
    """The first ``limit`` tasks of the round-robin over families (all of them without one);
    with ``sample_seed`` each family's tasks in a seeded random order (:func:`_shuffled`)."""
    by_family: dict[str, list[Task]] = {}
    for t in tasks:
        by_family.setdefault(t.family, []).append(t)
    if sample_seed is not None:
        by_family = {f: _shuffled(f, ts, sample_seed) for f, ts in by_family.items()}
    ordered: list[Task] = []
    depth = max((len(v) for v in by_family.values()), default=0)
    for i in range(depth):
        ordered.extend(group[i] for group in by_family.values() if i < len(group))
    return ordered[:limit] if limit else ordered


def by_ids(tasks: Sequence[Task], ids: Sequence[str]) -> list[Task]:
    """The tasks named by ``ids``, in that order; an unknown id is a configuration error."""
    index = {t.id: t for t in tasks}
    unknown = [i for i in ids if i not in index]
    if unknown:
        some = ", ".join(list(index)[:3])
        raise ConfigError(
            f"--sample-id {unknown[0]!r} is not in the task set ({len(index)} tasks, e.g. {some})"
        )
    return [index[i] for i in dict.fromkeys(ids)]


def select(
    tasks: Sequence[Task],
    limit: int | None,
    sample_ids: Sequence[str] | None,
    sample_seed: int | None = None,
) -> list[Task]:
    """The run's tasks: the named ones if ``sample_ids``, else the stratified ``limit`` (seeded
    random within each family with ``sample_seed``)."""
    if sample_ids:
        chosen = by_ids(tasks, sample_ids)
        return chosen[:limit] if limit else chosen
    return stratified(tasks, limit, sample_seed)


def check_unique(tasks: Sequence[Task], where: str) -> None:
    """Refuse a task list in which an id appears twice: results are keyed by id."""
    seen: dict[str, int] = {}
    for n, t in enumerate(tasks, 1):
        if t.id in seen:
            raise ConfigError(
                f"{where}: duplicate task id {t.id!r} (tasks {seen[t.id]} and {n}); "
                "every task needs its own id"
            )
        seen[t.id] = n
