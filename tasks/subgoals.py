"""Subgoals of a gold solution, for AgentBoard's progress rate.

AgentBoard scores an episode by the share of its task's subgoals the agent has reached (the
progress rate, the best matching score over the episode's turns). raleval's gold solutions are
executable, so a subgoal needs no annotation: it is the information a gold call returns, written
down as its *key values*, the values of its result that the rest of the solution depends on:

- the arguments of later gold calls that it returned (an id, a title to look up next);
- the values the task's answer expression reads from it (a citation count compared, a list
  counted), or, for a task without one, the answer or evidence it shows.

Computed here, where tools may be called (the tasks layer), and stored with the task in
``metadata["subgoals"]``; ``raleval.analysis.progress`` credits them from a trajectory's
observations without calling anything.
"""

from __future__ import annotations

import json
from typing import Any

from raleval.families import SolutionMismatch, read_values_by_result, run_solution
from raleval.records import Task
from raleval.text import contains_tokens, normalize_answer

SUBGOALS = "subgoals"  # Task.metadata key
MAX_VALUES = 8  # key values kept per subgoal


def _shows(text: str, value: str) -> bool:
    return contains_tokens(normalize_answer(text).split(), normalize_answer(value).split())


def _scalars(value: Any) -> list[str]:
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in _scalars(v)]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _scalars(v)]
    if value is None or isinstance(value, bool):
        return []
    return [str(value)]


def key_values(task: Task, results: list[Any]) -> list[list[str]]:
    """Per gold call, its key values (see the module docstring), given each call's
    ``ToolResult``."""
    calls = list(task.solution or [])
    texts = [
        r.observation if r.data is None else json.dumps(r.data, default=str, ensure_ascii=False)
        for r in results
    ]
    question = normalize_answer(task.question)
    expr = task.metadata.get("answer_expr")
    read = read_values_by_result(expr, [r.data for r in results]) if expr else [[] for _ in calls]
    golds = [*(task.evidence or []), *[a for e in task.elements or [] for a in e], *task.answers]
    out: list[list[str]] = []
    for i, text in enumerate(texts):
        values: list[str] = []
        for later in calls[i + 1 :]:
            for v in _scalars(later.arguments):
                if len(v) >= 2 and v in text and normalize_answer(v) not in question:
                    values.append(v)
        values += read[i]
        if not expr:
            values += [g for g in golds if len(g.strip()) >= 2 and _shows(text, g)]
        unique = list(dict.fromkeys(v for v in values if normalize_answer(v)))
        out.append(unique[:MAX_VALUES])
    return out


def attach_subgoals(tasks: list[Task], env: Any) -> list[Task]:
    """``tasks`` with ``metadata["subgoals"]`` filled from their gold solutions, run through
    the interface each task's episodes see (a testbed's); a task whose solution does not run
    here is left without (its episodes get no progress rate)."""
    from raleval.tasks.testbeds import wrap_session

    for task in tasks:
        if not task.solution:
            continue
        try:
            session = wrap_session(env.session(task), task, env)
            results = run_solution(session, list(task.solution))
        except (SolutionMismatch, KeyError, ValueError):
            task.metadata.pop(SUBGOALS, None)
            continue
        task.metadata[SUBGOALS] = key_values(task, results)
    return tasks
