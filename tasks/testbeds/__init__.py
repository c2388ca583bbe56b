"""Robustness testbeds derived from any task family: ``world.py`` changes what the tools know
(RGB / CRAG: negative, false-premise, counterfactual, noise), ``interface.py`` how they are
presented (rename-tools, bare-tools, distractors, inject); ``spec.py`` parses ``@kind=value``
and ``lookalike.py`` draws the look-alike records both use. This module is the one door:
derive a set's variants, wrap an episode's session."""

from __future__ import annotations

from typing import Any

from raleval.records import Task
from raleval.tasks.testbeds.interface import InterfaceSession, derive_interface
from raleval.tasks.testbeds.spec import INTERFACE, KINDS, MAX_DISTRACTORS, Testbed, parse_spec
from raleval.tasks.testbeds.world import TestbedSession, derive_world

__all__ = [
    "INTERFACE",
    "KINDS",
    "MAX_DISTRACTORS",
    "Testbed",
    "derive",
    "parse_spec",
    "wrap_session",
]


def wrap_session(session: Any, task: Task, env: Any = None) -> Any:
    """The session an episode of ``task`` talks to: wrapped when the task is a testbed
    variant whose world or tool interface differs from the base one. ``env`` (the
    environment the session came from) gives distractor tools sessions of their own."""
    spec = task.metadata.get("testbed")
    if not spec or spec.get("kind") == "false-premise":
        return session
    if spec.get("kind") in INTERFACE:
        return InterfaceSession(session, task, env)
    return TestbedSession(session, task)


def derive(tasks: list[Task], env: Any, testbed: Testbed, seed: int) -> list[Task]:
    """The testbed's verified variants of ``tasks`` (tasks it cannot transform are left out)."""
    if testbed.kind in INTERFACE:
        made = (derive_interface(env, t, testbed.kind, seed, testbed.count) for t in tasks)
        return [v for v in made if v is not None]
    return derive_world(tasks, env, testbed.kind, seed, ratio=testbed.ratio, label=testbed.label)
