"""A run resolved once into an immutable plan, validated before anything runs.

:func:`resolve_config` fills what a configuration leaves to its plugins and files (the
environment's default task set, the world a task file was made for); :func:`make_plan` then
checks the run directory, builds the environment, loads the tasks and the demonstrations,
renders the prompts and the header. Every refusal (an unknown option, tasks made for another
world, a run directory holding another run) happens here, before a model is loaded or a
line is written. The backends (:mod:`raleval.app.local_backend`,
:mod:`raleval.app.process_backend`, :mod:`raleval.app.ray_backend`) only execute plans.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from raleval import registry
from raleval.app.rundir import check_run_dir, new_header, recorded_tasks
from raleval.config import ConfigError, RunConfig
from raleval.records import RunHeader, Task
from raleval.workflow import SolvedExample, Workflow


@dataclass(frozen=True)
class RunPlan:
    """Everything one run needs, resolved and checked: the configuration (defaults filled),
    the environment built for it (the local backend's episodes use it; workers build their
    own from ``config``), the tasks, the workflow configured with its demonstrations, the
    prompts and the header a new run directory gets."""

    config: RunConfig
    env: Any
    tasks: tuple[Task, ...]
    workflow: Workflow
    prompts: dict[str, Any]
    header: RunHeader

    @property
    def run_dir(self) -> Path:
        return self.config.run_dir


def _no_phase(what: str) -> contextlib.AbstractContextManager[None]:
    return contextlib.nullcontext()


def resolve_config(config: RunConfig) -> RunConfig:
    """``config`` with what it leaves open filled in: the environment's default task set and,
    when no ``-E`` option is given, the world the task file's tasks were made for (so a set
    built for the small CRAG world runs there without repeating ``-E size=small``)."""
    from raleval.tasks.catalog import is_task_file, world_options_of

    config = config.with_defaults()
    if config.env_options or not is_task_file(config.tasks or ""):
        return config
    try:
        options = world_options_of(Path(config.tasks or ""), config.env)
    except OSError:
        return config  # unreadable: loading the tasks says so
    return config.model_copy(update={"env_options": options}) if options else config


def check_model_spec(spec: str) -> None:
    """Refuse a model spec whose provider is unknown, without starting anything."""
    from raleval.agents.agent import ModelSpec

    try:
        provider = ModelSpec.parse(spec).provider
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    registry.models.get(provider)  # UnknownNameError names the known ones


def check_cost_budget(config: RunConfig, max_cost_usd: float | None) -> None:
    """Refuse a cost budget (``-W max_cost_usd``) for a model whose price is unknown: it could
    never be kept (the price comes from the spec and ``-M``; no model is loaded)."""
    from raleval.agents.agent import ModelSpec
    from raleval.agents.pricing import model_price, split_price_options

    if max_cost_usd is None:
        return
    spec = ModelSpec.parse(config.model)
    price_options, _ = split_price_options(dict(config.model_options))
    if model_price(spec.provider, spec.name, price_options) is None:
        raise ConfigError(
            f"-W max_cost_usd needs the model's price: {config.model} is not in the built-in "
            "table; give it with -M price_in=<USD per 1M tokens> -M price_out=<USD per 1M>"
        )


def make_plan(config: RunConfig, phase: Callable[[str], Any] = _no_phase) -> RunPlan:
    """Resolve and validate ``config`` into a :class:`RunPlan`. The caller holds the run
    directory's lock (a ``--force`` sets the old run aside here); nothing is written into it."""
    config = resolve_config(config)
    check_env_options(config.env, config.env_options)
    check_model_spec(config.model)
    workflow = registry.workflows.get(config.workflow).configure(config.workflow_options)
    check_cost_budget(config, workflow.config.max_cost_usd)
    try:  # e.g. PAL refuses to run where it cannot sandbox code
        workflow.preflight()
    except RuntimeError as exc:
        raise ConfigError(str(exc)) from exc
    check_run_dir(config)  # before reading anything a run directory holds
    from raleval.tasks.catalog import foreign_tasks

    with phase(f"building the {config.env} environment"):
        env = build_env(config.env, config.env_options)
    with phase(f"loading tasks ({config.tasks})"):
        tasks = run_tasks(config, env)
    if not tasks:
        raise ConfigError(f"task set {config.tasks!r} produced no tasks")
    if not config.allow_foreign_tasks:
        # before any episode: a task scored on an environment it was not made for means nothing
        reason = foreign_tasks(tasks, env, config.env)
        if reason:
            raise ConfigError(f"refused: {reason}")
    demos = demonstration_tasks(config, env, tasks, workflow.config.shots)
    rendered = {
        family: [workflow.render_example(solved_example(t, env), env) for t in group]
        for family, group in demos.items()
    }
    ids = {family: [t.id for t in group] for family, group in demos.items()}
    workflow = workflow.with_config(demonstrations=rendered, demonstration_ids=ids)
    prompts = run_prompts(env, workflow)
    decoding = {
        "temperature": workflow.config.temperature,
        "max_tokens": workflow.config.max_tokens,
    }
    header = new_header(config, tasks, decoding, prompts)
    return RunPlan(config, env, tuple(tasks), workflow, prompts, header)


def check_env_options(name: str, options: dict[str, Any]) -> None:
    """Refuse an ``-E`` key the environment's factory does not take, naming the valid ones."""
    import inspect

    params = registry.envs.get(name).parameters()
    if params is None:
        return
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return  # the factory takes any option: it checks them itself
    valid = [k for k, p in params.items() if p.kind is not inspect.Parameter.VAR_POSITIONAL]
    unknown = [k for k in options if k not in valid]
    if unknown:
        raise ConfigError(
            f"env {name!r} has no option {unknown[0]!r} (-E); valid: {', '.join(valid)}"
        )


def build_env(name: str, options: dict[str, Any]) -> Any:
    """The environment, with an unknown ``-E`` key named beside the valid ones."""
    check_env_options(name, options)
    return registry.envs.get(name)(**options)


def run_tasks(config: RunConfig, env: Any) -> list[Task]:
    """The tasks this run runs, which is what its tasks.jsonl holds.

    The task set is loaded (generation is seeded), the selection taken (``--sample-id`` or the
    stratified ``--limit``), and the tasks already recorded in the run directory are kept with
    their recorded content, so a resumed run uses exactly the tasks it started with and a
    raised ``--limit`` adds to them.
    """
    from raleval.tasks.catalog import load_tasks
    from raleval.tasks.sampling import check_unique, select

    pool = load_tasks(config.tasks, env, config.env, config.tasks_per_family, config.seed)
    check_unique(pool, f"task set {config.tasks}")
    chosen = select(pool, config.limit, config.sample_ids)
    recorded = {t.id: t for t in recorded_tasks(config.run_dir)}
    return [recorded.get(t.id, t) for t in chosen]


POOL_SEED_OFFSET = 7919  # the demonstration pool is generated with a different seed
GRACE_S = 5.0  # after Ctrl-C, episodes in flight get this long to finish before cancellation


def demonstration_tasks(
    config: RunConfig, env: Any, tasks: list[Task], shots: int
) -> dict[str, list[Task]]:
    """``shots`` demonstration tasks for each family of ``tasks``: the family's own, from a
    pool generated with another seed and disjoint from the tasks under test.

    They depend on the environment, the families and the seed only, never on the workflow:
    every workflow is shown the same tasks, each in its own format. A family the registry
    does not know, or a loaded dataset's, gets none. A testbed's demonstrations show the ordinary
    world (its families' base tasks).
    """
    from raleval.tasks.catalog import stamp

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
            out[name] = fresh[:shots]
    return out


DEMO_OBSERVATION_CHARS = 1200  # a demonstration's observation is cut here, with the marker


def solved_example(task: Task, env: Any) -> SolvedExample:
    """A demonstration task with its gold calls run against ``env``: real observations, each
    cut to :data:`DEMO_OBSERVATION_CHARS` with a visible marker (a year of prices in every
    prompt would crowd out the episode's own)."""
    from raleval.workflows.common import TRUNCATION_MARKER

    session = env.session(task)  # one session: a wiki Lookup reads the page Search opened
    calls = []
    for c in task.solution or []:
        text = session.call_sync(c.tool, c.arguments).observation
        if len(text) > DEMO_OBSERVATION_CHARS:
            dropped = len(text) - DEMO_OBSERVATION_CHARS
            text = f"{text[:DEMO_OBSERVATION_CHARS]} {TRUNCATION_MARKER.format(dropped=dropped)}"
        calls.append((c, text))
    return SolvedExample(task.question, calls, task.answers[0], task.metadata.get("answer_expr"))


def run_prompts(env: Any, workflow: Workflow) -> dict[str, Any]:
    """The exact prompts of a run, stored once in its header: the workflow's template for this
    environment, and each family's demonstration tasks (ids) as this workflow renders them."""
    from raleval.workflows.common import load_prompt

    try:
        template = load_prompt(workflow.name, env, workflow.config.prompt_file).template
    except FileNotFoundError:
        template = None
    return {
        "template": template,
        "shots": workflow.config.shots,
        "demonstrations": workflow.config.demonstration_ids,
        "rendered": workflow.config.demonstrations,
    }
