"""``raleval diagnose``: replay a run's failed episodes under interventions and record why each
failed (docs/diagnosis.md).

A replay is a run: each counterfactual episode goes through the runner's own episode function
(:func:`raleval.app.episodes.run_scored`) with a prefix of steps, on the run's environment,
workflow, prompts, demonstrations and decoding (from its ``header.json``), with the model
behind the same response cache, and is scored by the same scorer. The prefixes come from
:mod:`raleval.analysis.diagnosis`. Results are appended to ``diagnosis.jsonl`` beside
``results.jsonl``, one line per episode; a second ``diagnose`` resumes where it stopped.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from raleval import registry
from raleval.analysis.diagnosis import (
    DIAGNOSIS,
    INTERVENTIONS,
    Diagnosis,
    Outcome,
    Replay,
    cause_of,
    clean_interface_prefix,
    diagnosis_json,
    evidence_prefix,
    gold_retrieval_prefix,
    read_diagnoses,
)
from raleval.app.episodes import episode_graph, episode_slots, episode_stack, run_scored
from raleval.app.plan import build_env
from raleval.config import ConfigError, RunConfig
from raleval.failures import failure_cause, latest_attempts
from raleval.model import Capabilities, ModelBase
from raleval.records import AgentSpec, Step, StopReason, Task, Trajectory
from raleval.redaction import REDACTED
from raleval.store import RESULTS, TASKS, ResultsFile, read_header, read_tasks

MAX_ROUNDS = 5  # clean interface: misuse steps replaced, one per replay, at most


@dataclass
class DiagnoseSummary:
    run_dir: Path
    diagnosed: int = 0  # episodes diagnosed by this call
    skipped: int = 0  # already in diagnosis.jsonl
    llm_calls: int = 0  # model calls the replays of this call made
    cache_hits: int = 0  # ... answered by the response cache
    causes: dict[str, int] = field(default_factory=dict)


@dataclass
class _Replayer:
    """What every replay of a run shares: the run's model stack, environment, workflow and
    compiled graph."""

    model: Any
    env: Any
    workflow: Any
    graph: Any
    agent: AgentSpec

    async def replay(self, task: Task, epoch: int, prefix: list[Step]) -> Trajectory:
        return await run_scored(
            task, self.model, self.env, self.workflow, self.agent, epoch, 0, self.graph, prefix
        )


def run_config(run_dir: Path, model: str | None) -> RunConfig:
    """The run's configuration from its header, with the model replaced by ``model`` and no
    fault injection (a replay asks what the agent does, not what the faults do)."""
    header = read_header(run_dir)
    if header is None:
        raise ConfigError(f"{run_dir} has no header.json: is it a run directory?")
    config = RunConfig.model_validate(header.config)
    # credentials are never written (raleval.redaction): a replay cannot use them
    parts = ("env_options", "workflow_options", *(() if model else ("model_options",)))
    hidden = [f"{p}.{k}" for p in parts for k, v in getattr(config, p).items()
              if REDACTED in str(v)]  # fmt: skip
    if hidden:
        raise ConfigError(
            f"{run_dir}'s header hides {', '.join(hidden)} (a credential is never written); "
            "replay with --model SPEC, whose key comes from its environment variable"
        )
    changes: dict[str, Any] = {"tool_fault_rate": 0.0, "llm_fault_rate": 0.0}
    if model:
        changes.update(model=model, model_options={})
    return config.model_copy(update=changes)


def configured_workflow(run_dir: Path, config: RunConfig, time_limit_s: float | None = None) -> Any:
    """The run's workflow with its options and the demonstrations its header records (and
    another wall-clock budget, when given: it is not part of a request, so not of the cache)."""
    header = read_header(run_dir)
    options = dict(config.workflow_options)
    if time_limit_s is not None:
        options["time_limit_s"] = time_limit_s
    workflow = registry.workflows.get(config.workflow).configure(options)
    if not workflow.accepts_prefix:
        raise ConfigError(
            f"diagnose does not support workflow {config.workflow!r} yet: it replays "
            "episodes from a prefix of steps, which react and function_calling accept"
        )
    prompts = header.prompts if header is not None else {}
    return workflow.with_config(
        demonstrations=prompts.get("rendered") or {},
        demonstration_ids=prompts.get("demonstrations") or {},
    )


async def _close(thing: Any) -> None:
    """Close a session or environment that has ``aclose`` (an MCP connection)."""
    aclose = getattr(thing, "aclose", None)
    if aclose is not None:
        await aclose()


async def episode_tools(env: Any, task: Task) -> list[Any]:
    """The tools an episode of ``task`` is offered (an environment may offer a question only
    some of its tools), as the runner opens its session."""
    from raleval.tasks.testbeds import wrap_session

    session = wrap_session(env.session(task), task, env)
    try:
        return list(session.tools)
    finally:
        await _close(session)


class _NoModel(ModelBase):
    """Stands in for the model when no episode needs a replay."""

    name = "none/none"
    capabilities = Capabilities(cacheable=False)

    async def generate(self, request: Any) -> Any:
        raise RuntimeError("no replay was expected to call the model")


def _stopped(traj: Trajectory) -> bool:
    return traj.stop_reason is StopReason.time_budget


def _calls_of(replays: list[Replay]) -> tuple[int, int]:
    calls = [c for r in replays for c in r.trajectory.llm_calls]
    return len(calls), sum(1 for c in calls if c.cache_hit)


async def diagnose_episode(
    traj: Trajectory,
    task: Task,
    replayer: _Replayer,
    system: str,
    model: str,
    replay_stopped: bool = False,
) -> Diagnosis:
    """Replay one episode under the interventions, in order, until one fixes it. One the
    wall clock stopped is replayed only with ``replay_stopped`` (a longer clock)."""
    correct = bool(traj.scores.get("correct"))
    # stopped by the wall clock: a replay under the same clock would measure the machine's
    # load, not the agent
    stopped = not correct and _stopped(traj) and not replay_stopped
    outcomes: dict[str, Outcome] = {}
    replays: list[Replay] = []
    tools = await episode_tools(replayer.env, task) if not (correct or stopped) else []
    for name in INTERVENTIONS if not (correct or stopped) else ():
        if any(o.fixed or o.undecided for o in outcomes.values()):
            break
        rounds, current = 0, traj
        while True:
            if name == "clean_interface":
                prefix, why = clean_interface_prefix(current, task, tools)
            elif name == "gold_retrieval":
                prefix, why = gold_retrieval_prefix(traj, task)
            else:
                prefix, why = evidence_prefix(task)
            if prefix is None:
                break
            rounds += 1
            current = await replayer.replay(task, traj.epoch, prefix)
            ok = bool(current.scores.get("correct"))
            replays.append(
                Replay(
                    intervention=name,
                    round=rounds,
                    prefix_steps=len(prefix),
                    correct=ok,
                    trajectory=current,
                )
            )
            if ok or name != "clean_interface" or rounds >= MAX_ROUNDS or _stopped(current):
                break
        done = [r for r in replays if r.intervention == name]
        fixed = bool(done) and done[-1].correct
        undecided = bool(done) and not fixed and _stopped(done[-1].trajectory)
        outcomes[name] = Outcome(
            applied=bool(done),
            fixed=fixed,
            why=None if done else why,
            rounds=rounds,
            undecided=undecided,
        )
    n_calls, hits = _calls_of(replays)
    return Diagnosis(
        task_id=traj.task_id,
        epoch=traj.epoch,
        system=system,
        model=model,
        family=task.family,
        level=task.level.value,
        label=traj.error_type.value if traj.error_type is not None else None,
        correct=correct,
        cause=cause_of(correct, outcomes, stopped),
        outcomes=outcomes,
        replays=replays,
        llm_calls=n_calls,
        cache_hits=hits,
        created_at=datetime.now(timezone.utc),
    )


def set_aside(run_dir: Path) -> Path | None:
    """Move an existing ``diagnosis.jsonl`` aside (``--fresh``); nothing is overwritten."""
    path = run_dir / DIAGNOSIS
    if not path.exists():
        return None
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%f")
    aside = run_dir / f"diagnosis.superseded-{stamp}.jsonl"
    path.rename(aside)
    return aside


async def diagnose(
    run_dir: Path,
    model: str | None = None,
    limit: int | None = None,
    progress: Any = None,
    time_limit_s: float | None = None,
) -> DiagnoseSummary:
    """Diagnose the episodes of ``run_dir`` not yet in its ``diagnosis.jsonl`` (the first
    ``limit`` of them in results order); ``progress(diagnosis)`` is called after each.
    ``time_limit_s`` gives replays another wall-clock budget than the run's, and replays the
    episodes the run's clock stopped too."""
    run_dir = Path(run_dir)
    if not (run_dir / RESULTS).exists():
        raise ConfigError(f"{run_dir} has no {RESULTS}: is it a run directory?")
    config = run_config(run_dir, model)
    workflow = configured_workflow(run_dir, config, time_limit_s)
    replay_stopped = time_limit_s is not None
    tasks = {t.id: t for t in read_tasks(run_dir / TASKS)}
    results = [
        t
        for t in latest_attempts(ResultsFile(run_dir / RESULTS))
        if failure_cause(t) is None and t.task_id in tasks
    ]
    out = ResultsFile(run_dir / DIAGNOSIS)  # append-only lines, a torn tail cut on reopening
    out.repair()
    done = {(d.task_id, d.epoch) for d in read_diagnoses(run_dir)}
    todo = [t for t in results if (t.task_id, t.epoch) not in done]
    summary = DiagnoseSummary(run_dir, skipped=len(results) - len(todo))
    if limit is not None:
        todo = todo[:limit]
    if not todo:
        return summary
    from raleval.agents.agent import resolve_model

    if all(t.scores.get("correct") or (_stopped(t) and not replay_stopped) for t in todo):
        base: Any = _NoModel()  # nothing to replay: no model server is started
    else:
        base = resolve_model(config.model, dict(config.model_options), run_dir=run_dir)
    env = build_env(config.env, config.env_options)
    stack, env, _faults, cache = episode_stack(config, base, env)
    agent = AgentSpec(workflow=config.workflow, model=config.model, env=config.env)
    replayer = _Replayer(stack, env, workflow, episode_graph(workflow, stack, env), agent)
    system = f"{results[0].agent.workflow}/{results[0].agent.model}"
    queue: asyncio.Queue[Trajectory] = asyncio.Queue()
    for traj in todo:
        queue.put_nowait(traj)

    async def worker() -> None:
        while not queue.empty():
            traj = queue.get_nowait()
            task = tasks[traj.task_id]
            d = await diagnose_episode(traj, task, replayer, system, config.model, replay_stopped)
            out.append_lines([diagnosis_json(d)])  # one whole line per episode, fsynced
            summary.diagnosed += 1
            summary.llm_calls += d.llm_calls
            summary.cache_hits += d.cache_hits
            summary.causes[d.cause.value] = summary.causes.get(d.cause.value, 0) + 1
            if progress is not None:
                progress(d)

    try:
        # as many episodes at once as the run would (llama.cpp's slots, --max-connections)
        await asyncio.gather(*(worker() for _ in range(episode_slots(config, stack, len(todo)))))
    finally:
        if cache is not None:
            cache.close()
        await _close(env)
        await stack.aclose()
    return summary


def diagnose_sync(
    run_dir: Path,
    model: str | None = None,
    limit: int | None = None,
    progress: Any = None,
    time_limit_s: float | None = None,
) -> DiagnoseSummary:
    """Blocking :func:`diagnose`, holding the run directory's lock: a run resuming into it,
    or a second diagnose, waits its turn (is refused, naming this one's pid)."""
    from raleval.app.rundir import RunDirLock

    with RunDirLock(run_dir):
        return asyncio.run(diagnose(run_dir, model, limit, progress, time_limit_s))
