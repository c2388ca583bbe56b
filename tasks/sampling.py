"""Which tasks a run takes from its task set: ``--limit N`` (stratified) and ``--sample-id``.

``--limit N`` takes tasks round-robin across families, in the order the families appear in the
set, each family's tasks in their generated order (generators draw with the run's ``--seed``,
so the sample is seeded). ``--limit 9`` over three families runs three of each; a larger limit
takes a superset of a smaller one, so a run can be extended by raising it.
"""

from __future__ import annotations

from collections.abc import Sequence

from raleval.config import ConfigError
from raleval.records import Task


def stratified(tasks: Sequence[Task], limit: int | None) -> list[Task]:
    """The first ``limit`` tasks of the round-robin over families (all of them without one)."""
    by_family: dict[str, list[Task]] = {}
    for t in tasks:
        by_family.setdefault(t.family, []).append(t)
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
    tasks: Sequence[Task], limit: int | None, sample_ids: Sequence[str] | None
) -> list[Task]:
    """The run's tasks: the named ones if ``sample_ids``, else the stratified ``limit``."""
    if sample_ids:
        chosen = by_ids(tasks, sample_ids)
        return chosen[:limit] if limit else chosen
    return stratified(tasks, limit)


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
