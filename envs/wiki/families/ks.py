"""Wiki KS families over the generated encyclopedia: 1-1 (popular entities), 1-2 (rare ones).

Each template turns one relation of an entity page into a question. The gold solution is the
Search (and, where the fact is not in the abstract, Lookup) calls that surface the answer; the
generator runs them in a fresh session and keeps a task only if the last observation contains
the gold answer.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from raleval.answers import infer_answer_type
from raleval.envs.wiki.families.common import ScholarWorld, scholar_meta, scholar_world
from raleval.families import SolutionMismatch, TaskFamily, execute_solution
from raleval.records import Level, Task, TaskTags, ToolCall
from raleval.registry import register_task_family, register_task_set
from raleval.text import normalize_answer


@dataclass(frozen=True)
class _Template:
    question: str
    field: str
    lookup: str | None = None  # keyword for a Lookup after the Search, if the fact needs it


_PERSON_TEMPLATES = [
    _Template("Which organization is {name} affiliated with?", "org"),
    _Template("Where does the researcher {name} work?", "org"),
    _Template("What is the academic position of {name}?", "position"),
    _Template("How many papers has {name} published?", "n_pubs"),
    _Template("How many times have the papers of {name} been cited?", "n_citation"),
    _Template("From which institution did {name} receive a Ph.D.?", "phd_org", "Ph.D."),
    _Template("In which year did {name} receive a doctorate?", "phd_year", "Ph.D."),
    _Template("What is the email address of {name}?", "email", "Contact"),
]


def _people(world: ScholarWorld) -> list[dict[str, Any]]:
    """Scholars whose page title is their bare name (a namesake's question could not say
    which one is meant), with the facts the templates ask about, as page text shows them."""
    return [
        {
            "name": p["name"],
            "org": p["org"],
            "position": p["position"],
            "n_pubs": str(p["n_pubs"]),
            "n_citation": str(p["n_cit"]),
            "phd_org": p["phd_org"],
            "phd_year": str(p["phd_year"]),
            "email": p["email"],
            "popularity": world.store.popularity(p["n_cit"]),
        }
        for _, p in sorted(world.people.items())
        if p["title"] == p["name"]
    ]


def _generator(family: str, popular: bool):
    def generate(env: Any, n: int, seed: int) -> list[Task]:
        meta = scholar_meta(env, family)
        want = {"head"} if popular else {"tail"}
        people = _people(scholar_world(meta["size"], int(meta["seed"])))
        pool = [p for p in people if p["popularity"] in want]
        if popular and len(pool) < n:  # tiny worlds have few head scholars: add the torso
            pool += [p for p in people if p["popularity"] == "torso"]
        random.Random(f"{family}/{seed}").shuffle(pool)
        tasks: list[Task] = []
        for person in pool:
            if len(tasks) >= n:
                break
            template = _PERSON_TEMPLATES[len(tasks) % len(_PERSON_TEMPLATES)]
            gold = person[template.field]
            solution = [ToolCall(tool="Search", arguments={"entity": person["name"]})]
            if template.lookup:
                solution.append(ToolCall(tool="Lookup", arguments={"keyword": template.lookup}))
            try:
                observations = execute_solution(env.session(), solution)
            except SolutionMismatch:
                continue
            if normalize_answer(gold) not in normalize_answer(str(observations[-1])):
                continue
            tasks.append(
                Task(
                    id=f"wiki-{family}-s{seed}-{len(tasks):04d}",
                    domain="wiki",
                    level=Level.KS,
                    family=family,
                    question=template.question.format(name=person["name"]),
                    answers=[gold],
                    answer_type=infer_answer_type(template.question, [gold]),
                    tags=TaskTags(question_type="simple", popularity=person["popularity"]),
                    solution=solution,
                    metadata={"template": template.question, "relation": template.field},
                )
            )
        return tasks

    return generate


FAMILIES = {
    "1-1": TaskFamily(
        id="1-1",
        level=Level.KS,
        domain="wiki",
        env="wiki",
        metric="f1",
        description="Wiki KS: facts about popular (head) entities of the generated encyclopedia",
        generate=_generator("1-1", popular=True),
    ),
    "1-2": TaskFamily(
        id="1-2",
        level=Level.KS,
        domain="wiki",
        env="wiki",
        metric="f1",
        description="Wiki KS: facts about rare (tail) entities of the generated encyclopedia",
        generate=_generator("1-2", popular=False),
    ),
}

for _fid, _family in FAMILIES.items():
    register_task_family(_fid)(_family)

register_task_set("wiki-ks")(["1-1", "1-2"])
