"""Call-level scores of an episode against its task's gold solution (BFCL scores the calls
themselves; raleval has a gold solution for every generated task).

- ``call_precision``: the share of the agent's tool calls that are gold calls;
- ``call_recall``: the share of gold calls the agent made;
- ``on_gold_path`` (1/0) and ``first_departure``: whether every call the agent made continues
  some gold path, else the index of the first step whose call leaves all of them;
- ``evidence_retrieved`` (1/0): a tool returned the answer or the task's evidence.

A call matches a gold call when the tool is the same and the arguments are equal once
normalised (case, surrounding and repeated whitespace, numbers by value, no null arguments),
and, for a tool that reads state an earlier call set (wiki's ``Lookup`` reads the page the
last ``Search`` opened), the state is the same (:func:`call_keys`). Matching is order-aware
where the solution needs order: a gold call with an argument the question does not contain
(a person_id found by an earlier call) only counts once every gold
call before it has been matched, and independent calls (a comparison's two look-ups) match
in any order, for the departure point too (:func:`available`). A task may list other valid paths in
``metadata["alt_solutions"]``; an episode is scored against the path that suits it best.
Pure: reads records only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from raleval.analysis.taxonomy import evidence_found
from raleval.records import Task, ToolCall, Trajectory

FINISH_TOOLS = {"Finish", "finish"}
_SPACE = re.compile(r"\s+")


def normalize_value(value: Any) -> Any:
    """An argument value in comparable form."""
    if isinstance(value, str):
        text = _SPACE.sub(" ", value).strip().casefold()
        try:
            return float(text) if text else text
        except ValueError:
            return text
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, (list, tuple)):
        return tuple(normalize_value(v) for v in value)
    if isinstance(value, dict):
        return normalize_arguments(value)
    return value


def normalize_arguments(arguments: dict[str, Any] | None) -> tuple[tuple[str, Any], ...]:
    """Arguments as a sorted, hashable tuple without null values."""
    return tuple(
        sorted((k, normalize_value(v)) for k, v in (arguments or {}).items() if v is not None)
    )


def call_key(tool: str | None, arguments: dict[str, Any] | None) -> tuple[str, Any]:
    return (tool or "", normalize_arguments(arguments))


# Tools whose result depends on state an earlier call set: wiki's ``Lookup`` reads the page the
# last ``Search`` opened, so ``Lookup[k]`` on one page is not ``Lookup[k]`` on another. A
# tool's name is what a trajectory records, so the rule is keyed by name.
STATE_READERS: dict[str, str] = {"Lookup": "Search"}
_STATE = "@state"  # the argument name under which a reader's key holds that state


def call_keys(calls: Sequence[tuple[str | None, dict[str, Any] | None]]) -> list[tuple[str, Any]]:
    """Each call's :func:`call_key`, a state reader's (:data:`STATE_READERS`) with the
    arguments of the last call before it that set its state: the key a call is matched by,
    for the agent's calls and the gold paths alike."""
    setters = set(STATE_READERS.values())
    state: dict[str, Any] = {}
    out = []
    for tool, arguments in calls:
        key = call_key(tool, arguments)
        setter = STATE_READERS.get(tool or "")
        if setter is not None:
            key = (key[0], (*key[1], (_STATE, state.get(setter))))
        elif tool in setters:
            state[tool] = key[1]
        out.append(key)
    return out


def state_call(key: tuple[str, Any]) -> tuple[str, Any] | None:
    """The key of the call that set the state a reader's ``key`` reads (None: not a reader,
    or no state was set)."""
    setter = STATE_READERS.get(key[0])
    if setter is None:
        return None
    held = dict(key[1]).get(_STATE)
    return None if held is None else (setter, held)


def agent_calls(traj: Trajectory) -> list[tuple[int, tuple[str, Any]]]:
    """(step index, normalised call) for every tool call the agent made, in order (a state
    reader's keyed with the state it read: :func:`call_keys`)."""
    steps = [s for s in traj.steps if s.tool is not None and s.tool not in FINISH_TOOLS]
    keys = call_keys([(s.tool, s.arguments) for s in steps])
    return [(s.index, k) for s, k in zip(steps, keys, strict=True)]


def gold_paths(task: Task) -> list[list[ToolCall]]:
    """The task's gold solution and any alternative paths it lists."""
    paths = [list(task.solution)] if task.solution else []
    for alt in task.metadata.get("alt_solutions") or []:
        paths.append([ToolCall.model_validate(c) for c in alt])
    return paths


@dataclass(frozen=True)
class GoldPaths:
    """A task's gold paths as call matching reads them: each path's calls, their normalised
    keys (:func:`call_key`) and which steps depend on earlier ones (:func:`needs_order`).
    Scoring builds it once per episode (:func:`gold_of`) and hands it to the call scores and
    the progress rate, which would otherwise each normalise the same calls again."""

    paths: list[list[ToolCall]]
    keys: list[list[tuple[str, Any]]]
    orders: list[list[bool]]


def gold_of(task: Task) -> GoldPaths:
    """``task``'s :class:`GoldPaths` (the solution first, then its alternatives)."""
    paths = gold_paths(task)
    return GoldPaths(
        paths,
        [call_keys([(c.tool, c.arguments) for c in p]) for p in paths],
        [needs_order(task.question, p) for p in paths],
    )


def needs_order(question: str, path: Sequence[ToolCall]) -> list[bool]:
    """Per gold call: whether it depends on earlier calls (an argument value that is not in the
    question must have come from a tool's observation)."""
    q = _SPACE.sub(" ", question).casefold()
    out = []
    for i, call in enumerate(path):
        values = [v for v in (call.arguments or {}).values() if v is not None]
        from_question = all(_SPACE.sub(" ", str(v)).strip().casefold() in q for v in values)
        out.append(i > 0 and not from_question)
    return out


def ready(done: Sequence[bool], ordered: Sequence[bool], j: int) -> bool:
    """Whether gold step ``j`` may count given which steps are ``done``: an independent step
    (its values are in the question) at any time, a dependent one only once every step before
    it is done. The one definition of order that call matching, the departure point (and so
    diagnosis) and the progress rate share."""
    return not ordered[j] or all(done[:j])


def available(done: Sequence[bool], ordered: Sequence[bool], j: int) -> bool:
    """Whether gold step ``j`` is still to be made and :func:`ready`."""
    return not done[j] and ready(done, ordered, j)


def _match_keys(
    calls: Sequence[tuple[str, Any]], keys: Sequence[tuple[str, Any]], ordered: Sequence[bool]
) -> int:
    """How many agent calls match a path's gold calls (its ``keys``; each at most once), in the
    agent's order, a dependent gold call only after every gold call before it."""
    matched = [False] * len(keys)
    for call in calls:
        j = _matching(call, keys, matched, ordered)
        if j is not None:
            matched[j] = True
    return sum(matched)


def _matching(
    call: tuple[str, Any], keys: Sequence[Any], done: Sequence[bool], ordered: Sequence[bool]
) -> int | None:
    return next(
        (j for j, key in enumerate(keys) if key == call and available(done, ordered, j)), None
    )


def next_on_path(done: Sequence[bool], ordered: Sequence[bool]) -> int | None:
    """The gold step an agent on a path would make next: the first one not done that
    :func:`available` allows (None when every step is done)."""
    return next((j for j in range(len(done)) if available(done, ordered, j)), None)


def departure_point(
    calls: Sequence[tuple[int, tuple[str, Any]]], gold: GoldPaths
) -> tuple[int | None, dict[int, tuple[bool, ...]]]:
    """Where the agent first leaves every gold path: the step index of the first call that
    continues none, or None when every call continues some path; and each path still followed
    just before it (or at the end) with which of its steps had been made. A call continues a
    path when it makes one of its steps :func:`available` allows (independent steps, such as a
    comparison's two look-ups, in any order), or repeats a step already made (a retry)."""
    keys, order = gold.keys, gold.orders
    alive = {i: (False,) * len(keys[i]) for i in range(len(keys))}  # path -> steps made
    for index, call in calls:
        nxt: dict[int, tuple[bool, ...]] = {}
        for p, done in alive.items():
            j = _matching(call, keys[p], done, order[p])
            if j is not None:
                nxt[p] = tuple(True if i == j else d for i, d in enumerate(done))
            elif any(d and k == call for d, k in zip(done, keys[p], strict=True)):
                nxt[p] = done  # a retry of a step already made
        if not nxt:
            return index, alive
        alive = nxt
    return None, alive


def call_scores(traj: Trajectory, task: Task, gold: GoldPaths | None = None) -> dict[str, float]:
    """The call-level scores of ``traj`` (empty when the task has no gold solution); ``gold``
    is ``gold_of(task)`` when the caller has it already."""
    gold = gold or gold_of(task)
    if not gold.paths:
        return {}
    made = agent_calls(traj)
    calls = [c for _, c in made]
    best: tuple[float, float, float] | None = None
    for path, keys, order in zip(gold.paths, gold.keys, gold.orders, strict=True):
        n = _match_keys(calls, keys, order)
        precision = n / len(calls) if calls else 0.0
        recall = n / len(path)
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        if best is None or (f1, recall) > (best[2], best[1]):
            best = (precision, recall, f1)
    assert best is not None
    scores = {
        "call_precision": best[0],
        "call_recall": best[1],
        "call_f1": best[2],
        # with the question, as the label reads it: a comparison's winner is one of the
        # names it asks about, so a page that names it did not show the answer
        "evidence_retrieved": float(
            evidence_found(traj, task.answers, task.evidence, task.question)
        ),
    }
    departure = departure_point(made, gold)[0]
    scores["on_gold_path"] = float(departure is None)
    if departure is not None:
        scores["first_departure"] = float(departure)
    return scores


CALL_SCORES = (
    "call_precision",
    "call_recall",
    "call_f1",
    "on_gold_path",
    "first_departure",
    "evidence_retrieved",
)
