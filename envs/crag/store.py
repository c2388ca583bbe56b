"""A CRAG world on disk: generate once, reopen in seconds.

The ``medium`` and ``large`` worlds take from tens of seconds to minutes to generate, so they
are written once into one SQLite file in raleval's cache and reopened from it. Entity records
(companies, movies, people, artists, songs, open entities) stay on disk and are decoded when a
getter asks for them; what searches need (names, keys, release dates) is read as columns
without decoding records; the small time series (charts, Grammys, Oscars, games) are loaded
whole; the networkx graph is read only if something asks for it (task generation does, the
APIs do not). A reopened world answers every API exactly as the generated one.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Mapping
from datetime import date
from functools import lru_cache
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

from raleval.envs._sqlite import insert_batched
from raleval.envs.crag.world import GENERATOR_VERSION, CragWorld, generate_domains
from raleval.envs.crag.world.indexes import (
    NAME_INDEXES,
    MovieYears,
    make_index,
    release_days,
    save_index,
)

# store name -> (key SQL type, columns kept beside the record for searches and indexes)
STORES: dict[str, tuple[str, tuple[str, ...]]] = {
    "companies": ("TEXT", ("name",)),
    "movies": ("INTEGER", ("title", "release_date")),
    "people": ("INTEGER", ("name",)),
    "artists": ("TEXT", ()),
    "songs": ("TEXT", ()),
    "open_entities": ("TEXT", ()),
}
# stores looked up by exact name, case-insensitively: store -> field holding the name (None:
# the key is the name)
FOLDED: dict[str, str | None] = {
    "companies": "name",
    "artists": None,
    "songs": None,
    "open_entities": None,
}
SERIES = ("oscars", "charts", "grammys", "soccer", "nba")
NODE_FIELDS = ("type", "domain", "name", "popularity", "core")
RECORD_CACHE = 8192  # decoded records kept per store (they are read-only)


def index_folder(path: Path) -> Path:
    """Where the search indexes of the world file ``path`` live (:func:`save_indexes`)."""
    return Path(path).with_suffix(".indexes")


def world_path(size: str, seed: int, snr: float) -> Path:
    from raleval.cache import cache_dir

    return cache_dir() / "worlds" / f"crag-v{GENERATOR_VERSION}-{size}-s{seed}-snr{snr:.6g}.sqlite"


# --- encoding: JSON plus dates and non-string dict keys -----------------------------------


def encode(obj: Any) -> Any:
    """``obj`` as plain JSON values: dates tagged, dicts with non-string keys as pairs,
    tuples as lists (records only unpack them)."""
    if isinstance(obj, dict):
        if all(type(k) is str for k in obj):
            return {k: encode(v) for k, v in obj.items()}
        return {"$map": [[encode(k), encode(v)] for k, v in obj.items()]}
    if isinstance(obj, list | tuple):
        return [encode(v) for v in obj]
    if isinstance(obj, date):
        return {"$date": obj.isoformat()}
    return obj


def _hook(d: dict[str, Any]) -> Any:
    if len(d) == 1:
        if "$date" in d:
            return date.fromisoformat(d["$date"])
        if "$map" in d:
            return dict(d["$map"])
    return d


def decode(text: str) -> Any:
    return json.loads(text, object_hook=_hook)


def _dumps(obj: Any) -> str:
    return json.dumps(encode(obj), separators=(",", ":"), ensure_ascii=False)


# --- writing ------------------------------------------------------------------------------


def save_world(world: CragWorld, path: Path) -> Path:
    """Write ``world`` (a generated one) to a new SQLite file at ``path``, atomically."""
    return _write(Path(path), [world])


def build_world(size: str, seed: int, snr: float, path: Path) -> Path:
    """Generate the world ``(size, seed, snr)`` straight into a new file at ``path``, one
    domain at a time: each domain's records and graph are written, then dropped before the
    next domain is generated, so the build never holds the whole world (the same file as
    ``save_world(generate_world(...))``)."""
    return _write(Path(path), generate_domains(size, seed, snr))


def _write(path: Path, parts: Iterable[CragWorld]) -> Path:
    """Write the records and graph of each part of a world in turn (a whole world is one
    part), then its meta and indexes, to a temporary file renamed to ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    db = sqlite3.connect(tmp)
    try:
        db.execute("PRAGMA journal_mode=OFF")
        db.execute("PRAGMA synchronous=OFF")
        db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        for name, (key_type, columns) in STORES.items():
            cols = "".join(f", {c} TEXT NOT NULL" for c in columns)
            db.execute(f"CREATE TABLE {name} (key {key_type} NOT NULL{cols}, body TEXT NOT NULL)")
        for name in FOLDED:
            db.execute(
                f"CREATE TABLE {name}_fold (fold TEXT PRIMARY KEY, key NOT NULL) WITHOUT ROWID"
            )
        db.execute(
            "CREATE TABLE nodes (key TEXT NOT NULL, type TEXT, domain TEXT, name TEXT,"
            " popularity TEXT, core INTEGER)"
        )
        db.execute("CREATE TABLE edges (u TEXT NOT NULL, v TEXT NOT NULL, k TEXT NOT NULL)")
        n_nodes, world = 0, None
        for world in parts:
            _write_part(db, world)
            n_nodes += world.graph.number_of_nodes()
        if world is None:
            raise ValueError("no world to write")
        meta = {
            "generator_version": str(GENERATOR_VERSION),
            "size": world.size,
            "seed": str(world.seed),
            "snr": repr(world.snr),
            "n_nodes": str(n_nodes),
        }
        meta.update({name: _dumps(getattr(world, name)) for name in SERIES})
        db.executemany("INSERT INTO meta VALUES (?, ?)", meta.items())
        for name in STORES:
            db.execute(f"CREATE UNIQUE INDEX {name}_key ON {name}(key)")
        db.execute("CREATE INDEX nodes_core ON nodes(core) WHERE core = 1")
        db.commit()
    finally:
        db.close()
    shutil.rmtree(index_folder(path), ignore_errors=True)  # a replaced world's are stale
    os.replace(tmp, path)
    return path


def _write_part(db: sqlite3.Connection, world: CragWorld) -> None:
    for name, (_, columns) in STORES.items():
        marks = ", ".join("?" * (len(columns) + 2))
        rows = ((k, *(v[c] for c in columns), _dumps(v)) for k, v in getattr(world, name).items())
        insert_batched(db, f"INSERT INTO {name} VALUES ({marks})", rows)
    for name, column in FOLDED.items():
        # generation order, the last of a case-insensitive clash wins (as a dict would)
        insert_batched(
            db,
            f"INSERT OR REPLACE INTO {name}_fold VALUES (?, ?)",
            (((v[column] if column else k).casefold(), k) for k, v in getattr(world, name).items()),
        )
    insert_batched(
        db,
        "INSERT INTO nodes VALUES (?, ?, ?, ?, ?, ?)",
        ((k, *(a.get(f) for f in NODE_FIELDS)) for k, a in world.graph.nodes(data=True)),
    )
    insert_batched(db, "INSERT INTO edges VALUES (?, ?, ?)", world.graph.edges(keys=True))


# --- reading ------------------------------------------------------------------------------


_READ_AHEAD: set[tuple[Path, Path | None]] = set()


def _read_ahead(path: Path, indexes: Path | None) -> None:
    """Read a world's index files and then its SQLite file once, front to back, in a
    background thread, so that their pages are in the OS page cache before the APIs ask for
    them. Records are read one by one where a call asks: on a cold page cache each was a
    random disk read (5-8 ms on this project's machine, 1.2 GB sequentially in 1.9 s), and the
    first calls of the large world's record-reading APIs spent their p99 waiting for them.
    Once a process for each (file, index folder); a file already cached reads in a fraction
    of a second."""
    if (path, indexes) in _READ_AHEAD:
        return
    _READ_AHEAD.add((path, indexes))
    files = sorted(f for f in indexes.rglob("*") if f.is_file()) if indexes else []

    def read() -> None:
        buffer = bytearray(1 << 20)
        for file in [*files, path]:
            with contextlib.suppress(OSError), open(file, "rb", buffering=0) as fh:
                while fh.readinto(buffer):
                    pass

    threading.Thread(target=read, name=f"read-ahead {path.name}", daemon=True).start()


class WorldFile:
    """One world file, read-only; a connection per thread (SQLite connections are not
    shared across threads)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        if not self.path.exists():
            raise FileNotFoundError(f"no CRAG world at {self.path}")
        self._local = threading.local()
        meta = dict(self.query("SELECT key, value FROM meta"))
        if meta.get("generator_version") != str(GENERATOR_VERSION):
            raise ValueError(
                f"{self.path} was written by CRAG world generator "
                f"v{meta.get('generator_version')}, this is v{GENERATOR_VERSION}; delete it"
            )
        self.meta = meta
        self.n_nodes = int(meta["n_nodes"])
        folder = index_folder(self.path)
        # without its folder (not built yet) a world makes its indexes in memory
        self.indexes: Path | None = folder if folder.is_dir() else None

    def folded(self, store: str) -> FoldedNames:
        return FoldedNames(self, store)

    def query(self, sql: str, params: tuple = ()) -> list[tuple]:
        db = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(f"file:{self.path}?mode=ro&immutable=1", uri=True)
            db.execute("PRAGMA mmap_size = 17179869184")
            self._local.db = db
        return db.execute(sql, params).fetchall()

    def core_nodes(self) -> list[tuple[str, str]]:
        return self.query("SELECT key, type FROM nodes WHERE core = 1 ORDER BY rowid")

    def graph(self) -> nx.MultiDiGraph:
        g = nx.MultiDiGraph()
        rows = self.query("SELECT * FROM nodes ORDER BY rowid")
        g.add_nodes_from(
            (k, {f: bool(v) if f == "core" else v for f, v in zip(NODE_FIELDS, attrs, strict=True)})
            if attrs[0] is not None
            else (k, {})
            for k, *attrs in rows
        )
        del rows
        g.add_edges_from(self.query("SELECT u, v, k FROM edges ORDER BY rowid"))
        return g

    def world(self) -> CragWorld:
        """The world this file holds; records are read from disk as they are asked for."""
        _read_ahead(self.path, self.indexes)
        m = self.meta
        series = {name: decode(m[name]) for name in SERIES}
        stores = {name: RecordStore(self, name) for name in STORES}
        return CragWorld(
            m["size"],
            int(m["seed"]),
            float(m["snr"]),
            **stores,
            **series,
            backing=self,
            _graph=None,
        )


class RecordStore(Mapping):
    """A read-only mapping over one table of records (generation order is the table order)."""

    def __init__(self, file: WorldFile, table: str) -> None:
        self.file, self.table = file, table
        self.columns = STORES[table][1]
        self._key_type = int if STORES[table][0] == "INTEGER" else str
        self._len: int | None = None
        self._get = lru_cache(maxsize=RECORD_CACHE)(self._load)

    def _load(self, key: Any) -> dict[str, Any] | None:
        rows = self.file.query(f"SELECT body FROM {self.table} WHERE key = ?", (key,))
        return decode(rows[0][0]) if rows else None

    def __getitem__(self, key: Any) -> dict[str, Any]:
        # SQLite would compare "5" equal to 5 in an INTEGER column; a dict would not.
        found = self._get(key) if type(key) is self._key_type else None
        if found is None:
            raise KeyError(key)
        return found

    def __contains__(self, key: object) -> bool:
        return type(key) is self._key_type and self._get(key) is not None

    def __iter__(self) -> Iterator[Any]:
        return (k for (k,) in self.file.query(f"SELECT key FROM {self.table} ORDER BY rowid"))

    def __len__(self) -> int:
        if self._len is None:
            self._len = self.file.query(f"SELECT count(*) FROM {self.table}")[0][0]
        return self._len

    def items(self) -> Iterator[tuple[Any, dict[str, Any]]]:  # type: ignore[override]
        rows = self.file.query(f"SELECT key, body FROM {self.table} ORDER BY rowid")
        return ((k, decode(body)) for k, body in rows)

    def values(self) -> Iterator[dict[str, Any]]:  # type: ignore[override]
        return (v for _, v in self.items())

    def column(self, field: str) -> list[tuple[Any, Any]]:
        """(key, field) for every record without decoding any (see ``world.key_values``)."""
        if field not in self.columns:
            return [(k, v[field]) for k, v in self.items()]
        return self.file.query(f"SELECT key, {field} FROM {self.table} ORDER BY rowid")


class FoldedNames(Mapping):
    """Case-folded name -> key of one store, looked up in its ``_fold`` table."""

    def __init__(self, file: WorldFile, store: str) -> None:
        self.file, self.sql = file, f"SELECT key FROM {store}_fold WHERE fold = ?"
        self.table = f"{store}_fold"

    def __getitem__(self, fold: str) -> Any:
        rows = self.file.query(self.sql, (fold,)) if isinstance(fold, str) else []
        if not rows:
            raise KeyError(fold)
        return rows[0][0]

    def __iter__(self) -> Iterator[str]:
        return (f for (f,) in self.file.query(f"SELECT fold FROM {self.table}"))

    def __len__(self) -> int:
        return self.file.query(f"SELECT count(*) FROM {self.table}")[0][0]


def save_indexes(path: Path) -> Path:
    """Build the search indexes of the world file ``path`` into their folder, one at a time
    from the file's columns (so the world is never in memory beside them), atomically."""
    folder = index_folder(path)
    tmp = folder.with_name(f".{folder.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    world = WorldFile(path).world()  # its folder does not exist yet: nothing is loaded
    for kind in NAME_INDEXES:
        index, keys = make_index(world, kind)
        save_index(tmp, kind, index, keys)
        if kind == "song":
            np.save(tmp / kind / "released.npy", release_days(world.songs, keys))
        del index, keys
    MovieYears.make(world).save(tmp)
    try:
        os.replace(tmp, folder)
    except OSError:
        if not folder.is_dir():
            raise
        shutil.rmtree(tmp, ignore_errors=True)  # another process built it first
    return folder


def open_world(size: str, seed: int, snr: float, path: Path | None = None) -> CragWorld:
    """The world ``(size, seed, snr)`` from its file, generating and saving it (and its
    indexes) on first use."""
    path = Path(path) if path else world_path(size, seed, snr)
    if not path.exists():
        build_world(size, seed, snr, path)
    if not index_folder(path).is_dir():
        save_indexes(path)
    return WorldFile(path).world()
