"""One episode, as every backend runs it: the model and environment stack episodes see, the
workflow's graph compiled once per process, and :func:`run_scored`, which runs an episode
and scores it. A counterfactual replay is an episode like any other: it passes a ``prefix``.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from raleval.app.faults import FaultLog, FaultyEnvironment, FaultyModel, RetryingModel
from raleval.concurrency import AUTO_MAX
from raleval.config import RunConfig
from raleval.failures import failure_cause
from raleval.model import GenerateRequest, Generation, Model, ModelWrapper
from raleval.records import AgentSpec, Step, Task, Termination, Trajectory
from raleval.scheduling import TurnModel, within
from raleval.workflow import Workflow


@dataclass
class RunSummary:
    """What one execution of a run did, as every backend reports it."""

    run_dir: Path
    total: int
    skipped: int
    ran: int
    mean_f1: float | None
    by_termination: dict[str, int] = field(default_factory=dict)
    by_error_type: dict[str, int] = field(default_factory=dict)
    faults: Any = None  # the FaultLog when faults were injected
    interrupted: bool = False  # stopped by Ctrl-C before every episode ran
    # Latest attempts of this run's episodes that failed for infrastructure reasons, by cause.
    failures: dict[str, int] = field(default_factory=dict)
    write_error: str | None = None  # results could not be written (a full disk): run stopped
    unwritten: int = 0  # episodes finished but not written because of write_error
    worker_errors: list[str] = field(default_factory=list)  # why Ray workers ended early


@dataclass
class Tally:
    """Running counts of a run's finished episodes."""

    f1_sum: float = 0.0
    ran: int = 0
    terminations: dict[str, int] = field(default_factory=dict)
    labels: dict[str, int] = field(default_factory=dict)

    def add(self, traj: Trajectory) -> None:
        self.count(*tally_fields(traj))

    def count(self, f1: float, termination: str, label: str | None) -> None:
        self.ran += 1
        self.f1_sum += f1
        self.terminations[termination] = self.terminations.get(termination, 0) + 1
        if label is not None:
            self.labels[label] = self.labels.get(label, 0) + 1

    @property
    def mean_f1(self) -> float | None:
        return self.f1_sum / self.ran if self.ran else None


def tally_fields(traj: Trajectory) -> tuple[float, str, str | None]:
    """What a run's tally counts of an episode: its F1, termination and error label."""
    label = traj.error_type.value if traj.error_type is not None else None
    return traj.scores.get("f1", 0.0), traj.termination.value, label


class EndpointLimitedModel(ModelWrapper):
    """Caps concurrent calls to one endpoint, whatever the global concurrency is."""

    def __init__(self, model: Model, limit: int) -> None:
        super().__init__(model)
        self._sem = asyncio.Semaphore(limit)

    async def generate(self, request: GenerateRequest) -> Generation:
        async with self._sem:
            return await self._model.generate(request)


@contextlib.contextmanager
def long_lived_heap() -> Any:
    """The run's world, tasks and compiled graph live until it ends: move them out of the
    cyclic collector's way (``gc.freeze``) and collect young objects less often, so that
    collections stop re-walking them between episodes (measured: ~0.6 ms less client CPU per
    episode at 64 in flight). The young generation's threshold is 100,000 objects: with 128
    episodes in flight it holds their live state, and at 20,000 a collection came every ~200
    episodes and walked it for ~30 ms (0.13-0.18 ms per episode; at 100,000, none in 3,000
    episodes). The collector's state is restored afterwards."""
    threshold = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(max(threshold[0], 100_000), *threshold[1:])
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()


SAFETY_NET_S = 30.0  # an episode is stopped this long after its workflow's time limit


async def run_episode(
    task: Task,
    model: Any,
    env: Any,
    workflow: Workflow,
    agent: AgentSpec,
    epoch: int = 0,
    graph: Any = None,
    prefix: list[Step] | None = None,
    cache_epoch: Any = None,
) -> Trajectory:
    """Run one episode; never raises: harness failures are recorded as ``harness_error``.

    ``graph`` is the workflow compiled once for the run; without it one is compiled here.
    ``prefix``: steps the episode starts from (a counterfactual replay, docs/diagnosis.md); a
    step without an observation is a call the workflow makes first, with its real observation.
    ``cache_epoch``: what the response cache keys the episode's requests by, when not its
    ``epoch`` (a replay's own sample).
    """
    from raleval.tasks.testbeds import wrap_session
    from raleval.workflows.common import EpisodeRecord

    started_at = datetime.now(timezone.utc)
    rec = EpisodeRecord(fixed_prompt_tokens=workflow.config.fixed_prompt_tokens.get(task.family, 0))
    session: Any = None
    try:
        key = epoch if cache_epoch is None else cache_epoch
        if key:
            model = model.with_epoch(key)
        session = wrap_session(env.session(task), task, env)
        episode_model = model.for_episode(task, session, workflow)
        if graph is None:
            graph = workflow.build(episode_model, session)
        await within(
            graph.ainvoke(
                {"question": task.question, "rec": rec},
                {
                    "recursion_limit": workflow.recursion_limit(),
                    # the task's family picks its demonstrations (examples_text)
                    "configurable": {
                        "model": episode_model,
                        "env": session,
                        "family": task.family,
                        # a replay's given steps (workflows.common.episode_prefix)
                        **({"prefix": prefix} if prefix else {}),
                    },
                },
            ),
            # The workflow enforces the budget itself; this is the safety net.
            timeout=workflow.config.time_limit_s + SAFETY_NET_S,
        )
        if rec.termination is None:
            rec.finish(Termination.harness_error, "workflow_ended_without_termination")
    except asyncio.TimeoutError:
        rec.finish(Termination.timeout, "episode_wall_clock")
    except asyncio.CancelledError:
        rec.finish(Termination.interrupted, "cancelled")
        raise
    except Exception as exc:  # recorded, never swallowed
        rec.finish(Termination.harness_error, f"{type(exc).__name__}: {exc}")
    finally:
        await close_session(session)
    return Trajectory(
        task_id=task.id,
        epoch=epoch,
        agent=agent,
        steps=rec.steps,
        llm_calls=rec.llm_calls,
        answer=rec.answer,
        termination=rec.termination or Termination.harness_error,
        termination_cause=rec.termination_cause,
        started_at=started_at,
        wall_time_s=rec.elapsed(),
        model_time_s=rec.model_time_s,
        tool_time_s=rec.tool_time_s,
        n_llm_calls=len(rec.llm_calls),
        prompt_tokens=rec.prompt_tokens,
        completion_tokens=rec.completion_tokens,
        uncached_prompt_tokens=rec.uncached_prompt_tokens,
        budget_tokens=rec.budget_tokens if workflow.config.max_episode_tokens else None,
        cost_usd=rec.cost_usd,
        compute_s=rec.compute_seconds,
        extra=rec.extra,
    )


async def run_scored(
    task: Task,
    model: Any,
    env: Any,
    workflow: Workflow,
    agent: AgentSpec,
    epoch: int,
    attempt: int,
    graph: Any,
    prefix: list[Step] | None = None,
    cache_epoch: Any = None,
) -> Trajectory:
    """:func:`run_episode`, scored, with its infrastructure failure cause and its attempt
    number: the trajectory every backend writes."""
    from raleval.analysis.demonstrations import flag_copied
    from raleval.analysis.scoring import score_trajectory

    traj = await run_episode(
        task,
        model,
        env,
        workflow,
        agent,
        epoch=epoch,
        graph=graph,
        prefix=prefix,
        cache_epoch=cache_epoch,
    )
    score_trajectory(traj, task)
    flag_copied(traj, task, workflow.config.demonstration_answers)
    traj.failure = failure_cause(traj)
    traj.attempt = attempt
    return traj


def resolve_model(config: RunConfig, run_dir: Path | None = None) -> Model:
    """The run's model (a local one starts its server, logging into ``run_dir``)."""
    from raleval.agents.agent import resolve_model as resolve

    return resolve(config.model, dict(config.model_options), run_dir=run_dir)


def episode_slots(config: RunConfig, model: Any, n_episodes: int) -> int:
    """Episodes run at once: ``--max-connections``, no more than there are, and no more than
    the model serves well at once (llama.cpp's slots); with ``auto`` its ceiling, and the
    adaptive limit admits them (raleval.concurrency)."""
    cap = AUTO_MAX if config.max_connections == "auto" else config.max_connections
    n = min(cap, max(1, n_episodes))
    return min(n, model.capabilities.max_concurrency or n)


async def close_session(session: Any) -> None:
    """Release an episode's session (its MCP connection); a failure to close is no result."""
    aclose = getattr(session, "aclose", None)
    if aclose is None or session is None:
        return
    with contextlib.suppress(Exception):
        await aclose()


def episode_stack(config: RunConfig, model: Any, env: Any) -> tuple[Any, Any, FaultLog, Any]:
    """The model and environment episodes see: the endpoint limit, injected faults with their
    retries, and the response cache wrapped around the configured ones. Returns the model, the
    environment, the fault log and the cache (None when not caching; the caller closes it)."""
    if config.max_connections_per_endpoint:
        model = EndpointLimitedModel(model, config.max_connections_per_endpoint)
    faults = FaultLog()
    if config.tool_fault_rate > 0:
        env = FaultyEnvironment(
            env, config.tool_fault_rate, config.fault_seed, config.tool_retries, faults
        )
    if config.llm_fault_rate > 0:
        model = RetryingModel(
            FaultyModel(model, config.llm_fault_rate, config.fault_seed, faults),
            config.llm_retries,
            log=faults,
        )
    cache = None
    # Scripted models cost nothing and are the cache's own test subjects: never cached.
    if config.cache and model.capabilities.cacheable:
        from raleval.cache import CachedModel, ResponseCache, default_cache_path

        cache = ResponseCache(config.cache_path or default_cache_path())
        model = CachedModel(model, cache)
    # outermost: all of the above (retry waits, the endpoint limit) waits outside the turn
    return TurnModel(model), env, faults, cache


def episode_graph(workflow: Workflow, model: Any, env: Any) -> Any:
    """The workflow compiled once for a run's episodes (they differ in ``configurable``), with
    what scoring reads once per process already loaded, so that the first finished episodes
    do not wait on it inside the event loop."""
    import importlib

    from raleval.analysis.scoring import warm_scoring

    # what run_episode and run_scored import where each episode runs, imported before the
    # episodes: inside the event loop the first ones waited on it (~12 ms)
    for module in ("raleval.analysis.demonstrations", "raleval.tasks.testbeds"):
        importlib.import_module(module)

    graph = workflow.build(model, env)
    warm_scoring()
    return graph
