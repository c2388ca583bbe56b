"""Scholar long-form families (CRUD-RAG's four uses, RAGEval's key points), registered on import.

- ``scholar-lf-profile`` (KS, read): a profile of a scholar from searchPerson,
  getPersonBasicInfo and getPersonInterest.
- ``scholar-lf-summary`` (KU, delete: multi-document summarisation): the scholar and their most
  cited paper, from the profile, the paper list and the paper's record.
- ``scholar-lf-continue`` (KA, create): the continuation of a profile text written from the
  world, given its opening; its key points come only from the part not shown.
- ``scholar-lf-correct`` (KA, update): a statement about a scholar with one or two planted
  errors (another scholar's value for the slot) to check and correct with the tools.

Every key point is a typed fact read from the world by id, with the words that name its slot
(cues) and, for a closed-vocabulary slot (position, gender), the world's vocabulary (choices).
The gold calls are executed; a task is emitted only if every id a call uses was returned by an
earlier call, no observation overflows a text workflow, and :func:`raleval.longform.rejection`
finds nothing (reference and oracle answer cover every key point, the question gives none
away). ``scholar-longform`` is the set of the four; the default sets do not include them.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from raleval.envs.scholar.families import MAX_OBSERVATION_CHARS
from raleval.families import SolutionMismatch, run_solution
from raleval.longform import (
    Draft,
    ScholarPoints,
    correction,
    plant,
    register_longform,
    rejection,
)
from raleval.records import KeyPoint, Level, Task, ToolCall


@dataclass
class _Scholar:
    """One scholar's facts as the tools show them, read from the world by id."""

    p: dict[str, Any]
    phd_org: str
    phd_year: int
    pubs: list[tuple[str, str, int, int]]  # (pub id, title, citations, year), most cited first
    coauthors: list[tuple[str, str, int]]  # (person id, name, joint papers), most frequent first

    @property
    def name(self) -> str:
        return self.p["name"]

    @property
    def he(self) -> str:
        return "She" if self.p["gender"] == "female" else "He"

    @property
    def top(self) -> tuple[str, str, int, int] | None:
        """The most cited paper, if strictly most cited (else "most cited" is ambiguous)."""
        if not self.pubs or (len(self.pubs) > 1 and self.pubs[1][2] == self.pubs[0][2]):
            return None
        return self.pubs[0]

    @property
    def points(self) -> ScholarPoints:
        return ScholarPoints(self.name)

    @property
    def titles(self) -> list[str]:
        """The scholar's own titles (getPersonPubs), the ones an agent can confuse."""
        return [title for _, title, _, _ in self.pubs]

    @property
    def facts(self) -> dict[str, Any]:
        """The values a correction task may plant wrong, by slot."""
        return {
            "position": self.p["position"],
            "phd_year": self.phd_year,
            "papers": self.p["n_pubs"],
            "citations": self.p["n_citation"],
            "top_paper_year": self.top[3] if self.top else None,
        }

    @property
    def co(self) -> tuple[str, str, int] | None:
        cos = self.coauthors
        if not cos or (len(cos) > 1 and cos[1][2] == cos[0][2]):
            return None
        return cos[0]


def _scholar(store: Any, p: dict[str, Any]) -> _Scholar | None:
    try:
        _, phd_org, year = (s.strip() for s in p["education"].split(","))
        phd_year = int(year)
    except (AttributeError, ValueError):  # an imported world's free-text education
        return None
    rows = store.person_pubs_with_authors(p["id"]) or []
    pubs = [(i, t, c, y) for i, t, c, y, _ in rows]
    return _Scholar(p, phd_org, phd_year, pubs, store.coauthors(p["rowid"]))


@dataclass(frozen=True)
class _Vocab:
    positions: list[str]
    genders: list[str]
    orgs: list[str]  # organizations: where a scholar works or took a Ph.D.
    venues: list[str]


def _vocab(store: Any) -> _Vocab:
    """The vocabularies of the world's entity slots (choices of their key points): an answer
    that names another of them for the slot contradicts it."""
    return _Vocab(
        [r[0] for r in store.query("SELECT DISTINCT position FROM persons ORDER BY position")],
        [r[0] for r in store.query("SELECT DISTINCT gender FROM persons ORDER BY gender")],
        [r[0] for r in store.query("SELECT DISTINCT name FROM orgs ORDER BY name")],
        [
            r[0]
            for r in store.query(
                "SELECT DISTINCT venue FROM pubs WHERE venue IS NOT NULL ORDER BY venue"
            )
        ],
    )


# --- the four families -------------------------------------------------------------------------


def _search(s: _Scholar) -> ToolCall:
    return ToolCall(
        tool="searchPerson", arguments={"name": s.name, "organization": s.p["organization"]}
    )


def _by_id(tool: str, ident: str, key: str = "person_id") -> ToolCall:
    return ToolCall(tool=tool, arguments={key: ident})


PROFILE = (
    "Write a short profile of {name} of {org} from the scholar database: their position, "
    "gender, doctorate (institution and year), how many papers they have published and how "
    "often those have been cited, and their first two research interests."
)


def _profile(s: _Scholar, v: _Vocab, rng: random.Random, store: Any) -> Draft | None:
    """profile of a scholar from three APIs (read)"""
    if len(s.p["interests"]) < 2:
        return None
    pid, k = s.p["id"], s.points
    return Draft(
        PROFILE,
        PROFILE.format(name=s.name, org=s.p["organization"]),
        [_search(s), _by_id("getPersonBasicInfo", pid), _by_id("getPersonInterest", pid)],
        [
            k.point("position", s.p["position"], choices=v.positions),
            k.point("gender", s.p["gender"], choices=v.genders),
            k.phd_institution(s.phd_org, s.p["organization"], v.orgs),
            k.point("phd_year", s.phd_year),
            k.point("papers", s.p["n_pubs"]),
            k.point("citations", s.p["n_citation"]),
            k.point("interest", s.p["interests"][0]),
            k.point("interest", s.p["interests"][1]),
        ],
    )


SUMMARY = (
    "Summarise from the scholar database who {name} of {org} is (position, doctorate and "
    "citation count) together with their most cited paper (its title, year, venue and "
    "citations)."
)


def _summary(s: _Scholar, v: _Vocab, rng: random.Random, store: Any) -> Draft | None:
    """a scholar and their most cited paper from four results (delete: summarisation)"""
    if s.top is None:
        return None
    pub = store.pub(s.top[0])
    pid, k = s.p["id"], s.points
    return Draft(
        SUMMARY,
        SUMMARY.format(name=s.name, org=s.p["organization"]),
        [
            _search(s),
            _by_id("getPersonBasicInfo", pid),
            _by_id("getPersonPubs", pid),
            _by_id("getPublication", s.top[0], "pub_id"),
        ],
        [
            k.point("position", s.p["position"], choices=v.positions),
            k.point("phd_year", s.phd_year),
            k.point("citations", s.p["n_citation"]),
            k.point("top_paper", s.top[1], choices=s.titles),
            k.point("top_paper_year", s.top[3]),
            k.point("top_paper_venue", pub["venue"], choices=v.venues),
            k.point("top_paper_citations", s.top[2]),
        ],
    )


CONTINUE = (
    'Here is the opening of a profile of {name} of {org}: "{opening}" Continue the profile '
    "with the tools: their research interests, doctorate, publication and citation counts, "
    "most cited paper and most frequent coauthor."
)


def _continue(s: _Scholar, v: _Vocab, rng: random.Random, store: Any) -> Draft | None:
    """continue a scholar's profile text from its opening (create)"""
    if s.top is None or s.co is None or len(s.p["interests"]) < 2:
        return None
    he, his = s.he, "Her" if s.he == "She" else "His"
    i0, i1 = s.p["interests"][:2]
    opening = f"{s.name} is a {s.p['position']} at {s.p['organization']}."
    # the profile text a writer would put together from the world; the opening is shown
    remainder = (
        f"{he} works on {i0} and {i1}. {he} received a Ph.D. from {s.phd_org} in "
        f"{s.phd_year}. {he} has published {s.p['n_pubs']} papers, which have been cited "
        f"{s.p['n_citation']} times. {his} most cited paper is {s.top[1]}. {he} most often "
        f"writes with {s.co[1]}."
    )
    pid, k = s.p["id"], s.points
    return Draft(
        CONTINUE,
        CONTINUE.format(name=s.name, org=s.p["organization"], opening=opening),
        [
            _search(s),
            _by_id("getPersonBasicInfo", pid),
            _by_id("getPersonPubs", pid),
            _by_id("getCoauthors", pid),
        ],
        [
            k.point("interest", i0),
            k.point("interest", i1),
            k.phd_institution(s.phd_org, s.p["organization"], v.orgs),
            k.point("phd_year", s.phd_year),
            k.point("papers", s.p["n_pubs"]),
            k.point("citations", s.p["n_citation"]),
            k.point("top_paper", s.top[1], choices=s.titles),
            k.point("top_coauthor", s.co[1], choices=[name for _, name, _ in s.coauthors]),
        ],
        reference=remainder,
        metadata={"opening": opening},
    )


CORRECT = (
    "The following statement about {name} of {org} may contain factual errors. Check every "
    'fact with the tools and write the corrected statement: "{statement}"'
)


def _correct(s: _Scholar, v: _Vocab, rng: random.Random, store: Any) -> Draft | None:
    """correct a statement with one or two planted factual errors (update)"""
    if s.top is None:
        return None
    donors = store.persons_by_rowid(store.sample_person_rowids(12, f"donors/{rng.random()}"))
    other = [_scholar(store, d) for d in donors.values() if d["id"] != s.p["id"]]
    # a wrong value of the slot's kind, taken from another scholar of the world
    others = [o.facts for o in other if o is not None and o.top is not None]
    shown = plant(rng, s.facts, lambda: others)
    if shown is None:
        return None
    k = s.points

    def points(shown: Mapping[str, Any]) -> list[KeyPoint]:
        return [
            k.point("position", s.p["position"], shown.get("position"), v.positions),
            k.point("phd_year", s.phd_year, shown.get("phd_year")),
            k.point("papers", s.p["n_pubs"], shown.get("papers")),
            k.point("citations", s.p["n_citation"], shown.get("citations")),
            k.point("top_paper_year", s.top[3], shown.get("top_paper_year")),
        ]

    statement, planted, right = correction(shown, points)
    pid = s.p["id"]
    return Draft(
        CORRECT,
        CORRECT.format(name=s.name, org=s.p["organization"], statement=statement),
        [_search(s), _by_id("getPersonBasicInfo", pid), _by_id("getPersonPubs", pid)],
        right,
        planted=planted,
        metadata={"statement": statement, "planted": {slot: str(w) for slot, w in shown.items()}},
    )


# --- generation --------------------------------------------------------------------------------


def _ids_followed(calls: list[ToolCall], data: list[Any]) -> bool:
    """Every id a call uses was returned by an earlier call (an agent could have followed it)."""
    seen = ""
    for call, result in zip(calls, data, strict=True):
        for key in ("person_id", "pub_id"):
            ident = call.arguments.get(key)
            if ident is not None and f'"{ident}"' not in seen:
                return False
        seen += json.dumps(result, default=str)
    return True


def _build(
    draft: Draft, s: _Scholar, env: Any, family: str, level: Level, seed: int, k: int
) -> Task | None:
    points = draft.key_points()
    try:
        results = run_solution(env, draft.calls)
    except SolutionMismatch:
        return None
    data = [r.data for r in results]
    if not _ids_followed(draft.calls, data):
        return None
    # the profile is about the scholar the question names: the search finds them first
    if not data[0] or data[0][0]["person_id"] != s.p["id"]:
        return None
    # a prolific scholar's paper list overflows a text workflow's context (as in 3-5)
    if any(len(json.dumps(d, default=str)) > MAX_OBSERVATION_CHARS for d in data):
        return None
    reference = draft.reference or " ".join(p.statement for p in points)
    observations = [r.observation for r in results]
    if rejection(points, reference, observations, draft.question, draft.planted):
        return None
    popularity = env.store.popularity(s.p["n_citation"])
    at = ("scholar", family, level, seed, k)
    return draft.task(points, reference, at, popularity, person_id=s.p["id"])


Maker = Callable[[_Scholar, _Vocab, random.Random, Any], Draft | None]


def _generator(family: str, level: Level, make: Maker):
    def generate(env: Any, n: int, seed: int) -> list[Task]:
        store = env.store
        vocab = _vocab(store)
        rng = random.Random(f"{family}/{seed}")
        batch = store.sample_person_rowids(max(8 * n, 80), f"{family}/{seed}")
        people = store.persons_by_rowid(batch)
        tasks: list[Task] = []
        for rowid in batch:
            if len(tasks) >= n:
                break
            s = _scholar(store, people[rowid])
            draft = make(s, vocab, rng, store) if s is not None else None
            if draft is None:
                continue
            task = _build(draft, s, env, family, level, seed, len(tasks))
            if task is not None:
                tasks.append(task)
        return tasks

    return generate


# one family a use, in raleval.longform.USES order; a maker's docstring is its description
FAMILIES = register_longform(
    "scholar", "Scholar", _generator, _profile, _summary, _continue, _correct
)
