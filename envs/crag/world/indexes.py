"""What the CRAG APIs search and look up by: a fuzzy name index per kind of entity and the
movies of each release year.

A generated world makes them in memory on first use. A stored world's are built once, into a
folder beside its SQLite file (:func:`save_indexes`), and reopened memory-mapped
(:func:`load_index`, :meth:`MovieYears.load`): opening the large world's indexes reads their
vocabularies and nothing else, where rebuilding them took 15-30 s.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Mapping, Sequence
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from raleval.envs.fuzzy import FuzzyIndex

if TYPE_CHECKING:
    from raleval.envs.crag.world import CragWorld

# kind -> (store, field searched); a field of None searches the store's keys (the names)
NAME_INDEXES: dict[str, tuple[str, str | None]] = {
    "company": ("companies", "name"),
    "movie": ("movies", "title"),
    "person": ("people", "name"),
    "artist": ("artists", None),
    "song": ("songs", None),
    "open": ("open_entities", None),
}


def key_values(store: Mapping[Any, dict[str, Any]], field: str) -> list[tuple[Any, Any]]:
    """(key, record[field]) for every record, in store order; a store on disk reads the
    column without decoding records."""
    column = getattr(store, "column", None)
    if column is not None:
        return column(field)
    return [(k, v[field]) for k, v in store.items()]


def make_index(w: CragWorld, kind: str) -> tuple[FuzzyIndex, Sequence[Any]]:
    """The fuzzy index of one kind's names and, by index id, what a search answers: the name
    (companies, artists, songs, open entities) or the id (movies, people)."""
    store_name, field = NAME_INDEXES[kind]
    store = getattr(w, store_name)
    if field is None:
        names = sorted(store)
        return FuzzyIndex(names), names
    if kind == "company":
        names = sorted(name for _, name in key_values(store, field))
        return FuzzyIndex(names), names
    pairs = sorted(key_values(store, field))  # by id
    return FuzzyIndex([name for _, name in pairs]), [i for i, _ in pairs]


def save_index(folder: Path, kind: str, index: FuzzyIndex, keys: Sequence[Any]) -> None:
    index.save(folder / kind)
    if NAME_INDEXES[kind][1] is not None and kind != "company":
        np.save(folder / kind / "keys.npy", np.asarray(keys, dtype=np.int64))


def release_days(songs: Mapping[str, dict[str, Any]], names: Sequence[str]) -> np.ndarray:
    """The release dates (YYYYMMDD) of the songs ``names``, in that order: by song-index id,
    the date a search's hits are filtered by without reading a record each."""
    dates = dict(key_values(songs, "release_date"))
    return np.array([int(dates[n].replace("-", "")) for n in names], dtype=np.int32)


def load_release_days(folder: Path) -> np.ndarray | None:
    """The saved :func:`release_days` of the song index (memory-mapped), or None for a
    folder saved before they were (its searches then read each hit's record)."""
    path = folder / "song" / "released.npy"
    return np.load(path, mmap_mode="r").view(np.ndarray) if path.exists() else None


def load_index(folder: Path, kind: str) -> tuple[FuzzyIndex, Sequence[Any]]:
    index = FuzzyIndex.load(folder / kind)
    ids = folder / kind / "keys.npy"
    return index, (np.load(ids).tolist() if ids.exists() else index.strings)


class MovieYears:
    """Movie ids by release year, sorted by id, with their release dates (YYYYMMDD ints); a
    year's ``movie_list`` text is kept once every movie of that year is out."""

    def __init__(self, ids: np.ndarray, dates: np.ndarray) -> None:
        self.ids, self.dates = ids, dates  # sorted by (year, id)
        self._years = (dates // 10_000).tolist()
        self._texts: dict[int, str] = {}

    @classmethod
    def make(cls, w: CragWorld) -> MovieYears:
        pairs = key_values(w.movies, "release_date")
        ids = np.fromiter((mid for mid, _ in pairs), np.int64, len(pairs))
        dates = np.fromiter((int(d.replace("-", "")) for _, d in pairs), np.int64, len(pairs))
        order = np.lexsort((ids, dates // 10_000))
        return cls(ids[order], dates[order])

    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        np.save(folder / "movie_ids.npy", self.ids)
        np.save(folder / "movie_dates.npy", self.dates)

    @classmethod
    def load(cls, folder: Path) -> MovieYears:
        return cls(np.load(folder / "movie_ids.npy"), np.load(folder / "movie_dates.npy"))

    def movie_list(self, year: int, today: date) -> str:
        """The ids of ``year``'s movies released by ``today``, as the items of a JSON list."""
        start, stop = bisect_left(self._years, year), bisect_right(self._years, year)
        cut = today.year * 10_000 + today.month * 100 + today.day
        dates = self.dates[start:stop]
        complete = len(dates) == 0 or int(dates.max()) <= cut
        if complete and year in self._texts:
            return self._texts[year]
        ids = self.ids[start:stop] if complete else self.ids[start:stop][dates <= cut]
        text = ", ".join(map(str, ids.tolist()))
        if complete:
            self._texts[year] = text  # at most one entry a year
        return text
