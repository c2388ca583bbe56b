"""The async runner: tasks x (workflow + model) on an environment, one JSON line per episode.

Re-running the same configuration resumes: finished (task, epoch) pairs are skipped and a torn
last line is repaired. Every episode ends in a trajectory, whatever happens inside it.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import hashlib
import platform
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from raleval import __version__, registry
from raleval.app.faults import FaultLog, FaultyEnvironment, FaultyModel, RetryingModel
from raleval.config import ConfigError, RunConfig, redact
from raleval.failures import failure_cause, failures_by_cause
from raleval.model import GenerateRequest, Generation, Model, ModelWrapper
from raleval.records import AgentSpec, RunHeader, Task, Termination, Trajectory
from raleval.scheduling import TurnModel, Turns, within
from raleval.store import (
    HEADER,
    RESULTS,
    TASKS,
    RecordFileError,
    ResultHead,
    ResultsFile,
    ResultsWriter,
    read_header,
    read_tasks,
    write_header,
    write_tasks,
)
from raleval.workflow import SolvedExample, Workflow, WorkflowConfig


@dataclass
class RunSummary:
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


def git_revision() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            cwd=Path(__file__).resolve().parent,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def dataset_hash(tasks: list[Task]) -> str:
    h = hashlib.sha256()
    for t in tasks:
        h.update(t.model_dump_json().encode())
        h.update(b"\n")
    return h.hexdigest()


@contextlib.contextmanager
def _long_lived_heap() -> Any:
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
) -> Trajectory:
    """Run one episode; never raises: harness failures are recorded as ``harness_error``.

    ``graph`` is the workflow compiled once for the run; without it one is compiled here.
    """
    from raleval.tasks.testbeds import wrap_session
    from raleval.workflows.common import EpisodeRecord

    started_at = datetime.now(timezone.utc)
    rec = EpisodeRecord()
    session: Any = None
    try:
        if epoch:
            model = model.with_epoch(epoch)
        session = wrap_session(env.session(task), task)
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
        await _close_session(session)
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
) -> Trajectory:
    """:func:`run_episode`, scored, with its infrastructure failure cause and its attempt
    number: the trajectory every backend writes."""
    from raleval.analysis.scoring import score_trajectory

    traj = await run_episode(task, model, env, workflow, agent, epoch=epoch, graph=graph)
    score_trajectory(traj, task)
    traj.failure = failure_cause(traj)
    traj.attempt = attempt
    return traj


def next_attempt(latest: dict[tuple[str, int], ResultHead], task_id: str, epoch: int) -> int:
    """The attempt number of a new run of (task, epoch): one past the last on disk."""
    before = latest.get((task_id, epoch))
    return before.attempt + 1 if before is not None else 0


def episode_slots(config: RunConfig, model: Any, n_episodes: int) -> int:
    """Episodes run at once: ``--max-connections``, no more than there are, and no more than
    the model serves well at once (llama.cpp's slots)."""
    n = min(config.max_connections, max(1, n_episodes))
    return min(n, model.capabilities.max_concurrency or n)


async def _close_session(session: Any) -> None:
    """Release an episode's session (its MCP connection); a failure to close is no result."""
    aclose = getattr(session, "aclose", None)
    if aclose is None or session is None:
        return
    with contextlib.suppress(Exception):
        await aclose()


def _resolve_model(config: RunConfig) -> Any:
    from raleval.agents.agent import resolve_model

    return resolve_model(config.model, dict(config.model_options), run_dir=config.run_dir)


def _no_phase(what: str) -> contextlib.AbstractContextManager[None]:
    return contextlib.nullcontext()


def _prepare(config: RunConfig, phase: Any = _no_phase) -> tuple[Any, list[Task], Workflow]:
    """Environment, tasks and the configured workflow; the model is resolved separately
    (a Ray driver needs no model of its own: a local one would start a server)."""
    from raleval.tasks.catalog import foreign_tasks

    config = config.with_defaults()
    check_run_dir(config)  # before reading anything a run directory holds

    workflow = registry.workflows.get(config.workflow).configure(config.workflow_options)
    try:  # e.g. PAL refuses to run where it cannot sandbox code
        workflow.preflight()
    except RuntimeError as exc:
        raise ConfigError(str(exc)) from exc
    with phase(f"building the {config.env} environment"):
        env = build_env(config.env, config.env_options)
    with phase(f"loading tasks ({config.tasks})"):
        tasks = _run_tasks(config, env)
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
    return env, tasks, workflow


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


def _run_tasks(config: RunConfig, env: Any) -> list[Task]:
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
    recorded_path = config.run_dir / TASKS
    if not recorded_path.exists():
        return chosen
    recorded = {t.id: t for t in read_tasks(recorded_path)}
    return [recorded.get(t.id, t) for t in chosen]


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
    or none. A testbed's demonstrations show the ordinary
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
    # a loaded task file's own example pool (``tasks load --examples k``) for the rest
    from raleval.tasks.demonstrations import pool_demonstrations

    return {**pool_demonstrations(config.tasks, env, tasks, shots), **out}


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


def _config_difference(stored: dict[str, Any], now: dict[str, Any]) -> str:
    """The settings that differ between a stored header's config and this run's, briefly."""
    ignore = {"limit", "sample_ids", "retry_failed", "force", "log_dir", "run_name", "cache",
              "cache_path", "backend", "ray_address", "workers", "max_connections",
              "max_connections_per_endpoint"}  # fmt: skip
    keys = [k for k in sorted(set(stored) | set(now)) if k not in ignore]
    diff = [k for k in keys if stored.get(k) != now.get(k)]
    shown = ", ".join(f"{k}={stored.get(k)!r}" for k in diff[:4]) or "(unreadable)"
    mine = ", ".join(f"{k}={now.get(k)!r}" for k in diff[:4])
    return f"{shown}; this run has {mine}" if mine else shown


def _set_aside(run_dir: Path) -> Path:
    """Move a run directory's contents into ``superseded-<time>/`` inside it (``--force``)."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
    aside = run_dir / f"superseded-{stamp}"
    aside.mkdir()
    for entry in run_dir.iterdir():
        if entry != aside and not entry.name.startswith("superseded-"):
            entry.rename(aside / entry.name)
    return aside


def check_run_dir(config: RunConfig) -> None:
    """Refuse a run directory that holds another run (or results without a header) unless
    ``force``, which sets its contents aside; nothing is ever overwritten."""
    run_dir = config.run_dir
    if not run_dir.exists():
        return
    try:
        existing = read_header(run_dir)
    except RecordFileError:
        existing = None
    has_data = any((run_dir / f).exists() for f in (RESULTS, TASKS)) or bool(shard_files(run_dir))
    now = redact(config.model_dump(mode="json"))
    if existing is None and (has_data or (run_dir / HEADER).exists()):
        problem = f"{run_dir} holds results without a readable {HEADER}"
    elif existing is not None and existing.fingerprint != config.fingerprint():
        problem = f"{run_dir} holds a run with config {_config_difference(existing.config, now)}"
    else:
        return
    if config.force:
        _set_aside(run_dir)
        return
    raise ConfigError(f"{problem}; use another --log-dir or --force")


def _open_run_dir(
    config: RunConfig,
    tasks: list[Task],
    wf_config: WorkflowConfig,
    prompts: dict[str, Any] | None = None,
) -> Path:
    run_dir = config.run_dir
    check_run_dir(config)
    run_dir.mkdir(parents=True, exist_ok=True)
    existing = read_header(run_dir)
    recorded = read_tasks(run_dir / TASKS) if (run_dir / TASKS).exists() else []
    known = {t.id for t in recorded}
    added = [t for t in tasks if t.id not in known]
    if added or not (run_dir / TASKS).exists():
        write_tasks(run_dir / TASKS, [*recorded, *added])  # exactly the tasks run so far
    if existing is None:
        header = RunHeader(
            raleval_version=__version__,
            git_revision=git_revision(),
            created_at=datetime.now(timezone.utc),
            config=redact(config.model_dump(mode="json")),
            fingerprint=config.fingerprint(),
            seeds={"tasks": config.seed},
            decoding={"temperature": wf_config.temperature, "max_tokens": wf_config.max_tokens},
            dataset_hash=dataset_hash(tasks),
            n_tasks=len(tasks),
            python=sys.version.split()[0],
            platform=platform.platform(),
            prompts=prompts or {},
        )
        write_header(run_dir, header)
    return run_dir


def shard_of(task_id: str, epoch: int, count: int) -> int:
    """Which of ``count`` shards runs (task, epoch): stable across processes and machines."""
    digest = hashlib.sha256(f"{task_id}/{epoch}".encode()).digest()
    return int.from_bytes(digest[:4], "big") % count


def shard_files(run_dir: Path) -> list[Path]:
    return sorted(run_dir.glob("results.shard-*.jsonl"))


def finished_keys(run_dir: Path) -> set[tuple[str, int]]:
    """Episodes on disk in the merged results and in any shard file (repairing torn tails)."""
    return set(latest_heads(run_dir))


def latest_heads(run_dir: Path) -> dict[tuple[str, int], ResultHead]:
    """The last attempt per (task, epoch) on disk, as much of it as resuming needs (shards
    included, torn tails repaired)."""
    latest: dict[tuple[str, int], ResultHead] = {}
    for path in [run_dir / RESULTS, *shard_files(run_dir)]:
        f = ResultsFile(path)
        f.repair()
        for t in f.heads():
            old = latest.get((t.task_id, t.epoch))
            if old is None or t.attempt >= old.attempt:
                latest[(t.task_id, t.epoch)] = t
    return latest


def pending_episodes(
    run_dir: Path, tasks: list[Task], config: RunConfig
) -> tuple[dict[tuple[str, int], ResultHead], list[tuple[Task, int]]]:
    """What is on disk (the last attempt per task and epoch) and the episodes still to run:
    those with no result, and with ``--retry-failed`` those whose last attempt failed for
    infrastructure reasons. Both backends resume through this."""
    latest = latest_heads(run_dir)

    def wanted(key: tuple[str, int]) -> bool:
        last = latest.get(key)
        return last is None or (config.retry_failed and failure_cause(last) is not None)

    return latest, [(t, e) for e in range(config.epochs) for t in tasks if wanted((t.id, e))]


def failures_on_disk(run_dir: Path, tasks: list[Task], epochs: int) -> dict[str, int]:
    """Episodes of this run whose last attempt on disk failed, counted by cause."""
    keys = {(t.id, e) for t in tasks for e in range(epochs)}
    return dict(failures_by_cause(h for k, h in latest_heads(run_dir).items() if k in keys))


def merge_shards(run_dir: Path) -> int:
    """Append shard results missing from results.jsonl, then remove the shard files.

    Safe to repeat after a crash: lines already merged are recognised by (task, epoch)."""
    merged = ResultsFile(run_dir / RESULTS)
    merged.repair()
    have = {(t.task_id, t.epoch, t.attempt) for t in merged}
    added = 0
    for path in shard_files(run_dir):
        shard = ResultsFile(path)
        shard.repair()
        for traj in shard:
            if (traj.task_id, traj.epoch, traj.attempt) not in have:
                merged.append(traj)
                have.add((traj.task_id, traj.epoch, traj.attempt))
                added += 1
        path.unlink()
    return added


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
    from raleval.analysis.scoring import warm_scoring

    graph = workflow.build(model, env)
    warm_scoring()
    return graph


async def run(
    config: RunConfig, display: str = "rich", deadline: float | None = None
) -> RunSummary:
    """Run (or resume) one configuration and return its summary. No episode starts after
    ``deadline`` (a ``time.monotonic()`` value, ``raleval run --max-time``): those running
    finish and are written, the rest wait for the next run of the same configuration."""
    from raleval.app.progress import Phases, make_progress

    config = config.with_defaults()
    check_env_options(config.env, config.env_options)  # before a model server starts
    check_run_dir(config)  # before the model's server logs into the run directory
    registry.workflows.get(config.workflow).configure(config.workflow_options)
    phase = Phases(display, config.slug())
    with phase(f"loading model {config.model}"):
        model = _resolve_model(config)  # first: a bad model name fails before a world loads
    env, tasks, workflow = _prepare(config, phase)
    run_dir = _open_run_dir(config, tasks, workflow.config, run_prompts(env, workflow))
    merge_shards(run_dir)  # a run directory left by a version whose Ray workers wrote shards
    results = ResultsFile(run_dir / RESULTS)
    latest, pending = pending_episodes(run_dir, tasks, config)
    selected = tasks
    model, env, faults, cache = episode_stack(config, model, env)
    agent = AgentSpec(workflow=config.workflow, model=config.model, env=config.env)
    graph = episode_graph(workflow, model, env)

    queue: asyncio.Queue[tuple[Task, int]] = asyncio.Queue()
    for item in pending:
        queue.put_nowait(item)
    tally = Tally()
    progress = make_progress(display, total=len(pending), title=config.slug())
    turns = Turns()  # episodes do their harness work in arrival order (raleval.scheduling)

    def on_write_error(exc: OSError) -> None:
        # Stop before the next model call: nothing more can be saved. Episodes in flight are
        # cancelled (not written) and run again when the run is resumed.
        stopping.set()
        for w in workers:
            w.cancel()

    writer = ResultsWriter(results, on_error=on_write_error)

    async def worker() -> None:
        # One turn for the slot (raleval.scheduling): an episode's end and the next one's
        # start are one stretch of harness work, with no hand-over between them.
        async with turns.turn():
            while True:
                if stopping.is_set() or (deadline is not None and time.monotonic() >= deadline):
                    return
                try:
                    task, epoch = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                attempt = next_attempt(latest, task.id, epoch)
                traj = await run_scored(task, model, env, workflow, agent, epoch, attempt, graph)
                writer.put(traj)
                tally.add(traj)
                progress.advance(tally.mean_f1 or 0.0, traj)

    stopping = asyncio.Event()
    workers: list[asyncio.Task[None]] = []

    def cancel_running() -> None:
        # cancelled episodes are not written, so a resume reruns them, and every line on
        # disk stays whole
        for w in workers:
            w.cancel()

    def on_interrupt() -> None:
        if not stopping.is_set():
            stopping.set()
            print(
                f"\nstopping: no new episodes; running ones get {GRACE_S:.0f} s to finish, then "
                "are cancelled (Ctrl-C again to stop at once)",
                file=sys.stderr,
                flush=True,
            )
            loop.call_later(GRACE_S, cancel_running)
        else:
            cancel_running()

    loop = asyncio.get_running_loop()
    try:
        loop.add_signal_handler(signal.SIGINT, on_interrupt)
        handling_sigint = True
    except (NotImplementedError, RuntimeError, ValueError):  # not the main thread / platform
        handling_sigint = False

    with progress, _long_lived_heap():
        n_workers = episode_slots(config, model, len(pending))
        workers.extend(asyncio.ensure_future(worker()) for _ in range(n_workers))
        try:
            await asyncio.gather(*workers, return_exceptions=False)
        except asyncio.CancelledError:
            pass
        finally:
            await writer.close()  # every finished episode is on disk before we return
            if handling_sigint:
                loop.remove_signal_handler(signal.SIGINT)
                if stopping.is_set():
                    # Stopping, with every line on disk complete: further Ctrl-Cs are ignored
                    # process-wide (any thread may receive the signal) while we wind down.
                    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if cache is not None:
        cache.close()
    await _close_session(env)  # the environment's connections (MCP servers it started)
    await model.aclose()  # release HTTP connections inside the loop that opened them
    write_error = None
    if writer.error is not None:
        write_error = f"{writer.error.strerror or writer.error} ({results.path})"
    return RunSummary(
        run_dir=run_dir,
        total=len(selected) * config.epochs,
        skipped=len(selected) * config.epochs - len(pending),
        ran=tally.ran - writer.unwritten,
        mean_f1=tally.mean_f1,
        by_termination=tally.terminations,
        by_error_type=tally.labels,
        faults=faults,
        interrupted=stopping.is_set() and write_error is None,
        failures=failures_on_disk(run_dir, selected, config.epochs),
        write_error=write_error,
        unwritten=writer.unwritten,
    )


def stop_child_processes() -> None:
    """Terminate the model servers this process started (llama.cpp), if any were started:
    called on the way out of an interrupted run, where ``os._exit`` skips ``atexit``."""
    local = sys.modules.get("raleval.agents.local")
    if local is not None:
        local.stop_servers()


def run_sync(config: RunConfig, display: str = "none") -> RunSummary:
    """Blocking convenience wrapper around :func:`run`, or the backend that runs episodes in
    other processes (:mod:`raleval.app.process_backend`, :mod:`raleval.app.ray_backend`)."""
    if config.backend == "ray":
        from raleval.app.ray_backend import run_ray

        return run_ray(config, display)
    if config.backend == "processes":
        from raleval.app.process_backend import run_processes

        return run_processes(config, display)
    return asyncio.run(run(config, display=display))
