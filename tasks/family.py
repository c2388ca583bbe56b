"""What a registered task family is: a generator of verified tasks over one environment."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from raleval.records import Level, Task, ToolCall


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


def execute_solution(env: Any, calls: list[ToolCall]) -> list[Any]:
    """Run a gold solution against ``env`` and return each call's structured result."""
    out = []
    for call in calls:
        result = env.call_sync(call.tool, call.arguments)
        if result.kind.value != "ok":
            raise SolutionMismatch(f"{call.tool} failed: {result.observation}")
        out.append(result.data)
    return out


# Builtins an answer expression may use (it is our own code, but keep it to pure functions so
# the same expression runs unchanged as the last line of a PAL program).
_EXPR_BUILTINS = {
    f.__name__: f
    for f in (len, max, min, sum, sorted, str, int, float, round, abs, any, all, next, set, list)
}


def evaluate_answer(expr: str, results: list[Any]) -> str:
    """Evaluate an answer expression over the solution's results ``r0, r1, ...``."""
    scope: dict[str, Any] = {f"r{i}": r for i, r in enumerate(results)}
    scope["__builtins__"] = _EXPR_BUILTINS
    return str(eval(expr, scope))  # the template tables are the only source of expressions


def reproduces(env: Any, calls: list[ToolCall], expr: str, gold: str) -> bool:
    """Execute a gold solution and check its answer expression gives the gold answer, and that
    every id a call uses was returned by an earlier call (an agent could have followed it)."""
    try:
        results = execute_solution(env, calls)
    except SolutionMismatch:
        return False
    seen = ""
    for call, result in zip(calls, results, strict=True):
        for key in ("person_id", "pub_id"):
            ident = call.arguments.get(key)
            if ident is not None and f'"{ident}"' not in seen:
                return False
        seen += json.dumps(result, default=str)
    try:
        return evaluate_answer(expr, results) == gold
    except Exception:  # an expression that breaks on these results: the task is not emitted
        return False
