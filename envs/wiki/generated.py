"""Encyclopedia pages rendered from a generated world, so wiki tasks about it are answerable
offline and cannot be answered from memory.

One page per scholar, paper and organization: an infobox-like lead sentence, then paragraphs
for research, education, publications and collaborators. Namesakes get qualified titles
("Ada Lin (Qerrin Institute)") and a disambiguation page under the bare name, as Wikipedia does.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from raleval import registry
from raleval.envs.wiki.store import WikiStore, write_store

# Bump when the rendering or the scholar world changes: cached stores are keyed by it.
PAGES_VERSION = 8  # 2: the concept taxonomy pages; 3: invented category words; 8: scholar v4


def _join(items: list[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return f"{', '.join(items[:-1])} and {items[-1]}"


def person_titles(store: Any) -> dict[int, str]:
    """The page title of every scholar (rowid -> title); namesakes are qualified by org."""
    rows = store.query(
        "SELECT p.rowid, p.name, o.name FROM persons p JOIN orgs o ON o.rowid = p.org "
        "ORDER BY p.rowid"
    )
    by_name: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for rowid, name, org in rows:
        by_name[name.casefold()].append((rowid, f"{name}|{org}"))
    titles: dict[int, str] = {}
    for group in by_name.values():
        if len(group) == 1:
            rowid, both = group[0]
            titles[rowid] = both.split("|")[0]
            continue
        seen: set[str] = set()
        for rowid, both in group:
            name, org = both.split("|")
            title = f"{name} ({org})"
            if title.casefold() in seen:
                title = f"{name} ({org}, {rowid})"
            seen.add(title.casefold())
            titles[rowid] = title
    return titles


def paper_titles(store: Any, person_page_titles: dict[int, str] | None = None) -> dict[int, str]:
    """The page title of every paper (rowid -> title): qualified by year (and rowid) where a
    scholar's page or an earlier paper already has the bare title."""
    titles = person_page_titles if person_page_titles is not None else person_titles(store)
    used: set[str] = set(t.casefold() for t in titles.values())
    out: dict[int, str] = {}
    for rowid, title, year in store.query("SELECT rowid, title, year FROM pubs ORDER BY rowid"):
        page_title = title if title.casefold() not in used else f"{title} ({year} paper)"
        if page_title.casefold() in used:
            page_title = f"{title} ({year} paper, {rowid})"
        used.add(page_title.casefold())
        out[rowid] = page_title
    return out


def scholar_pages(store: Any) -> Iterator[tuple[str, str]]:
    """(title, text) of every page of a scholar world."""
    titles = person_titles(store)
    top_pubs: dict[int, list[tuple]] = defaultdict(list)
    for person, title, year, venue, n_cit in store.query(
        "SELECT a.person, p.title, p.year, p.venue, p.n_citation FROM authorship a "
        "JOIN pubs p ON p.rowid = a.pub ORDER BY a.person, p.n_citation DESC, p.rowid"
    ):
        if len(top_pubs[person]) < 5:
            top_pubs[person].append((title, year, venue, n_cit))
    collaborators: dict[int, list[int]] = defaultdict(list)
    for a, b, _ in store.query("SELECT a, b, weight FROM coauthors ORDER BY a, weight DESC, b"):
        if len(collaborators[a]) < 5:
            collaborators[a].append(b)

    names_by_key: dict[str, list[int]] = defaultdict(list)
    for (
        rowid,
        name,
        org,
        gender,
        position,
        interests,
        education,
        n_cit,
        n_pubs,
        email,
    ) in store.query(
        "SELECT p.rowid, p.name, o.name, p.gender, p.position, p.interests, p.education, "
        "p.n_citation, p.n_pubs, p.email FROM persons p JOIN orgs o ON o.rowid = p.org "
        "ORDER BY p.rowid"
    ):
        names_by_key[name.casefold()].append(rowid)
        interests = json.loads(interests)
        pronoun = "He" if gender == "male" else "She"
        paragraphs = [
            f"{name} is a {position} at {org}, working on {_join(interests)}. {pronoun} has "
            f"published {n_pubs} papers, which have been cited {n_cit} times.",
            f"Research interests: {', '.join(interests)}.",
            f"Education: {pronoun} received a {education}.",
        ]
        if top_pubs[rowid]:
            works = "; ".join(f"{t} ({y}, {v}, {c} citations)" for t, y, v, c in top_pubs[rowid])
            paragraphs.append(f"Selected publications: {works}.")
        if collaborators[rowid]:
            people = _join([titles[b] for b in collaborators[rowid]])
            paragraphs.append(f"Frequent collaborators: {people}.")
        paragraphs.append(f"Contact: {email}.")
        yield titles[rowid], "\n\n".join(paragraphs)

    for group in names_by_key.values():
        if len(group) > 1:
            name = titles[group[0]].split(" (")[0]
            meanings = [f"{titles[r]}, a researcher" for r in group]
            yield name, f"{name} may refer to:\n\n" + "\n\n".join(meanings)

    authors: dict[int, list[str]] = defaultdict(list)
    for pub, person in store.query("SELECT pub, person FROM authorship ORDER BY pub, position"):
        authors[pub].append(titles[person])
    pages = paper_titles(store, titles)
    used: set[str] = set(t.casefold() for t in titles.values()) | {
        t.casefold() for t in pages.values()
    }
    for rowid, title, year, venue, n_cit, abstract in store.query(
        "SELECT rowid, title, year, venue, n_citation, abstract FROM pubs ORDER BY rowid"
    ):
        page_title = pages[rowid]
        lead = (
            f"{title} is a {year} paper by {_join(authors[rowid])}, published in {venue}. "
            f"It has been cited {n_cit} times."
        )
        yield page_title, "\n\n".join([lead, abstract or ""]).strip()

    for name, aliases, members in store.query(
        "SELECT o.name, o.aliases, count(p.rowid) FROM orgs o LEFT JOIN persons p "
        "ON p.org = o.rowid GROUP BY o.rowid ORDER BY o.rowid"
    ):
        alias = json.loads(aliases)
        if name.casefold() in used:
            continue
        used.add(name.casefold())
        also = f" (also known as {', '.join(alias)})" if alias else ""
        yield name, f"{name}{also} is a research organization with {members} researchers."


def world_pages(store: Any, seed: int) -> Iterator[tuple[str, str]]:
    """The scholar pages, then the concept taxonomy's pages (skipping any title clash)."""
    from raleval.envs.wiki.concepts import concept_pages, concept_world

    used: set[str] = set()
    for title, text in scholar_pages(store):
        used.add(title.casefold())
        yield title, text
    for title, text in concept_pages(concept_world(seed)):
        if title.casefold() not in used:
            yield title, text


def generated_store_path(world: str, size: str, seed: int) -> Path:
    from raleval.cache import cache_dir

    return cache_dir() / "wiki" / f"{world}-pages-v{PAGES_VERSION}-{size}-s{seed}.sqlite"


def scholar_store(size: str, seed: int) -> Any:
    """The scholar world's store, reached through the registry: the wiki environment reads
    the scholar world's records but does not import its package (each domain in its folder)."""
    return registry.envs.get("scholar")(size=size, seed=seed).store


def generated_store(world: str = "scholar", size: str = "small", seed: int = 0) -> WikiStore:
    """The encyclopedia of a generated world, rendered into the cache on first use."""
    if world != "scholar":
        raise ValueError(f"no generated encyclopedia for world {world!r}; choose 'scholar'")
    path = generated_store_path(world, size, seed)
    if not path.exists():
        source = scholar_store(size, seed)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        meta = {
            "world": world,
            "size": size,
            "seed": str(seed),
            "world_file": source.path.name,
        }
        write_store(tmp, world_pages(source, seed), meta).close()
        tmp.replace(path)
        WikiStore(path).warm()  # save its search indexes beside it (named after the file)
    return WikiStore(path)
