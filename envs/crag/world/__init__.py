"""A seeded, CRAG-shaped knowledge graph in five domains.

Entities are nodes of a networkx ``MultiDiGraph`` (``type``, ``domain``, ``name``,
``popularity``, ``core``); relations are edges (acted_in, directed, member_of, performed,
wrote, won, played_in). Typed attribute stores (plain dicts keyed by id) hold what the APIs
return. Every *core* entity (the ones tasks ask about) gets look-alike distractors ("Phantom" ->
"Phantom II", "The Phantom"; a band -> its tribute band; a company -> a near-identical name
with its own ticker) and random same-type entities, until signal : noise is ``snr`` (1/30 by
default, as in CRAG). Facts that change carry validity dates; prices, charts and games are
time series, so every getter answers "as of" a query time.
"""

from __future__ import annotations

import random
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from functools import cached_property
from typing import Any

import networkx as nx
import numpy as np

from raleval.envs.crag.world import finance, movie, music, open, sports
from raleval.envs.crag.world.common import (
    POPULARITY as POPULARITY,
)
from raleval.envs.crag.world.common import (
    price_key as price_key,
)
from raleval.envs.crag.world.common import (
    trading_days as trading_days,
)
from raleval.envs.crag.world.indexes import (
    MovieYears,
    load_index,
    load_release_days,
    make_index,
    release_days,
)
from raleval.envs.crag.world.indexes import (
    key_values as key_values,
)
from raleval.envs.crag.world.prices import PriceSeries, calendar, daily_series
from raleval.envs.fuzzy import FuzzyIndex

# 2: a core song's look-alikes go to artists drawn in generation order (was a sorted copy of
# every artist name per song, quadratic in the world's size); names of 2-4 syllables
# 3: minute bars drawn per (ticker, day) by a counter-based generator (world/prices.py); a
# stored world keeps case-folded names in SQLite and its search indexes beside it
GENERATOR_VERSION = 3


# core entities per domain; each brings about 320 entities with its distractors, songs and
# band members (small: 38,993; large: about 2.6M, CRAG's size)
SIZES: dict[str, int] = {"tiny": 12, "small": 120, "medium": 1200, "large": 8260}


DEFAULT_QUERY_DATE = date(2024, 3, 15)  # "now" when a task has no query_time


PRICE_CACHE = 4096  # daily series kept per world (each ~780 bars in cents, about 30 KB)


BILLBOARD_ATTRIBUTES = ("rank", "rank_last_week", "weeks_in_chart", "top_position")


@dataclass
class CragWorld:
    """All five domains' entities and facts; see the module docstring."""

    size: str
    seed: int
    snr: float
    # Entity stores are dicts while generating; a world reopened from disk
    # (:mod:`raleval.envs.crag.store`) has read-only SQLite mappings there instead, and its
    # graph is read on first use.
    companies: Mapping[str, dict[str, Any]] = field(default_factory=dict)  # by ticker
    movies: Mapping[int, dict[str, Any]] = field(default_factory=dict)
    people: Mapping[int, dict[str, Any]] = field(default_factory=dict)
    oscars: dict[int, list[dict[str, Any]]] = field(default_factory=dict)  # by ceremony year
    artists: Mapping[str, dict[str, Any]] = field(default_factory=dict)  # by name
    songs: Mapping[str, dict[str, Any]] = field(default_factory=dict)
    charts: dict[date, list[dict[str, Any]]] = field(default_factory=dict)  # weekly hot 100
    grammys: dict[int, dict[str, Any]] = field(default_factory=dict)
    soccer: list[dict[str, Any]] = field(default_factory=list)
    nba: list[dict[str, Any]] = field(default_factory=list)
    open_entities: Mapping[str, dict[str, Any]] = field(default_factory=dict)
    _prices: OrderedDict[str, PriceSeries] = field(default_factory=OrderedDict, repr=False)
    _price_dicts: OrderedDict[str, dict[date, dict[str, float]]] = field(
        default_factory=OrderedDict, repr=False
    )
    backing: Any = field(default=None, repr=False)  # the WorldFile a reopened world reads
    # what the APIs derive from the facts and keep once per world (a game's table rows)
    derived: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    _graph: nx.MultiDiGraph | None = field(default_factory=nx.MultiDiGraph, repr=False)

    @property
    def graph(self) -> nx.MultiDiGraph:
        """Entities as nodes, relations as edges (a reopened world reads it on first use)."""
        if self._graph is None:
            self._graph = self.backing.graph()
        return self._graph

    def price_series(self, ticker: str) -> PriceSeries:
        """Daily bars of ``ticker`` in whole cents (:mod:`.prices`), drawn on first use (most
        companies are noise nobody asks about); the last ``PRICE_CACHE`` asked for are kept
        (about 30 KB each)."""
        series = self._prices.get(ticker)
        if series is not None:
            self._prices.move_to_end(ticker)
            return series
        series = daily_series(self.seed, ticker, self.companies[ticker]["price0"])
        self._prices[ticker] = series
        if len(self._prices) > PRICE_CACHE:
            self._prices.popitem(last=False)
        return series

    def prices(self, ticker: str) -> dict[date, dict[str, float]]:
        """Daily bars of ``ticker`` by date, as the price APIs show them (for task families,
        which read a few bars of a few tickers; the last 64 are kept)."""
        bars = self._price_dicts.get(ticker)
        if bars is None:
            series = self.price_series(ticker)
            bars = {d: series.bar(i) for i, d in enumerate(calendar())}
            self._price_dicts[ticker] = bars
            if len(self._price_dicts) > 64:
                self._price_dicts.popitem(last=False)
        else:
            self._price_dicts.move_to_end(ticker)
        return bars

    def add_node(self, key: str, **attrs: Any) -> None:
        self.graph.add_node(key, **attrs)

    # --- search indexes: made on first use, or opened from a stored world's folder --------
    def _index(self, kind: str) -> tuple[FuzzyIndex, Sequence[Any]]:
        folder = None if self.backing is None else self.backing.indexes
        if folder is not None:
            try:
                return load_index(folder, kind)
            except (OSError, ValueError, KeyError):
                pass  # written in an older index format, or cut short: made in memory instead
        return make_index(self, kind)

    @cached_property
    def company_index(self) -> tuple[FuzzyIndex, Sequence[str]]:
        return self._index("company")

    @cached_property
    def movie_index(self) -> tuple[FuzzyIndex, Sequence[int]]:
        return self._index("movie")

    @cached_property
    def person_index(self) -> tuple[FuzzyIndex, Sequence[int]]:
        return self._index("person")

    @cached_property
    def artist_index(self) -> tuple[FuzzyIndex, Sequence[str]]:
        return self._index("artist")

    @cached_property
    def song_index(self) -> tuple[FuzzyIndex, Sequence[str]]:
        return self._index("song")

    @cached_property
    def open_index(self) -> tuple[FuzzyIndex, Sequence[str]]:
        return self._index("open")

    @cached_property
    def song_released(self) -> np.ndarray | None:
        """Release dates (YYYYMMDD) by song-index id, so that a song search drops songs not
        yet out without reading each hit's record: at the large size ten scattered SQLite
        reads a search, each a disk read (5-8 ms here) while the page cache is cold. A stored
        world reads them from its index folder (None in a folder saved before they were)."""
        folder = None if self.backing is None else self.backing.indexes
        if folder is None:
            return release_days(self.songs, self.song_index[1])
        return load_release_days(folder)

    @cached_property
    def movie_years(self) -> MovieYears:
        """Movies by release year, for ``movie_get_year_info``."""
        folder = None if self.backing is None else self.backing.indexes
        return MovieYears.make(self) if folder is None else MovieYears.load(folder)

    # exact names, case-insensitively (a stored world looks them up in SQLite)
    @cached_property
    def company_by_name(self) -> Mapping[str, str]:
        if self.backing is not None:
            return self.backing.folded("companies")
        return {name.casefold(): t for t, name in key_values(self.companies, "name")}

    @cached_property
    def artist_key(self) -> Mapping[str, str]:
        if self.backing is not None:
            return self.backing.folded("artists")
        return {n.casefold(): n for n in self.artists}

    @cached_property
    def song_key(self) -> Mapping[str, str]:
        if self.backing is not None:
            return self.backing.folded("songs")
        return {n.casefold(): n for n in self.songs}

    @cached_property
    def open_key(self) -> Mapping[str, str]:
        if self.backing is not None:
            return self.backing.folded("open_entities")
        return {n.casefold(): n for n in self.open_entities}

    def warm(self) -> None:
        """Make (or open) every index now rather than on the first call that needs it."""
        for name in (
            "company_index",
            "company_by_name",
            "movie_years",
            "artist_key",
            "song_key",
            "open_key",
            "movie_index",
            "person_index",
            "artist_index",
            "song_index",
            "open_index",
            "song_released",
        ):
            getattr(self, name)

    def n_entities(self) -> int:
        if self._graph is None:
            return self.backing.n_nodes
        return self.graph.number_of_nodes()

    def core(self, kind: str) -> list[str]:
        """Graph keys of the core entities of one type, in generation order."""
        return list(self._core_keys.get(kind, ()))

    @cached_property
    def _core_keys(self) -> dict[str, list[str]]:
        if self._graph is None:
            pairs: Iterable[tuple[str, str]] = self.backing.core_nodes()
        else:
            pairs = ((k, a["type"]) for k, a in self._graph.nodes(data=True) if a.get("core"))
        out: dict[str, list[str]] = {}
        for k, kind in pairs:
            out.setdefault(kind, []).append(k)
        return out


def generate_world(size: str = "tiny", seed: int = 0, snr: float = 1 / 30) -> CragWorld:
    """The world ``(size, seed, snr)``; the same arguments always give the same world."""
    w = CragWorld(size, seed, snr)
    for _ in _generate(w):
        pass
    return w


def generate_domains(size: str, seed: int = 0, snr: float = 1 / 30) -> Iterator[CragWorld]:
    """The world ``(size, seed, snr)`` one domain at a time (finance, movie, music, sports,
    open): each world yielded holds that domain's records and graph only (the domains share
    no entity); the time series (Oscars, charts, Grammys, games) accumulate."""
    w = CragWorld(size, seed, snr)
    for _ in _generate(w):
        yield w
        for name in ENTITY_STORES:
            setattr(w, name, {})
        w._graph = nx.MultiDiGraph()


ENTITY_STORES = ("companies", "movies", "people", "artists", "songs", "open_entities")


def _generate(w: CragWorld) -> Iterator[str]:
    if w.size not in SIZES:
        raise ValueError(f"unknown world size {w.size!r}; choose one of {', '.join(SIZES)}")
    if not 0 < w.snr <= 1:
        raise ValueError("snr must be in (0, 1]")
    n_core, seed = SIZES[w.size], w.seed
    noise_per_core = max(0, round(1 / w.snr) - 1)
    finance.generate(w, random.Random(f"crag/{seed}/finance"), n_core, noise_per_core)
    yield "finance"
    movie.generate(w, random.Random(f"crag/{seed}/movie"), n_core, noise_per_core)
    yield "movie"
    music.generate(w, random.Random(f"crag/{seed}/music"), n_core, noise_per_core)
    yield "music"
    sports.generate(w, random.Random(f"crag/{seed}/sports"), n_core)
    yield "sports"
    open.generate(w, random.Random(f"crag/{seed}/open"), n_core, noise_per_core)
    yield "open"
