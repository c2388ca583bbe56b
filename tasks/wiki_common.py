"""What the generated wiki families share: a question record, Search/Lookup calls, the
evidence check and the generate loop (execute the gold calls, keep what they support)."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from raleval.records import Level, Task, TaskTags, ToolCall
from raleval.tasks.family import SolutionMismatch, execute_solution
from raleval.tasks.metrics import normalize_answer


def search(x: str) -> ToolCall:
    return ToolCall(tool="Search", arguments={"entity": x})


def lookup(x: str) -> ToolCall:
    return ToolCall(tool="Lookup", arguments={"keyword": x})


@dataclass
class Question:
    question: str
    answer: str
    calls: list[ToolCall]
    evidence: list[str] | None = None  # None: the answer itself must be retrieved
    qtype: str = "bridge"
    metric: str = "f1"
    program: str | None = None


def retrieved(observations: list[Any], needles: list[str]) -> bool:
    """Whether every needle appears, token-aligned, in the normalised observations."""
    text = " " + " ".join(normalize_answer(str(o)) for o in observations) + " "
    return all(f" {normalize_answer(n)} " in text for n in needles if normalize_answer(n))


def scholar_meta(env: Any, family: str) -> dict[str, str]:
    meta = env.backend.store.meta
    if meta.get("world") != "scholar":
        raise ValueError(f"wiki family {family} needs -E backend=generated (a scholar world)")
    return meta


def generate_verified(
    env: Any,
    family: str,
    level: Level,
    world: Any,
    makers: list[Callable[[Any, random.Random], Question | None]],
    n: int,
    seed: int,
) -> list[Task]:
    """Up to ``n`` tasks, cycling through ``makers``; each kept only if its gold calls, run in a
    fresh session, retrieve its evidence (or its answer)."""
    rng = random.Random(f"{family}/{seed}")
    tasks: list[Task] = []
    seen: set[str] = set()
    attempts = 0
    while len(tasks) < n and attempts < 30 * n + 100:
        attempts += 1
        maker = makers[len(tasks) % len(makers)]
        q = maker(world, rng)
        if q is None or q.question in seen:
            continue
        try:
            observations = execute_solution(env.session(), q.calls)
        except SolutionMismatch:
            continue
        if not retrieved(observations, q.evidence or [q.answer]):
            continue
        seen.add(q.question)
        metadata: dict[str, Any] = {"template": maker.__name__.lstrip("_")}
        if q.program:
            metadata["program"] = q.program
        tasks.append(
            Task(
                id=f"wiki-{family}-s{seed}-{len(tasks):04d}",
                domain="wiki",
                level=level,
                family=family,
                question=q.question,
                answers=[q.answer],
                tags=TaskTags(question_type=q.qtype),
                solution=q.calls,
                evidence=q.evidence,
                metric=q.metric,
                metadata=metadata,
            )
        )
    return tasks


def register_wiki_families(
    set_name: str,
    level: Level,
    descriptions: dict[str, str],
    makers: dict[str, list[Callable[[Any, random.Random], Question | None]]],
    world: Callable[[dict[str, str]], Any],
) -> dict[str, Any]:
    """Register one family per description (and a set of them all); ``world(store meta)``
    gives the data the family's makers draw from."""
    from raleval.registry import register_task_family, register_task_set
    from raleval.tasks.family import TaskFamily

    def generator(family: str):
        def generate(env: Any, n: int, seed: int) -> list[Task]:
            w = world(scholar_meta(env, family))
            return generate_verified(env, family, level, w, makers[family], n, seed)

        return generate

    families = {
        fid: TaskFamily(
            id=fid,
            level=level,
            domain="wiki",
            env="wiki",
            metric="f1",
            description=desc,
            generate=generator(fid),
        )
        for fid, desc in descriptions.items()
    }
    for fid, family in families.items():
        register_task_family(fid)(family)
    register_task_set(set_name)(list(families))
    return families
