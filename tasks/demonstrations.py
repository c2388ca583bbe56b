"""Demonstrations for loaded task files: an example pool set aside from the same file, each
item solved by executing the scripted oracle's solution.

A generated family's demonstrations come from its generator (``raleval.app.runner``). A loaded
dataset (HotpotQA, CRAG) has none, so ``raleval tasks load KIND FILE --out tasks.jsonl
--examples k`` sets ``k`` of the file's items aside in ``tasks.examples.jsonl``, disjoint from
the tasks written to ``tasks.jsonl``. A run of ``--tasks tasks.jsonl`` reads that pool, builds
each item's calls from its data (the oracle's ``built_solution``: HotpotQA's supporting titles,
CRAG's pages), runs them against the run's environment and keeps the items whose results show
the gold answer (the oracle's ``answer_from_results``): a demonstration never answers what its
own observations do not show.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from raleval.agents.scripted import NOT_RETURNED, answer_from_results, built_solution
from raleval.records import Task, ToolCall
from raleval.store import read_tasks

POOL_SUFFIX = ".examples.jsonl"


def pool_path(tasks_file: Path) -> Path:
    """Where a task file's example pool lives: ``tasks.jsonl`` -> ``tasks.examples.jsonl``."""
    return tasks_file.with_name(tasks_file.name.removesuffix(".jsonl") + POOL_SUFFIX)


def oracle_calls(task: Task) -> list[ToolCall]:
    """The calls the scripted oracle makes for ``task``: its gold solution or one built from
    its data; none when neither exists."""
    return list(task.solution or built_solution(task) or [])


def solve(task: Task, env: Any) -> Task | None:
    """``task`` with the oracle's calls as its solution, when running them on ``env`` (one
    session, as an episode has) shows its gold answer; else None.

    Trailing calls the answer does not need are dropped (HotpotQA's ``Lookup`` of an answer
    its searches already showed): a demonstration shows what reading the results takes.
    """
    calls = oracle_calls(task)
    if not calls:
        return None
    session = env.session(task)
    results = [session.call_sync(c.tool, c.arguments) for c in calls]
    if answer_from_results(task, results) == NOT_RETURNED:
        return None
    while len(calls) > 1 and answer_from_results(task, results[:-1]) != NOT_RETURNED:
        calls, results = calls[:-1], results[:-1]
    return task.model_copy(update={"solution": calls})


def set_aside(
    tasks: list[Task], k: int, env: Any = None, unanswerable: bool = False
) -> tuple[list[Task], list[Task]]:
    """The tasks left for testing and ``k`` set aside as the example pool.

    Only items the oracle can make calls for are set aside (with ``env``, only those it solves
    there), taken family by family in turn in the file's order, so that a file of several
    families (CRAG's question types) gives examples of as many as it can. Answerable items
    come first: a pool that shows declining teaches a small model to decline (DragonBall's
    unanswerable first line, set aside alone, had Qwen2.5-0.5B answer "无法回答" to every
    task); unanswerable ones are set aside only with ``unanswerable``, after the rest.
    """
    if k <= 0:
        return list(tasks), []
    solvable = [t for t in tasks if oracle_calls(t) and (env is None or solve(t, env) is not None)]
    answerable = [t for t in solvable if t.tags.answerable]
    chosen = _round_robin(answerable, k)
    if unanswerable and len(chosen) < k:
        chosen += _round_robin([t for t in solvable if not t.tags.answerable], k - len(chosen))
    taken = {id(t) for t in chosen}
    questions = {t.question for t in chosen}
    # a question the file holds twice must not be both tested and shown
    rest = [t for t in tasks if id(t) not in taken and t.question not in questions]
    return rest, chosen


def _round_robin(tasks: list[Task], k: int) -> list[Task]:
    """Up to ``k`` of ``tasks``, one family at a time in turn, each in the file's order."""
    queues: dict[str, list[Task]] = {}
    for t in tasks:
        queues.setdefault(t.family, []).append(t)
    chosen: list[Task] = []
    while len(chosen) < k and any(queues.values()):
        for queue in queues.values():
            if queue and len(chosen) < k:
                chosen.append(queue.pop(0))
    return chosen


def pool_demonstrations(
    spec: str, env: Any, tasks: list[Task], shots: int
) -> dict[str, list[Task]]:
    """``shots`` solved demonstrations for each family of ``tasks`` from the example pool of
    the task file ``spec`` ({} without one): the family's own items first, then the pool's
    others, in pool order; pool items whose question is under test are never shown."""
    if shots <= 0 or not spec or not Path(spec).is_file():
        return {}
    path = pool_path(Path(spec))
    if not path.is_file():
        return {}
    taken = {t.question for t in tasks}
    solved = [
        s for t in read_tasks(path) if t.question not in taken and (s := solve(t, env)) is not None
    ]
    if not solved:
        return {}
    out: dict[str, list[Task]] = {}
    for family in dict.fromkeys(t.family for t in tasks):
        own = [t for t in solved if t.family == family]
        others = [t for t in solved if t.family != family]
        out[family] = (own + others)[:shots]
    return out
