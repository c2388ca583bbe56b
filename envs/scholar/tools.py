"""The seven AMiner/SoAy APIs over a :class:`ScholarStore`, with the fields SoAy exposes."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from raleval.environment import ToolSpec
from raleval.envs.scholar.store import ScholarStore

MAX_HITS = 10
NAME_CUTOFF = 80.0
ORG_CUTOFF = 85.0
TITLE_CUTOFF = 60.0


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)


class SearchPersonParams(_Params):
    name: str | None = Field(None, description="the person's name")
    organization: str | None = Field(None, description="organization, alias or abbreviation")
    interest: str | None = Field(None, description="a research interest")

    @model_validator(mode="after")
    def _one_given(self) -> SearchPersonParams:
        if not (self.name or self.organization or self.interest):
            raise ValueError("give at least one of name, organization, interest")
        return self


class SearchPublicationParams(_Params):
    publication_info: str = Field(min_length=1, description="title or words of the title")


class PersonIdParams(_Params):
    references: ClassVar[tuple[str, ...]] = ("person_id",)  # from an earlier result
    person_id: str = Field(min_length=1, description="a person_id from searchPerson")


class PubIdParams(_Params):
    references: ClassVar[tuple[str, ...]] = ("pub_id",)
    pub_id: str = Field(min_length=1, description="a pub_id from searchPublication")


def _hit(p: dict[str, Any]) -> dict[str, Any]:
    return {
        "person_id": p["id"],
        "name": p["name"],
        "interests": p["interests"][:10],
        "num_citation": p["n_citation"],
        "num_pubs": p["n_pubs"],
        "organization": p["organization"],
    }


def build_tools(store: ScholarStore) -> list[ToolSpec]:
    """Declare the seven APIs over ``store``."""

    def search_person(
        name: str | None = None, organization: str | None = None, interest: str | None = None
    ) -> list[dict[str, Any]]:
        orgs = store.match_orgs(organization, ORG_CUTOFF) if organization else None
        topics = store.match_topics(interest) if interest else None
        if (orgs is not None and not orgs) or (topics is not None and not topics):
            return []
        if name:
            name_scores = {i + 1: s for i, s in store.names.search(name, 200, NAME_CUTOFF)}
            pool = store.persons_by_rowid(list(name_scores))
        elif orgs:
            want = MAX_HITS if topics is None else 2000
            pool = store.persons_by_rowid([r for o in orgs for r in store.top_members(o, want)])
            name_scores = {}
        else:
            assert topics is not None
            pool = store.persons_by_rowid(
                [r for t in topics for r in store.top_by_topic(t, MAX_HITS)]
            )
            name_scores = {}
        scored = []
        for rowid, p in pool.items():
            parts = []
            if name:
                parts.append(name_scores[rowid])
            if orgs is not None:
                if p["org"] not in orgs:
                    continue
                parts.append(orgs[p["org"]])
            if topics is not None:
                best = max(
                    (s for t, s in topics.items() if store.topics[t] in p["interests"]),
                    default=None,
                )
                if best is None:
                    continue
                parts.append(best)
            scored.append((-round(sum(parts) / len(parts), 6), -p["n_citation"], rowid, p))
        scored.sort(key=lambda x: x[:3])
        return [_hit(p) for *_, p in scored[:MAX_HITS]]

    def search_publication(publication_info: str) -> list[dict[str, Any]]:
        hits = store.titles.search(publication_info, 50, TITLE_CUTOFF)
        if not hits:
            return []
        score = {i + 1: s for i, s in hits}
        pubs = store.pubs_by_rowid(list(score))
        pubs.sort(key=lambda p: (-score[p["rowid"]], -p["n_citation"], p["rowid"]))
        return [
            {"pub_id": p["id"], "title": p["title"], "year": p["year"]} for p in pubs[:MAX_HITS]
        ]

    def get_coauthors(person_id: str) -> list[dict[str, Any]]:
        p = store.person(person_id)
        if p is None:
            return []
        return [
            {"person_id": cid, "name": cname, "relation": "coauthor"}
            for cid, cname, _ in store.coauthors(p["rowid"])
        ]

    def get_person_interest(person_id: str) -> list[str]:
        p = store.person(person_id)
        return list(p["interests"]) if p else []

    def get_publication(pub_id: str) -> dict[str, Any]:
        pub = store.pub(pub_id)
        if pub is None:
            return {}
        return {
            "abstract": pub["abstract"],
            "author_list": [{"person_id": i, "name": n} for i, n in pub["authors"]],
            "num_citation": pub["n_citation"],
            "year": pub["year"],
            "venue": pub["venue"],
            "pdf_link": f"https://papers.raleval.invalid/{pub['id']}.pdf",
        }

    def get_person_basic_info(person_id: str) -> dict[str, Any]:
        p = store.person(person_id)
        if p is None:
            return {}
        return {
            "person_id": p["id"],
            "name": p["name"],
            "gender": p["gender"],
            "organization": p["organization"],
            "position": p["position"],
            "bio": p["bio"],
            "education_experience": p["education"],
            "email": p["email"],
        }

    def get_person_pubs(person_id: str) -> list[dict[str, Any]]:
        rows = store.person_pubs_with_authors(person_id)
        return [
            {
                "pub_id": pid,
                "title": title,
                "num_citation": cit,
                "year": year,
                "authors_name_list": names.split("\x1f") if names else [],
            }
            for pid, title, cit, year, names in rows or []
        ]

    return [
        ToolSpec(
            "searchPerson",
            "Find scholars by name, organization and/or research interest (fuzzy). Returns up "
            "to 10 of {person_id, name, interests, num_citation, num_pubs, organization}, best "
            "match first, most cited first among equal matches.",
            SearchPersonParams,
            "list[dict]",
            search_person,
            matching="fuzzy",
            empty_message="No person found.",
        ),
        ToolSpec(
            "searchPublication",
            "Find publications by (part of) their title (fuzzy). Returns up to 10 of "
            "{pub_id, title, year}.",
            SearchPublicationParams,
            "list[dict]",
            search_publication,
            matching="fuzzy",
            empty_message="No publication found.",
        ),
        ToolSpec(
            "getCoauthors",
            "Coauthors of a person as {person_id, name, relation}, most frequent first.",
            PersonIdParams,
            "list[dict]",
            get_coauthors,
            empty_message="No coauthors found.",
        ),
        ToolSpec(
            "getPersonInterest",
            "Research interests of a person.",
            PersonIdParams,
            "list[str]",
            get_person_interest,
            empty_message="No interests found.",
        ),
        ToolSpec(
            "getPublication",
            "Details of a publication: {abstract, author_list, num_citation, year, venue, "
            "pdf_link}.",
            PubIdParams,
            "dict",
            get_publication,
            empty_message="No publication found.",
        ),
        ToolSpec(
            "getPersonBasicInfo",
            "Profile of a person: {person_id, name, gender, organization, position, bio, "
            "education_experience, email}.",
            PersonIdParams,
            "dict",
            get_person_basic_info,
            empty_message="No person found.",
        ),
        ToolSpec(
            "getPersonPubs",
            "Publications of a person as {pub_id, title, num_citation, year, "
            "authors_name_list}, most cited first.",
            PersonIdParams,
            "list[dict]",
            get_person_pubs,
            empty_message="No publication found.",
        ),
    ]
