"""Read access to a scholar world: SQLite for exact lookups, fuzzy indexes for search."""

from __future__ import annotations

import json
import sqlite3
import threading
from functools import cached_property
from pathlib import Path
from typing import Any

from rapidfuzz import fuzz, process

from raleval.envs.fuzzy import FuzzyIndex, cached_index
from raleval.envs.scholar.world import GENERATOR_VERSION, generate_world, index_folder

TOPIC_CUTOFF = 80.0


def world_path(size: str, seed: int) -> Path:
    from raleval.cache import cache_dir

    return cache_dir() / "worlds" / f"scholar-v{GENERATOR_VERSION}-{size}-s{seed}.sqlite"


class ScholarStore:
    """One world on disk. Getters are indexed SQL lookups; searches go through FuzzyIndex."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        if not self.path.exists():
            raise FileNotFoundError(f"no scholar world at {self.path}")
        self._db = sqlite3.connect(
            f"file:{self.path}?mode=ro&immutable=1", uri=True, check_same_thread=False
        )
        # Reads go through a memory map (no read() syscall per page) and a 256 MB page cache:
        # getters touch random pages of a multi-gigabyte file.
        self._db.execute("PRAGMA mmap_size = 17179869184")
        self._db.execute("PRAGMA cache_size = -262144")
        self._lock = threading.Lock()
        self.meta = dict(self._db.execute("SELECT key, value FROM meta"))
        self.n_persons = int(self.meta["n_persons"])
        self.n_pubs = int(self.meta["n_pubs"])

    def query(self, sql: str, params: tuple = ()) -> list[tuple]:
        with self._lock:
            return self._db.execute(sql, params).fetchall()

    # --- fuzzy indexes (opened on first use; `warm()` opens them all) -----------------------
    # Names and titles are saved beside the world (``generate_world`` writes them, with the
    # stamp built here) and memory-mapped: tokenising a million names and three million titles
    # took ~20 s per process.
    def _saved_index(self, name: str, sql: str) -> FuzzyIndex:
        stamp = {"world_bytes": str(self.path.stat().st_size), **self.meta}
        folder = index_folder(self.path) / name
        return cached_index(folder, stamp, lambda: [r[0] for r in self.query(sql)])

    @cached_property
    def names(self) -> FuzzyIndex:
        """Person names; position i is person rowid i + 1."""
        return self._saved_index("names", "SELECT name FROM persons ORDER BY rowid")

    @cached_property
    def titles(self) -> FuzzyIndex:
        """Publication titles; position i is pub rowid i + 1."""
        return self._saved_index("titles", "SELECT title FROM pubs ORDER BY rowid")

    @cached_property
    def _org_keys(self) -> tuple[FuzzyIndex, list[int]]:
        keys, owners = [], []
        for rowid, name, aliases in self.query("SELECT rowid, name, aliases FROM orgs"):
            for key in (name, *json.loads(aliases)):
                keys.append(key)
                owners.append(rowid)
        return FuzzyIndex(keys), owners

    def warm(self) -> None:
        _ = self.names, self.titles, self._org_keys

    # --- matching ------------------------------------------------------------------------------
    def match_orgs(self, query: str, cutoff: float) -> dict[int, float]:
        index, owners = self._org_keys
        found: dict[int, float] = {}
        for i, score in index.search(query, limit=50, cutoff=cutoff):
            found[owners[i]] = max(score, found.get(owners[i], 0.0))
        return found

    @cached_property
    def topics(self) -> dict[int, str]:
        """Research-interest vocabulary: topic rowid -> name."""
        return dict(self.query("SELECT rowid, name FROM topics ORDER BY rowid"))

    def match_topics(self, query: str, cutoff: float = TOPIC_CUTOFF) -> dict[int, float]:
        ids, names = list(self.topics), list(self.topics.values())
        hits = process.extract(query, names, scorer=fuzz.WRatio, score_cutoff=cutoff, limit=50)
        return {ids[i]: score for _, score, i in hits}

    # --- rows ----------------------------------------------------------------------------------
    _PERSON = (
        "SELECT p.rowid, p.id, p.name, o.name, p.gender, p.position, p.interests, "
        "p.email, p.education, p.bio, p.n_citation, p.n_pubs, p.org "
        "FROM persons p JOIN orgs o ON o.rowid = p.org "
    )

    @staticmethod
    def _person(row: tuple) -> dict[str, Any]:
        return {
            "rowid": row[0],
            "id": row[1],
            "name": row[2],
            "organization": row[3],
            "gender": row[4],
            "position": row[5],
            "interests": json.loads(row[6]),
            "email": row[7],
            "education": row[8],
            "bio": row[9],
            "n_citation": row[10],
            "n_pubs": row[11],
            "org": row[12],
        }

    def person(self, person_id: str) -> dict[str, Any] | None:
        rows = self.query(self._PERSON + "WHERE p.id = ?", (person_id,))
        return self._person(rows[0]) if rows else None

    def persons_by_rowid(self, rowids: list[int]) -> dict[int, dict[str, Any]]:
        out: dict[int, dict[str, Any]] = {}
        for start in range(0, len(rowids), 500):
            chunk = rowids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for row in self.query(self._PERSON + f"WHERE p.rowid IN ({marks})", tuple(chunk)):
                out[row[0]] = self._person(row)
        return out

    def top_members(self, org: int, limit: int) -> list[int]:
        return [
            r[0]
            for r in self.query(
                "SELECT rowid FROM persons WHERE org = ? ORDER BY n_citation DESC, rowid LIMIT ?",
                (org, limit),
            )
        ]

    def top_by_topic(self, topic: int, limit: int) -> list[int]:
        return [
            r[0]
            for r in self.query(
                "SELECT person FROM person_topics WHERE topic = ? "
                "ORDER BY n_citation DESC, person LIMIT ?",
                (topic, limit),
            )
        ]

    def pub(self, pub_id: str) -> dict[str, Any] | None:
        rows = self.query(
            "SELECT rowid, id, title, year, venue, n_citation, abstract FROM pubs WHERE id = ?",
            (pub_id,),
        )
        if not rows:
            return None
        r = rows[0]
        return {
            "rowid": r[0],
            "id": r[1],
            "title": r[2],
            "year": r[3],
            "venue": r[4],
            "n_citation": r[5],
            "abstract": r[6],
            "authors": self.pub_authors([r[0]])[r[0]],
        }

    def pubs_by_rowid(self, rowids: list[int]) -> list[dict[str, Any]]:
        marks = ",".join("?" * len(rowids))
        rows = self.query(
            f"SELECT rowid, id, title, year, n_citation FROM pubs WHERE rowid IN ({marks})",
            tuple(rowids),
        )
        return [
            {"rowid": r[0], "id": r[1], "title": r[2], "year": r[3], "n_citation": r[4]}
            for r in rows
        ]

    def pub_authors(self, pub_rowids: list[int]) -> dict[int, list[tuple[str, str]]]:
        """pub rowid -> [(person id, name)] in author order."""
        out: dict[int, list[tuple[str, str]]] = {p: [] for p in pub_rowids}
        for start in range(0, len(pub_rowids), 500):
            chunk = pub_rowids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for pub, pid, name in self.query(
                f"SELECT a.pub, p.id, p.name FROM authorship a JOIN persons p "
                f"ON p.rowid = a.person WHERE a.pub IN ({marks}) ORDER BY a.pub, a.position",
                tuple(chunk),
            ):
                out[pub].append((pid, name))
        return out

    def person_pubs_with_authors(self, person_id: str) -> list[tuple] | None:
        """(pub id, title, citations, year, author names joined by \x1f) of a person's papers,
        most cited first, in one query; ``None`` for an unknown person."""
        rows = self.query(
            "SELECT p.rowid IS NULL, p.id, p.title, p.n_citation, p.year, "
            "(SELECT group_concat(name, char(31)) FROM (SELECT pe.name FROM authorship a2 "
            " JOIN persons pe ON pe.rowid = a2.person WHERE a2.pub = p.rowid "
            " ORDER BY a2.position)) "
            "FROM persons me LEFT JOIN authorship a ON a.person = me.rowid "
            "LEFT JOIN pubs p ON p.rowid = a.pub WHERE me.id = ? "
            "ORDER BY p.n_citation DESC, p.id",
            (person_id,),
        )
        if not rows:
            return None
        return [r[1:] for r in rows if not r[0]]

    def coauthors(self, person_rowid: int) -> list[tuple[str, str, int]]:
        """(person id, name, joint papers), most frequent first, then most cited."""
        return [
            (r[0], r[1], r[2])
            for r in self.query(
                "SELECT p.id, p.name, c.weight FROM coauthors c JOIN persons p ON p.rowid = c.b "
                "WHERE c.a = ? ORDER BY c.weight DESC, p.n_citation DESC, p.id",
                (person_rowid,),
            )
        ]

    def popularity(self, n_citation: int) -> str:
        """head / torso / tail bucket by citations (top 10% / next 30% / rest)."""
        if n_citation >= int(self.meta["head_min_citation"]):
            return "head"
        return "torso" if n_citation >= int(self.meta["torso_min_citation"]) else "tail"

    def sample_person_rowids(self, n: int, seed: str) -> list[int]:
        import random

        rng = random.Random(seed)
        return rng.sample(range(1, self.n_persons + 1), min(n, self.n_persons))

    def close(self) -> None:
        with self._lock:
            self._db.close()


_open_stores: dict[tuple[str, int], ScholarStore] = {}
_open_lock = threading.Lock()


def load_world(size: str = "small", seed: int = 0) -> ScholarStore:
    """The world ``(size, seed)``, generated into the cache on first use, then reopened."""
    with _open_lock:
        key = (size, seed)
        if key not in _open_stores:
            path = world_path(size, seed)
            if not path.exists():
                path.parent.mkdir(parents=True, exist_ok=True)
                generate_world(size, seed, path)
            _open_stores[key] = ScholarStore(path)
        return _open_stores[key]
