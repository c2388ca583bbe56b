"""Scholar task families (SoAy-style), generated from the scholar world with executed solutions."""

from __future__ import annotations

from typing import Any

from raleval.records import Level, Task, TaskTags, ToolCall
from raleval.registry import register_task_family, register_task_set
from raleval.tasks.family import SolutionMismatch, TaskFamily, execute_solution

# (question template, answer field of the searchPerson hit)
_KS_TEMPLATES: list[tuple[str, str]] = [
    ("How many citations does {name} of {org} have?", "num_citation"),
    ("What is the total citation count of {name} from {org}?", "num_citation"),
    ("How many papers has {name} of {org} published?", "num_pubs"),
    ("What is the number of publications of {name} at {org}?", "num_pubs"),
    ("Which organization is {name}, who works on {interest}, affiliated with?", "organization"),
    ("Where does {name}, a researcher in {interest}, work?", "organization"),
]


def _answer_text(value: Any) -> str:
    return ", ".join(value) if isinstance(value, list) else str(value)


def _generate_ks(env: Any, n: int, seed: int) -> list[Task]:
    """1-3: single-API facts from searchPerson (citation count, paper count, affiliation)."""
    store = env.store
    tasks: list[Task] = []
    candidates = store.sample_person_rowids(max(4 * n, 50), f"1-3/{seed}")
    people = store.persons_by_rowid(candidates)
    for rowid in candidates:
        if len(tasks) >= n:
            break
        p = people[rowid]
        template, field = _KS_TEMPLATES[len(tasks) % len(_KS_TEMPLATES)]
        org, interest = p["organization"], p["interests"][0]
        if "{org}" in template:
            args = {"name": p["name"], "organization": org}
        else:
            args = {"name": p["name"], "interest": interest}
        solution = [ToolCall(tool="searchPerson", arguments=args)]
        try:
            (hits,) = execute_solution(env, solution)
        except SolutionMismatch:
            continue
        # The question must identify exactly this person: skip it if the search ranks
        # someone else first (an unresolvable namesake).
        if not hits or hits[0]["person_id"] != p["id"]:
            continue
        gold = _answer_text(hits[0][field])
        truth = {"num_citation": p["n_citation"], "num_pubs": p["n_pubs"], "organization": org}
        if gold != _answer_text(truth[field]):
            continue
        tasks.append(
            Task(
                id=f"scholar-1-3-s{seed}-{len(tasks):04d}",
                domain="scholar",
                level=Level.KS,
                family="1-3",
                question=template.format(name=p["name"], org=org, interest=interest),
                answers=[gold],
                tags=TaskTags(question_type="simple", popularity=store.popularity(p["n_citation"])),
                solution=solution,
                # How the answer follows from the solution's results (r0, r1, ...): used to
                # render k-shot PAL examples that compute their answer.
                metadata={
                    "template": template,
                    "person_id": p["id"],
                    "answer_expr": f"r0[0][{field!r}]",
                },
            )
        )
    return tasks


FAMILIES: dict[str, TaskFamily] = {
    "1-3": TaskFamily(
        id="1-3",
        level=Level.KS,
        domain="scholar",
        env="scholar",
        metric="f1",
        description="Scholar KS: single-API facts (citations, paper count, affiliation)",
        generate=_generate_ks,
    ),
}

for _fid, _family in FAMILIES.items():
    register_task_family(_fid)(_family)


register_task_set("scholar-ks")(["1-3"])
