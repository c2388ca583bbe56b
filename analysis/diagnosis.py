"""Why an episode failed, by counterfactual replay (docs/diagnosis.md).

A failed episode is replayed from a prefix of its own transcript under three interventions, and
the first one that makes its answer correct names the cause:

- ``clean_interface``: each misuse step (unknown tool, bad arguments, unparseable action, an
  id the model made up: the taxonomy's invalid calls) is replaced by the call the model
  evidently meant (:func:`intended_call`), one at a time;
- ``gold_retrieval``: at the first step where the agent leaves every gold path (the
  first-departure measure of :mod:`raleval.analysis.calls`), the next gold call is made in its
  place, with its real observation;
- ``evidence_in_hand``: the gold solution's calls are the episode's first steps.

Each intervention is compared with a control, the same prefix without the intervention's
step: it fixes the episode only when its success rate beats the control's (:func:`beats`; at
temperature > 0 over several samples each), and an episode no intervention fixes though some
replay answered right is ``unstable``. A replay the harness stops before the model answers
decides nothing (``harness_limit``).

This module builds the prefixes (lists of :class:`Step`) from stored records, cuts them to
the step budget, holds the estimator and its simulation, the :class:`Diagnosis` record written
to ``diagnosis.jsonl`` and the tables read from it. Pure: it never calls a model or a tool;
the replays are ordinary episodes run by the app.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from datetime import datetime
from enum import Enum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from raleval.analysis.calls import (
    FINISH_TOOLS,
    call_key,
    departure_point,
    gold_of,
    gold_paths,
    next_on_path,
)
from raleval.analysis.taxonomy import invalid_steps, stop_reason
from raleval.records import OutcomeKind, Step, StopReason, Task, ToolCall, Trajectory
from raleval.store import read_stored_bytes, stored_file
from raleval.text import ascii_fold

DIAGNOSIS = "diagnosis.jsonl"


class Cause(str, Enum):
    """Why an episode failed, by the first intervention that fixes it."""

    interface = "interface"  # fixed by clean interface
    retrieval = "retrieval"  # fixed by gold retrieval
    grounding = "grounding"  # fixed only by evidence in hand
    beyond_reach = "beyond_reach"  # no intervention fixes it
    not_needed = "not_needed"  # the episode's answer was correct
    # the episode, or a replay that would decide its cause, was stopped by the harness before
    # the model answered (the wall clock, the context, a budget the prefix spent): a harness
    # limit, so no cause can be told
    harness_limit = "harness_limit"
    # replays of the same prefix disagree: no intervention's success rate beat its control's,
    # yet some replay answered right (sampling noise, or a failure that does not reproduce)
    unstable = "unstable"


# Tried in this order; an episode's cause is the first that fixes it. Clean interface comes
# before gold retrieval: where the departure from the gold path is itself a misuse step both
# replace the same step, and the smaller change (the call the model meant) explains it.
INTERVENTIONS: dict[str, Cause] = {
    "clean_interface": Cause.interface,
    "gold_retrieval": Cause.retrieval,
    "evidence_in_hand": Cause.grounding,
}
CAUSES = [c.value for c in Cause]


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Replay(_Record):
    """One counterfactual episode: the intervention (or, with ``control``, the unchanged
    prefix it is compared with), its round (clean interface replaces one misuse step per
    round), its sample (at temperature > 0 each prefix is replayed ``samples`` times), how many
    steps it was given, and the episode as recorded."""

    intervention: str
    control: bool = False
    sample: int = 0
    round: int = 0
    prefix_steps: int
    correct: bool
    trajectory: Trajectory


class Outcome(_Record):
    """What one intervention did to an episode."""

    applied: bool  # False: nothing to intervene on (``why`` says what)
    fixed: bool = False
    why: str | None = None
    rounds: int = 0
    undecided: bool = False  # a replay was stopped by the harness before the model answered
    # the success rates compared: the intervention's replays (its last round) and those of
    # the unchanged prefix (the control), each over ``samples`` replays, and the one-sided
    # p-value of the first beating the second (Fisher's exact test; docs/diagnosis.md)
    samples: int = 0
    rate: float | None = None
    control_rate: float | None = None
    p_value: float | None = None


class Diagnosis(_Record):
    """One line of ``diagnosis.jsonl``: an episode of the run, its cause and the replays."""

    schema_version: int = 2  # 2: controls, samples and the unstable cause
    task_id: str
    epoch: int = 0
    system: str  # workflow/model of the run
    model: str  # the model that replayed it
    family: str
    level: str
    label: str | None  # the episode's R-Eval label (EM, AM, GE, RE, TE, ME)
    correct: bool
    cause: Cause
    outcomes: dict[str, Outcome] = Field(default_factory=dict)
    replays: list[Replay] = Field(default_factory=list)
    llm_calls: int = 0  # model calls the replays made ...
    cache_hits: int = 0  # ... and how many of them the response cache answered
    created_at: datetime


def cause_of(correct: bool, outcomes: dict[str, Outcome], stopped: bool = False) -> Cause:
    """The cause: ``not_needed`` for a correct episode; ``harness_limit`` when the episode
    was ``stopped`` by the wall clock or an intervention tried before the first that fixed it
    was undecided; else the first intervention (in :data:`INTERVENTIONS` order) that fixed it
    (its success rate beat its control's); else ``unstable`` when some replay, an
    intervention's or a control's, answered right; else ``beyond_reach``."""
    if correct:
        return Cause.not_needed
    if stopped:
        return Cause.harness_limit
    for name, cause in INTERVENTIONS.items():
        outcome = outcomes.get(name)
        if outcome is None:
            continue
        if outcome.fixed:
            return cause
        if outcome.undecided:
            return Cause.harness_limit
    if any((o.rate or 0) > 0 or (o.control_rate or 0) > 0 for o in outcomes.values()):
        return Cause.unstable
    return Cause.beyond_reach


# Stops of the harness rather than of the agent: a replay ended by one before the model
# answered says nothing of what the intervention did.
HARNESS_STOPS = frozenset(
    {StopReason.time_budget, StopReason.context_overflow, StopReason.token_budget}
)


def harness_stopped(replay: Trajectory) -> bool:
    """Whether the harness stopped ``replay`` before the model answered: the wall clock or
    the context (a configured token budget or the model's window), or the model never got a
    turn (the prefix spent a budget)."""
    if replay.answer is not None:
        return False
    stop = replay.stop_reason or stop_reason(replay)
    return stop in HARNESS_STOPS or not replay.llm_calls


def given_part(replay: Trajectory) -> Trajectory:
    """``replay`` with only the steps it was given (its prefix)."""
    n = int(replay.extra.get("prefix_steps", 0) or 0)
    return replay.model_copy(update={"steps": replay.steps[:n]})


# -- the estimator ----------------------------------------------------------------------------

ALPHA = 0.05  # one-sided level at which an intervention's rate must beat its control's


def fisher_one_sided(a: int, n: int, c: int, m: int) -> float:
    """P-value of "rate a/n is higher than rate c/m" by Fisher's exact test: the chance, with
    the a + c successes shared at random among the n + m replays, that the first n get at
    least ``a`` of them (hypergeometric upper tail; Fisher 1935, Agresti, Categorical Data
    Analysis, 3rd ed., sec. 3.5)."""
    from math import comb

    total, k = n + m, a + c
    denominator = comb(total, k)
    return sum(comb(n, x) * comb(m, k - x) for x in range(a, min(n, k) + 1)) / denominator


def beats(a: int, n: int, c: int, m: int, deterministic: bool = False) -> tuple[bool, float]:
    """Whether an intervention's ``a`` successes in ``n`` replays beat its control's ``c`` in
    ``m``, and the p-value. ``deterministic`` (temperature 0, one replay each): the
    intervention answered right and the control, the unchanged prefix, did not. Else the
    one-sided Fisher test at :data:`ALPHA`: at 3 replays each only 3/3 against 0/3 beats (p =
    1/20), so an intervention that does nothing gives a cause at most (1/2)^6 = 1/64 of the
    time whatever the model's success chance (``benchmarks/diagnosis_estimator.py``)."""
    if n == 0 or m == 0:
        return False, 1.0
    p = fisher_one_sided(a, n, c, m)
    if deterministic:
        return a == n and c == 0, p
    return p <= ALPHA, p


def simulate_causes(
    p_control: float,
    p_intervention: float,
    samples: int = 3,
    episodes: int = 30,
    interventions: int = 2,
    studies: int = 2000,
    seed: int = 0,
) -> dict[str, float]:
    """A simulation of the estimator, :func:`beats` as ``diagnose`` applies it: each episode
    has ``interventions`` interventions tried in order, each replayed ``samples`` times at
    success chance ``p_intervention`` against a control at ``p_control``; the first that beats
    its control names the cause. Returns the mean share of episodes per study given a cause
    (the false-cause rate when the two chances are equal, the power otherwise) and the share
    of studies in which at least 90% of the episodes got none."""
    import numpy as np

    rng = np.random.default_rng(seed)
    shape = (studies, episodes, interventions)
    a = rng.binomial(samples, p_intervention, shape)
    c = rng.binomial(samples, p_control, shape)
    table = np.array(
        [[beats(i, samples, j, samples)[0] for j in range(samples + 1)] for i in range(samples + 1)]
    )
    caused = table[a, c].any(axis=2)
    share = caused.mean(axis=1)
    return {
        "cause_rate": float(share.mean()),
        "studies_90pct_without_cause": float((share <= 0.1).mean()),
    }


# -- prefixes ---------------------------------------------------------------------------------


def _kept(step: Step) -> bool:
    """A recorded step a replay can start from: a tool call or an unparseable action."""
    if step.tool in FINISH_TOOLS:
        return False
    return step.tool is not None or step.kind is OutcomeKind.parse_error


def given(step: Step) -> Step:
    """A recorded step, to be given again as recorded (its observation included)."""
    return step.model_copy(deep=True)


def gold_step(call: ToolCall, thought: str | None = None) -> Step:
    """A gold call to be made at the start of a replay (no observation: the workflow makes
    the call, so the observation is the tool's real one). Without ``thought`` (a call the
    model did not write) the step carries none, and the replaying workflow writes the turn
    as its own oracle would (ReAct's "I need to call X.", function calling's empty assistant
    content): the text of a turn is the workflow's format, not the diagnosis's."""
    return Step(index=0, thought=thought, tool=call.tool, arguments=dict(call.arguments))


def _calls(steps: Sequence[Step]) -> list[tuple[int, tuple[str, Any]]]:
    return [
        (s.index, call_key(s.tool, s.arguments))
        for s in steps
        if s.tool is not None and s.tool not in FINISH_TOOLS
    ]


def _next_calls(
    steps: Sequence[Step], task: Task
) -> tuple[int | None, list[tuple[int, ToolCall]], list[tuple[int, tuple[str, Any]]]]:
    """Where ``steps`` first left every gold path (None: they never did), the next gold call
    of each path still followed there (paths the steps went furthest along first, then the
    task's own order), and the steps' calls."""
    gold = gold_of(task)
    made = _calls(steps)
    index, alive = departure_point(made, gold)
    pending = []
    for p, done in alive.items():
        j = next_on_path(done, gold.orders[p])
        if j is not None:
            pending.append((-sum(done), p, gold.paths[p][j]))
    return index, [(p, call) for _n, p, call in sorted(pending, key=lambda x: x[:2])], made


def next_gold_call(steps: Sequence[Step], task: Task) -> ToolCall | None:
    """The gold call that comes next after ``steps``: on the gold path still followed that
    they went furthest along, its next call (independent calls in any order, as
    :func:`raleval.analysis.calls.departure_point` follows them); when the steps left every
    path, the next call of the path they were on then (the first path when none)."""
    _index, pending, _made = _next_calls(steps, task)
    return pending[0][1] if pending else None


def gold_retrieval_prefix(traj: Trajectory, task: Task) -> tuple[list[Step] | None, str]:
    """The agent's steps before it first left every gold path, then the gold call it should
    have made there. An agent that never left a path but stopped before its end gets the next
    gold call where it stopped. ``(None, why)`` when there is nothing to put in place."""
    if not gold_paths(task):
        return None, "the task has no gold solution"
    index, pending, made = _next_calls(traj.steps, task)
    if not pending:
        return None, "the agent had made every call of a gold path"
    if index is None:  # it stopped on the path: the next gold call where it stopped
        index = (made[-1][0] + 1) if made else 0
    before = [given(s) for s in traj.steps if s.index < index and _kept(s)]
    return [*before, gold_step(pending[0][1])], ""


def fit_steps(prefix: list[Step], room: int) -> list[Step]:
    """``prefix`` cut to at most ``room`` steps, so that a replay starts with the model still
    within its step budget. Every step that repeats an earlier one (the same call with the same
    observation, a looping agent's retries) goes first, as it shows the model nothing new and
    the model may need more than one turn after the intervention; then the agent's oldest
    steps. The last step (the intervention's) is always kept; a prefix within ``room`` is
    given unchanged."""
    if len(prefix) <= room:
        return list(prefix)
    out = list(prefix)
    seen: set[tuple[Any, ...]] = set()
    repeats = []
    for i, step in enumerate(out[:-1]):
        key = (*call_key(step.tool, step.arguments), step.observation)
        if key in seen and step.observation is not None:
            repeats.append(i)
        seen.add(key)
    drop = set(repeats)
    out = [s for i, s in enumerate(out) if i not in drop]
    while len(out) > max(room, 1):
        out.pop(0)
    return out


def evidence_prefix(task: Task) -> tuple[list[Step] | None, str]:
    """The gold solution's calls, as the episode's first steps."""
    paths = gold_paths(task)
    if not paths or not paths[0]:
        return None, "the task has no gold solution"
    return [gold_step(c) for c in paths[0]], ""


_SPACE = re.compile(r"\s+")


def _norm(text: str) -> str:
    return _SPACE.sub(" ", text).strip().casefold()


def _visible(call: ToolCall, seen: str) -> bool:
    """Every argument value of ``call`` is in ``seen`` (the question and what tools showed)."""
    values = [v for v in call.arguments.values() if v is not None]
    return all(_norm(str(v)) in seen for v in values)


def _plain(name: str) -> str:
    """``name`` without case and accents."""
    return ascii_fold(str(name)).casefold()


def _repaired(step: Step, spec: Any) -> ToolCall | None:
    """``step``'s call with each argument name the tool does not have replaced by the
    closest one it has (a misspelling), if there was one and the result is a valid call."""
    from rapidfuzz import fuzz, process

    names = spec.param_names
    args: dict[str, Any] = {}
    for key, value in (step.arguments or {}).items():
        if key in names:
            args[key] = value
            continue
        # compared without case and accents ("NAME", "námé" are "name" misspelt), so that
        # a name only so changed is mended, its value kept, and never replaced by a gold call
        best = process.extractOne(key, names, scorer=fuzz.ratio, processor=_plain, score_cutoff=60)
        if best is None or best[0] in args:
            return None
        args[best[0]] = value
    if set(args) == set(step.arguments or {}):
        return None  # nothing misspelled: its values are what is wrong
    try:
        spec.params.model_validate(args)
    except ValidationError:
        return None
    return ToolCall(tool=spec.name, arguments=args)


def _renamed(step: Step, tools: Sequence[Any]) -> ToolCall | None:
    """``step``'s call of an unknown tool with the tool's name mended to the closest real one
    (rapidfuzz ratio >= 80 without case and accents: tools share long prefixes, so a looser
    match could name another tool) and the model's own arguments (their names mended too; a
    lone positional value, ``Serch[Ada Lin]``, given to a tool of one parameter), if that
    makes a valid call."""
    from rapidfuzz import fuzz, process

    if not step.tool or not tools:
        return None
    names = [t.name for t in tools]
    best = process.extractOne(
        step.tool, names, scorer=fuzz.ratio, processor=_plain, score_cutoff=80
    )
    if best is None:
        return None
    spec = tools[best[2]]
    args = dict(step.arguments or {})
    if list(args) == ["arg0"] and len(spec.param_names) == 1:  # positional, as parsed
        args = {spec.param_names[0]: args["arg0"]}
    renamed = step.model_copy(update={"tool": spec.name, "arguments": args})
    mended = _repaired(renamed, spec)
    if mended is not None:
        return mended
    try:
        spec.params.model_validate(args)
    except ValidationError:
        return None
    return ToolCall(tool=spec.name, arguments=args)


def intended_call(
    step: Step, earlier: Sequence[Step], task: Task, tools: Sequence[Any]
) -> ToolCall | None:
    """The valid call a misuse ``step`` evidently meant: for a tool that exists, the same call
    with misspelled argument names mended and the model's own values kept (a wrong value stays
    wrong: what the call then returns is a retrieval matter, not the interface's); else the
    gold call of that tool whose argument values the model could see (in the question or an
    earlier observation); for an unknown tool whose name is a real one misspelt, that tool
    with the model's own arguments (:func:`_renamed`); for another unknown tool, an
    unparseable action or a call nothing mends, the next gold call."""
    nxt = next_gold_call(earlier, task)
    spec = next((t for t in tools if t.name == step.tool), None)
    if step.kind is OutcomeKind.parse_error:
        return nxt
    if spec is None:  # an unknown tool: a misspelt name of a real one keeps its values
        return _renamed(step, tools) or nxt
    mended = _repaired(step, spec)
    if mended is not None:
        return mended
    seen = _norm(" ".join([task.question, *(s.observation or "" for s in earlier)]))
    made = {c for _, c in _calls(earlier)}
    same_tool = [c for path in gold_paths(task) for c in path if c.tool == spec.name]
    if nxt is not None and nxt.tool == spec.name:
        same_tool.insert(0, nxt)
    for call in same_tool:
        if call_key(call.tool, call.arguments) not in made and _visible(call, seen):
            return call
    return nxt


def clean_interface_prefix(
    traj: Trajectory, task: Task, tools: Sequence[Any]
) -> tuple[list[Step] | None, str]:
    """The steps before the first misuse step the model itself took (given steps excluded),
    then the call it meant in that step's place. Repeated on each replay, this replaces every
    misuse step in turn."""
    start = int(traj.extra.get("prefix_steps", 0) or 0)  # the steps a replay was given
    invalid = [i for i, _ in invalid_steps(traj, task.question) if i >= start]
    if not invalid:
        return None, "no misuse step"
    first = next(s for s in traj.steps if s.index == invalid[0])
    earlier = [given(s) for s in traj.steps if s.index < first.index and _kept(s)]
    call = intended_call(first, earlier, task, tools)
    if call is None:
        return None, "no valid call to put in its place"
    return [*earlier, gold_step(call, first.thought)], ""


# -- reading diagnosis.jsonl and the tables ---------------------------------------------------


def read_diagnoses(run_dir: Path) -> list[Diagnosis]:
    """The run's diagnoses, the last line per (task, epoch); a torn last line is skipped. A
    study's stored cell keeps them compressed (``diagnosis.jsonl.gz``)."""
    path = stored_file(Path(run_dir), DIAGNOSIS)
    if not path.exists():
        return []
    latest: dict[tuple[str, int], Diagnosis] = {}
    lines = read_stored_bytes(path).decode("utf-8").splitlines()
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            d = Diagnosis.model_validate_json(line)
        except ValidationError:
            if n == len(lines):
                break  # a line torn by a crash: the next diagnose writes it again
            raise
        latest[(d.task_id, d.epoch)] = d
    return list(latest.values())


def cause_counts(diagnoses: Iterable[Diagnosis], by: str) -> dict[tuple[str, str], Counter[str]]:
    """Causes counted per (system, value of ``by``): ``family``, ``level``, ``label`` (the
    R-Eval label: the cross-tab) or ``all``."""
    out: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for d in diagnoses:
        value = "all" if by == "all" else str(getattr(d, by) or "-")
        out[(d.system, value)][d.cause.value] += 1
    return dict(sorted(out.items()))


def cause_tables(diagnoses: Sequence[Diagnosis]) -> list[tuple[str, list[str], list[list[Any]]]]:
    """(title, header, rows) of each diagnosis table: causes per system, per family, per
    level, and the R-Eval label by cause cross-tab."""
    tables = []
    for by, title in (
        ("all", "Causes per system"),
        ("family", "Causes per task family"),
        ("level", "Causes per level"),
        ("label", "R-Eval label by cause"),
    ):
        rows = [
            [system, *([] if by == "all" else [value]), sum(c.values()), *(c[k] for k in CAUSES)]
            for (system, value), c in cause_counts(diagnoses, by).items()
        ]
        head = ["system", *([] if by == "all" else [by]), "n", *CAUSES]
        tables.append((title, head, rows))
    return tables


def replay_calls(diagnoses: Iterable[Diagnosis]) -> tuple[int, int]:
    """Model calls the replays made and how many the response cache answered."""
    ds = list(diagnoses)
    return sum(d.llm_calls for d in ds), sum(d.cache_hits for d in ds)


def diagnosis_json(d: Diagnosis) -> str:
    """One line of ``diagnosis.jsonl``."""
    return json.dumps(d.model_dump(mode="json"), ensure_ascii=False, separators=(",", ":"))
