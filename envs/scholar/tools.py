"""The seven AMiner/SoAy APIs over a :class:`ScholarWorld`, with the fields SoAy exposes."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator
from rapidfuzz import fuzz, process

from raleval.envs.scholar.world import ScholarWorld
from raleval.envs.spec import ToolSpec

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
    person_id: str = Field(min_length=1)


class PubIdParams(_Params):
    pub_id: str = Field(min_length=1)


class ScholarIndex:
    """Lookup structures the tools share: unique names, organization names and titles."""

    def __init__(self, world: ScholarWorld) -> None:
        self.world = world
        self.ids_by_name: dict[str, list[str]] = {}
        for s in world.scholars.values():
            self.ids_by_name.setdefault(s.name, []).append(s.id)
        self.names = list(self.ids_by_name)
        self.org_keys: list[str] = []
        self.org_of_key: list[str] = []
        for org in world.orgs.values():
            for key in (org.name, *org.aliases):
                self.org_keys.append(key)
                self.org_of_key.append(org.id)
        self.members: dict[str, list[str]] = {}
        for s in world.scholars.values():
            self.members.setdefault(s.org, []).append(s.id)
        self.pub_ids = list(world.pubs)
        self.titles = [world.pubs[p].title for p in self.pub_ids]

    def match_orgs(self, query: str) -> dict[str, float]:
        scores: dict[str, float] = {}
        for _key, score, i in process.extract(
            query, self.org_keys, scorer=fuzz.WRatio, score_cutoff=ORG_CUTOFF, limit=None
        ):
            oid = self.org_of_key[i]
            scores[oid] = max(score, scores.get(oid, 0.0))
        return scores

    def match_names(self, query: str) -> dict[str, float]:
        scores: dict[str, float] = {}
        for name, score, _i in process.extract(
            query, self.names, scorer=fuzz.WRatio, score_cutoff=NAME_CUTOFF, limit=200
        ):
            for sid in self.ids_by_name[name]:
                scores[sid] = score
        return scores


def _person_hit(world: ScholarWorld, sid: str) -> dict[str, Any]:
    s = world.scholars[sid]
    return {
        "person_id": s.id,
        "name": s.name,
        "interests": s.interests[:10],
        "num_citation": s.n_citation,
        "num_pubs": len(s.pubs),
        "organization": world.orgs[s.org].name,
    }


def build_tools(world: ScholarWorld) -> list[ToolSpec]:
    """Declare the seven APIs over ``world``."""
    index = ScholarIndex(world)

    def search_person(
        name: str | None = None, organization: str | None = None, interest: str | None = None
    ) -> list[dict[str, Any]]:
        parts: list[dict[str, float]] = []
        if name:
            parts.append(index.match_names(name))
        if organization:
            orgs = index.match_orgs(organization)
            parts.append({sid: sc for oid, sc in orgs.items() for sid in index.members[oid]})
        if interest:
            pool = parts[0] if parts else world.scholars
            hits: dict[str, float] = {}
            for sid in pool:
                best = max(
                    (fuzz.WRatio(interest, t) for t in world.scholars[sid].interests), default=0
                )
                if best >= NAME_CUTOFF:
                    hits[sid] = best
            parts.append(hits)
        common = set(parts[0]).intersection(*parts[1:])
        ranked = sorted(
            common,
            key=lambda sid: (
                -round(sum(p[sid] for p in parts) / len(parts), 6),
                -world.scholars[sid].n_citation,
                sid,
            ),
        )
        return [_person_hit(world, sid) for sid in ranked[:MAX_HITS]]

    def search_publication(publication_info: str) -> list[dict[str, Any]]:
        found = process.extract(
            publication_info,
            index.titles,
            scorer=fuzz.WRatio,
            score_cutoff=TITLE_CUTOFF,
            limit=50,
        )
        ranked = sorted(
            found, key=lambda h: (-h[1], -world.pubs[index.pub_ids[h[2]]].n_citation, h[2])
        )
        out = []
        for _t, _score, i in ranked[:MAX_HITS]:
            p = world.pubs[index.pub_ids[i]]
            out.append({"pub_id": p.id, "title": p.title, "year": p.year})
        return out

    def get_coauthors(person_id: str) -> list[dict[str, Any]]:
        if person_id not in world.scholars:
            return []
        g = world.coauthors
        ranked = sorted(
            g[person_id].items(),
            key=lambda kv: (-kv[1]["weight"], -world.scholars[kv[0]].n_citation, kv[0]),
        )
        return [
            {"person_id": c, "name": world.scholars[c].name, "relation": "coauthor"}
            for c, _ in ranked
        ]

    def get_person_interest(person_id: str) -> list[str]:
        s = world.scholars.get(person_id)
        return list(s.interests) if s else []

    def get_publication(pub_id: str) -> dict[str, Any]:
        p = world.pubs.get(pub_id)
        if p is None:
            return {}
        return {
            "abstract": p.abstract,
            "author_list": [{"person_id": a, "name": world.scholars[a].name} for a in p.authors],
            "num_citation": p.n_citation,
            "year": p.year,
            "venue": p.venue,
            "pdf_link": p.pdf_link,
        }

    def get_person_basic_info(person_id: str) -> dict[str, Any]:
        s = world.scholars.get(person_id)
        if s is None:
            return {}
        return {
            "person_id": s.id,
            "name": s.name,
            "gender": s.gender,
            "organization": world.orgs[s.org].name,
            "position": s.position,
            "bio": s.bio,
            "education_experience": s.education,
            "email": s.email,
        }

    def get_person_pubs(person_id: str) -> list[dict[str, Any]]:
        s = world.scholars.get(person_id)
        if s is None:
            return []
        pubs = sorted((world.pubs[p] for p in s.pubs), key=lambda p: (-p.n_citation, p.id))
        return [
            {
                "pub_id": p.id,
                "title": p.title,
                "num_citation": p.n_citation,
                "year": p.year,
                "authors_name_list": [world.scholars[a].name for a in p.authors],
            }
            for p in pubs
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
