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
    STATE_READERS,
    GoldPaths,
    call_key,
    call_keys,
    departure_point,
    gold_of,
    gold_paths,
    next_on_path,
    state_call,
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
    # at temperature 0: replays of one prefix answered differently, or a control answered
    # what the recorded run did not (the same request twice, two answers)
    nondeterministic: bool = False


class Diagnosis(_Record):
    """One line of ``diagnosis.jsonl``: an episode of the run, its cause and the replays."""

    # 2: controls, samples and the unstable cause; 3: reproductions and nondeterministic
    schema_version: int = 3
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
    # at temperature 0, the model answered one request two ways (its provider is not
    # deterministic): the episode is unstable, whatever an intervention did
    nondeterministic: bool = False
    created_at: datetime


def cause_of(
    correct: bool,
    outcomes: dict[str, Outcome],
    stopped: bool = False,
    nondeterministic: bool = False,
    budget_bound: bool = False,
) -> Cause:
    """The cause: ``not_needed`` for a correct episode; ``harness_limit`` when the episode
    was ``stopped`` by the wall clock or an intervention tried before the first that fixed it
    was undecided; ``unstable`` when the model answered one request two ways at temperature 0
    (``nondeterministic``, or an outcome's replays disagreed); else the first intervention (in
    :data:`INTERVENTIONS` order) that fixed it (its success rate beat its control's); else
    ``harness_limit`` when no gold path fits the step budget (``budget_bound``); else
    ``unstable`` when some replay, an intervention's or a control's, answered right; else
    ``beyond_reach``."""
    if correct:
        return Cause.not_needed
    if stopped:
        return Cause.harness_limit
    if nondeterministic:
        return Cause.unstable
    for name, cause in INTERVENTIONS.items():
        outcome = outcomes.get(name)
        if outcome is None:
            continue
        if outcome.nondeterministic:
            return Cause.unstable
        if outcome.fixed:
            return cause
        if outcome.undecided:
            return Cause.harness_limit
    if budget_bound:
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
    """(step index, key) of the steps' calls, keyed as call matching keys them (a state
    reader with the state it read: :func:`raleval.analysis.calls.call_keys`)."""
    made = [s for s in steps if s.tool is not None and s.tool not in FINISH_TOOLS]
    keys = call_keys([(s.tool, s.arguments) for s in made])
    return [(s.index, k) for s, k in zip(made, keys, strict=True)]


def reply_turn(step: Step) -> int | None:
    """The reply a step's call was one of, where its step recorded one (native tool calling
    records ``{"id", "turn", ...}`` as the step's ``raw_action``); None: a reply of its own."""
    try:
        data = json.loads(step.raw_action or "")
    except ValueError:
        return None
    turn = data.get("turn") if isinstance(data, dict) else None
    return turn if isinstance(turn, int) and not isinstance(turn, bool) else None


def reply_of(steps: Sequence[Step], index: int) -> list[Step]:
    """The steps of the reply that made step ``index`` (itself alone when it recorded none)."""
    at = next(i for i, s in enumerate(steps) if s.index == index)
    turn = reply_turn(steps[at])
    if turn is None:
        return [steps[at]]
    lo = at
    while lo > 0 and reply_turn(steps[lo - 1]) == turn:
        lo -= 1
    hi = at
    while hi + 1 < len(steps) and reply_turn(steps[hi + 1]) == turn:
        hi += 1
    return list(steps[lo : hi + 1])


def _pending(
    steps: Sequence[Step], task: Task
) -> tuple[int | None, list[tuple[int, tuple[bool, ...]]], list[tuple[int, tuple[str, Any]]]]:
    """Where ``steps`` first left every gold path (None: they never did), each path still
    followed there that has a call left, with which of its calls were made (the paths the
    steps went furthest along first, then the task's own order), and the steps' calls."""
    gold = gold_of(task)
    made = _calls(steps)
    index, alive = departure_point(made, gold)
    pending = [
        (-sum(done), p, done)
        for p, done in alive.items()
        if next_on_path(done, gold.orders[p]) is not None
    ]
    return index, [(p, done) for _n, p, done in sorted(pending, key=lambda x: x[:2])], made


def next_gold_call(steps: Sequence[Step], task: Task) -> ToolCall | None:
    """The gold call that comes next after ``steps``: on the gold path still followed that
    they went furthest along, its next call (independent calls in any order, as
    :func:`raleval.analysis.calls.departure_point` follows them); when the steps left every
    path, the next call of the path they were on then (the first path when none)."""
    _index, pending, _made = _pending(steps, task)
    if not pending:
        return None
    gold = gold_of(task)
    p, done = pending[0]
    j = next_on_path(done, gold.orders[p])
    return None if j is None else gold.paths[p][j]


def rest_of_path(
    gold: GoldPaths, p: int, done: Sequence[bool], made: Sequence[tuple[str, Any]]
) -> list[ToolCall]:
    """The calls of gold path ``p`` not ``done``, in the path's order, each call that reads
    state (a wiki ``Lookup``) after the gold call that sets the state it reads, when the
    calls ``made`` before left another state (another page open)."""
    setters = set(STATE_READERS.values())
    state = next((k for k in reversed(made) if k[0] in setters), None)
    out: list[ToolCall] = []
    for j, (call, key) in enumerate(zip(gold.paths[p], gold.keys[p], strict=True)):
        if done[j]:
            continue
        needed = state_call(key)
        if needed is not None and needed != state:
            setter = next((c for c, k in zip(gold.paths[p], gold.keys[p], strict=True)
                           if k == needed), None)  # fmt: skip
            if setter is not None:
                out.append(setter)
                state = needed
        out.append(call)
        if call.tool in setters:
            state = key
    return out


def _reply_start(steps: Sequence[Step], index: int) -> int:
    """The index of the first step of the reply that made step ``index``: a prefix is cut
    at reply boundaries, never between two calls of one reply (a state the episode never
    had)."""
    if not any(s.index == index for s in steps):
        return index
    return reply_of(steps, index)[0].index


def gold_retrieval_prefix(
    traj: Trajectory, task: Task, whole_path: bool = True
) -> tuple[list[Step] | None, str, int]:
    """The agent's steps before it first left every gold path (cut at the start of the reply
    that left it), then the rest of the gold path it followed furthest, as the agent's turns
    (``whole_path``; else only the next gold call, after the call that opens the page it
    reads). An agent that never left a path but stopped before its end gets the rest where it
    stopped. ``(None, why, 0)`` when there is nothing to put in place; else the prefix, "" and
    how many gold calls end it."""
    if not gold_paths(task):
        return None, "the task has no gold solution", 0
    index, _pending_paths, made = _pending(traj.steps, task)
    # stopped on a path: the rest from where it stopped; else from the reply that left it
    end = (made[-1][0] + 1) if made else 0
    index = end if index is None else _reply_start(traj.steps, index)
    before_steps = [s for s in traj.steps if s.index < index]
    _i, pending, before_made = _pending(before_steps, task)
    if not pending:
        return None, "the agent had made every call of a gold path", 0
    gold = gold_of(task)
    p, done = pending[0]
    calls = rest_of_path(gold, p, done, [k for _, k in before_made])
    if not whole_path:
        first = next(i for i, c in enumerate(calls) if c.tool not in STATE_READERS.values()
                     or i + 1 == len(calls) or calls[i + 1].tool not in STATE_READERS)  # fmt: skip
        calls = calls[: first + 1]
    before = [given(s) for s in before_steps if _kept(s)]
    return [*before, *(gold_step(c) for c in calls)], "", len(calls)


def fit_steps(prefix: list[Step], room: int, keep: int = 1) -> list[Step]:
    """``prefix`` cut to at most ``room`` steps, so that a replay starts with the model still
    within its step budget. Every step that repeats an earlier one (the same call with the same
    observation, a looping agent's retries) goes first, as it shows the model nothing new and
    the model may need more than one turn after the intervention; then the agent's oldest
    steps. The last ``keep`` steps (the intervention's) are always kept; a prefix within
    ``room`` is given unchanged."""
    if len(prefix) <= room:
        return list(prefix)
    keep = max(1, min(keep, len(prefix)))
    head, tail = list(prefix[:-keep]), list(prefix[-keep:])
    seen: set[tuple[Any, ...]] = set()
    repeats = []
    for i, step in enumerate(head):
        key = (*call_key(step.tool, step.arguments), step.observation)
        if key in seen and step.observation is not None:
            repeats.append(i)
        seen.add(key)
    drop = set(repeats)
    head = [s for i, s in enumerate(head) if i not in drop]
    while head and len(head) + len(tail) > max(room, 1):
        head.pop(0)
    return [*head, *tail]


def evidence_prefix(task: Task) -> tuple[list[Step] | None, str]:
    """The gold solution's calls, as the episode's first steps."""
    paths = gold_paths(task)
    if not paths or not paths[0]:
        return None, "the task has no gold solution"
    return [gold_step(c) for c in paths[0]], ""


def budget_bound(task: Task, room: int | None) -> bool:
    """Whether every gold path of ``task`` has more calls than ``room`` (the steps a prefix
    may take and leave the model a turn): the evidence cannot be gathered and then read
    within ``max_steps``, so a failure says nothing of the model."""
    paths = [p for p in gold_paths(task) if p]
    return room is not None and bool(paths) and min(len(p) for p in paths) > room


def reproduction_prefix(traj: Trajectory) -> list[Step] | None:
    """Every recorded call of an episode that answered, given as recorded: the model is
    asked again what it was last asked, so at temperature 0 a deterministic model gives the
    recorded answer again (None: the episode gave no answer, or took no step)."""
    if traj.answer is None:
        return None
    start = int(traj.extra.get("prefix_steps", 0) or 0)
    steps = [given(s) for s in traj.steps if _kept(s)]
    return steps if steps and not start else None


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


_CLOSERS = ("", '"', "}", '"}', "]}", '"]}', "}}", '"}}', "null}", '": null}')


def partial_json(raw: str) -> dict[str, Any] | None:
    """A JSON object cut short (a reply that stopped mid-call, a missing brace or quote),
    parsed as far as it goes: the shortest closing that makes it parse, its values kept as
    written (None when nothing makes it an object)."""
    text = raw.strip().rstrip(",")
    if len(text) > 4000 or not text.startswith("{"):
        return None
    for closing in _CLOSERS:
        try:
            value = json.loads(text + closing)
        except ValueError:
            continue
        return value if isinstance(value, dict) else None
    return None


def _valid(spec: Any, tool: str, args: dict[str, Any]) -> ToolCall | None:
    try:
        spec.params.model_validate(args)
    except ValidationError:
        return None
    return ToolCall(tool=tool, arguments=args)


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
    return _valid(spec, spec.name, args)


def _unmangled(step: Step, spec: Any) -> ToolCall | None:
    """Arguments that came as malformed JSON (kept raw, ``{"_raw": ...}``), parsed as far
    as they go, the model's values kept (names mended as :func:`_repaired` mends them)."""
    raw = (step.arguments or {}).get("_raw")
    if not isinstance(raw, str) or set(step.arguments or {}) != {"_raw"}:
        return None
    parsed = partial_json(raw)
    if not parsed:
        return None
    if set(parsed) <= set(spec.param_names):
        return _valid(spec, spec.name, parsed)
    return _repaired(step.model_copy(update={"arguments": parsed}), spec)


def reslotted(step: Step, task: Task) -> ToolCall | None:
    """A valid call whose values sit in the wrong slots (positional arguments swapped, or
    each value under the other's name): the gold call of the same tool that holds exactly
    the model's values, in other slots. None when no gold call does."""
    args = {k: v for k, v in (step.arguments or {}).items() if v is not None}
    if not step.tool or len(args) < 2:
        return None
    mine = sorted(_norm(str(v)) for v in args.values())
    for path in gold_paths(task):
        for call in path:
            theirs = {k: v for k, v in call.arguments.items() if v is not None}
            if (
                call.tool == step.tool
                and sorted(_norm(str(v)) for v in theirs.values()) == mine
                and call_key(call.tool, theirs) != call_key(step.tool, args)
            ):
                return call
    return None


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
    mended = _unmangled(renamed, spec) or _repaired(renamed, spec)
    if mended is not None:
        return mended
    return _valid(spec, spec.name, args)


def intended_call(
    step: Step, earlier: Sequence[Step], task: Task, tools: Sequence[Any]
) -> ToolCall | None:
    """The valid call a misuse ``step`` evidently meant: for a tool that exists, the same call
    with its arguments mended and the model's own values kept (a wrong value stays wrong:
    what the call then returns is a retrieval matter, not the interface's): malformed JSON
    parsed as far as it goes, misspelled argument names mended, values in each other's slots
    put back (:func:`reslotted`); else the gold call of that tool whose argument values the
    model could see (in the question or an earlier observation); for an unknown tool whose
    name is a real one misspelt, that tool with the model's own arguments
    (:func:`_renamed`); for another unknown tool, an unparseable action or a call nothing
    mends, the next gold call."""
    nxt = next_gold_call(earlier, task)
    spec = next((t for t in tools if t.name == step.tool), None)
    if step.kind is OutcomeKind.parse_error:
        return nxt
    if spec is None:  # an unknown tool: a misspelt name of a real one keeps its values
        return _renamed(step, tools) or nxt
    mended = _unmangled(step, spec) or _repaired(step, spec) or reslotted(step, task)
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
    if nxt is None:  # every gold call made (a made-up id beside the valid call in a reply):
        # the model meant the call it could make, again
        return next((c for c in same_tool if _visible(c, seen)), None)
    return nxt


def misuse_steps(traj: Trajectory, task: Task) -> list[int]:
    """Indices of the misuse steps the model itself took (given steps excluded): the
    taxonomy's invalid calls, and valid calls whose values sit in each other's slots
    (:func:`reslotted`)."""
    start = int(traj.extra.get("prefix_steps", 0) or 0)
    invalid = {i for i, _ in invalid_steps(traj, task.question) if i >= start}
    invalid |= {
        s.index
        for s in traj.steps
        if s.index >= start and s.tool not in FINISH_TOOLS and reslotted(s, task) is not None
    }
    return sorted(invalid)


def clean_interface_prefix(
    traj: Trajectory, task: Task, tools: Sequence[Any]
) -> tuple[list[Step] | None, str, int, list[Step]]:
    """The steps before the first misuse step the model itself took (given steps excluded),
    then the call it meant in that step's place. A misuse inside a reply of several calls is
    mended inside that reply: the reply's other calls are given as recorded around it, in
    the same turn, and its control is the whole reply as recorded. Repeated on each replay,
    this replaces every misuse step in turn. Returns the prefix (None: nothing to mend), why
    not, how many steps end it that are the intervention's, and what the control puts in
    their place."""
    invalid = misuse_steps(traj, task)
    if not invalid:
        return None, "no misuse step", 0, []
    first = next(s for s in traj.steps if s.index == invalid[0])
    reply = reply_of(traj.steps, first.index)
    start = reply[0].index
    earlier = [given(s) for s in traj.steps if s.index < first.index and _kept(s)]
    call = intended_call(first, earlier, task, tools)
    if call is None:
        return None, "no valid call to put in its place", 0, []
    mended = gold_step(call, first.thought)
    before = [given(s) for s in traj.steps if s.index < start and _kept(s)]
    if len(reply) == 1:
        return [*before, mended], "", 1, []
    # the mended call keeps its place, its turn and its id in the reply
    mended.raw_action = first.raw_action
    within = [mended if s.index == first.index else given(s) for s in reply]
    return [*before, *within], "", len(within), [given(s) for s in reply]


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
