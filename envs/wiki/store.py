"""Offline Wikipedia: pages in SQLite, FTS5 (BM25) for search, rapidfuzz for near-miss titles.

A store is one SQLite file: ``pages`` (title, case-folded key, text with blank-line paragraph
breaks), ``redirects`` (key -> page) and an external-content FTS5 index over title and text.
:class:`StoreWriter` streams pages in (bounded memory: one page at a time, a commit every few
thousand) and merges pages that arrive twice under one title (HotpotQA repeats a paragraph in
every question that uses it). :class:`WikiStore` opens it read-only.
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Iterable
from functools import cached_property
from pathlib import Path

import numpy as np

from raleval.envs.fuzzy import FuzzyIndex, StringTable, cached_index, cached_strings
from raleval.envs.wiki.page import (
    Page,
    normalize_text,
    normalize_title,
    split_blocks,
    title_key,
)
from raleval.text import ascii_fold

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS pages (
    id INTEGER PRIMARY KEY, title TEXT NOT NULL, key TEXT NOT NULL UNIQUE, text TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS redirects (key TEXT PRIMARY KEY, target TEXT NOT NULL);
CREATE VIRTUAL TABLE IF NOT EXISTS pages_fts USING fts5(
    title, text, content='pages', content_rowid='id', tokenize='unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE IF NOT EXISTS pages_vocab USING fts5vocab(pages_fts, 'row');
"""
MAX_SIMILAR = 5
FUZZY_CUTOFF = 75.0
_FTS_TOKEN = re.compile(r"\w+", re.UNICODE)


class StoreWriter:
    """Streams pages and redirects into a new or existing store file."""

    def __init__(self, path: Path, commit_every: int = 5000) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path)
        self._db.execute("PRAGMA journal_mode = WAL")
        self._db.execute("PRAGMA synchronous = OFF")
        self._db.executescript(SCHEMA)
        self._commit_every = commit_every
        self._pending = 0
        self.pages_added = 0
        self.pages_merged = 0

    def add_page(self, title: str, text: str) -> None:
        """Add a page; a second page with the same title adds its new paragraphs to the first."""
        title, text = normalize_title(title), normalize_text(text)
        if not title:
            raise ValueError("a page needs a non-empty title")
        key = title_key(title)
        cur = self._db.execute(
            "INSERT OR IGNORE INTO pages (title, key, text) VALUES (?, ?, ?)", (title, key, text)
        )
        if cur.rowcount:
            self.pages_added += 1
        else:
            (old,) = self._db.execute("SELECT text FROM pages WHERE key = ?", (key,)).fetchone()
            seen = set(split_blocks(old))
            extra = [p for p in split_blocks(text) if p not in seen]
            if extra:
                merged = "\n\n".join([old.strip(), *extra]).strip()
                self._db.execute("UPDATE pages SET text = ? WHERE key = ?", (merged, key))
            self.pages_merged += 1
        self._tick()

    def add_redirect(self, source: str, target: str) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO redirects (key, target) VALUES (?, ?)",
            (title_key(source), title_key(target)),
        )
        self._tick()

    def _tick(self) -> None:
        self._pending += 1
        if self._pending >= self._commit_every:
            self._db.commit()
            self._pending = 0

    def close(self, meta: dict[str, str] | None = None) -> None:
        """Index everything written and close; the file is then ready for :class:`WikiStore`."""
        self._db.execute("INSERT INTO pages_fts (pages_fts) VALUES ('rebuild')")
        (n,) = self._db.execute("SELECT count(*) FROM pages").fetchone()
        rows = {"n_pages": str(n), **(meta or {})}
        self._db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", rows.items())
        self._db.commit()
        self._db.execute("PRAGMA journal_mode = DELETE")
        self._db.execute("VACUUM")
        self._db.close()

    def __enter__(self) -> StoreWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None:
            self.close()
        else:
            self._db.close()


def write_store(path: Path, pages: Iterable[tuple[str, str]], meta: dict[str, str] | None = None):
    """Write ``(title, text)`` pages to a fresh store at ``path``."""
    path = Path(path)
    if path.exists():
        path.unlink()
    writer = StoreWriter(path)
    for title, text in pages:
        writer.add_page(title, text)
    writer.close(meta)
    return WikiStore(path)


class WikiStore:
    """Read-only access to a store: exact title lookup, redirects, similar titles."""

    def __init__(self, path: Path, cache_pages: int = 256) -> None:
        self.path = Path(path)
        if not self.path.exists():
            raise FileNotFoundError(f"no Wikipedia store at {self.path}")
        self._db = sqlite3.connect(
            f"file:{self.path}?mode=ro&immutable=1", uri=True, check_same_thread=False
        )
        self._db.execute("PRAGMA mmap_size = 4294967296")
        self._lock = threading.Lock()
        self.meta = dict(self._db.execute("SELECT key, value FROM meta"))
        self._cache: OrderedDict[str, Page | None] = OrderedDict()
        self._cache_size = cache_pages

    def __len__(self) -> int:
        return int(self.meta.get("n_pages", 0))

    def _query(self, sql: str, params: tuple = ()) -> list[tuple]:
        with self._lock:
            return self._db.execute(sql, params).fetchall()

    # The title index and the search vocabulary are saved beside the store (``<store>.index/``)
    # and memory-mapped, so a store of millions of pages opens in well under a second; they
    # are rebuilt when the store changes (its size or meta differ from what they were built
    # from), and kept in memory only when the folder cannot be written.
    @cached_property
    def _sidecar(self) -> tuple[Path, dict[str, str]]:
        stamp = {"store_bytes": str(self.path.stat().st_size), **self.meta}
        return self.path.with_name(f"{self.path.stem}.index"), stamp

    @cached_property
    def _titles(self) -> tuple[FuzzyIndex, StringTable]:
        folder, stamp = self._sidecar
        titles = cached_strings(
            folder / "title_text",
            stamp,
            lambda: (r[0] for r in self._query("SELECT title FROM pages ORDER BY id")),
        )
        index = cached_index(folder / "titles", stamp, lambda: [ascii_fold(t) for t in titles])
        return index, titles

    def warm(self) -> None:
        """Open the title index and the vocabulary now rather than on the first miss (and
        save them beside the store if they are not there yet)."""
        _ = self._titles, self._vocabulary

    def get(self, title: str) -> Page | None:
        """The page titled ``title`` (case-insensitive, following redirects), or None."""
        key = title_key(title)
        if key in self._cache:
            self._cache.move_to_end(key)
            return self._cache[key]
        page = self._fetch(key)
        self._cache[key] = page
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return page

    def _fetch(self, key: str) -> Page | None:
        rows = self._query("SELECT title, text FROM pages WHERE key = ?", (key,))
        if rows:
            return Page(rows[0][0], rows[0][1])
        target = self._query("SELECT target FROM redirects WHERE key = ?", (key,))
        if target:
            rows = self._query("SELECT title, text FROM pages WHERE key = ?", (target[0][0],))
            if rows:
                return Page(rows[0][0], rows[0][1], redirected_from=key)
        return None

    def similar(self, query: str, limit: int = MAX_SIMILAR) -> list[str]:
        """Titles a user probably meant, best first: near-miss titles, then BM25 matches."""
        index, titles = self._titles
        out = [titles[i] for i, _ in index.search(ascii_fold(query), limit, FUZZY_CUTOFF)]
        if len(out) < limit:
            for title in self.search_text(query, limit):
                if title not in out:
                    out.append(title)
        return out[:limit]

    def search_text(self, query: str, limit: int = 10) -> list[str]:
        """Full-text BM25 search (titles weigh ten times the body): all words, else any of the
        query's selective words.

        Words in more than ``max(1000, 1%)`` of the pages ("for", "the", "learning") are left
        out of the any-word query: scoring their postings would cost ~100 ms at 100k pages and
        they do not tell pages apart anyway.
        """
        words = list(dict.fromkeys(_FTS_TOKEN.findall(query.lower())))
        if not words:
            return []
        sql = (
            "SELECT p.title FROM pages_fts JOIN pages p ON p.id = pages_fts.rowid "
            "WHERE pages_fts MATCH ? ORDER BY bm25(pages_fts, 10.0, 1.0) LIMIT ?"
        )
        counts = self._doc_counts(words)
        cap = max(1000, len(self) // 100)
        selective = [f'"{w}"' for w in words if 0 < counts.get(w, 0) <= cap]
        if all(counts.get(w, 0) for w in words):  # every word occurs somewhere: try all
            anded = selective or [f'"{w}"' for w in words]
            hits = self._query(sql, (" AND ".join(anded), limit))
            if hits:
                return [h[0] for h in hits]
        if not selective:
            return []
        return [h[0] for h in self._query(sql, (" OR ".join(selective), limit))]

    @cached_property
    def _vocabulary(self) -> tuple[StringTable, np.ndarray]:
        """Indexed words (sorted) and pages per word: a vocabulary query per search costs
        ~1 ms, and a dict of every word costs seconds and hundreds of MB at millions of pages."""
        folder, stamp = self._sidecar
        counts = folder / "vocab_docs.npy"
        words = cached_strings(folder / "vocab", stamp, lambda: self._write_counts(counts))
        if not counts.exists():  # the folder is read-only: the counts were not kept
            self._write_counts(None)
            return words, self._counts
        return words, np.load(counts, mmap_mode="r").view(np.ndarray)

    def _write_counts(self, path: Path | None) -> list[str]:
        rows = sorted(self._query("SELECT term, doc FROM pages_vocab"))
        self._counts = np.array([doc for _, doc in rows], dtype=np.int64)
        if path is not None:
            with contextlib.suppress(OSError):
                path.parent.mkdir(parents=True, exist_ok=True)
                np.save(path, self._counts)
        return [term for term, _ in rows]

    def _doc_counts(self, words: list[str]) -> dict[str, int]:
        terms, docs = self._vocabulary
        out = {}
        for w in words:
            i = terms.lower_bound(w)
            if i < len(terms) and terms[i] == w:
                out[w] = int(docs[i])
        return out

    def titles(self) -> list[str]:
        return list(self._titles[1])

    def close(self) -> None:
        with self._lock:
            self._db.close()
