"""Demonstrations: the solved tasks a run shows its workflow, chosen and executed once per
run (never per workflow: every workflow is shown the same tasks, each in its own format)."""

from __future__ import annotations

from typing import Any

from raleval import registry
from raleval.config import RunConfig
from raleval.records import Task
from raleval.workflow import SolvedExample

POOL_SEED_OFFSET = 7919  # the demonstration pool is generated with a different seed
GRACE_S = 5.0  # after Ctrl-C, episodes in flight get this long to finish before cancellation


def demonstration_tasks(
    config: RunConfig, env: Any, tasks: list[Task], shots: int
) -> dict[str, list[Task]]:
    """``shots`` demonstration tasks for each family of ``tasks``: the family's own, from a
    pool generated with another seed and disjoint from the tasks under test.

    They depend on the environment, the families and the seed only, never on the workflow:
    every workflow is shown the same tasks, each in its own format. A loaded dataset's
    families get the solved items of its file's example pool (``raleval.tasks.demonstrations``)
    or none. A testbed's demonstrations show the ordinary world (its families' base tasks).
    """
    from raleval.tasks.catalog import stamp
    from raleval.tasks.testbeds.interface import translate_demonstrations

    if shots == 0:
        return {}
    taken = {t.question for t in tasks}
    out: dict[str, list[Task]] = {}
    # families of generated tasks (with a solution): a loaded dataset borrows a family id
    # (HotpotQA's "3-1") whose generator needs a world the run's corpus is not
    for name in dict.fromkeys(t.family for t in tasks if t.solution):
        if name not in registry.task_families:
            continue
        family = registry.task_families.get(name)
        if family.env != config.env:
            continue
        pool = stamp(
            family, family.generate(env, max(3 * shots, 4), config.seed + POOL_SEED_OFFSET)
        )
        fresh = [t for t in pool if t.solution and t.question not in taken]
        if fresh:
            out[name] = translate_demonstrations(fresh[:shots], tasks, env)
    # a loaded task file's own example pool (``tasks load --examples k``) for the rest
    from raleval.tasks.demonstrations import pool_demonstrations

    return {**pool_demonstrations(config.tasks, env, tasks, shots), **out}


DEMO_OBSERVATION_CHARS = 1200  # a demonstration's observation is cut here, with the marker


def solved_example(task: Task, env: Any) -> SolvedExample:
    """A demonstration task with its gold calls run against ``env``: real observations, each
    cut to :data:`DEMO_OBSERVATION_CHARS` with a visible marker (a year of prices in every
    prompt would crowd out the episode's own)."""
    from raleval.tasks.testbeds import wrap_session
    from raleval.workflows.common import TRUNCATION_MARKER

    # one session: a wiki Lookup reads the page Search opened; an interface testbed's names
    session = wrap_session(env.session(task), task, env)
    calls = []
    for c in task.solution or []:
        text = session.call_sync(c.tool, c.arguments).observation
        if len(text) > DEMO_OBSERVATION_CHARS:
            dropped = len(text) - DEMO_OBSERVATION_CHARS
            text = f"{text[:DEMO_OBSERVATION_CHARS]} {TRUNCATION_MARKER.format(dropped=dropped)}"
        calls.append((c, text))
    return SolvedExample(task.question, calls, task.answers[0], task.metadata.get("answer_expr"))
