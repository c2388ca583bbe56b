"""Scholar task families (SoAy-style), generated from the scholar world with executed solutions.

- 1-3 KS: single-API facts (SoAy-easy: citations, paper count, affiliation, interests, the top
  scholar of an organization or a field).
- 2-4 KU: profiling: read a scholar's profile and bio and extract fields (position labels,
  doctorate, e-mail domain, structured profiles scored field by field).
- 3-5 KA: multi-API compositions (SoAy-hard: the most cited paper of X's most frequent
  coauthor, the venue of X's latest paper, papers X wrote with Y, ...).

Each template has a question, the gold calls, an answer expression over the calls' results
(``r0, r1, ...``; also the last line of a PAL oracle program) and a ``truth`` computed from the
world by ids, independently of the tools. The generator executes the calls; a task is emitted
only if the expression reproduces the truth and every id a call uses was returned by an
earlier call.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from raleval.answers import infer_answer_type
from raleval.families import TaskFamily, grounding_evidence, verified_results
from raleval.records import Level, Task, TaskTags, ToolCall
from raleval.registry import register_task_family, register_task_set


class _Ctx:
    """One sampled scholar and the facts templates ask about, read from the world by id."""

    def __init__(self, store: Any, person: dict[str, Any], rng: random.Random) -> None:
        self.store, self.p, self.rng = store, person, rng

    @property
    def name(self) -> str:
        return self.p["name"]

    @property
    def org(self) -> str:
        return self.p["organization"]

    @cached_property
    def interest(self) -> str:
        return self.rng.choice(self.p["interests"])

    @cached_property
    def pubs(self) -> list[dict[str, Any]]:
        rows = self.store.person_pubs_with_authors(self.p["id"]) or []
        return [
            {"id": i, "title": t, "cit": c, "year": y, "authors": a.split("\x1f") if a else []}
            for i, t, c, y, a in rows
        ]

    @cached_property
    def top_pub(self) -> dict[str, Any] | None:
        return _strict_top(self.pubs, "cit")

    @cached_property
    def latest(self) -> dict[str, Any] | None:
        return _strict_top(sorted(self.pubs, key=lambda x: -x["year"]), "year")

    @cached_property
    def coauthors(self) -> list[tuple[str, str, int]]:
        return self.store.coauthors(self.p["rowid"])

    @cached_property
    def co(self) -> dict[str, Any] | None:
        """The most frequent coauthor, if strictly most frequent and most cited among ties."""
        cos = self.coauthors
        if not cos or (len(cos) > 1 and cos[1][2] == cos[0][2]):
            return None
        return self.store.person(cos[0][0])

    @cached_property
    def co_pubs(self) -> list[dict[str, Any]]:
        if self.co is None:
            return []
        rows = self.store.person_pubs_with_authors(self.co["id"]) or []
        return [{"id": i, "title": t, "cit": c} for i, t, c, _, _ in rows]

    @cached_property
    def year(self) -> int | None:
        return self.rng.choice(self.pubs)["year"] if self.pubs else None

    @cached_property
    def paper(self) -> dict[str, Any] | None:
        """One of the scholar's papers with at least two authors and a unique title."""
        multi = [x for x in self.pubs if len(x["authors"]) > 1]
        return self.rng.choice(multi) if multi else None

    @cached_property
    def paper_info(self) -> dict[str, Any] | None:
        return self.store.pub(self.paper["id"]) if self.paper else None

    def first_author(self) -> dict[str, Any] | None:
        info = self.paper_info
        return self.store.person(info["authors"][0][0]) if info else None

    def top_of(self, rowids: list[int]) -> dict[str, Any] | None:
        people = self.store.persons_by_rowid(rowids)
        ranked = sorted(people.values(), key=lambda x: -x["n_citation"])
        return _strict_top([{**x, "cit": x["n_citation"]} for x in ranked], "cit")

    def top_at_org_on_interest(self) -> dict[str, Any] | None:
        """The most cited member of the scholar's organization working on ``interest``."""
        members = self.store.top_members(self.p["org"], 100000)
        people = self.store.persons_by_rowid(members)
        return self.top_of([r for r in members if self.interest in people[r]["interests"]][:2])

    @cached_property
    def topic_id(self) -> int:
        return next(k for k, v in self.store.topics.items() if v == self.interest)


def _strict_top(rows: list[dict[str, Any]], key: str) -> dict[str, Any] | None:
    """The first row, unless the second ties it on ``key`` (the question would be ambiguous)."""
    if not rows or (len(rows) > 1 and rows[1][key] == rows[0][key]):
        return None
    return rows[0]


@dataclass(frozen=True)
class _T:
    question: str
    calls: Callable[[_Ctx], list[tuple[str, dict[str, Any]]]]
    expr: Callable[[_Ctx], str]
    truth: Callable[[_Ctx], Any]
    metric: str = "f1"
    evidence: Callable[[_Ctx], list[str]] | None = None
    qtype: str = "simple"


def _s(c: _Ctx) -> tuple[str, dict[str, Any]]:
    return ("searchPerson", {"name": c.name, "organization": c.org})


def _pid(c: _Ctx) -> dict[str, str]:
    return {"person_id": c.p["id"]}


def _with(tool: str, key: str, value: Callable[[_Ctx], Any]):
    """A call whose one argument is read from the context (None -> template not applicable)."""
    return lambda c: (tool, {key: value(c)})


def _chain(*parts):
    def calls(c: _Ctx) -> list[tuple[str, dict[str, Any]]]:
        return [p(c) for p in parts]

    return calls


def _const(expr: str) -> Callable[[_Ctx], str]:
    return lambda c: expr


def _maybe(f: Callable[[_Ctx], Any], g: Callable[[Any], Any]) -> Callable[[_Ctx], Any]:
    def read(c: _Ctx) -> Any:
        x = f(c)
        return None if x is None else g(x)

    return read


_BY_ID = {"top_pub": lambda c: c.top_pub, "latest": lambda c: c.latest}
_S = _chain(_s)
_S_PUBS = _chain(_s, lambda c: ("getPersonPubs", _pid(c)))
_S_INFO = _chain(_s, lambda c: ("getPersonBasicInfo", _pid(c)))
_S_CO = _chain(_s, lambda c: ("getCoauthors", _pid(c)))
_S_INT_INFO = _chain(
    lambda c: ("searchPerson", {"name": c.name, "interest": c.interest}),
    lambda c: ("getPersonBasicInfo", _pid(c)),
)
# one search with every filter the question names (name, organisation and interest)
_S_ALL = _chain(
    lambda c: ("searchPerson", {"name": c.name, "organization": c.org, "interest": c.interest})
)


def _s_co_then(tool: str):
    return _chain(_s, lambda c: ("getCoauthors", _pid(c)), _with(tool, "person_id", _co_id))


def _s_pubs_then_pub(which: str):
    """Search, the paper list, then the record of one of its papers (``which``: _BY_ID)."""
    return _chain(
        _s,
        lambda c: ("getPersonPubs", _pid(c)),
        _with("getPublication", "pub_id", _pub_id(which)),
    )


def _co_id(c: _Ctx) -> str | None:
    return c.co["id"] if c.co else None


def _pub_id(which: str):
    return lambda c: _BY_ID[which](c)["id"] if _BY_ID[which](c) else None


def _paper_calls(*more):
    return _chain(
        lambda c: ("searchPublication", {"publication_info": c.paper["title"] if c.paper else ""}),
        _with("getPublication", "pub_id", lambda c: c.paper["id"] if c.paper else None),
        *more,
    )


def _first_id(c: _Ctx) -> str | None:
    fa = c.first_author()
    return fa["id"] if fa else None


def _edu(i: int) -> Callable[[_Ctx], str]:
    return lambda c: c.p["education"].split(",")[i].strip()


def _top_topic_id(c: _Ctx) -> str | None:
    top = c.top_of(c.store.top_by_topic(c.topic_id, 2))
    return top["id"] if top else None


def _venue_of(which: str) -> Callable[[_Ctx], Any]:
    def read(c: _Ctx) -> Any:
        pub = _BY_ID[which](c)
        return c.store.pub(pub["id"])["venue"] if pub else None

    return read


def _coauthors_on_paper(c: _Ctx) -> str | None:
    if c.paper is None:
        return None
    return ", ".join(n for n in c.paper["authors"] if n != c.name)


MAX_OBSERVATION_CHARS = 20000
MAX_MISSES = 60  # failed tries before a template yields its turn (rare compositions need more)


def _h_index(citations: list[int]) -> int:
    ranked = sorted(citations, reverse=True)
    return sum(1 for i, c in enumerate(ranked) if c >= i + 1)


def _co_of_co(c: _Ctx) -> dict[str, Any] | None:
    """The most frequent coauthor of ``c``'s most frequent coauthor, when strict and not ``c``."""
    if c.co is None:
        return None
    cos = c.store.coauthors(c.co["rowid"])
    if not cos or (len(cos) > 1 and cos[1][2] == cos[0][2]) or cos[0][0] == c.p["id"]:
        return None
    return c.store.person(cos[0][0])


def _titles_in_year(c: _Ctx) -> str | None:
    titles = [x["title"] for x in c.pubs if x["year"] == c.year] if c.year else []
    return ", ".join(titles) if len(titles) > 1 else None


POSITION_LABELS = (
    "Professor, Associate Professor, Assistant Professor, Researcher, Associate Researcher, "
    "Lecturer, Engineer, Senior Engineer, Ph.D Student"
)

KS = [
    _T(
        "How many citations does {name} of {org} have?",
        _S,
        _const("str(r0[0]['num_citation'])"),
        lambda c: c.p["n_citation"],
    ),
    _T(
        "What is the total citation count of {name} from {org}?",
        _S,
        _const("str(r0[0]['num_citation'])"),
        lambda c: c.p["n_citation"],
    ),
    _T(
        "How many papers has {name} of {org} published?",
        _S,
        _const("str(r0[0]['num_pubs'])"),
        lambda c: c.p["n_pubs"],
    ),
    _T(
        "What is the number of publications of {name} at {org}?",
        _S,
        _const("str(r0[0]['num_pubs'])"),
        lambda c: c.p["n_pubs"],
    ),
    _T(
        "Which organization is {name}, who works on {interest}, affiliated with?",
        lambda c: [("searchPerson", {"name": c.name, "interest": c.interest})],
        _const("r0[0]['organization']"),
        lambda c: c.org,
    ),
    _T(
        "Where does {name}, a researcher in {interest}, work?",
        lambda c: [("searchPerson", {"name": c.name, "interest": c.interest})],
        _const("r0[0]['organization']"),
        lambda c: c.org,
    ),
    _T(
        "What are the research interests of {name} of {org}?",
        _S,
        _const("', '.join(r0[0]['interests'])"),
        lambda c: ", ".join(c.p["interests"][:10]),
        metric="set_f1",
        qtype="set",
    ),
    _T(
        "Who is the most cited researcher at {org}?",
        lambda c: [("searchPerson", {"organization": c.org})],
        _const("r0[0]['name']"),
        _maybe(lambda c: c.top_of(c.store.top_members(c.p["org"], 2)), lambda x: x["name"]),
    ),
    _T(
        "Who is the most cited scholar working on {interest}?",
        lambda c: [("searchPerson", {"interest": c.interest})],
        _const("r0[0]['name']"),
        _maybe(lambda c: c.top_of(c.store.top_by_topic(c.topic_id, 2)), lambda x: x["name"]),
    ),
    _T(
        "Which researcher at {org} working on {interest} has the most citations?",
        lambda c: [("searchPerson", {"organization": c.org, "interest": c.interest})],
        _const("r0[0]['name']"),
        _maybe(lambda c: c.top_at_org_on_interest(), lambda x: x["name"]),
    ),
    _T(
        "What is the e-mail address of {name}, who works on {interest}?",
        _S_INT_INFO,
        _const("r1['email']"),
        lambda c: c.p["email"],
    ),
    _T(
        "How many citations does {name} of {org}, who works on {interest}, have?",
        _S_ALL,
        _const("str(r0[0]['num_citation'])"),
        lambda c: c.p["n_citation"],
    ),
    _T(
        "How many papers has {name}, who works on {interest} at {org}, published?",
        _S_ALL,
        _const("str(r0[0]['num_pubs'])"),
        lambda c: c.p["n_pubs"],
    ),
]

KU = [
    _T(
        "Read the profile of {name} of {org} and choose their position from: " + POSITION_LABELS,
        _S_INFO,
        _const("r1['position']"),
        lambda c: c.p["position"],
        qtype="profiling",
    ),
    _T(
        "According to the profile of {name} of {org}, which institution awarded their Ph.D.?",
        _S_INFO,
        _const("r1['education_experience'].split(',')[1].strip()"),
        _edu(1),
        qtype="profiling",
    ),
    _T(
        "In which year did {name} of {org} obtain a doctorate, according to their profile?",
        _S_INFO,
        _const("r1['education_experience'].split(',')[2].strip()"),
        _edu(2),
        qtype="profiling",
    ),
    _T(
        # not "of {org}": the domain is made from the organization's name
        "What is the e-mail domain of {name}, who works on {interest}?",
        _S_INT_INFO,
        _const("r1['email'].split('@')[1]"),
        lambda c: c.p["email"].split("@")[1],
        evidence=lambda c: [c.p["email"]],
        qtype="profiling",
    ),
    _T(
        "Is {name} of {org} a professor of any rank? Answer yes or no.",
        _S_INFO,
        _const("'yes' if 'Professor' in r1['position'] else 'no'"),
        lambda c: "yes" if "Professor" in c.p["position"] else "no",
        evidence=lambda c: [c.p["position"]],
        qtype="profiling",
    ),
    _T(
        "Extract the profile of {name} of {org} as 'position: ...; organization: ...; "
        "phd_year: ...'.",
        _S_INFO,
        _const(
            "'position: ' + r1['position'] + '; organization: ' + r1['organization'] + "
            "'; phd_year: ' + r1['education_experience'].split(',')[2].strip()"
        ),
        lambda c: f"position: {c.p['position']}; organization: {c.org}; phd_year: {_edu(2)(c)}",
        metric="fields",
        evidence=lambda c: [c.p["position"], c.org],
        qtype="profiling",
    ),
    _T(
        "Extract the profile of {name} of {org} as 'gender: ...; position: ...; "
        "phd_institution: ...'.",
        _S_INFO,
        _const(
            "'gender: ' + r1['gender'] + '; position: ' + r1['position'] + "
            "'; phd_institution: ' + r1['education_experience'].split(',')[1].strip()"
        ),
        lambda c: (
            f"gender: {c.p['gender']}; position: {c.p['position']}; phd_institution: {_edu(1)(c)}"
        ),
        metric="fields",
        evidence=lambda c: [c.p["position"], _edu(1)(c)],
        qtype="profiling",
    ),
    _T(
        "What is the gender of {name} of {org}, according to their profile?",
        _S_INFO,
        _const("r1['gender']"),
        lambda c: c.p["gender"],
        qtype="profiling",
    ),
]

KA = [
    _T(
        "What is the title of the most cited paper of {name} of {org}?",
        _S_PUBS,
        _const("r1[0]['title']"),
        _maybe(lambda c: c.top_pub, lambda x: x["title"]),
    ),
    _T(
        "In which year was the most cited paper of {name} of {org} published?",
        _S_PUBS,
        _const("str(r1[0]['year'])"),
        _maybe(lambda c: c.top_pub, lambda x: x["year"]),
    ),
    _T(
        "How many citations does the most cited paper of {name} of {org} have?",
        _S_PUBS,
        _const("str(r1[0]['num_citation'])"),
        _maybe(lambda c: c.top_pub, lambda x: x["cit"]),
    ),
    _T(
        "In which venue was the most cited paper of {name} of {org} published?",
        _s_pubs_then_pub("top_pub"),
        _const("r2['venue']"),
        _venue_of("top_pub"),
    ),
    _T(
        "What is the PDF link of the most cited paper by {name} of {org}?",
        _s_pubs_then_pub("top_pub"),
        _const("r2['pdf_link']"),
        _maybe(lambda c: c.top_pub, lambda x: f"https://papers.raleval.invalid/{x['id']}.pdf"),
    ),
    _T(
        "Who is the most frequent collaborator of {name} of {org}?",
        _S_CO,
        _const("r1[0]['name']"),
        _maybe(lambda c: c.co, lambda x: x["name"]),
    ),
    _T(
        "Which organization is the most frequent collaborator of {name} of {org} affiliated with?",
        _s_co_then("getPersonBasicInfo"),
        _const("r2['organization']"),
        _maybe(lambda c: c.co, lambda x: x["organization"]),
    ),
    _T(
        "What is the most cited paper of the most frequent coauthor of {name} of {org}?",
        _s_co_then("getPersonPubs"),
        _const("r2[0]['title']"),
        _maybe(lambda c: _strict_top(c.co_pubs, "cit"), lambda x: x["title"]),
    ),
    _T(
        "What are the research interests of the most frequent collaborator of {name} of {org}?",
        _s_co_then("getPersonInterest"),
        _const("', '.join(r2)"),
        _maybe(lambda c: c.co, lambda x: ", ".join(x["interests"])),
        metric="set_f1",
        qtype="set",
    ),
    _T(
        "What is the e-mail address of the most frequent coauthor of {name} of {org}?",
        _s_co_then("getPersonBasicInfo"),
        _const("r2['email']"),
        _maybe(lambda c: c.co, lambda x: x["email"]),
    ),
    _T(
        "What is the title of the latest paper by {name} of {org}?",
        _S_PUBS,
        _const("max(r1, key=lambda p: p['year'])['title']"),
        _maybe(lambda c: c.latest, lambda x: x["title"]),
    ),
    _T(
        "In which venue did {name} of {org} publish their latest paper?",
        _s_pubs_then_pub("latest"),
        _const("r2['venue']"),
        _venue_of("latest"),
    ),
    _T(
        "How many papers did {name} of {org} publish in {year}?",
        _S_PUBS,
        lambda c: f"str(sum(1 for p in r1 if p['year'] == {c.year}))",
        lambda c: sum(1 for x in c.pubs if x["year"] == c.year) if c.year else None,
        evidence=lambda c: [next(x["title"] for x in c.pubs if x["year"] == c.year)],
        qtype="aggregation",
    ),
    _T(
        "How many citations in total did the papers {name} of {org} published in {year} get?",
        _S_PUBS,
        lambda c: f"str(sum(p['num_citation'] for p in r1 if p['year'] == {c.year}))",
        lambda c: sum(x["cit"] for x in c.pubs if x["year"] == c.year) if c.year else None,
        evidence=lambda c: [next(x["title"] for x in c.pubs if x["year"] == c.year)],
        qtype="aggregation",
    ),
    _T(
        "How many coauthors does {name} of {org} have?",
        _S_CO,
        _const("str(len(r1))"),
        lambda c: len(c.coauthors) if c.coauthors else None,
        evidence=lambda c: [c.coauthors[0][1]],
        qtype="aggregation",
    ),
    _T(
        "Who is the first author of the paper '{title}'?",
        _paper_calls(),
        _const("r1['author_list'][0]['name']"),
        _maybe(lambda c: c.first_author(), lambda x: x["name"]),
    ),
    _T(
        "Which organization is the first author of '{title}' affiliated with?",
        _paper_calls(_with("getPersonBasicInfo", "person_id", _first_id)),
        _const("r2['organization']"),
        _maybe(lambda c: c.first_author(), lambda x: x["organization"]),
    ),
    _T(
        "How many authors does the paper '{title}' have?",
        _paper_calls(),
        _const("str(len(r1['author_list']))"),
        _maybe(lambda c: c.paper_info, lambda x: len(x["authors"])),
        evidence=lambda c: [c.paper_info["authors"][0][1]],
        qtype="aggregation",
    ),
    _T(
        "In which venue was '{title}' published?",
        _paper_calls(),
        _const("r1['venue']"),
        _maybe(lambda c: c.paper_info, lambda x: x["venue"]),
    ),
    _T(
        "How many times has '{title}' been cited?",
        _paper_calls(),
        _const("str(r1['num_citation'])"),
        _maybe(lambda c: c.paper_info, lambda x: x["n_citation"]),
    ),
    _T(
        "In which year was the paper '{title}' published?",
        lambda c: [
            ("searchPublication", {"publication_info": c.paper["title"] if c.paper else ""})
        ],
        _const("str(r0[0]['year'])"),
        _maybe(lambda c: c.paper_info, lambda x: x["year"]),
    ),
    _T(
        "Who is the most cited researcher at the organization of {name}, who works on {interest}?",
        lambda c: [
            ("searchPerson", {"name": c.name, "interest": c.interest}),
            ("searchPerson", {"organization": c.org}),
        ],
        _const("r1[0]['name']"),
        _maybe(lambda c: c.top_of(c.store.top_members(c.p["org"], 2)), lambda x: x["name"]),
    ),
    _T(
        "What position does the most cited researcher working on {interest} hold?",
        lambda c: [
            ("searchPerson", {"interest": c.interest}),
            ("getPersonBasicInfo", {"person_id": _top_topic_id(c)}),
        ],
        _const("r1['position']"),
        _maybe(lambda c: c.top_of(c.store.top_by_topic(c.topic_id, 2)), lambda x: x["position"]),
    ),
    _T(
        "With whom did {name} of {org} write '{title}'?",
        _S_PUBS,
        lambda c: (
            "', '.join(n for n in next(p for p in r1 if p['title'] == "
            f"{c.paper['title'] if c.paper else ''!r})['authors_name_list'] if n != {c.name!r})"
        ),
        _coauthors_on_paper,
        metric="set_f1",
        qtype="set",
    ),
    _T(
        "How many papers have {name} of {org} and {coauthor} written together?",
        _S_PUBS,
        lambda c: (
            f"str(sum(1 for p in r1 if {c.co['name'] if c.co else ''!r} in p['authors_name_list']))"
        ),
        lambda c: c.coauthors[0][2] if c.co else None,
        evidence=lambda c: [c.co["name"]],
        qtype="aggregation",
    ),
    _T(
        "Who are all the coauthors of {name} of {org}?",
        _S_CO,
        _const("', '.join(a['name'] for a in r1)"),
        lambda c: ", ".join(n for _, n, _ in c.coauthors) if 1 < len(c.coauthors) <= 12 else None,
        metric="set_f1",
        qtype="set",
    ),
    _T(
        "Who is the most frequent coauthor of the most frequent coauthor of {name} of {org}?",
        _chain(
            _s,
            lambda c: ("getCoauthors", _pid(c)),
            _with("getCoauthors", "person_id", _co_id),
        ),
        _const("r2[0]['name']"),
        _maybe(_co_of_co, lambda x: x["name"]),
    ),
    _T(
        "What is the abstract of the paper '{title}'?",
        _paper_calls(),
        _const("r1['abstract']"),
        _maybe(lambda c: c.paper_info, lambda x: x["abstract"]),
        qtype="free_text",
    ),
    _T(
        "What is the h-index of {name} of {org}, counted over the citations of their papers?",
        _S_PUBS,
        _const(
            "str(sum(1 for i, n in enumerate(sorted((p['num_citation'] for p in r1), "
            "reverse=True)) if n >= i + 1))"
        ),
        lambda c: _h_index([x["cit"] for x in c.pubs]) if c.pubs else None,
        evidence=lambda c: [c.pubs[0]["title"]],
        qtype="aggregation",
    ),
    _T(
        "List the titles of all papers {name} of {org} published in {year}.",
        _S_PUBS,
        lambda c: f"', '.join(p['title'] for p in r1 if p['year'] == {c.year})",
        _titles_in_year,
        metric="set_f1",
        qtype="set",
    ),
    _T(
        "Which organization is the most frequent coauthor of the most frequent coauthor of "
        "{name} of {org} affiliated with?",
        _chain(
            _s,
            lambda c: ("getCoauthors", _pid(c)),
            _with("getCoauthors", "person_id", _co_id),
            _with("getPersonBasicInfo", "person_id", lambda c: (_co_of_co(c) or {}).get("id")),
        ),
        _const("r3['organization']"),
        _maybe(_co_of_co, lambda x: x["organization"]),
    ),
]


def _fill(c: _Ctx) -> dict[str, Any]:
    return {
        "name": c.name,
        "org": c.org,
        "interest": c.interest,
        "year": c.year,
        "title": c.paper["title"] if c.paper else "",
        "coauthor": c.co["name"] if c.co else "",
    }


def _generator(family: str, level: Level, templates: list[_T]):
    def generate(env: Any, n: int, seed: int) -> list[Task]:
        store = env.store
        rng = random.Random(f"{family}/{seed}")
        tasks: list[Task] = []
        seen: set[str] = set()
        batch = store.sample_person_rowids(max(6 * n, 60), f"{family}/{seed}")
        people = store.persons_by_rowid(batch)
        misses = [0] * len(templates)
        for rowid in batch:
            if len(tasks) >= n:
                break
            i = len(tasks) % len(templates)
            # a template that keeps failing on this world (e.g. no ties-free answers) yields
            # its turn to the next one instead of starving the family
            while misses[i] > MAX_MISSES and any(m <= MAX_MISSES for m in misses):
                i = (i + 1) % len(templates)
            t = templates[i]
            ctx = _Ctx(store, people[rowid], rng)
            task = _build(ctx, t, family, level, seed, len(tasks), env)
            if task is None or task.question in seen:
                misses[i] += 1
                continue
            seen.add(task.question)
            tasks.append(task)
        return tasks

    return generate


def _build(c: _Ctx, t: _T, family: str, level: Level, seed: int, k: int, env: Any) -> Task | None:
    try:
        truth = t.truth(c)
        if truth is None:
            return None
        raw = t.calls(c)
        if any(v is None for _, args in raw for v in args.values()):
            return None
        evidence = t.evidence(c) if t.evidence else None
        expr = t.expr(c)
        question = t.question.format(**_fill(c))
    except (StopIteration, IndexError, KeyError, TypeError):
        return None
    calls = [ToolCall(tool=tool, arguments=args) for tool, args in raw]
    gold = str(truth)
    results = verified_results(env, calls, expr, gold)
    if results is None:
        return None
    # a prolific scholar's paper list (40k characters) overflows a text workflow's context
    # before the oracle can answer: such a task measures the context window, not retrieval
    if any(len(json.dumps(r, default=str)) > MAX_OBSERVATION_CHARS for r in results):
        return None
    if evidence is None:  # a joined list or a count: grounded by the values it reads
        evidence = grounding_evidence(expr, results, gold)
    return Task(
        id=f"scholar-{family}-s{seed}-{k:04d}",
        domain="scholar",
        level=level,
        family=family,
        question=question,
        answers=[gold],
        answer_type=infer_answer_type(question, [gold], t.metric, t.qtype),
        tags=TaskTags(question_type=t.qtype, popularity=c.store.popularity(c.p["n_citation"])),
        solution=calls,
        evidence=evidence,
        metric=t.metric,
        metadata={"template": t.question, "person_id": c.p["id"], "answer_expr": expr},
    )


_SPECS: list[tuple[str, Level, list[_T], str]] = [
    ("1-3", Level.KS, KS, "single-API facts (SoAy-easy: citations, papers, affiliation)"),
    ("2-4", Level.KU, KU, "profiling (position labels, doctorate, structured profiles)"),
    ("3-5", Level.KA, KA, "multi-API compositions (SoAy-hard: coauthors, venues, counts)"),
]
FAMILIES: dict[str, TaskFamily] = {
    fid: TaskFamily(
        id=fid,
        level=level,
        domain="scholar",
        env="scholar",
        metric="f1",
        description=f"Scholar {level.value}: {what}",
        generate=_generator(fid, level, templates),
    )
    for fid, level, templates, what in _SPECS
}
TEMPLATE_COUNT = len(KS) + len(KU) + len(KA)

for _fid, _family in FAMILIES.items():
    register_task_family(_fid)(_family)


register_task_set("scholar-ks")(["1-3"])
register_task_set("scholar")(["1-3", "2-4", "3-5"])
