"""Wiki KA families: multi-hop questions over the generated encyclopedia.

- 3-1 HotpotQA style: bridge (paper -> first author -> fact) and comparison questions.
- 3-2 2WikiMultihopQA style: compositional, inference (via a scholar's collaborators) and
  comparison, including bridge-comparison yes/no questions.
- 3-3 MuSiQue style: chains of 2, 3 and 4 hops.
- 3-4 KQA Pro style: counting, comparison, qualifiers and set operations, each with its
  program in ``metadata["program"]``.

Gold answers are computed from the scholar world; the gold Search/Lookup calls are executed in
a fresh session and a task is emitted only if every evidence string (for extractive answers,
the answer itself) appears in what they returned.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from raleval.envs.wiki.families.common import (
    Question,
    ScholarWorld,
    lookup,
    register_wiki_families,
    scholar_world,
    search,
)
from raleval.records import Level


def _paper(w: ScholarWorld, rng: random.Random) -> dict[str, Any]:
    return w.papers[rng.randrange(1, len(w.papers) + 1)]


def _person(w: ScholarWorld, rng: random.Random) -> dict[str, Any]:
    return w.people[rng.randrange(1, len(w.people) + 1)]


def _first(w: ScholarWorld, paper: dict[str, Any]) -> dict[str, Any]:
    return w.people[paper["authors"][0]]


def _collab(w: ScholarWorld, p: dict[str, Any]) -> dict[str, Any] | None:
    return w.people[p["collab"][0]] if p["collab"] and p.get("top_collab") else None


def _more(a: Any, b: Any, na: str, nb: str) -> str | None:
    return None if a == b else (na if a > b else nb)


# --- 3-1 HotpotQA --------------------------------------------------------------------------


def _h_bridge_org(w, rng):
    pa = _paper(w, rng)
    a = _first(w, pa)
    if a["org"] in a["title"]:  # a namesake's page title names the organization: no hop needed
        return None
    return Question(
        f"Which organization is the first author of the paper '{pa['title']}' affiliated with?",
        a["org"],
        [search(pa["page"]), search(a["title"])],
    )


def _h_bridge_cit(w, rng):
    pa = _paper(w, rng)
    a = _first(w, pa)
    return Question(
        f"How many times have the papers of the first author of '{pa['title']}' been cited?",
        str(a["n_cit"]),
        [search(pa["page"]), search(a["title"])],
    )


def _h_cmp_papers(w, rng):
    p1, p2 = _paper(w, rng), _paper(w, rng)
    ans = _more(p1["cit"], p2["cit"], p1["title"], p2["title"])
    if ans is None or p1["title"] == p2["title"]:
        return None
    return Question(
        f"Which paper has been cited more often, '{p1['title']}' or '{p2['title']}'?",
        ans,
        [search(p1["page"]), search(p2["page"])],
        [f"cited {p1['cit']} times", f"cited {p2['cit']} times"],
        "comparison",
    )


def _h_cmp_people(w, rng):
    a, b = _person(w, rng), _person(w, rng)
    ans = _more(a["n_pubs"], b["n_pubs"], a["name"], b["name"])
    if ans is None or a["name"] == b["name"]:
        return None
    return Question(
        f"Who has published more papers, {a['title']} or {b['title']}?",
        ans,
        [search(a["title"]), search(b["title"])],
        [f"published {a['n_pubs']} papers", f"published {b['n_pubs']} papers"],
        "comparison",
    )


# --- 3-2 2WikiMultihopQA ----------------------------------------------------------------------


def _w_compositional(w, rng):
    pa = _paper(w, rng)
    a = _first(w, pa)
    return Question(
        f"From which institution did the first author of '{pa['title']}' receive a Ph.D.?",
        a["phd_org"],
        [search(pa["page"]), search(a["title"]), lookup("Ph.D.")],
        qtype="compositional",
    )


def _w_inference(w, rng):
    a = _person(w, rng)
    c = _collab(w, a)
    # most collaborators share the scholar's organization: the scholar's own page would answer
    if c is None or c["org"] == a["org"]:
        return None
    return Question(
        f"Where does the most frequent collaborator of {a['title']} work?",
        c["org"],
        [search(a["title"]), lookup("Frequent collaborators"), search(c["title"])],
        qtype="inference",
    )


def _w_cmp_phd(w, rng):
    a, b = _person(w, rng), _person(w, rng)
    ans = _more(b["phd_year"], a["phd_year"], a["name"], b["name"])  # earlier wins
    if ans is None or a["name"] == b["name"]:
        return None
    calls = [search(a["title"]), lookup("Ph.D."), search(b["title"]), lookup("Ph.D.")]
    return Question(
        f"Who received a doctorate earlier, {a['title']} or {b['title']}?",
        ans,
        calls,
        [str(a["phd_year"]), str(b["phd_year"])],
        "comparison",
    )


def _w_same_org(w, rng):
    p1, p2 = _paper(w, rng), _paper(w, rng)
    a, b = _first(w, p1), _first(w, p2)
    if rng.random() < 0.5:  # half the questions have the answer yes
        same = [x for x in w.papers.values() if w.people[x["authors"][0]]["org"] == a["org"]]
        p2 = rng.choice(same)
        b = _first(w, p2)
    if p1["title"] == p2["title"] or a is b:
        return None
    calls = [search(p1["page"]), search(a["title"]), search(p2["page"]), search(b["title"])]
    return Question(
        f"Are the first authors of '{p1['title']}' and '{p2['title']}' affiliated with the "
        "same organization?",
        "yes" if a["org"] == b["org"] else "no",
        calls,
        [a["org"], b["org"]],
        "bridge_comparison",
    )


# --- 3-3 MuSiQue ------------------------------------------------------------------------------


def _m_2hop(w, rng):
    pa = _paper(w, rng)
    a = _first(w, pa)
    return Question(
        f"What is the academic position of the first author of '{pa['title']}'?",
        a["position"],
        [search(pa["page"]), search(a["title"])],
        qtype="2hop",
    )


def _m_3hop_collab(w, rng):
    pa = _paper(w, rng)
    a = _first(w, pa)
    c = _collab(w, a)
    # the first author's own organization would answer without the collaborator hop
    if c is None or c["org"] == a["org"]:
        return None
    calls = [
        search(pa["page"]),
        search(a["title"]),
        lookup("Frequent collaborators"),
        search(c["title"]),
    ]
    return Question(
        f"Where does the most frequent collaborator of the first author of '{pa['title']}' work?",
        c["org"],
        calls,
        qtype="3hop",
    )


def _m_3hop_org(w, rng):
    pa = _paper(w, rng)
    a = _first(w, pa)
    n = w.orgs[a["org"]]
    return Question(
        f"How many researchers does the organization of the first author of '{pa['title']}' have?",
        str(n),
        [search(pa["page"]), search(a["title"]), search(a["org"])],
        [f"{n} researchers"],
        "3hop",
    )


def _m_4hop(w, rng):
    pa = _paper(w, rng)
    a = _first(w, pa)
    c = _collab(w, a)
    if (
        c is None
        or not c["pubs"]
        or (len(c["pubs"]) > 1 and c["pubs"][1]["cit"] == c["pubs"][0]["cit"])
    ):
        return None
    top = c["pubs"][0]
    calls = [
        search(pa["page"]),
        search(a["title"]),
        lookup("Frequent collaborators"),
        search(c["title"]),
        lookup("Selected publications"),
    ]
    return Question(
        "In which venue was the most cited paper of the most frequent collaborator of the "
        f"first author of '{pa['title']}' published?",
        top["venue"],
        calls,
        qtype="4hop",
    )


# --- 3-4 KQA Pro ------------------------------------------------------------------------------


def _k_count(w, rng):
    a = _person(w, rng)
    n = w.orgs[a["org"]]
    return Question(
        f"How many researchers does {a['org']} have?",
        str(n),
        [search(a["org"])],
        [f"{n} researchers"],
        "count",
        program=f"FindAll() FilterConcept(researcher) Relate(member of, {a['org']}) Count()",
    )


def _k_compare(w, rng):
    o1, o2 = rng.sample(sorted(w.orgs), 2)
    ans = _more(w.orgs[o1], w.orgs[o2], o1, o2)
    if ans is None:
        return None
    return Question(
        f"Which organization has more researchers, {o1} or {o2}?",
        ans,
        [search(o1), search(o2)],
        [f"{w.orgs[o1]} researchers", f"{w.orgs[o2]} researchers"],
        "comparison",
        program=f"Find({o1}) Find({o2}) SelectBetween(number of researchers, greater)",
    )


def _k_qualifier(w, rng):
    a = _person(w, rng)
    if not a["pubs"]:
        return None
    pub = rng.choice(a["pubs"])
    return Question(
        f"In which year did {a['title']} publish '{pub['title']}'?",
        str(pub["year"]),
        [search(a["title"]), lookup("Selected publications")],
        [f"{pub['title']} ({pub['year']}"],
        "qualifier",
        program=f"Find({a['title']}) Relate(author of, {pub['title']}) QueryAttrQualifier(year)",
    )


def _k_count_filter(w, rng):
    a = _person(w, rng)
    if len(a["pubs"]) < 2:
        return None
    year = rng.choice(a["pubs"])["year"]
    n = sum(1 for p in a["pubs"] if p["year"] >= year)
    return Question(
        f"How many of the selected publications of {a['title']} appeared in {year} or later?",
        str(n),
        [search(a["title"]), lookup("Selected publications")],
        [f"{p['title']} ({p['year']}" for p in a["pubs"]],
        "count",
        program=f"Find({a['title']}) Relate(selected publication) "
        f"FilterYear(publication date, {year}, >=) Count()",
    )


def _k_intersection(w, rng):
    a, b = _person(w, rng), _person(w, rng)
    shared = [i for i in a["interests"] if i in b["interests"]]
    if not shared or a["name"] == b["name"]:
        return None
    return Question(
        f"Which research interests do {a['title']} and {b['title']} share?",
        ", ".join(shared),
        [search(a["title"]), search(b["title"])],
        shared,
        "set_and",
        "set_f1",
        program=f"Find({a['title']}) Relate(interest) Find({b['title']}) Relate(interest) And()",
    )


def _k_difference(w, rng):
    a, b = _person(w, rng), _person(w, rng)
    only = [i for i in a["interests"] if i not in b["interests"]]
    if not only or a["name"] == b["name"] or len(only) == len(a["interests"]):
        return None
    return Question(
        f"Which research interests of {a['title']} are not research interests of {b['title']}?",
        ", ".join(only),
        [search(a["title"]), search(b["title"])],
        a["interests"] + b["interests"],
        "set_minus",
        "set_f1",
        program=f"Find({a['title']}) Relate(interest) Find({b['title']}) Relate(interest) Minus()",
    )


Maker = Callable[[ScholarWorld, random.Random], Question | None]

MAKERS: dict[str, list[Maker]] = {
    "3-1": [_h_bridge_org, _h_bridge_cit, _h_cmp_papers, _h_cmp_people],
    "3-2": [_w_compositional, _w_inference, _w_cmp_phd, _w_same_org],
    "3-3": [_m_2hop, _m_3hop_collab, _m_3hop_org, _m_4hop],
    "3-4": [_k_count, _k_compare, _k_qualifier, _k_count_filter, _k_intersection, _k_difference],
}


_DESCRIPTIONS = {
    "3-1": "Wiki KA: HotpotQA-style bridge and comparison questions",
    "3-2": "Wiki KA: 2WikiMultihopQA-style compositional, inference and comparison questions",
    "3-3": "Wiki KA: MuSiQue-style chains of 2 to 4 hops",
    "3-4": "Wiki KA: KQA Pro-style counting, comparison, qualifiers and set operations",
}
FAMILIES = register_wiki_families(
    "wiki-ka",
    Level.KA,
    _DESCRIPTIONS,
    MAKERS,
    lambda meta: scholar_world(meta["size"], int(meta["seed"])),
)
