"""``raleval diagnose``: replay a run's failed episodes under interventions and record why each
failed (docs/diagnosis.md).

A replay is a run: each counterfactual episode goes through the runner's own episode function
(:func:`raleval.app.episodes.run_scored`) with a prefix of steps, on the run's environment,
workflow, prompts, demonstrations and decoding (from its ``header.json``), with the model
behind the same response cache, and is scored by the same scorer. The prefixes, the rule
that compares an intervention with its control and the causes come from
:mod:`raleval.analysis.diagnosis`. Results are appended to ``diagnosis.jsonl`` beside
``results.jsonl``, one line per episode; a second ``diagnose`` resumes where it stopped.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from raleval import registry
from raleval.analysis.diagnosis import (
    DIAGNOSIS,
    INTERVENTIONS,
    Cause,
    Diagnosis,
    Outcome,
    Replay,
    beats,
    budget_bound,
    cause_of,
    clean_interface_prefix,
    diagnosis_json,
    evidence_prefix,
    fit_steps,
    given_part,
    gold_retrieval_prefix,
    harness_stopped,
    read_diagnoses,
    reproduction_prefix,
)
from raleval.analysis.taxonomy import evidence_found, stop_reason
from raleval.app.episodes import episode_graph, episode_slots, episode_stack, run_scored
from raleval.app.plan import build_env
from raleval.config import ConfigError, RunConfig
from raleval.failures import failure_cause, latest_attempts
from raleval.model import Capabilities, ModelBase
from raleval.records import AgentSpec, Step, StopReason, Task, Termination, Trajectory
from raleval.redaction import REDACTED
from raleval.store import RESULTS, TASKS, ResultsFile, read_header, read_tasks
from raleval.text import normalize_answer

MAX_ROUNDS = 5  # clean interface: misuse steps replaced, one per replay, at most
SAMPLES = 3  # replays of each prefix at temperature > 0 (``--samples``)
# at temperature 0, times the model is asked again what it was last asked: a model right half
# the time on one request answers as recorded all three times with chance 1/8, one call each
REPRODUCTIONS = 3


@dataclass
class DiagnoseSummary:
    run_dir: Path
    diagnosed: int = 0  # episodes diagnosed by this call
    skipped: int = 0  # already in diagnosis.jsonl
    llm_calls: int = 0  # model calls the replays of this call made
    cache_hits: int = 0  # ... answered by the response cache
    causes: dict[str, int] = field(default_factory=dict)
    # episodes whose replays answered one request two ways at temperature 0
    nondeterministic: int = 0


@dataclass
class _Replayer:
    """What every replay of a run shares: the run's model stack, environment, workflow and
    compiled graph, and how many times each prefix is replayed."""

    model: Any
    env: Any
    workflow: Any
    graph: Any
    agent: AgentSpec
    samples: int = 1  # replays per prefix: 1 at temperature 0 unless --samples says more
    whole_path: bool = True  # gold retrieval gives the rest of the gold path (else one call)

    @property
    def deterministic(self) -> bool:
        return self.workflow.config.temperature == 0

    @property
    def room(self) -> int | None:
        """The most steps a prefix may have and leave the model a turn (``max_steps`` counts
        ReAct's rounds and function calling's turns alike: a given step takes one)."""
        max_steps = getattr(self.workflow.config, "max_steps", None)
        return None if max_steps is None else max_steps - 1

    async def replay(
        self, task: Task, epoch: int, prefix: list[Step], sample: int, role: str = "replay"
    ) -> Trajectory:
        """One replay from ``prefix``, keyed in the response cache by its role (``replay``,
        ``control``, ``repro``) and sample, never as the run's own episode: a control answered
        from the cache would be the recorded failure again, and a server that answers the same
        request two ways at temperature 0 would go unseen. The key is the same on every
        diagnose of the run, so a second one is answered by the cache."""
        return await run_scored(
            task,
            self.model,
            self.env,
            self.workflow,
            self.agent,
            epoch,
            0,
            self.graph,
            prefix or None,
            cache_epoch=f"{epoch}:{role}-{sample}",
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


def evidence_cut(replay: Trajectory, task: Task, steps_cut: bool = False) -> bool:
    """Whether the evidence a replay was given is out of the model's view: its given steps
    do not show the answer (or every value it rests on), and a given observation was cut to
    fit the context (a long page's tail, a price series' older entries) or, ``steps_cut``,
    some of the gold calls were left out to leave the model a turn within ``max_steps``, so
    the evidence may be what was cut."""
    from raleval.workflows.common import SERIES_MARKER, TRUNCATION_MARKER

    given = given_part(replay)
    # with the question: a comparison's winner is one of the names it asks about, so a page
    # that names it does not show the answer; the values compared do
    if evidence_found(given, task.answers, task.evidence, task.question):
        return False
    if steps_cut:
        return True
    page_cut = TRUNCATION_MARKER.split("{")[0]
    series_cut = f'"{SERIES_MARKER}": '
    return any(page_cut in (s.observation or "") or series_cut in (s.observation or "")
               for s in given.steps)  # fmt: skip


def _context_full(replays: list[Replay]) -> bool:
    """Every replay ended at the context limit before the model was asked anything."""
    return all(
        r.trajectory.termination is Termination.context_limit and not r.trajectory.llm_calls
        for r in replays
    )


def _prefix_key(prefix: list[Step]) -> str:
    return json.dumps([s.model_dump(mode="json", exclude={"index"}) for s in prefix])


class _Episode:
    """The replays of one episode: each prefix replayed ``samples`` times, a control prefix
    (the unchanged one an intervention is compared with) only once per sample however many
    interventions share it."""

    def __init__(self, traj: Trajectory, task: Task, replayer: _Replayer) -> None:
        self.traj, self.task, self.replayer = traj, task, replayer
        self.replays: list[Replay] = []
        self._controls: dict[tuple[str, int], Replay] = {}

    async def run(
        self,
        name: str,
        prefix: list[Step],
        round_: int = 0,
        samples: range | None = None,
        role: str = "replay",
    ) -> list[Replay]:
        out = []
        for sample in samples or range(self.replayer.samples):
            traj = await self.replayer.replay(self.task, self.traj.epoch, prefix, sample, role)
            out.append(
                Replay(
                    intervention=name,
                    control=role != "replay",
                    sample=sample,
                    round=round_,
                    prefix_steps=len(prefix),
                    correct=bool(traj.scores.get("correct")),
                    trajectory=traj,
                )
            )
        self.replays += out
        return out

    async def control(
        self, name: str, prefix: list[Step], samples: range | None = None
    ) -> list[Replay]:
        key = _prefix_key(prefix)
        out = []
        for sample in samples or range(self.replayer.samples):
            if (key, sample) not in self._controls:
                (run,) = await self.run(name, prefix, 0, range(sample, sample + 1), "control")
                self._controls[(key, sample)] = run
            out.append(self._controls[(key, sample)])
        return out

    def fit(self, prefix: list[Step], keep: int = 1) -> list[Step]:
        room = self.replayer.room
        return prefix if room is None else fit_steps(prefix, room, keep)

    async def reproduces(self) -> bool:
        """At temperature 0, whether the model asked again what it was last asked (every
        recorded call given as recorded) gives the recorded answer again, three times (``samples``
        times when more): a provider that answers one request two ways is not deterministic,
        and its failure has no cause to find. True where that cannot be asked."""
        prefix = reproduction_prefix(self.traj)
        room = self.replayer.room
        if prefix is None or (room is not None and len(prefix) > room):
            return True
        runs = await self.run(
            "reproduction", prefix, 0, range(max(REPRODUCTIONS, self.replayer.samples)), "repro"
        )
        recorded = normalize_answer(self.traj.answer or "")
        # a reproduction the harness stopped before the model answered tells nothing
        answered = [r for r in runs if not harness_stopped(r.trajectory)]
        return all(normalize_answer(r.trajectory.answer or "") == recorded for r in answered)


def _budget_bound(traj: Trajectory, task: Task, room: int | None) -> bool:
    """Whether the episode stopped at its step budget on a task whose every gold path has
    more calls than the budget leaves room for (:func:`budget_bound`)."""
    stop = traj.stop_reason or stop_reason(traj)
    return stop is StopReason.step_budget and budget_bound(task, room)


def _added_cut(replay: Trajectory, prefix: list[Step]) -> bool:
    """Whether a result the intervention put in (a step given without an observation: the
    workflow made the call) was cut to fit the context in ``replay``."""
    from raleval.workflows.common import SERIES_MARKER, TRUNCATION_MARKER

    page_cut = TRUNCATION_MARKER.split("{")[0]
    series_cut = f'"{SERIES_MARKER}": '
    made = replay.steps[: len(prefix)]
    return any(
        given.observation is None and (page_cut in (got.observation or "")
                                       or series_cut in (got.observation or ""))
        for given, got in zip(prefix, made, strict=False)
    )  # fmt: skip


def _build(
    ep: _Episode, name: str, current: Trajectory, tools: list[Any]
) -> tuple[list[Step] | None, str, int, list[Step]]:
    """Intervention ``name``'s prefix, why not, how many steps end it that are the
    intervention's, and what its control has in their place."""
    if name == "clean_interface":
        return clean_interface_prefix(current, ep.task, tools)
    if name == "gold_retrieval":
        prefix, why, n = gold_retrieval_prefix(ep.traj, ep.task, ep.replayer.whole_path)
        return prefix, why, n, []
    prefix, why = evidence_prefix(ep.task)
    return prefix, why, len(prefix or []), []


async def _intervene(ep: _Episode, name: str, tools: list[Any]) -> Outcome:
    """Replay the episode under intervention ``name`` and its control; the outcome."""
    traj, task = ep.traj, ep.task
    rounds, current, last = 0, traj, []
    control_prefix: list[Step] | None = None
    why, steps_cut, prefix, recorded_state = "", False, [], False
    while True:
        built, why, keep, control_tail = _build(ep, name, current, tools)
        if built is None:
            break
        if name == "evidence_in_hand":
            prefix = ep.fit(built)
            # evidence in hand cut to the step budget: what is left may not be the evidence
            steps_cut = len(prefix) < len(built)
        else:
            room = ep.replayer.room
            if room is not None and keep > room:
                # what the intervention puts in does not fit the step budget: out of view
                return Outcome(
                    applied=True,
                    undecided=True,
                    rounds=rounds + 1,
                    why="the intervention's calls do not fit the step budget (max_steps)",
                )
            prefix = ep.fit(built, keep)
        rounds += 1
        whole = len(prefix) == len(built)  # the agent's steps as recorded, none cut
        last = await ep.run(name, prefix, rounds)
        # the context full before the model spoke: the agent's oldest steps go, while any
        # are left (evidence in hand has none: that is the evidence, and undecided if cut)
        while name != "evidence_in_hand" and len(prefix) > keep and _context_full(last):
            prefix, whole = prefix[1:], False
            last = await ep.run(name, prefix, rounds)
        if control_prefix is None:  # the prefix unchanged: without the steps put in place
            head = [] if name == "evidence_in_hand" else prefix[: len(prefix) - keep]
            control_prefix = [*head, *control_tail]
            # a state the episode had (nothing cut), so at temperature 0 it must fail again
            recorded_state = whole or name == "evidence_in_hand"
        stop = any(harness_stopped(r.trajectory) for r in last)
        if last[0].correct or name != "clean_interface" or rounds >= MAX_ROUNDS or stop:
            break
        current = last[0].trajectory
    if not last:
        return Outcome(applied=False, why=why)
    assert control_prefix is not None
    controls = await ep.control(name, control_prefix)
    disagree = False
    if ep.replayer.deterministic:
        # at temperature 0 every replay of one prefix must answer alike, and a control of
        # the agent's own steps must fail as the run did; a fix is asked twice
        a, c = sum(r.correct for r in last), sum(r.correct for r in controls)
        disagree = 0 < a < len(last) or 0 < c < len(controls) or (recorded_state and c > 0)
        if a == len(last) and c == 0 and len(last) == 1 and not disagree:
            again = await ep.run(name, prefix, rounds, range(1, 2))
            again_control = await ep.control(name, control_prefix, range(1, 2))
            last, controls = [*last, *again], [*controls, *again_control]
            disagree = not again[0].correct or again_control[0].correct
    a, c = sum(r.correct for r in last), sum(r.correct for r in controls)
    fixed, p = beats(a, len(last), c, len(controls), ep.replayer.deterministic)
    undecided = any(harness_stopped(r.trajectory) for r in [*last, *controls])
    why = "a replay was stopped by the harness before the model answered" if undecided else ""
    if name == "evidence_in_hand" and any(evidence_cut(r.trajectory, task) for r in last):
        undecided, why = True, "the evidence was cut to fit the context: out of the model's view"
    elif name == "evidence_in_hand" and any(
        evidence_cut(r.trajectory, task, steps_cut) for r in last
    ):
        undecided = True
        why = "the gold calls do not all fit the step budget: evidence out of the model's view"
    elif not fixed and any(_added_cut(r.trajectory, prefix) for r in last):
        undecided = True
        why = "what the intervention put in was cut to fit the context: out of the model's view"
    if disagree:
        why = "replays of one prefix answered differently at temperature 0"
    return Outcome(
        applied=True,
        fixed=fixed and not undecided and not disagree,
        why=why or None,
        rounds=rounds,
        undecided=undecided and not disagree,
        samples=len(last),
        rate=a / len(last),
        control_rate=c / len(controls),
        p_value=p,
        nondeterministic=disagree,
    )


async def diagnose_episode(
    traj: Trajectory,
    task: Task,
    replayer: _Replayer,
    system: str,
    model: str,
    replay_stopped: bool = False,
) -> Diagnosis:
    """Replay one episode under the interventions, in order, each against its control, until
    one fixes it. One the wall clock stopped is replayed only with ``replay_stopped`` (a
    longer clock). At temperature 0 the model is first asked again what it was last asked:
    another answer and the episode is ``unstable``."""
    correct = bool(traj.scores.get("correct"))
    # stopped by the wall clock: a replay under the same clock would measure the machine's
    # load, not the agent
    stopped = not correct and _stopped(traj) and not replay_stopped
    outcomes: dict[str, Outcome] = {}
    ep = _Episode(traj, task, replayer)
    live = not (correct or stopped)
    if live and _budget_bound(traj, task, replayer.room):
        # the agent ran out of steps on a task no gold path of which fits them: whatever an
        # intervention's free calls do, the budget decided it
        why = "no gold path fits the step budget (max_steps) with a turn left to answer"
        outcomes["evidence_in_hand"] = Outcome(applied=False, undecided=True, why=why)
        live = False
    nondeterministic = live and replayer.deterministic and not await ep.reproduces()
    live = live and not nondeterministic
    tools = await episode_tools(replayer.env, task) if live else []
    for name in INTERVENTIONS if live else ():
        if any(o.fixed or o.undecided or o.nondeterministic for o in outcomes.values()):
            break
        outcomes[name] = await _intervene(ep, name, tools)
    n_calls, hits = _calls_of(ep.replays)
    return Diagnosis(
        task_id=traj.task_id,
        epoch=traj.epoch,
        system=system,
        model=model,
        family=task.family,
        level=task.level.value,
        label=traj.error_type.value if traj.error_type is not None else None,
        correct=correct,
        cause=cause_of(
            correct,
            outcomes,
            stopped,
            nondeterministic or any(o.nondeterministic for o in outcomes.values()),
            _budget_bound(traj, task, replayer.room),
        ),
        outcomes=outcomes,
        replays=ep.replays,
        llm_calls=n_calls,
        cache_hits=hits,
        nondeterministic=nondeterministic or any(o.nondeterministic for o in outcomes.values()),
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
    samples: int | None = None,
    starting: Any = None,
    whole_path: bool = True,
) -> DiagnoseSummary:
    """Diagnose the episodes of ``run_dir`` not yet in its ``diagnosis.jsonl`` (the first
    ``limit`` of them in results order); ``starting(trajectory, n, total)`` is called as each
    one's replays begin (the n-th of ``total``) and ``progress(diagnosis)`` after each.
    ``time_limit_s`` gives replays another wall-clock budget than the run's, and replays the
    episodes the run's clock stopped too, and those a harness limit left undecided, though
    already diagnosed (their new line supersedes the old). ``samples``: replays of each prefix
    (default :data:`SAMPLES` at temperature > 0, one at temperature 0, where a fix is asked
    twice). ``whole_path``: gold retrieval gives the rest of the gold path (False: one
    call)."""
    if samples is not None and samples < 1:
        raise ConfigError(f"samples must be at least 1, not {samples}")
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
    # another wall clock resumes what a harness limit left undecided (the run's clock, or a
    # replay's): those are diagnosed again, the rest skipped
    done = {
        (d.task_id, d.epoch)
        for d in read_diagnoses(run_dir)
        if not (replay_stopped and d.cause is Cause.harness_limit)
    }
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
    k = samples or (1 if workflow.config.temperature == 0 else SAMPLES)
    graph = episode_graph(workflow, stack, env)
    replayer = _Replayer(stack, env, workflow, graph, agent, k, whole_path)
    system = f"{results[0].agent.workflow}/{results[0].agent.model}"
    queue: asyncio.Queue[Trajectory] = asyncio.Queue()
    for traj in todo:
        queue.put_nowait(traj)

    begun = 0

    async def worker() -> None:
        nonlocal begun
        while not queue.empty():
            traj = queue.get_nowait()
            task = tasks[traj.task_id]
            begun += 1
            if starting is not None:
                starting(traj, begun, len(todo))
            d = await diagnose_episode(traj, task, replayer, system, config.model, replay_stopped)
            out.append_lines([diagnosis_json(d)])  # one whole line per episode, fsynced
            summary.diagnosed += 1
            summary.llm_calls += d.llm_calls
            summary.cache_hits += d.cache_hits
            summary.causes[d.cause.value] = summary.causes.get(d.cause.value, 0) + 1
            summary.nondeterministic += d.nondeterministic
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
    samples: int | None = None,
    starting: Any = None,
    whole_path: bool = True,
) -> DiagnoseSummary:
    """Blocking :func:`diagnose`, holding the run directory's lock: a run resuming into it,
    or a second diagnose, waits its turn (is refused, naming this one's pid)."""
    from raleval.app.rundir import RunDirLock

    with RunDirLock(run_dir):
        return asyncio.run(
            diagnose(run_dir, model, limit, progress, time_limit_s, samples, starting, whole_path)
        )
