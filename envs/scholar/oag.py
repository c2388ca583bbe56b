"""Import an Open Academic Graph / AMiner JSON-lines dump into a scholar world.

Authors file, one JSON object per line (OAG ``aminer_authors`` style)::

    {"id": "53f4...", "name": "Ada Lin", "org": "Qerrin Institute of Technology",
     "orgs": [...], "position": "Professor", "n_pubs": 17, "n_citation": 412,
     "tags": [{"t": "entity linking", "w": 3}], "pubs": [{"i": "5390...", "r": 0}],
     "gender": "female", "email": "...", "bio": "...", "edu": "..."}

Papers file (``aminer_papers`` style)::

    {"id": "5390...", "title": "...", "authors": [{"name": "Ada Lin", "id": "53f4...",
     "org": "..."}], "venue": {"raw": "EMNLP"} | "EMNLP", "year": 2019, "n_citation": 31,
     "abstract": "...", "references": ["5390..."]}

Optional fields may be missing. A malformed line fails with its path, line and field.

    raleval-import: python -m raleval.envs.scholar.oag AUTHORS PAPERS OUT.sqlite
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from raleval.envs.scholar.world import INDEXES, SCHEMA


class OAGFormatError(ValueError):
    """A line of an OAG file that cannot be read; names the file, line and field."""


class _Tag(BaseModel):
    model_config = ConfigDict(extra="ignore")
    t: str
    w: float = 1.0


class OAGAuthor(BaseModel):
    model_config = ConfigDict(extra="ignore")
    id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    org: str | None = None
    orgs: list[str] = Field(default_factory=list)
    position: str | None = None
    gender: str | None = None
    email: str | None = None
    bio: str | None = None
    edu: str | None = None
    n_citation: int | None = None
    tags: list[_Tag] = Field(default_factory=list)


class _PaperAuthor(BaseModel):
    model_config = ConfigDict(extra="ignore")
    name: str
    id: str | None = None


class OAGPaper(BaseModel):
    model_config = ConfigDict(extra="ignore")
    id: str = Field(min_length=1)
    title: str = Field(min_length=1)
    authors: list[_PaperAuthor] = Field(default_factory=list)
    venue: dict[str, Any] | str | None = None
    year: int | None = None
    n_citation: int = 0
    abstract: str | None = None
    references: list[str] = Field(default_factory=list)

    @property
    def venue_name(self) -> str | None:
        if isinstance(self.venue, dict):
            return self.venue.get("raw") or self.venue.get("name")
        return self.venue


def _read(path: Path, model: type[BaseModel]) -> Iterator[Any]:
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                yield model.model_validate_json(line)
            except ValidationError as exc:
                err = exc.errors()[0]
                field = ".".join(str(p) for p in err["loc"]) or "(line)"
                raise OAGFormatError(f"{path}:{lineno}: field {field}: {err['msg']}") from exc


def _abbrev(name: str) -> str:
    return "".join(w[0] for w in name.replace(" of ", " ").split() if w[:1].isupper())


def import_oag(authors_path: Path, papers_path: Path, out: Path) -> Path:
    """Build a scholar world SQLite file at ``out`` from the two JSON-lines files."""
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    try:
        _import(authors_path, papers_path, tmp)
    except BaseException:
        tmp.unlink(missing_ok=True)  # never leave half a world behind
        raise
    os.replace(tmp, out)
    return out


def _import(authors_path: Path, papers_path: Path, tmp: Path) -> None:
    db = sqlite3.connect(tmp)
    db.execute("PRAGMA journal_mode=OFF")
    db.executescript(SCHEMA)
    orgs: dict[str, int] = {}
    topics: dict[str, int] = {}
    persons: dict[str, int] = {}
    person_topics: list[tuple[int, int]] = []
    given_citations: dict[int, int] = {}
    for a in _read(authors_path, OAGAuthor):
        if a.id in persons:
            continue
        org_name = a.org or (a.orgs[0] if a.orgs else "Unknown organization")
        if org_name not in orgs:
            orgs[org_name] = len(orgs) + 1
            aliases = [x for x in {_abbrev(org_name)} if x and x != org_name]
            db.execute(
                "INSERT INTO orgs VALUES (?, ?, ?, ?)",
                (orgs[org_name], f"org{orgs[org_name]}", org_name, json.dumps(aliases)),
            )
        rowid = len(persons) + 1
        persons[a.id] = rowid
        interests = [t.t for t in sorted(a.tags, key=lambda t: -t.w)]
        for name in interests:
            topics.setdefault(name, len(topics))
            person_topics.append((topics[name], rowid))
        if a.n_citation is not None:
            given_citations[rowid] = a.n_citation
        db.execute(
            "INSERT INTO persons (rowid, id, name, org, gender, position, interests, email, "
            "education, bio) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                rowid,
                a.id,
                a.name,
                orgs[org_name],
                a.gender,
                a.position,
                json.dumps(interests),
                a.email,
                a.edu,
                a.bio,
            ),
        )
    pubs: dict[str, int] = {}
    references: list[tuple[int, str]] = []
    for p in _read(papers_path, OAGPaper):
        if p.id in pubs:
            continue
        rowid = len(pubs) + 1
        pubs[p.id] = rowid
        db.execute(
            "INSERT INTO pubs VALUES (?, ?, ?, ?, ?, ?, ?)",
            (rowid, p.id, p.title, p.year, p.venue_name, p.n_citation, p.abstract),
        )
        position = 0
        for author in p.authors:
            if author.id in persons:  # authors without a profile are not searchable people
                db.execute(
                    "INSERT INTO authorship VALUES (?, ?, ?)", (rowid, position, persons[author.id])
                )
                position += 1
        references.extend((rowid, ref) for ref in p.references)
    db.executemany(
        "INSERT OR IGNORE INTO citations VALUES (?, ?)",
        [(src, pubs[ref]) for src, ref in references if ref in pubs],
    )
    db.executemany("INSERT INTO topics VALUES (?, ?)", [(i, n) for n, i in topics.items()])
    # Counts the dump gives win; otherwise they are derived from the imported papers.
    db.execute(
        "UPDATE persons SET n_pubs = (SELECT COUNT(*) FROM authorship a "
        "WHERE a.person = persons.rowid), n_citation = (SELECT COALESCE(SUM(p.n_citation), "
        "0) FROM authorship a JOIN pubs p ON p.rowid = a.pub WHERE a.person = persons.rowid)"
    )
    db.executemany(
        "UPDATE persons SET n_citation = ? WHERE rowid = ?",
        [(c, r) for r, c in given_citations.items()],
    )
    db.executemany(
        "INSERT OR IGNORE INTO person_topics SELECT ?, n_citation, rowid "
        "FROM persons WHERE rowid = ?",
        person_topics,
    )
    db.execute(
        "INSERT INTO coauthors SELECT a.person, b.person, COUNT(*) FROM authorship a "
        "JOIN authorship b ON a.pub = b.pub AND a.person != b.person "
        "GROUP BY a.person, b.person"
    )
    db.executescript(INDEXES)
    cits = sorted((r[0] for r in db.execute("SELECT n_citation FROM persons")), reverse=True)
    n = len(cits)
    meta = {
        "generator_version": "oag",
        "size": "imported",
        "seed": "0",
        "n_persons": str(n),
        "n_pubs": str(len(pubs)),
        "head_min_citation": str(cits[max(0, int(0.1 * n) - 1)] if cits else 0),
        "torso_min_citation": str(cits[max(0, int(0.4 * n) - 1)] if cits else 0),
        "source": f"{authors_path.name} + {papers_path.name}",
    }
    db.executemany("INSERT INTO meta VALUES (?, ?)", sorted(meta.items()))
    db.commit()
    db.close()


def main(argv: list[str] | None = None) -> None:
    args = argv if argv is not None else sys.argv[1:]
    if len(args) != 3:
        sys.exit("usage: python -m raleval.envs.scholar.oag AUTHORS.jsonl PAPERS.jsonl OUT.sqlite")
    try:
        path = import_oag(Path(args[0]), Path(args[1]), Path(args[2]))
    except (OAGFormatError, OSError) as exc:
        sys.exit(f"error: {exc}")
    print(f"wrote {path}; use it with: raleval run --env scholar -E path={path}")


if __name__ == "__main__":
    main()
