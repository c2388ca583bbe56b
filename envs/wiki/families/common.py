"""What the generated wiki families share: a question record, Search/Lookup calls, the
evidence check and the generate loop (execute the gold calls, keep what they support)."""

from __future__ import annotations

import json
import math
import random
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from raleval.answers import infer_answer_type
from raleval.families import SolutionMismatch, execute_solution
from raleval.records import Level, Task, TaskTags, ToolCall
from raleval.text import normalize_answer

MAX_ANSWER_SHARE = 0.1
MAX_CAPPED = 40


@dataclass
class ScholarWorld:
    """The scholar world as its encyclopedia pages present it (titles, selected publications,
    frequent collaborators, organization sizes), for the wiki task generators."""

    people: dict[int, dict[str, Any]]
    papers: dict[int, dict[str, Any]]
    orgs: dict[str, int]  # name -> members
    store: Any


@lru_cache(maxsize=4)
def scholar_world(size: str, seed: int) -> ScholarWorld:
    from raleval.envs.wiki.generated import paper_titles, person_titles, scholar_store

    store = scholar_store(size, seed)
    titles = person_titles(store)
    pages = paper_titles(store, titles)
    people: dict[int, dict[str, Any]] = {}
    for rowid, name, org, position, n_pubs, n_cit, education, interests, email in store.query(
        "SELECT p.rowid, p.name, o.name, p.position, p.n_pubs, p.n_citation, p.education, "
        "p.interests, p.email FROM persons p JOIN orgs o ON o.rowid = p.org ORDER BY p.rowid"
    ):
        _, phd_org, phd_year = (s.strip() for s in education.split(","))
        people[rowid] = {
            "title": titles[rowid],
            "name": name,
            "org": org,
            "position": position,
            "n_pubs": n_pubs,
            "n_cit": n_cit,
            "phd_org": phd_org,
            "phd_year": int(phd_year),
            "interests": json.loads(interests),
            "email": email,
            "pubs": [],
            "collab": [],
        }
    for person, title, year, venue, n_cit in store.query(
        "SELECT a.person, p.title, p.year, p.venue, p.n_citation FROM authorship a "
        "JOIN pubs p ON p.rowid = a.pub ORDER BY a.person, p.n_citation DESC, p.rowid"
    ):
        if len(people[person]["pubs"]) < 5:  # the page's "Selected publications"
            people[person]["pubs"].append(
                {"title": title, "year": year, "venue": venue, "cit": n_cit}
            )
    weights: dict[int, list[int]] = defaultdict(list)
    for a, b, w in store.query("SELECT a, b, weight FROM coauthors ORDER BY a, weight DESC, b"):
        if len(people[a]["collab"]) < 5:
            people[a]["collab"].append(b)
            weights[a].append(w)
    for rowid, ws in weights.items():
        people[rowid]["top_collab"] = ws[0] > ws[1] if len(ws) > 1 else True
    papers: dict[int, dict[str, Any]] = {}
    for rowid, title, year, venue, n_cit in store.query(
        "SELECT rowid, title, year, venue, n_citation FROM pubs ORDER BY rowid"
    ):
        papers[rowid] = {
            "page": pages[rowid],
            "title": title,
            "year": year,
            "venue": venue,
            "cit": n_cit,
            "authors": [],
        }
    for pub, person in store.query("SELECT pub, person FROM authorship ORDER BY pub, position"):
        papers[pub]["authors"].append(person)
    orgs = {
        name: n
        for name, n in store.query(
            "SELECT o.name, count(p.rowid) FROM orgs o LEFT JOIN persons p ON p.org = o.rowid "
            "GROUP BY o.rowid"
        )
    }
    return ScholarWorld(people, papers, orgs, store)


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


def _named_subjects(q: Question) -> set[str]:
    """The entities a question names and its gold run searches: its first call's argument,
    and every searched name the question spells out."""
    text = q.question.casefold()
    named = {repr(q.calls[0])} if q.calls else set()
    for call in q.calls:
        if call.tool == "Search":
            entity = str(call.arguments.get("entity", ""))
            if entity and entity.casefold() in text:
                named.add(repr(search(entity)))
    return named


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
    subjects: set[str] = set()
    # one answer may fill at most a tenth of its template's share (two at the least): in a
    # small world a big organisation answered a quarter of "where does ... work", which a
    # question-only classifier learned; yes/no answers are balanced by their makers instead
    cap = max(2, math.ceil(MAX_ANSWER_SHARE * n / len(makers)))
    answered: Counter[tuple[str, str]] = Counter()
    capped = 0  # answers refused in a row; a template whose answers are all used gives way
    skip = 0
    attempts = 0
    while len(tasks) < n and attempts < 30 * n + 100:
        attempts += 1
        maker = makers[(len(tasks) + skip) % len(makers)]
        q = maker(world, rng)
        if q is None or q.question in seen:
            continue
        answer_key = (maker.__name__, normalize_answer(q.answer))
        if answer_key[1] not in ("yes", "no") and answered[answer_key] >= cap:
            capped += 1
            if capped >= MAX_CAPPED:
                capped, skip = 0, skip + 1
            continue
        capped = 0
        # one question per subject while fresh subjects remain: a name asked twice lets a
        # question-only classifier copy the other question's answer from the other
        # question, counting every entity it names (a comparison names two: a prolific author
        # who wins every comparison he is in was learned from his name alone)
        named = _named_subjects(q)
        if named & subjects and attempts < 20 * n:
            continue
        try:
            observations = execute_solution(env.session(), q.calls)
        except SolutionMismatch:
            continue
        if not retrieved(observations, q.evidence or [q.answer]):
            continue
        seen.add(q.question)
        subjects |= named
        answered[answer_key] += 1
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
                answer_type=infer_answer_type(q.question, [q.answer], q.metric, q.qtype),
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
    from raleval.families import TaskFamily
    from raleval.registry import register_task_family, register_task_set

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
