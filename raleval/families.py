"""What a registered task family is: a generator of verified tasks over one environment."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from raleval.records import Level, Task, ToolCall
from raleval.text import contains_tokens, normalize_answer


@dataclass(frozen=True)
class TaskFamily:
    """A stable family id (``1-3``), its level, domain, metric and generator."""

    id: str
    level: Level
    domain: str
    env: str
    metric: str
    description: str
    generate: Callable[[Any, int, int], list[Task]]  # (environment, n, seed) -> tasks


class SolutionMismatch(RuntimeError):
    """A gold solution did not reproduce its gold answer; the task is not emitted."""


def run_solution(env: Any, calls: list[ToolCall]) -> list[Any]:
    """Run a gold solution against ``env`` and return each call's ``ToolResult``."""
    out = []
    for call in calls:
        result = env.call_sync(call.tool, call.arguments)
        if result.kind.value != "ok":
            raise SolutionMismatch(f"{call.tool} failed: {result.observation}")
        out.append(result)
    return out


def execute_solution(env: Any, calls: list[ToolCall]) -> list[Any]:
    """Run a gold solution against ``env`` and return each call's structured result."""
    return [result.data for result in run_solution(env, calls)]


# Builtins an answer expression may use (it is our own code, but keep it to pure functions so
# the same expression runs unchanged as the last line of a PAL program).
_EXPR_BUILTINS = {
    f.__name__: f
    for f in (
        len,
        max,
        min,
        sum,
        sorted,
        str,
        int,
        float,
        round,
        abs,
        any,
        all,
        next,
        set,
        list,
        enumerate,
    )
}


def evaluate_answer(expr: str, results: list[Any]) -> str:
    """Evaluate an answer expression over the solution's results ``r0, r1, ...``."""
    scope: dict[str, Any] = {f"r{i}": r for i, r in enumerate(results)}
    scope["__builtins__"] = _EXPR_BUILTINS
    return str(eval(expr, scope))  # the template tables are the only source of expressions


def answer_of(expr: str, results: list[Any]) -> str | None:
    """The expression's answer over ``results``, or None where it breaks on them."""
    try:
        return evaluate_answer(expr, results)
    except Exception:  # our own expressions, but a result may lack what they read
        return None


def reproduces(env: Any, calls: list[ToolCall], expr: str, gold: str) -> bool:
    """Execute a gold solution and check its answer expression gives the gold answer, and that
    every id a call uses was returned by an earlier call (an agent could have followed it)."""
    return verified_results(env, calls, expr, gold) is not None


def verified_results(env: Any, calls: list[ToolCall], expr: str, gold: str) -> list[Any] | None:
    """The results of a gold solution that reproduces its answer (see :func:`reproduces`)."""
    try:
        results = execute_solution(env, calls)
    except SolutionMismatch:
        return None
    seen = ""
    for call, result in zip(calls, results, strict=True):
        for key in ("person_id", "pub_id"):
            ident = call.arguments.get(key)
            if ident is not None and f'"{ident}"' not in seen:
                return None
        seen += json.dumps(result, default=str)
    # an expression that breaks on these results: the task is not emitted
    return results if answer_of(expr, results) == gold else None


@dataclass(frozen=True)
class _Key:
    """A key an expression iterated over: read only if no value was (``sorted(r1)[-5:]``
    walks every date of a price history to pick five closes; the closes are what it read).
    ``looked_up``: a key it subscripted (``r1['2024-07-26 00:00:00 EST']``), the way to a
    value rather than a value."""

    key: Any
    looked_up: bool = False


class _ReadDict(dict):
    """A result dict that notes every value an expression reads from it."""

    def __init__(self, data: dict[Any, Any], seen: list[Any]) -> None:
        super().__init__(data)
        self._seen = seen

    def __getitem__(self, key: Any) -> Any:
        self._seen.append(_Key(key, looked_up=True))
        return _reading(super().__getitem__(key), self._seen)

    def get(self, key: Any, default: Any = None) -> Any:
        return self[key] if key in self else default  # noqa: SIM401 (self.get is this)

    def __len__(self) -> int:  # counting reads what is counted
        self._seen.extend(v for v in super().values() if not isinstance(v, (dict, list)))
        return super().__len__()

    def __iter__(self) -> Any:  # iterating reads the keys (dates of a price history)
        for key in super().__iter__():
            self._seen.append(_Key(key))
            yield key

    def values(self) -> list[Any]:  # type: ignore[override]
        return [self[k] for k in super().__iter__()]

    def items(self) -> list[tuple[Any, Any]]:  # type: ignore[override]
        return [(k, self[k]) for k in super().__iter__()]


class _ReadList(list):
    def __init__(self, data: list[Any], seen: list[Any]) -> None:
        super().__init__(data)
        self._seen = seen

    def __getitem__(self, index: Any) -> Any:
        value = super().__getitem__(index)
        if isinstance(index, slice):
            return _ReadList(value, self._seen)
        return _reading(value, self._seen)

    def __len__(self) -> int:  # counting reads what is counted
        self._seen.extend(v for v in list.__iter__(self) if not isinstance(v, (dict, list)))
        return super().__len__()

    def __iter__(self) -> Any:
        for i in range(super().__len__()):
            yield self[i]


def _reading(value: Any, seen: list[Any]) -> Any:
    if isinstance(value, dict):
        return _ReadDict(value, seen)
    if isinstance(value, list):
        return _ReadList(value, seen)
    seen.append(value)
    return value


def read_values(
    expr: str, results: list[Any], limit: int = 12, *, keys_looked_up: bool = False
) -> list[str]:
    """The values of the results that an answer expression reads, as text: what a tool must
    have returned for a computed answer (a sum, a comparison) to count as grounded. With
    ``keys_looked_up``, the keys it subscripted on the way too (a closing price is found
    by its date: a reader who cannot see the date cannot find the price)."""
    seen: list[Any] = []
    wrapped = []
    for i, r in enumerate(results):
        if isinstance(r, (dict, list)):
            wrapped.append(_reading(r, seen))
        else:  # a bare value is read if the expression names it
            wrapped.append(r)
            if re.search(rf"\br{i}\b", expr):
                seen.append(r)
    evaluate_answer(expr, wrapped)
    values = _texts(v for v in seen if not isinstance(v, _Key))
    keys = _texts(v.key for v in seen if isinstance(v, _Key) and not v.looked_up)
    path = _texts(v.key for v in seen if isinstance(v, _Key) and v.looked_up and keys_looked_up)
    out: list[str] = []
    for text in [*(values or keys), *path]:
        if text not in out:
            out.append(text)
    return out[:limit]


def _texts(values: Any) -> list[str]:
    """Values as the text a reader looks for: no booleans or nulls, nothing under 2 chars."""
    return [
        str(v) for v in values if not isinstance(v, bool) and v is not None and len(str(v)) >= 2
    ]


def grounding_evidence(expr: str, results: list[Any], answer: str) -> list[str] | None:
    """What must appear in an observation for a right ``answer`` to count as retrieved: None
    when the answer itself appears in the results; else the values the expression reads
    (a computed sum, a count, a yes/no comparison, a joined list)."""
    # the taxonomy's own test: the normalised answer, token-aligned, in a result
    shown = normalize_answer(json.dumps(results, ensure_ascii=False, default=str)).split()
    yes_no = answer.strip().lower() in ("yes", "no")
    if not yes_no and contains_tokens(shown, normalize_answer(answer).split()):
        return None
    return read_values(expr, results) or None


def read_values_by_result(expr: str, results: list[Any], limit: int = 8) -> list[list[str]]:
    """Per result, the values of it an answer expression reads, as text (see
    :func:`read_values`); empty lists where the expression breaks on ``results``."""
    seen: list[list[Any]] = [[] for _ in results]
    wrapped = []
    for i, r in enumerate(results):
        if isinstance(r, (dict, list)):
            wrapped.append(_reading(r, seen[i]))
        else:
            wrapped.append(r)
            if re.search(rf"\br{i}\b", expr):
                seen[i].append(r)
    try:
        evaluate_answer(expr, wrapped)
    except Exception:  # a result lacks what the expression reads: nothing to credit by it
        return [[] for _ in results]
    out: list[list[str]] = []
    for values in seen:
        texts: list[str] = []
        for value in values:
            if isinstance(value, bool) or value is None or isinstance(value, _Key):
                continue  # the keys it walked or looked up by are the way, not what it read
            text = str(value)
            if len(text) >= 2 and text not in texts:
                texts.append(text)
        out.append(texts[:limit])
    return out


class EvidenceMismatch(ValueError):
    """A task's evidence is not what its gold solution's calls return from its world."""


def _within(value: str, read: str) -> bool:
    """``value`` is what was read: the same number ("134.0" and "134"), or its words within
    it (a PhD institution split off "Ph.D., Fakol Academy of Sciences, 1986")."""
    try:
        return float(value) == float(read)
    except ValueError:
        return contains_tokens(normalize_answer(read).split(), normalize_answer(value).split())


def evidence_not_returned(task: Task, session: Any) -> list[str]:
    """The evidence values of ``task`` that its gold solution, run on ``session`` (the
    environment an episode of it talks to: ``env.session(task)``, at the task's own date),
    does not return; [] for a task without evidence or solution (see
    :func:`evidence_missing`). A gold call that fails returns nothing: every value is named."""
    if not task.evidence or not task.solution:
        return []
    try:
        results = run_solution(session, task.solution)
    except SolutionMismatch:
        return list(task.evidence)
    return evidence_missing(task, [r.observation for r in results], [r.data for r in results])


def evidence_missing(task: Task, observations: list[str], data: list[Any]) -> list[str]:
    """The evidence values of ``task`` that its gold calls' answers (``observations`` and
    their structured ``data``, one per call) do not hold. With an answer expression each
    value must be one it read, or within a text it read (a closing price on the asked date,
    not any price of the history; a PhD institution split off an education line); without
    one, shown."""
    expr = task.metadata.get("answer_expr")
    read: list[str] = []
    broke = False
    if isinstance(expr, str) and all(d is not None for d in data):
        try:
            read = read_values(expr, data, limit=1000)
        except Exception:  # the results lack what the expression reads: it read no number
            broke = True
    text = " ".join(
        f"{o} {json.dumps(d, ensure_ascii=False, default=str)}"
        for o, d in zip(observations, data, strict=True)
    )
    shown = normalize_answer(text).split()

    def returned(value: str) -> bool:
        if any(_within(value, v) for v in read):
            return True
        # a number must be one the expression read: a price somewhere in a year of prices
        # proves nothing; a name or title the calls show is returned (a paper of the year
        # asked, beside the years a count reads)
        if (read or broke) and _is_number(value):
            return False
        return contains_tokens(shown, normalize_answer(value).split())

    return [e for e in task.evidence or [] if not returned(e)]


def _is_number(text: str) -> bool:
    try:
        float(text.replace(",", ""))
    except ValueError:
        return False
    return True


def check_evidence(tasks: list[Task], session_of: Callable[[Task], Any]) -> None:
    """Refuse ``tasks`` when any one's evidence is not what its world returns (each run on
    ``session_of(task)``, the session its episode would talk to): an
    :class:`EvidenceMismatch` naming each such task and its values."""
    bad = [(t.id, miss) for t in tasks if (miss := evidence_not_returned(t, session_of(t)))]
    if bad:
        shown = "; ".join(f"{tid}: {', '.join(map(repr, miss))}" for tid, miss in bad[:10])
        more = f" (and {len(bad) - 10} more)" if len(bad) > 10 else ""
        raise EvidenceMismatch(
            f"{len(bad)} task(s) name evidence their gold solution does not return from "
            f"this world: {shown}{more}"
        )
