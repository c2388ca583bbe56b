"""Resolve a ``--tasks`` value: a task set name, a family id, or a JSON-lines file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from raleval import registry
from raleval.records import Task
from raleval.store import read_tasks
from raleval.tasks.family import TaskFamily


def families_for(spec: str) -> list[TaskFamily]:
    """The families a task-set name or a single family id stands for."""
    if spec in registry.task_sets:
        return [registry.task_families.get(f) for f in registry.task_sets.get(spec)]
    if spec in registry.task_families:
        return [registry.task_families.get(spec)]
    known = registry.task_sets.names() + registry.task_families.names()
    raise registry.UnknownNameError("task set", spec, known)


def load_tasks(spec: str, env: Any, env_name: str, per_family: int, seed: int) -> list[Task]:
    """Tasks for a run, generated (and verified) over ``env`` or read from a file."""
    if spec.endswith(".jsonl") or Path(spec).is_file():
        return read_tasks(Path(spec))
    tasks: list[Task] = []
    for family in families_for(spec):
        if family.env != env_name:
            raise ValueError(
                f"task family {family.id} runs on env {family.env!r}, not {env_name!r}"
            )
        tasks.extend(family.generate(env, per_family, seed))
    return tasks
