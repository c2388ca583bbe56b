"""LLM response cache: SQLite, keyed by model, messages, tools, decoding config and epoch.

A repeated run with a deterministic model reproduces its results exactly and makes no model
call. Only successful, non-empty responses are stored: failures are never replayed from cache.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

from raleval.model import GenerateRequest, Generation, ModelWrapper
from raleval.records import ToolCall

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    created REAL NOT NULL,
    generation TEXT NOT NULL
)
"""


_KEY = re.compile(r"[0-9a-f]{64}")


class CacheImportError(ValueError):
    """An exported cache file that is not one (the message names the line)."""


def _generation(data: dict[str, Any]) -> Generation:
    """A stored generation's JSON as the Generation a cache hit returns."""
    data["tool_calls"] = [ToolCall(**c) for c in data.get("tool_calls", [])]
    data["cache_hit"] = True
    return Generation(**data)


def cache_dir() -> Path:
    """raleval's cache folder: ``RALEVAL_CACHE_DIR`` or the platform's user cache directory."""
    override = os.environ.get("RALEVAL_CACHE_DIR")
    if override:
        return Path(override)
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("raleval"))


def default_cache_path() -> Path:
    return cache_dir() / "responses.sqlite"


def request_key(model: str, request: GenerateRequest, epoch: int = 0) -> str:
    payload = {
        "model": model,
        "messages": [
            [m.role, m.content, [[c.tool, c.arguments] for c in m.tool_calls], m.tool_call_id]
            for m in request.messages
        ],
        "stop": list(request.stop),
        "max_tokens": request.max_tokens,
        "temperature": request.temperature,
        "tools": list(request.tools),
        "epoch": epoch,
    }
    # what a request asks of decoding beyond stops changes the reply (a reply constrained to a
    # schema is not the free one); keyed only where set, so older keys stay what they were
    for field in ("tool_choice", "parallel_tool_calls", "json_schema"):
        value = getattr(request, field)
        if value is not None:
            payload[field] = value
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


class ResponseCache:
    """A thread-safe SQLite key-value store of generations."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(_SCHEMA)
        self._db.commit()

    def get(self, key: str) -> Generation | None:
        with self._lock:
            row = self._db.execute(
                "SELECT generation FROM responses WHERE key = ?", (key,)
            ).fetchone()
        if row is None:
            return None
        return _generation(json.loads(row[0]))

    def put(self, key: str, model: str, gen: Generation) -> None:
        data = asdict(gen)
        data["tool_calls"] = [c.model_dump() for c in gen.tool_calls]
        data.pop("cache_hit", None)
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?)",
                (key, model, time.time(), json.dumps(data)),
            )
            self._db.commit()

    def stats(self) -> dict[str, Any]:
        with self._lock:
            rows = self._db.execute(
                "SELECT model, COUNT(*) FROM responses GROUP BY model ORDER BY model"
            ).fetchall()
        return {
            "path": str(self.path),
            "entries": sum(n for _, n in rows),
            "bytes": self.path.stat().st_size if self.path.exists() else 0,
            "by_model": dict(rows),
        }

    def clear(self, model: str | None = None) -> int:
        with self._lock:
            if model is None:
                cur = self._db.execute("DELETE FROM responses")
            else:
                cur = self._db.execute("DELETE FROM responses WHERE model = ?", (model,))
            self._db.commit()
            self._db.execute("VACUUM")
            return cur.rowcount

    def export_lines(self) -> Iterator[str]:
        """Every entry as a JSON line, in key order (so two exports of a growing cache differ
        by the added lines): ``{"key", "model", "created", "generation"}``."""
        with self._lock:
            rows = self._db.execute(
                "SELECT key, model, created, generation FROM responses ORDER BY key"
            ).fetchall()
        for key, model, created, generation in rows:
            entry = {"key": key, "model": model, "created": created}
            entry["generation"] = json.loads(generation)
            yield json.dumps(entry, ensure_ascii=False, sort_keys=True)

    def import_lines(self, lines: Iterable[str]) -> tuple[int, int]:
        """Add exported entries: (added, already here). An entry already here is kept as it is
        (this cache's reply to that request stands). Every line is checked before any is
        written, so a broken file adds nothing; CacheImportError names its first bad line."""
        entries = []
        for n, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
                key, model, created = entry["key"], entry["model"], float(entry["created"])
                if not (isinstance(key, str) and _KEY.fullmatch(key)):
                    raise ValueError("the key is not a request key (64 hex digits)")
                if not isinstance(model, str) or not model:
                    raise ValueError("no model")
                _generation(dict(entry["generation"]))  # what get() would make of it
            except (ValueError, KeyError, TypeError) as err:
                raise CacheImportError(f"line {n}: not a cache entry ({err})") from None
            entries.append((key, model, created, json.dumps(entry["generation"])))
        with self._lock:
            before = self._db.total_changes
            with self._db:
                self._db.executemany("INSERT OR IGNORE INTO responses VALUES (?, ?, ?, ?)", entries)
            added = self._db.total_changes - before
        return added, len(entries) - added

    def close(self) -> None:
        with self._lock:
            self._db.close()


class CachedModel(ModelWrapper):
    """Serves a model's responses from the cache when the same request was answered before."""

    def __init__(self, model: Any, cache: ResponseCache, epoch: int = 0) -> None:
        super().__init__(model)
        self._cache, self.epoch = cache, epoch
        self.hits = 0
        self.misses = 0

    def with_epoch(self, epoch: int) -> CachedModel:
        """The same cache keyed for another epoch, so repeated epochs are fresh samples."""
        clone = self.rewrap(self._model)
        assert isinstance(clone, CachedModel)
        clone.epoch = epoch
        return clone

    async def generate(self, request: GenerateRequest) -> Generation:
        key = request_key(self.cache_identity, request, self.epoch)
        hit = self._cache.get(key)
        if hit is not None:
            self.hits += 1
            return hit
        self.misses += 1
        gen = await self._model.generate(request)
        if gen.text.strip() or gen.tool_calls:
            self._cache.put(key, self.name, gen)
        return gen
