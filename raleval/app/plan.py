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
from raleval.app.demonstrations import demonstration_tasks, demonstration_world, solved_example
from raleval.app.rundir import check_run_dir, new_header, recorded_tasks
from raleval.app.study import without_page_html
from raleval.config import ConfigError, RunConfig
from raleval.records import RunHeader, Task
from raleval.workflow import Workflow


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
        tasks, selection = run_tasks(config, env, workflow.config.max_context_tokens)
    if not tasks:
        raise ConfigError(f"task set {config.tasks!r} produced no tasks")
    if not config.allow_foreign_tasks:
        # before any episode: a task scored on an environment it was not made for means nothing
        reason = foreign_tasks(tasks, env, config.env)
        if reason:
            raise ConfigError(f"refused: {reason}")
    world = None
    if workflow.config.shots and any(t.solution for t in tasks):
        with phase(f"building the demonstrations' {config.env} world"):
            world = demonstration_world(config, env)
    demos = demonstration_tasks(config, env, tasks, workflow.config.shots, world)
    from raleval.tasks.testbeds import wrap_session

    # an interface testbed's demonstrations are written in the tools it presents
    rendered = {
        family: [
            workflow.render_example(solved_example(t, env, world), wrap_session(env, t, env))
            for t in group
        ]
        for family, group in demos.items()
    }
    ids = {family: [t.id for t in group] for family, group in demos.items()}
    answers = {family: [t.answers[0] for t in group] for family, group in demos.items()}
    workflow = workflow.with_config(
        demonstrations=rendered, demonstration_ids=ids, demonstration_answers=answers
    )
    prompts = run_prompts(env, workflow)
    decoding = {
        "temperature": workflow.config.temperature,
        "max_tokens": workflow.config.max_tokens,
    }
    header = new_header(config, tasks, decoding, prompts)
    if selection:
        header.task_selection = selection
    if selection and selection["kept"] < selection["pool"]:
        phase_note(
            phase,
            f"kept {selection['kept']} of {selection['pool']} tasks: the others' answers do not "
            f"fit the {config.workflow} view at {selection['context_tokens']} tokens",
        )
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


def phase_note(phase: Callable[[str], Any], text: str) -> None:
    """Say ``text`` where the run says what it is doing (:class:`Phases.note`), if anywhere."""
    note = getattr(phase, "note", None)
    if note is not None:
        note(text)


def fit_to_view(
    config: RunConfig, env: Any, pool: list[Task], context_tokens: int | None
) -> tuple[list[Task], dict[str, Any]]:
    """``pool`` without the tasks whose answer the workflow cannot show at ``context_tokens``
    (``-W max_context_tokens``), and what was left out: an agent is never scored on what the
    harness hid from it. A task is left out when the executing oracle, run through this
    workflow at this window, declines because the values its answer reads were cut from the
    rendered observations (:mod:`raleval.app.views`); tasks without a gold solution stay."""
    if not context_tokens:
        return pool, {}
    from raleval.agents.scripted import NOT_VISIBLE
    from raleval.app.views import oracle_answers_in_view

    checkable = [t for t in pool if t.solution]
    if not checkable:
        return pool, {}
    answers = oracle_answers_in_view(
        checkable, env, context_tokens, config.workflow, config.env, config.seed
    )
    hidden = {tid for tid, (_, answer) in answers.items() if answer == NOT_VISIBLE}
    kept = [t for t in pool if t.id not in hidden]
    return kept, {
        "context_tokens": context_tokens,
        "pool": len(pool),
        "kept": len(kept),
        "left_out": sorted(hidden),
    }


def run_tasks(
    config: RunConfig, env: Any, context_tokens: int | None = None
) -> tuple[list[Task], dict[str, Any]]:
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
    if not config.sample_ids:  # tasks named one by one are run as named
        pool, selection = fit_to_view(config, env, pool, context_tokens)
    else:
        selection = {}
    chosen = select(pool, config.limit, config.sample_ids, config.sample_seed)
    recorded = {t.id: t for t in recorded_tasks(config.run_dir)}
    return [_as_recorded(t, recorded.get(t.id)) for t in chosen], selection


def _as_recorded(loaded: Task, recorded: Task | None) -> Task:
    """The task a resumed run runs: the recorded one, or the loaded one when the record is
    the stored copy of exactly it with its pages' HTML dropped (a restored study cell)."""
    if recorded is None or without_page_html(loaded) == recorded:
        return loaded
    return recorded


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
        "answers": workflow.config.demonstration_answers,
    }
