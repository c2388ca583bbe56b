"""One call prepares a run's task set: :func:`prepare_task_set` takes a small request built
once from the run's configuration (:func:`task_set_request`) and hands the plan a frozen
:class:`PreparedTaskSet`: the tasks the run runs (loaded or generated, a testbed's derived,
their subgoals attached, what fits the workflow's view kept, the selection taken, a resumed
run's recorded content kept), the record of what the view left out, and the demonstrations
per family with their solved examples.

The tasks layer does everything below workflows in one trip
(:func:`raleval.tasks.catalog.prepare_tasks`); this module adds what needs the app: the
fit-to-view filter (it runs the oracle through a workflow, :mod:`raleval.app.views`), the
run directory's recorded tasks and the demonstrations' world.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from raleval import registry
from raleval.records import Task
from raleval.tasks.catalog import TaskRequest
from raleval.workflow import SolvedExample


@dataclass(frozen=True, kw_only=True)
class TaskSetRequest(TaskRequest):
    """What preparing a run's task set needs of its configuration, built once from it: the
    tasks layer's request (:class:`raleval.tasks.catalog.TaskRequest`, which this extends and
    is passed down as), the workflow (its name, context window and shots: fit-to-view and the
    number of demonstrations), the environment's options (the demonstrations' world), the
    tasks the run directory has recorded (a resumed run keeps them as recorded), and the
    environment's factory when the plan has looked it up already."""

    workflow: str
    context_tokens: int | None = None
    shots: int = 0
    env_options: dict[str, Any] = field(default_factory=dict)
    recorded: tuple[Task, ...] = ()
    env_factory: Any = None  # the environment's registry entry (looked up when None)
    demonstration_seed: int | None = None  # None: ``seed``


@dataclass(frozen=True)
class PreparedTaskSet:
    """A run's task set, prepared once: the tasks it runs, what fit-to-view left out
    (``RunHeader.task_selection``; empty without a window), why the tasks cannot run on this
    environment (None when they can), the demonstration tasks per family and each one's
    solved example with the tool interface it is written in (an interface testbed's)."""

    tasks: tuple[Task, ...]
    selection: dict[str, Any]
    foreign: str | None
    demonstrations: dict[str, tuple[Task, ...]]
    examples: dict[str, tuple[tuple[SolvedExample, Any], ...]]


def no_phase(what: str) -> contextlib.AbstractContextManager[None]:
    return contextlib.nullcontext()


def prepare_task_set(
    request: TaskSetRequest, env: Any, phase: Callable[[str], Any] = no_phase
) -> PreparedTaskSet:
    """The run's task set (see the module docstring), prepared in one call; ``phase`` names
    the slow step it takes (building the demonstrations' world) where the run shows them."""
    from raleval.app.demonstrations import (
        WORLD_SEED_OFFSET,
        draw_demonstrations,
        solved_example,
        world_for,
    )
    from raleval.tasks.catalog import prepare_tasks
    from raleval.tasks.testbeds import wrap_session

    keep = None
    if request.context_tokens:
        keep = partial(_fit_to_view, request, env)
    prepared = prepare_tasks(request, env, keep)
    recorded = {t.id: t for t in request.recorded}
    tasks = [_as_recorded(t, recorded.get(t.id)) for t in prepared.tasks]
    demos: dict[str, list[Task]] = {}
    world = None
    if request.shots and tasks and prepared.foreign is None:
        if any(t.solution for t in tasks):
            with phase(f"building the demonstrations' {request.env_name} world"):
                factory = request.env_factory
                if factory is None:
                    factory = registry.envs.get(request.env_name)
                world = world_for(factory, request.env_options, env)
        world_seed = int(request.env_options.get("seed", 0)) + WORLD_SEED_OFFSET
        demo_seed = request.seed
        if request.demonstration_seed is not None:
            demo_seed = request.demonstration_seed
        demos = draw_demonstrations(
            request.env_name,
            demo_seed,
            request.spec,
            world_seed,
            env,
            tasks,
            request.shots,
            world,
        )
    # an interface testbed's demonstrations are written in the tools it presents
    examples = {
        family: tuple((solved_example(t, env, world), wrap_session(env, t, env)) for t in group)
        for family, group in demos.items()
    }
    return PreparedTaskSet(
        tuple(tasks),
        prepared.selection,
        prepared.foreign,
        {family: tuple(group) for family, group in demos.items()},
        examples,
    )


def _fit_to_view(
    request: TaskSetRequest, env: Any, pool: list[Task]
) -> tuple[list[Task], dict[str, Any]]:
    """``pool`` without the tasks whose answer the workflow cannot show at the request's
    context window, and what was left out (:func:`raleval.app.views.fit_pool`)."""
    from raleval.app.views import fit_pool

    return fit_pool(
        pool,
        env,
        request.context_tokens,
        request.workflow,
        request.env_name,
        request.seed,
    )


def _as_recorded(loaded: Task, recorded: Task | None) -> Task:
    """The task a resumed run runs: the recorded one, or the loaded one when the record is
    the stored copy of exactly it with its pages' HTML dropped (a restored study cell)."""
    from raleval.app.study import without_page_html

    if recorded is None or without_page_html(loaded) == recorded:
        return loaded
    return recorded
