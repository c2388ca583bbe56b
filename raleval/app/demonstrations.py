"""Demonstrations: the solved tasks a run shows its workflow, chosen and executed once per
run (never per workflow: every workflow is shown the same tasks, each in its own format)."""

from __future__ import annotations

from typing import Any

from raleval import registry
from raleval.config import RunConfig
from raleval.records import Task
from raleval.workflow import SolvedExample

POOL_SEED_OFFSET = 7919  # the demonstration pool is generated with a different seed
# ...in a world of another seed: a demonstration's observation never shows a fact of the test
# world (a wiki 1-1 example showed "150 papers", the gold of a test task of the same world)
WORLD_SEED_OFFSET = 7919
WORLD_SEED = "demonstration_world_seed"  # a demonstration task's metadata: solve it there
GRACE_S = 5.0  # after Ctrl-C, episodes in flight get this long to finish before cancellation


def demonstration_world(config: RunConfig, env: Any) -> Any:
    """The environment generated demonstrations are drawn and solved in: the run's environment
    with the same options on a world of another seed, or the run's own where the environment
    takes no seed or reads a given world (``path``, ``world``)."""
    return world_for(registry.envs.get(config.env), config.env_options, env)


def world_for(factory: Any, env_options: dict[str, Any], env: Any) -> Any:
    """:func:`demonstration_world` of the environment built by ``factory`` (its registry
    entry) with ``env_options``."""
    params = factory.parameters() or {}
    if "seed" not in params or {"path", "world"} & set(env_options):
        return env
    seed = int(env_options.get("seed", 0)) + WORLD_SEED_OFFSET
    # the options were checked when the run's own environment was built
    return factory(**{**env_options, "seed": seed})


def _answer_key(task: Task) -> set[str]:
    """A task's gold answers as compared with another's (yes/no left out: two answers)."""
    from raleval.text import normalize_answer

    golds = {normalize_answer(a) for a in task.answers}
    return golds - {"", "yes", "no"}


def demonstration_tasks(
    config: RunConfig, env: Any, tasks: list[Task], shots: int, world: Any = None
) -> dict[str, list[Task]]:
    """:func:`draw_demonstrations` for the run ``config``."""
    seed = config.seed if config.demonstration_seed is None else config.demonstration_seed
    return draw_demonstrations(
        config.env, seed, config.tasks or "", source_seed(config), env, tasks, shots, world
    )


def draw_demonstrations(
    env_name: str,
    seed: int,
    spec: str,
    world_seed: int,
    env: Any,
    tasks: list[Task],
    shots: int,
    world: Any = None,
) -> dict[str, list[Task]]:
    """``shots`` demonstration tasks for each family of ``tasks``: the family's own, from a
    pool generated with another seed (in ``world``, :func:`demonstration_world`, when given)
    and disjoint from the tasks under test: no question of theirs, and no answer equal to one
    of their golds (yes/no aside).

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
    golds = set().union(*(_answer_key(t) for t in tasks)) if tasks else set()
    source = env if world is None else world
    tag = {} if source is env else {WORLD_SEED: world_seed}
    out: dict[str, list[Task]] = {}
    # families of generated tasks (with a solution): a loaded dataset borrows a family id
    # (HotpotQA's "3-1") whose generator needs a world the run's corpus is not
    for name in dict.fromkeys(t.family for t in tasks if t.solution):
        if name not in registry.task_families:
            continue
        family = registry.task_families.get(name)
        if family.env != env_name:
            continue
        pool = stamp(family, family.generate(source, max(3 * shots, 4), seed + POOL_SEED_OFFSET))
        fresh = [
            t.model_copy(update={"metadata": {**t.metadata, **tag}})
            for t in pool
            if t.solution and t.question not in taken and not _answer_key(t) & golds
        ]
        if fresh:
            out[name] = translate_demonstrations(fresh[:shots], tasks, env)
    # a loaded task file's own example pool (``tasks load --examples k``) for the rest
    from raleval.tasks.demonstrations import pool_demonstrations

    return {**pool_demonstrations(spec, env, tasks, shots), **out}


def source_seed(config: RunConfig) -> int:
    """The world seed of :func:`demonstration_world`."""
    return int(config.env_options.get("seed", 0)) + WORLD_SEED_OFFSET


DEMO_OBSERVATION_CHARS = 1200  # a demonstration's observation is cut here, with the marker


def solved_example(task: Task, env: Any, world: Any = None) -> SolvedExample:
    """A demonstration task with its gold calls run against ``env`` (against ``world`` when
    it was drawn there): real observations, each cut to :data:`DEMO_OBSERVATION_CHARS` with a
    visible marker (a year of prices in every prompt would crowd out the episode's own)."""
    from raleval.tasks.testbeds import wrap_session
    from raleval.workflows.common import TRUNCATION_MARKER

    if world is not None and task.metadata.get(WORLD_SEED) is not None:
        env = world
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
