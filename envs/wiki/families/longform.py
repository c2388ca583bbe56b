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
from collections.abc import Callable, Mapping
from typing import Any

from raleval import longform as lf
from raleval.envs.wiki.families.common import (
    ScholarWorld,
    lookup,
    scholar_meta,
    scholar_world,
    search,
)
from raleval.families import SolutionMismatch, run_solution
from raleval.records import KeyPoint, Level, Task


def _positions(world: ScholarWorld) -> list[str]:
    """The world's positions: the choices of a position key point."""
    return sorted({p["position"] for p in world.people.values()})


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


# --- key points: the scholar's facts (raleval.longform.ScholarPoints) in the page's words -------


def _interest(p: dict[str, Any], i: int) -> KeyPoint:
    return lf.with_cues(
        lf.ScholarPoints(p["name"]).point("interest", p["interests"][i]), "working on"
    )


def _top(p: dict[str, Any]) -> dict[str, Any] | None:
    """The most cited of the page's selected publications, if strictly most cited."""
    pubs = p["pubs"]
    if not pubs or (len(pubs) > 1 and pubs[1]["cit"] == pubs[0]["cit"]):
        return None
    return pubs[0]


def _top_title(p: dict[str, Any], top: dict[str, Any]) -> KeyPoint:
    # the titles the scholar's page lists, the ones an agent reading it can confuse
    titles = [x["title"] for x in p["pubs"]]
    return lf.ScholarPoints(p["name"]).point("top_paper", top["title"], choices=titles)


def _top_year(p: dict[str, Any], top: dict[str, Any]) -> KeyPoint:
    return lf.with_cues(
        lf.ScholarPoints(p["name"]).point("top_paper_year", top["year"]), "paper from"
    )


def _top_venue(p: dict[str, Any], top: dict[str, Any], venues: list[str]) -> KeyPoint:
    subject = f"The most cited paper of {p['name']}"
    k = lf.ScholarPoints(p["name"])
    point = k.point("top_paper_venue", top["venue"], choices=venues, subject=subject)
    return lf.with_cues(point, "published in")


# --- the four families ---------------------------------------------------------------------------


Maker = Callable[[ScholarWorld, dict[str, Any], list[str], random.Random, Any], "lf.Draft | None"]

PROFILE = (
    "Write a short profile of {name} from the encyclopedia: their organization and position, "
    "doctorate (institution and year), how many papers they have published and how often "
    "those have been cited, and their first two research interests."
)


def _profile(w: ScholarWorld, p: dict[str, Any], choices: list[str], rng: random.Random, env):
    """profile of a scholar from their page (read)"""
    if len(p["interests"]) < 2:
        return None
    k = lf.ScholarPoints(p["name"])
    return lf.Draft(
        PROFILE,
        PROFILE.format(name=p["name"]),
        [search(p["name"]), lookup("Ph.D.")],
        [
            k.point("organization", p["org"], choices=_orgs(w)),
            k.point("position", p["position"], choices=choices),
            k.phd_institution(p["phd_org"], p["org"], _orgs(w)),
            k.point("phd_year", p["phd_year"]),
            k.point("papers", p["n_pubs"]),
            k.point("citations", p["n_cit"]),
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
    """a scholar, their most cited paper and organization from three pages (delete)"""
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
    k = lf.ScholarPoints(p["name"])
    return lf.Draft(
        SUMMARY,
        SUMMARY.format(name=p["name"]),
        [
            search(p["name"]),
            lookup("Selected publications"),
            search(top["title"]),
            search(p["org"]),
        ],
        [
            k.point("position", p["position"], choices=choices),
            k.point("organization", p["org"], choices=_orgs(w)),
            _top_title(p, top),
            _top_year(p, top),
            _top_venue(p, top, _venues(w)),
            k.point("top_paper_citations", top["cit"]),
            size,
        ],
    )


PAGE_LIST_CUE = "selected publications"

CONTINUE = (
    'Here is the opening sentence of the encyclopedia article on {name}: "{opening}" '
    "Continue the article with the tools: publication record, education, selected "
    "publications and frequent collaborators."
)


def _continue(w: ScholarWorld, p: dict[str, Any], choices: list[str], rng: random.Random, env):
    """continue a scholar's page from its opening sentence (create)"""
    top = _top(p)
    page = env.backend.store.get(p["title"])
    if top is None or not p["collab"] or page is None:
        return None
    opening, remainder = page.sentences[0], " ".join(page.sentences[1:])
    collaborator = w.people[p["collab"][0]]["title"]
    k = lf.ScholarPoints(p["name"])
    return lf.Draft(
        CONTINUE,
        CONTINUE.format(name=p["name"], opening=opening),
        [
            search(p["name"]),
            lookup("Ph.D."),
            lookup("Selected publications"),
            lookup("Frequent collaborators"),
        ],
        [
            k.point("papers", p["n_pubs"]),
            k.point("citations", p["n_cit"]),
            k.phd_institution(p["phd_org"], p["org"], _orgs(w)),
            k.point("phd_year", p["phd_year"]),
            # the page lists its selected publications most cited first: under that heading
            # the first title and its venue are the most cited paper's (the reference is the
            # page, whose words must state the fact with its cue)
            lf.with_cues(_top_title(p, top), PAGE_LIST_CUE),
            lf.with_cues(_top_venue(p, top, _venues(w)), PAGE_LIST_CUE),
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

# the slots a correction may plant wrong, and the fields of a scholar's record that hold them
_WRONG: dict[str, str] = {
    "position": "position",
    "papers": "n_pubs",
    "citations": "n_cit",
    "phd_year": "phd_year",
}


def _correct(w: ScholarWorld, p: dict[str, Any], choices: list[str], rng: random.Random, env):
    """correct a statement with one or two planted factual errors (update)"""

    def facts(o: dict[str, Any]) -> dict[str, Any]:
        return {slot: o[field] for slot, field in _WRONG.items()}

    # a wrong value of the slot's kind, taken from another scholar of the world
    def others() -> list[dict[str, Any]]:  # drawn once the slots are
        return [facts(w.people[r]) for r in rng.sample(sorted(w.people), 12)]

    shown = lf.plant(rng, facts(p), others)
    if shown is None:
        return None
    k = lf.ScholarPoints(p["name"])

    def points(shown: Mapping[str, Any]) -> list[KeyPoint]:
        return [
            k.point("position", p["position"], shown.get("position"), choices),
            k.point("organization", p["org"], choices=_orgs(w)),
            k.point("papers", p["n_pubs"], shown.get("papers")),
            k.point("citations", p["n_cit"], shown.get("citations")),
            k.phd_institution(p["phd_org"], p["org"], _orgs(w)),
            k.point("phd_year", p["phd_year"], shown.get("phd_year")),
        ]

    statement, planted, right = lf.correction(shown, points)
    return lf.Draft(
        CORRECT,
        CORRECT.format(name=p["name"], statement=statement),
        [search(p["name"]), lookup("Ph.D.")],
        right,
        planted=planted,
        metadata={"statement": statement, "planted": {s: str(v) for s, v in shown.items()}},
    )


# --- generation ----------------------------------------------------------------------------------


def _build(env: Any, draft: lf.Draft, family: str, level: Level, seed: int, k: int, pop: str):
    points = draft.key_points()
    try:
        results = run_solution(env.session(), draft.calls)
    except SolutionMismatch:
        return None
    observations = [r.observation for r in results]
    if any(o.startswith("Could not find") or o == "No more results." for o in observations):
        return None
    reference = draft.reference
    if reference is not None and lf.rejection(points, reference, observations, draft.question):
        reference = None  # the page's remainder misses a key point: state them instead
    reference = reference or " ".join(x.statement for x in points)
    if lf.rejection(points, reference, observations, draft.question, draft.planted):
        return None
    return draft.task(points, reference, ("wiki", family, level, seed, k), pop)


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


# one family a use, in raleval.longform.USES order; a maker's docstring is its description
FAMILIES = lf.register_longform("wiki", "Wiki", _generator, _profile, _summary, _continue, _correct)
