"""What a registered task family is: a generator of verified tasks over one environment."""

from __future__ import annotations

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
