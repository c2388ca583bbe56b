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

import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from raleval import registry
from raleval.app.rundir import check_run_dir, new_header, recorded_tasks
from raleval.app.taskset import TaskSetRequest, no_phase, prepare_task_set
from raleval.config import ConfigError, RunConfig
from raleval.model import Capabilities
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


def make_plan(
    config: RunConfig, phase: Callable[[str], Any] = no_phase, resolved: bool = False
) -> RunPlan:
    """Resolve and validate ``config`` into a :class:`RunPlan`. The caller holds the run
    directory's lock (a ``--force`` sets the old run aside here); nothing is written into it.
    ``resolved``: ``config`` already went through :func:`resolve_config` (the runner's does,
    to name the run directory it locks)."""
    if not resolved:
        config = resolve_config(config)
    checked = check_config(config)
    workflow = checked.workflow
    check_run_dir(config)  # before reading anything a run directory holds
    fingerprint = config.fingerprint()  # once: the header's
    recorded = recorded_tasks(config.run_dir)  # a resumed run keeps them as recorded
    with phase(f"building the {config.env} environment"):
        env = checked.env_factory(**config.env_options)  # the options were checked
    request = task_set_request(
        config, workflow.config.max_context_tokens, workflow.config.shots, recorded
    )
    request = replace(request, env_factory=checked.env_factory)
    with phase(f"loading tasks ({config.tasks})"):
        prepared = prepare_task_set(request, env, phase)
    if not prepared.tasks:
        raise ConfigError(f"task set {config.tasks!r} produced no tasks")
    if prepared.foreign:
        # before any episode: a task scored on an environment it was not made for means nothing
        raise ConfigError(f"refused: {prepared.foreign}")
    tasks = list(prepared.tasks)
    workflow = workflow.with_config(
        demonstrations={
            family: [workflow.render_example(example, tools) for example, tools in group]
            for family, group in prepared.examples.items()
        },
        demonstration_ids={f: [t.id for t in g] for f, g in prepared.demonstrations.items()},
        demonstration_answers={
            f: [t.answers[0] for t in g] for f, g in prepared.demonstrations.items()
        },
    )
    if workflow.config.max_episode_tokens is not None:
        from raleval.app.budgets import budget_counts, check_episode_budget

        with phase("checking the token budget against the first prompt"):
            workflow = check_episode_budget(config, workflow, env, tasks)
    prompts = run_prompts(env, workflow)
    decoding: dict[str, Any] = {
        "temperature": workflow.config.temperature,
        "max_tokens": workflow.config.max_tokens,
        "actions": workflow_decoding(config, workflow),
    }
    if workflow.config.max_episode_tokens is not None:
        decoding["budget_counts"] = budget_counts(workflow)
        if workflow.config.fixed_prompt_tokens:  # what a first request's count leaves out
            decoding["fixed_prompt_tokens"] = dict(workflow.config.fixed_prompt_tokens)
    phase_note(phase, f"decoding ({config.workflow} with {config.model}): {decoding['actions']}")
    header = new_header(config, tasks, decoding, prompts, fingerprint)
    selection = prepared.selection
    if selection:
        header.task_selection = selection
    if selection and selection["kept"] < selection["pool"]:
        phase_note(
            phase,
            f"kept {selection['kept']} of {selection['pool']} tasks: the others' answers do not "
            f"fit the {config.workflow} view at {selection['context_tokens']} tokens",
        )
    return RunPlan(config, env, tuple(tasks), workflow, prompts, header)


def workflow_decoding(config: RunConfig, workflow: Workflow) -> str:
    """How ``workflow``'s model calls will be decoded with the configured model, from what the
    model declares (raleval.agents.agent.declared_capabilities), said before any episode."""
    from raleval.agents.agent import declared_capabilities

    caps = declared_capabilities(config.model, dict(config.model_options))
    if caps is None:
        return f"{config.model} declares no decoding ahead; its workflow asks for: " + (
            workflow.decoding(Capabilities())
        )
    return workflow.decoding(caps)


@dataclass(frozen=True)
class CheckedConfig:
    """What :func:`check_config` looked up once: the environment's factory and the workflow
    configured with ``-W``."""

    env_factory: Any
    workflow: Workflow


def check_config(config: RunConfig) -> CheckedConfig:
    """Refuse what a configuration names wrongly, before anything is built: an ``-E`` key the
    environment does not take, an unknown model provider, a cost budget for a model of unknown
    price, a workflow that cannot run here (PAL without a sandbox). The plugins are looked up
    once, then checked; the environment's factory and the configured workflow are returned."""
    from raleval.agents.agent import ModelSpec

    factory = registry.envs.get(config.env)
    try:
        spec = ModelSpec.parse(config.model)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    workflow = registry.workflows.get(config.workflow).configure(config.workflow_options)
    _check_options(config.env, factory.parameters(), config.env_options)
    registry.models.get(spec.provider)  # UnknownNameError names the known ones
    check_decoding_options(config)
    check_cost_budget(config, workflow.config.max_cost_usd)
    try:  # e.g. PAL refuses to run where it cannot sandbox code
        workflow.preflight()
    except RuntimeError as exc:
        raise ConfigError(str(exc)) from exc
    return CheckedConfig(factory, workflow)


def check_decoding_options(config: RunConfig) -> None:
    """Refuse a ``-M`` option that is a workflow's (``temperature``, ``max_steps``;
    :func:`raleval.workflow.workflow_flags`), with the rest of the configuration, before a model
    server starts: a matrix's later cell would otherwise stop the run only when its turn
    came."""
    from raleval.workflow import workflow_flags

    misplaced, flags = workflow_flags(dict(config.model_options))
    if misplaced:
        raise ConfigError(
            f"{', '.join(map(repr, misplaced))} is a workflow option, not a model's (-M): "
            f"set it with {flags} (workflow_options in a config file)"
        )


def task_set_request(
    config: RunConfig, context_tokens: int | None, shots: int, recorded: Iterable[Task] = ()
) -> TaskSetRequest:
    """What preparing the task set needs of ``config`` and its configured workflow (its
    context window and shots), with the tasks its run directory has ``recorded``, taken once:
    the layers below get this value, never the configuration."""
    return TaskSetRequest(
        spec=config.tasks or "",
        env_name=config.env,
        per_family=config.tasks_per_family,
        seed=config.seed,
        limit=config.limit,
        sample_ids=tuple(config.sample_ids or ()),
        sample_seed=config.sample_seed,
        demonstration_seed=config.demonstration_seed,
        allow_foreign=config.allow_foreign_tasks,
        workflow=config.workflow,
        context_tokens=context_tokens,
        shots=shots,
        env_options=dict(config.env_options),
        recorded=tuple(recorded),
    )


def check_env_options(name: str, options: dict[str, Any]) -> None:
    """Refuse an ``-E`` key the environment's factory does not take, naming the valid ones."""
    _check_options(name, registry.envs.get(name).parameters(), options)


def _check_options(
    name: str, params: dict[str, inspect.Parameter] | None, options: dict[str, Any]
) -> None:
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


def run_tasks(
    config: RunConfig, env: Any, context_tokens: int | None = None
) -> tuple[list[Task], dict[str, Any]]:
    """The tasks this run runs, which is what its tasks.jsonl holds, and what fit-to-view
    left out (:func:`raleval.app.taskset.prepare_task_set` without demonstrations).

    The task set is loaded (generation is seeded), the selection taken (``--sample-id`` or the
    stratified ``--limit``), and the tasks already recorded in the run directory are kept with
    their recorded content, so a resumed run uses exactly the tasks it started with and a
    raised ``--limit`` adds to them.
    """
    recorded = recorded_tasks(config.run_dir)
    request = replace(task_set_request(config, context_tokens, 0, recorded), allow_foreign=True)
    prepared = prepare_task_set(request, env)
    return list(prepared.tasks), prepared.selection


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
