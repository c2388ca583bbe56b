"""Wiki long-form families over the generated encyclopedia (CRUD-RAG's four uses, RAGEval's
key points), registered on import as the set ``wiki-longform`` (not part of ``wiki``).

- ``wiki-lf-profile`` (KS, read): a profile of a scholar from their page (Search, then Lookup
  of the education sentence).
- ``wiki-lf-summary`` (KU, delete: multi-document summarisation): a scholar, their most cited
  paper and their organization, from three pages.
- ``wiki-lf-continue`` (KA, create): the continuation of a scholar's page from its opening
  sentence; the key points come only from the rest of the page, which is the reference.
- ``wiki-lf-correct`` (KA, update): a statement about a scholar with one or two planted errors
  (another scholar's value for the slot) to check and correct with the tools.

Key points are typed facts of the world as its pages state them, with cues and, for the
position, the world's positions as choices. The gold calls run in a fresh session; a task is
emitted only if :func:`raleval.longform.rejection` finds nothing (the reference and the
executing oracle's answer cover every key point, the question gives none away).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from raleval.answers import AnswerType
from raleval.envs.wiki.families.common import (
    ScholarWorld,
    lookup,
    scholar_meta,
    scholar_world,
    search,
)
from raleval.families import SolutionMismatch, TaskFamily, run_solution
from raleval.longform import MAX_POINTS, rejection, unstated
from raleval.records import KeyPoint, Level, Task, TaskTags, ToolCall
from raleval.registry import register_task_family, register_task_set

PHD_CUES = ["Ph.D", "PhD", "doctorate", "doctoral"]
PAPERS_CUES = ["paper", "publication", "published"]
CITATION_CUES = ["cit"]
# "is a"/"is an" (prefix "a"): "X is an Associate Professor" names the position with no word
# for it, and must contradict "Assistant Professor"
POSITION_CUES = ["position", "is a", "works as", "rank"]


def _positions(world: ScholarWorld) -> list[str]:
    """The world's positions: the choices of a position key point."""
    return sorted({p["position"] for p in world.people.values()})


# --- key points ----------------------------------------------------------------------------------


def _position(p: dict[str, Any], choices: list[str], shown: str | None = None) -> KeyPoint:
    return KeyPoint(
        slot="position",
        kind="entity",
        value=p["position"],
        cues=POSITION_CUES,
        choices=choices,
        statement=f"{p['name']} holds the position of {shown or p['position']}.",
    )


def _orgs(world: ScholarWorld) -> list[str]:
    """The world's organizations: the choices of an organization or Ph.D. institution."""
    return sorted(world.orgs)


def _venues(world: ScholarWorld) -> list[str]:
    """The world's venues: the choices of a venue key point."""
    key = id(world)
    if key not in _VENUES:
        _VENUES[key] = sorted({x["venue"] for x in world.papers.values() if x["venue"]})
    return _VENUES[key]


_VENUES: dict[int, list[str]] = {}


def _org(p: dict[str, Any], orgs: list[str]) -> KeyPoint:
    return KeyPoint(
        slot="organization",
        kind="entity",
        value=p["org"],
        cues=["works at", "affiliat", "organization"],
        choices=orgs,
        statement=f"{p['name']} works at {p['org']}.",
    )


def _n_pubs(p: dict[str, Any], shown: int | None = None) -> KeyPoint:
    return KeyPoint(
        slot="papers",
        kind="number",
        value=str(p["n_pubs"]),
        cues=PAPERS_CUES,
        statement=f"{p['name']} has published {p['n_pubs'] if shown is None else shown} papers.",
    )


def _n_cit(p: dict[str, Any], shown: int | None = None) -> KeyPoint:
    value = p["n_cit"] if shown is None else shown
    return KeyPoint(
        slot="citations",
        kind="number",
        value=str(p["n_cit"]),
        cues=CITATION_CUES,
        statement=f"The papers of {p['name']} have been cited {value} times.",
    )


def _phd_org(p: dict[str, Any], orgs: list[str]) -> KeyPoint:
    return KeyPoint(
        slot="phd_institution",
        kind="entity",
        value=p["phd_org"],
        cues=PHD_CUES,
        # the scholar's own organization is left out: an answer naming where they work in the
        # sentence about their doctorate does not claim they took it there
        choices=[o for o in orgs if o != p["org"] or o == p["phd_org"]],
        statement=f"{p['name']} received a Ph.D. from {p['phd_org']}.",
    )


def _phd_year(p: dict[str, Any], shown: int | None = None) -> KeyPoint:
    value = p["phd_year"] if shown is None else shown
    return KeyPoint(
        slot="phd_year",
        kind="year",
        value=str(p["phd_year"]),
        cues=PHD_CUES,
        statement=f"{p['name']} received a Ph.D. in {value}.",
    )


def _interest(p: dict[str, Any], i: int) -> KeyPoint:
    return KeyPoint(
        slot="interest",
        kind="member",
        value=p["interests"][i],
        cues=["interest", "works on", "working on"],
        statement=f"{p['name']} works on {p['interests'][i]}.",
    )


def _top(p: dict[str, Any]) -> dict[str, Any] | None:
    """The most cited of the page's selected publications, if strictly most cited."""
    pubs = p["pubs"]
    if not pubs or (len(pubs) > 1 and pubs[1]["cit"] == pubs[0]["cit"]):
        return None
    return pubs[0]


def _top_title(p: dict[str, Any], top: dict[str, Any]) -> KeyPoint:
    return KeyPoint(
        slot="top_paper",
        kind="entity",
        value=top["title"],
        cues=["most cited paper"],
        # the titles the scholar's page lists, the ones an agent reading it can confuse
        choices=[x["title"] for x in p["pubs"]],
        statement=f"The most cited paper of {p['name']} is {top['title']}.",
    )


def _top_year(p: dict[str, Any], top: dict[str, Any]) -> KeyPoint:
    return KeyPoint(
        slot="top_paper_year",
        kind="year",
        value=str(top["year"]),
        cues=["published in", "appeared in", "paper from"],
        statement=f"The most cited paper of {p['name']} was published in {top['year']}.",
    )


def _top_venue(p: dict[str, Any], top: dict[str, Any], venues: list[str]) -> KeyPoint:
    return KeyPoint(
        slot="top_paper_venue",
        kind="entity",
        value=top["venue"],
        cues=["venue", "appeared in", "published in"],
        choices=venues,
        statement=f"The most cited paper of {p['name']} appeared in {top['venue']}.",
    )


def _top_cit(top: dict[str, Any]) -> KeyPoint:
    return KeyPoint(
        slot="top_paper_citations",
        kind="number",
        value=str(top["cit"]),
        cues=CITATION_CUES,
        statement=f"That paper has been cited {top['cit']} times.",
    )


# --- the four families ---------------------------------------------------------------------------


@dataclass
class _Draft:
    """A task before its checks (see :func:`_build`)."""

    template: str
    question: str
    calls: list[ToolCall]
    points: list[KeyPoint]
    reference: str | None = None  # None: the statements of the key points, joined
    planted: tuple[int, ...] = ()
    metadata: dict[str, Any] | None = None


Maker = Callable[[ScholarWorld, dict[str, Any], list[str], random.Random, Any], "_Draft | None"]

PROFILE = (
    "Write a short profile of {name} from the encyclopedia: their organization and position, "
    "doctorate (institution and year), how many papers they have published and how often "
    "those have been cited, and their first two research interests."
)


def _profile(w: ScholarWorld, p: dict[str, Any], choices: list[str], rng: random.Random, env):
    if len(p["interests"]) < 2:
        return None
    return _Draft(
        PROFILE,
        PROFILE.format(name=p["name"]),
        [search(p["name"]), lookup("Ph.D.")],
        [
            _org(p, _orgs(w)),
            _position(p, choices),
            _phd_org(p, _orgs(w)),
            _phd_year(p),
            _n_pubs(p),
            _n_cit(p),
            _interest(p, 0),
            _interest(p, 1),
        ],
    )


SUMMARY = (
    "Summarise what the encyclopedia says about {name}, their most cited paper and their "
    "organization: the position they hold and where, the paper's title, year, venue and "
    "citations, and how many researchers the organization has."
)


def _summary(w: ScholarWorld, p: dict[str, Any], choices: list[str], rng: random.Random, env):
    top = _top(p)
    if top is None:
        return None
    page = next(
        (x["page"] for x in w.papers.values() if x["title"] == top["title"]), None
    )  # the paper's page must go by its bare title: the agent reads it off the person's page
    if page != top["title"] or p["org"] not in w.orgs:
        return None
    size = KeyPoint(
        slot="organization_size",
        kind="number",
        value=str(w.orgs[p["org"]]),
        cues=["researchers", "members"],
        statement=f"{p['org']} has {w.orgs[p['org']]} researchers.",
    )
    return _Draft(
        SUMMARY,
        SUMMARY.format(name=p["name"]),
        [
            search(p["name"]),
            lookup("Selected publications"),
            search(top["title"]),
            search(p["org"]),
        ],
        [
            _position(p, choices),
            _org(p, _orgs(w)),
            _top_title(p, top),
            _top_year(p, top),
            _top_venue(p, top, _venues(w)),
            _top_cit(top),
            size,
        ],
    )


PAGE_LIST_CUE = "selected publications"


def _with_cue(point: KeyPoint, cue: str) -> KeyPoint:
    return point.model_copy(update={"cues": [*point.cues, cue]})


CONTINUE = (
    'Here is the opening sentence of the encyclopedia article on {name}: "{opening}" '
    "Continue the article with the tools: publication record, education, selected "
    "publications and frequent collaborators."
)


def _continue(w: ScholarWorld, p: dict[str, Any], choices: list[str], rng: random.Random, env):
    top = _top(p)
    page = env.backend.store.get(p["title"])
    if top is None or not p["collab"] or page is None:
        return None
    opening, remainder = page.sentences[0], " ".join(page.sentences[1:])
    collaborator = w.people[p["collab"][0]]["title"]
    return _Draft(
        CONTINUE,
        CONTINUE.format(name=p["name"], opening=opening),
        [
            search(p["name"]),
            lookup("Ph.D."),
            lookup("Selected publications"),
            lookup("Frequent collaborators"),
        ],
        [
            _n_pubs(p),
            _n_cit(p),
            _phd_org(p, _orgs(w)),
            _phd_year(p),
            # the page lists its selected publications most cited first: under that heading
            # the first title and its venue are the most cited paper's (the reference is the
            # page, whose words must state the fact with its cue)
            _with_cue(_top_title(p, top), PAGE_LIST_CUE),
            _with_cue(_top_venue(p, top, _venues(w)), PAGE_LIST_CUE),
            KeyPoint(
                slot="collaborator",
                kind="member",
                value=collaborator,
                cues=["collaborat", "works with", "coauthor"],
                statement=f"{p['name']} often works with {collaborator}.",
            ),
        ],
        reference=remainder,
        metadata={"opening": opening},
    )


CORRECT = (
    "The following statement about {name} may contain factual errors. Check every fact in "
    'the encyclopedia and write the corrected statement: "{statement}"'
)

_WRONG: dict[str, str] = {
    "position": "position",
    "papers": "n_pubs",
    "citations": "n_cit",
    "phd_year": "phd_year",
}


def _correct(w: ScholarWorld, p: dict[str, Any], choices: list[str], rng: random.Random, env):
    slots = rng.sample(list(_WRONG), rng.choice((1, 2)))
    others = [w.people[r] for r in rng.sample(sorted(w.people), 12)]
    shown: dict[str, Any] = {}
    for slot in slots:
        field = _WRONG[slot]
        values = [o[field] for o in others if o[field] != p[field]]
        if not values:
            return None
        shown[slot] = rng.choice(values)
    points = [
        _position(p, choices, shown.get("position")),
        _org(p, _orgs(w)),
        _n_pubs(p, shown.get("papers")),
        _n_cit(p, shown.get("citations")),
        _phd_org(p, _orgs(w)),
        _phd_year(p, shown.get("phd_year")),
    ]
    statement = " ".join(x.statement for x in points)
    planted = tuple(i for i, x in enumerate(points) if x.slot in shown)
    fixed = {
        "position": _position(p, choices),
        "papers": _n_pubs(p),
        "citations": _n_cit(p),
        "phd_year": _phd_year(p),
    }
    points = [fixed[x.slot] if x.slot in shown else x for x in points]
    return _Draft(
        CORRECT,
        CORRECT.format(name=p["name"], statement=statement),
        [search(p["name"]), lookup("Ph.D.")],
        points,
        planted=planted,
        metadata={"statement": statement, "planted": {s: str(v) for s, v in shown.items()}},
    )


# --- generation ----------------------------------------------------------------------------------


def _build(env: Any, draft: _Draft, family: str, level: Level, seed: int, k: int, pop: str):
    points = list(draft.points)
    if not draft.planted:  # a value the question names is given away: not a key point
        points = unstated(points, draft.question)[:MAX_POINTS]
    try:
        results = run_solution(env.session(), draft.calls)
    except SolutionMismatch:
        return None
    observations = [r.observation for r in results]
    if any(o.startswith("Could not find") or o == "No more results." for o in observations):
        return None
    reference = draft.reference
    if reference is not None and rejection(points, reference, observations, draft.question):
        reference = None  # the page's remainder misses a key point: state them instead
    reference = reference or " ".join(x.statement for x in points)
    if rejection(points, reference, observations, draft.question, draft.planted):
        return None
    return Task(
        id=f"{family}-s{seed}-{k:04d}",
        domain="wiki",
        level=level,
        family=family,
        question=draft.question,
        answers=[reference],
        answer_type=AnswerType.long_form,
        key_points=points,
        tags=TaskTags(question_type=family.removeprefix("wiki-lf-"), popularity=pop),
        solution=draft.calls,
        evidence=[x.value for x in points],
        metric="f1",
        metadata={"template": draft.template, **(draft.metadata or {})},
    )


def _generator(family: str, level: Level, make: Maker):
    def generate(env: Any, n: int, seed: int) -> list[Task]:
        meta = scholar_meta(env, family)
        world = scholar_world(meta["size"], int(meta["seed"]))
        choices = _positions(world)
        rng = random.Random(f"{family}/{seed}")
        # scholars whose page goes by their bare name (a namesake's could not be told apart)
        pool = [p for _, p in sorted(world.people.items()) if p["title"] == p["name"]]
        rng.shuffle(pool)
        tasks: list[Task] = []
        for p in pool:
            if len(tasks) >= n:
                break
            draft = make(world, p, choices, rng, env)
            if draft is None:
                continue
            pop = world.store.popularity(p["n_cit"])
            task = _build(env, draft, family, level, seed, len(tasks), pop)
            if task is not None:
                tasks.append(task)
        return tasks

    return generate


_SPECS: list[tuple[str, Level, Maker, str]] = [
    ("wiki-lf-profile", Level.KS, _profile, "profile of a scholar from their page (read)"),
    (
        "wiki-lf-summary",
        Level.KU,
        _summary,
        "a scholar, their most cited paper and organization from three pages (delete)",
    ),
    (
        "wiki-lf-continue",
        Level.KA,
        _continue,
        "continue a scholar's page from its opening sentence (create)",
    ),
    (
        "wiki-lf-correct",
        Level.KA,
        _correct,
        "correct a statement with one or two planted factual errors (update)",
    ),
]

FAMILIES: dict[str, TaskFamily] = {
    fid: TaskFamily(
        id=fid,
        level=level,
        domain="wiki",
        env="wiki",
        metric="f1",
        description=f"Wiki long-form {level.value}: {what}",
        generate=_generator(fid, level, make),
    )
    for fid, level, make, what in _SPECS
}

for _fid, _family in FAMILIES.items():
    register_task_family(_fid)(_family)

register_task_set("wiki-longform")(list(FAMILIES))
