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

import functools
import hashlib
import random
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date, timedelta
from functools import cached_property
from typing import Any

import networkx as nx
import numpy as np

from raleval.envs.fuzzy import FuzzyIndex

# 2: a core song's look-alikes go to artists drawn in generation order (was a sorted copy of
# every artist name per song, quadratic in the world's size); names of 2-4 syllables
GENERATOR_VERSION = 2
# core entities per domain; each brings about 320 entities with its distractors, songs and
# band members (small: 38,993; large: about 2.6M, CRAG's size)
SIZES: dict[str, int] = {"tiny": 12, "small": 120, "medium": 1200, "large": 8260}
START = date(2022, 1, 3)  # first trading day of the generated history
END = date(2024, 12, 31)
DEFAULT_QUERY_DATE = date(2024, 3, 15)  # "now" when a task has no query_time
POPULARITY = ("head", "torso", "tail")
PRICE_CACHE = 4096  # daily series kept per world (each ~780 bars)

_SYL = [
    "ka",
    "lo",
    "mi",
    "ren",
    "tor",
    "va",
    "shi",
    "dun",
    "pel",
    "qua",
    "zor",
    "bel",
    "nix",
    "ta",
    "ro",
    "vin",
    "sar",
    "mel",
    "cor",
    "dra",
    "fen",
    "gal",
    "hol",
    "jun",
]
_WORDS = [
    "Phantom",
    "Harbor",
    "Silver",
    "Echo",
    "Midnight",
    "Crimson",
    "Atlas",
    "Velvet",
    "Horizon",
    "Ember",
    "Glass",
    "Iron",
    "Northern",
    "Paper",
    "Quiet",
    "River",
    "Solar",
    "Thunder",
    "Winter",
    "Golden",
    "Hidden",
    "Last",
    "Electric",
    "Wild",
]
_NOUNS = [
    "Garden",
    "Signal",
    "Kingdom",
    "Letters",
    "Road",
    "Machine",
    "Empire",
    "Tide",
    "Hearts",
    "City",
    "Storm",
    "Dream",
    "Line",
    "Light",
    "Voices",
    "Season",
]
GENRES = ["Drama", "Comedy", "Thriller", "Science Fiction", "Animation", "Romance", "Horror"]
LANGS = ["en", "fr", "es", "ja", "ko", "de"]
SECTORS = [
    "Technology",
    "Healthcare",
    "Energy",
    "Financial Services",
    "Consumer Cyclical",
    "Industrials",
    "Utilities",
]
COUNTRIES = ["United States", "United Kingdom", "Canada", "Australia", "Sweden", "Japan"]
CITIES = [
    "Memphis, Tennessee",
    "Manchester, England",
    "Toronto, Ontario",
    "Perth, Australia",
    "Gothenburg, Sweden",
    "Osaka, Japan",
    "Austin, Texas",
]
OSCAR_CATEGORIES = ["Best Picture", "Best Director", "Best Actor", "Best Actress"]
BILLBOARD_ATTRIBUTES = ("rank", "rank_last_week", "weeks_in_chart", "top_position")


def _name(rng: random.Random, parts: int = 2) -> str:
    # 2-4 syllables: about 346k one-word names, enough for the large world's 730k song titles
    # and 243k company names (2-3 syllables gave 14k, and the large world never finished)
    return " ".join(
        "".join(rng.choice(_SYL) for _ in range(rng.randint(2, 4))).capitalize()
        for _ in range(parts)
    )


def _title(rng: random.Random) -> str:
    # A few short, common-word titles (the hardest to disambiguate), then an unbounded space.
    roll = rng.random()
    if roll < 0.15:
        return rng.choice(_WORDS)
    if roll < 0.4:
        return f"{rng.choice(_WORDS)} {rng.choice(_NOUNS)}"
    if roll < 0.7:
        return f"The {rng.choice(_NOUNS)} of {_name(rng, 1)}"
    return f"{_name(rng, 1)} {rng.choice(_NOUNS)}"


@functools.cache
def _trading_days() -> tuple[date, ...]:
    return tuple(trading_days(START, END))


def trading_days(start: date, end: date) -> list[date]:
    out, d = [], start
    while d <= end:
        if d.weekday() < 5:
            out.append(d)
        d += timedelta(days=1)
    return out


def price_key(d: date) -> str:
    return f"{d.isoformat()} 00:00:00 EST"


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
    _prices: OrderedDict[str, dict[date, dict[str, float]]] = field(
        default_factory=OrderedDict, repr=False
    )
    backing: Any = field(default=None, repr=False)  # the WorldFile a reopened world reads
    _graph: nx.MultiDiGraph | None = field(default_factory=nx.MultiDiGraph, repr=False)

    @property
    def graph(self) -> nx.MultiDiGraph:
        """Entities as nodes, relations as edges (a reopened world reads it on first use)."""
        if self._graph is None:
            self._graph = self.backing.graph()
        return self._graph

    def prices(self, ticker: str) -> dict[date, dict[str, float]]:
        """Daily bars of ``ticker``: a seeded random walk (log-normal steps, floored at 1.0),
        generated on first use with numpy (most companies are noise nobody asks about); the
        last ``PRICE_CACHE`` series asked for are kept."""
        series = self._prices.get(ticker)
        if series is not None:
            self._prices.move_to_end(ticker)
            return series
        digest = hashlib.blake2b(f"crag/{self.seed}/price/{ticker}".encode(), digest_size=8)
        rng = np.random.default_rng(int.from_bytes(digest.digest(), "big"))
        days = _trading_days()
        n = len(days)
        price0 = self.companies[ticker]["price0"]
        close = np.maximum(1.0, price0 * np.exp(np.cumsum(rng.normal(0.0003, 0.02, n))))
        open_ = np.concatenate(([price0], close[:-1]))
        high = np.maximum(open_, close) * (1 + np.abs(rng.normal(0, 0.006, n)))
        low = np.minimum(open_, close) * (1 - np.abs(rng.normal(0, 0.006, n)))
        volume = rng.integers(200_000, 20_000_000, n)
        series = {
            d: {"Open": o, "High": h, "Low": lo, "Close": c, "Volume": v}
            for d, o, h, lo, c, v in zip(
                days,
                open_.round(2).tolist(),
                high.round(2).tolist(),
                low.round(2).tolist(),
                close.round(2).tolist(),
                volume.tolist(),
                strict=True,
            )
        }
        self._prices[ticker] = series
        if len(self._prices) > PRICE_CACHE:
            self._prices.popitem(last=False)
        return series

    def add_node(self, key: str, **attrs: Any) -> None:
        self.graph.add_node(key, **attrs)

    # --- search indexes -------------------------------------------------------------------
    @cached_property
    def _company_names(self) -> list[tuple[str, str]]:
        return key_values(self.companies, "name")  # (ticker, name)

    @cached_property
    def company_index(self) -> tuple[FuzzyIndex, list[str]]:
        names = sorted(name for _, name in self._company_names)
        return FuzzyIndex(names), names

    @cached_property
    def company_by_name(self) -> dict[str, str]:
        return {name.casefold(): t for t, name in self._company_names}

    @cached_property
    def movie_index(self) -> tuple[FuzzyIndex, list[int]]:
        pairs = sorted(key_values(self.movies, "title"))
        return FuzzyIndex([title for _, title in pairs]), [i for i, _ in pairs]

    @cached_property
    def movies_by_year(self) -> dict[str, list[tuple[str, int]]]:
        """Release year -> (release date, movie id) pairs, for ``movie_get_year_info``."""
        out: dict[str, list[tuple[str, int]]] = {}
        for mid, released in key_values(self.movies, "release_date"):
            out.setdefault(released[:4], []).append((released, mid))
        return out

    @cached_property
    def person_index(self) -> tuple[FuzzyIndex, list[int]]:
        pairs = sorted(key_values(self.people, "name"))
        return FuzzyIndex([name for _, name in pairs]), [i for i, _ in pairs]

    @cached_property
    def artist_index(self) -> tuple[FuzzyIndex, list[str]]:
        names = sorted(self.artists)
        return FuzzyIndex(names), names

    @cached_property
    def song_index(self) -> tuple[FuzzyIndex, list[str]]:
        names = sorted(self.songs)
        return FuzzyIndex(names), names

    @cached_property
    def open_index(self) -> tuple[FuzzyIndex, list[str]]:
        names = sorted(self.open_entities)
        return FuzzyIndex(names), names

    @cached_property
    def artist_key(self) -> dict[str, str]:
        return {n.casefold(): n for n in self.artists}

    @cached_property
    def song_key(self) -> dict[str, str]:
        return {n.casefold(): n for n in self.songs}

    @cached_property
    def open_key(self) -> dict[str, str]:
        return {n.casefold(): n for n in self.open_entities}

    def warm(self) -> None:
        for name in (
            "company_index",
            "company_by_name",
            "movies_by_year",
            "artist_key",
            "song_key",
            "open_key",
            "movie_index",
            "person_index",
            "artist_index",
            "song_index",
            "open_index",
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


def key_values(store: Mapping[Any, dict[str, Any]], field: str) -> list[tuple[Any, Any]]:
    """(key, record[field]) for every record, in store order; a store on disk reads the
    column without decoding records."""
    column = getattr(store, "column", None)
    if column is not None:
        return column(field)
    return [(k, v[field]) for k, v in store.items()]


class _Unique:
    """Hands out names not used before (case-insensitively) within one namespace."""

    def __init__(self) -> None:
        self.used: set[str] = set()

    def take(self, name: str) -> str | None:
        key = name.casefold()
        if key in self.used:
            return None
        self.used.add(key)
        return name


def _lookalikes(name: str, kind: str) -> list[str]:
    """Hard negatives: names a careless agent confuses with ``name``."""
    if kind == "movie":
        return [f"{name} II", f"The {name}", f"{name}: Reloaded", f"Return of the {name}"]
    if kind == "artist":
        return [f"The {name} Tribute Band", f"{name} Revival", f"Young {name}"]
    if kind == "song":
        return [f"{name} (Remix)", f"{name} Part 2", f"Another {name}"]
    if kind == "company":
        return [f"{name} Holdings", f"{name} Group", f"New {name}"]
    if kind == "person":
        first, _, last = name.partition(" ")
        return [f"{first} {last}son", f"{first[0]}. {last}", f"{last} {first}"]
    return [f"{name} (disambiguation)", f"{name} Jr."]


def generate_world(size: str = "tiny", seed: int = 0, snr: float = 1 / 30) -> CragWorld:
    """The world ``(size, seed, snr)``; the same arguments always give the same world."""
    if size not in SIZES:
        raise ValueError(f"unknown world size {size!r}; choose one of {', '.join(SIZES)}")
    if not 0 < snr <= 1:
        raise ValueError("snr must be in (0, 1]")
    n_core = SIZES[size]
    noise_per_core = max(0, round(1 / snr) - 1)
    w = CragWorld(size, seed, snr)
    _finance(w, random.Random(f"crag/{seed}/finance"), n_core, noise_per_core)
    _movies(w, random.Random(f"crag/{seed}/movie"), n_core, noise_per_core)
    _music(w, random.Random(f"crag/{seed}/music"), n_core, noise_per_core)
    _sports(w, random.Random(f"crag/{seed}/sports"), n_core)
    _open(w, random.Random(f"crag/{seed}/open"), n_core, noise_per_core)
    return w


def _pop(i: int) -> str:
    return POPULARITY[i % 3]


def _noise_names(rng, name, kind, noise, make, unique) -> list[str]:
    """``noise`` distractor names: look-alikes first, then random same-type names."""
    out = []
    for n in _lookalikes(name, kind):
        if len(out) < noise and unique.take(n):
            out.append(n)
    while len(out) < noise:
        n = unique.take(make(rng))
        if n:
            out.append(n)
    return out


# --- finance ----------------------------------------------------------------------------


def _ticker(rng: random.Random, name: str, used: set[str]) -> str:
    letters = "".join(c for c in name.upper() if c.isalpha())
    for n in (3, 4, 2, 5):
        cand = letters[:n]
        if len(cand) == n and cand not in used:
            used.add(cand)
            return cand
    while True:
        cand = "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ") for _ in range(4))
        if cand not in used:
            used.add(cand)
            return cand


def _finance(w: CragWorld, rng: random.Random, n_core: int, noise: int) -> None:
    unique, tickers = _Unique(), set()
    days = _trading_days()

    def company_name(r: random.Random) -> str:
        return f"{_name(r, 1)} {r.choice(['Systems', 'Energy', 'Labs', 'Bank', 'Motors', 'Foods'])}"

    names: list[tuple[str, bool, int]] = []
    for i in range(n_core):
        name = None
        while name is None:
            name = unique.take(company_name(rng))
        names.append((name, True, i))
        names += [
            (n, False, i) for n in _noise_names(rng, name, "company", noise, company_name, unique)
        ]
    for name, core, i in names:
        ticker = _ticker(rng, name, tickers)
        shares = rng.randint(50, 5000) * 1_000_000
        eps = round(rng.uniform(-1.5, 12.0), 2)
        price0 = round(rng.uniform(8, 400), 2)
        dividends: dict[date, float] = {}
        if rng.random() < 0.6:
            amount = round(rng.uniform(0.05, 1.5), 2)
            for d in days[40::63]:  # quarterly
                dividends[d] = amount
                amount = round(amount * rng.choice([1.0, 1.0, 1.05]), 2)
        # quarterly EPS reports: a slow-changing fact with validity dates
        eps_history = []
        for d in days[::63]:
            eps_history.append((d, eps))
            eps = round(eps + rng.gauss(0.05, 0.4), 2)
        w.companies[ticker] = {
            "name": name,
            "ticker": ticker,
            "sector": rng.choice(SECTORS),
            "shares": shares,
            "eps": eps_history,
            "dividends": dividends,
            "price0": price0,
            "core": core,
        }
        w.add_node(
            f"company:{ticker}",
            type="company",
            domain="finance",
            name=name,
            popularity=_pop(i),
            core=core,
        )


# --- movies -----------------------------------------------------------------------------


def _movies(w: CragWorld, rng: random.Random, n_core: int, noise: int) -> None:
    titles, pnames = _Unique(), _Unique()
    n_people = max(8, n_core * 3)
    person_ids: list[int] = []
    for i in range(n_people * (1 + noise // 3)):
        name = None
        while name is None:
            name = pnames.take(_name(rng))
        pid = 1000 + i
        core = i < n_people
        birthday = date(rng.randint(1940, 2000), rng.randint(1, 12), rng.randint(1, 28))
        w.people[pid] = {
            "name": name,
            "id": pid,
            "birthday": birthday.isoformat(),
            "acted_movies": [],
            "directed_movies": [],
            "oscar_awards": [],
            "core": core,
        }
        w.add_node(
            f"person:{pid}", type="person", domain="movie", name=name, popularity=_pop(i), core=core
        )
        person_ids.append(pid)
    core_people = person_ids[:n_people]
    # person look-alikes: names built from core names
    for i, pid in enumerate(core_people[: max(1, n_core // 2)]):
        for j, alt in enumerate(_lookalikes(w.people[pid]["name"], "person")):
            if pnames.take(alt):
                nid = 500_000 + i * 10 + j
                w.people[nid] = {
                    **w.people[pid],
                    "name": alt,
                    "id": nid,
                    "acted_movies": [],
                    "directed_movies": [],
                    "oscar_awards": [],
                    "core": False,
                }
                w.add_node(
                    f"person:{nid}",
                    type="person",
                    domain="movie",
                    name=alt,
                    popularity="tail",
                    core=False,
                )
                person_ids.append(nid)

    next_id = 1
    all_titles: list[tuple[str, bool, int]] = []
    for i in range(n_core):
        t = None
        while t is None:
            t = titles.take(_title(rng))
        all_titles.append((t, True, i))
        all_titles += [(n, False, i) for n in _noise_names(rng, t, "movie", noise, _title, titles)]
    for title, core, i in all_titles:
        mid = next_id
        next_id += 1
        release = date(rng.randint(1990, 2023), rng.randint(1, 12), rng.randint(1, 28))
        pool = core_people if core else person_ids
        cast_ids = rng.sample(pool, min(len(pool), rng.randint(2, 4)))
        director = rng.choice(pool)
        rating0 = round(rng.uniform(4.0, 8.8), 1)
        w.movies[mid] = {
            "title": title,
            "id": mid,
            "release_date": release.isoformat(),
            "original_title": title,
            "original_language": rng.choice(LANGS),
            "budget": rng.randint(1, 200) * 1_000_000,
            "revenue": rng.randint(0, 900) * 1_000_000,
            # the rating drifts as votes come in: (valid_from, value) pairs
            "rating_history": [
                (release, rating0),
                (
                    release + timedelta(days=400),
                    round(min(9.5, rating0 + rng.uniform(-0.6, 0.6)), 1),
                ),
            ],
            "genres": [
                {"id": g, "name": GENRES[g]} for g in sorted(rng.sample(range(len(GENRES)), 2))
            ],
            "oscar_awards": [],
            "cast": [
                {"name": w.people[p]["name"], "id": p, "character": _name(rng, 1), "order": k}
                for k, p in enumerate(cast_ids)
            ],
            "crew": [{"name": w.people[director]["name"], "id": director, "job": "Director"}],
            "length": rng.randint(80, 180),
            "core": core,
        }
        for p in cast_ids:
            w.people[p]["acted_movies"].append(mid)
            w.graph.add_edge(f"person:{p}", f"movie:{mid}", key="acted_in")
        w.people[director]["directed_movies"].append(mid)
        w.graph.add_edge(f"person:{director}", f"movie:{mid}", key="directed")
        w.add_node(
            f"movie:{mid}", type="movie", domain="movie", name=title, popularity=_pop(i), core=core
        )
    # Oscars: each ceremony year picks winners among core movies released the year before
    by_year: dict[int, list[int]] = {}
    for mid, m in w.movies.items():
        if m["core"]:
            by_year.setdefault(int(m["release_date"][:4]), []).append(mid)
    for year, mids in sorted(by_year.items()):
        ceremony = year + 1
        awards = []
        for cat in OSCAR_CATEGORIES:
            mid = rng.choice(mids)
            m = w.movies[mid]
            nominee = (
                m["title"]
                if cat == "Best Picture"
                else (m["crew"][0]["name"] if cat == "Best Director" else m["cast"][0]["name"])
            )
            award = {
                "year_ceremony": ceremony,
                "year_film": year,
                "category": cat,
                "name": nominee,
                "film": m["title"],
                "winner": True,
            }
            awards.append(award)
            m["oscar_awards"].append(award)
            if cat != "Best Picture":
                pid = m["crew"][0]["id"] if cat == "Best Director" else m["cast"][0]["id"]
                w.people[pid]["oscar_awards"].append(award)
                w.graph.add_edge(f"person:{pid}", f"oscar:{ceremony}:{cat}", key="won")
        w.oscars[ceremony] = awards


# --- music ------------------------------------------------------------------------------


def _music(w: CragWorld, rng: random.Random, n_core: int, noise: int) -> None:
    anames, snames = _Unique(), _Unique()

    def band_name(r: random.Random) -> str:
        if r.random() < 0.5:
            return f"The {r.choice(_WORDS)} {_name(r, 1)}s"
        return _name(r)

    entries: list[tuple[str, bool, int]] = []
    so_far: list[str] = []  # artists generated so far, in order
    for i in range(n_core):
        a = None
        while a is None:
            a = anames.take(band_name(rng))
        entries.append((a, True, i))
        entries += [(n, False, i) for n in _noise_names(rng, a, "artist", noise, band_name, anames)]
    for name, core, i in entries:
        is_band = name.startswith("The ") or rng.random() < 0.3
        start = rng.randint(1960, 2015)
        ended = start + rng.randint(3, 30) if rng.random() < 0.3 else None
        members: list[tuple[date, str | None, str]] = []  # (joined, left, member)
        if is_band:
            for _ in range(rng.randint(3, 5)):
                joined = date(start, 1, 1)
                left = None
                if rng.random() < 0.3:
                    left = date(start + rng.randint(1, 8), 6, 1)
                members.append((joined, left.isoformat() if left else None, _name(rng)))
        so_far.append(name)
        w.artists[name] = {
            "name": name,
            "is_band": is_band,
            "birth_place": rng.choice(CITIES),
            "birth_date": None
            if is_band
            else date(
                start - rng.randint(18, 30), rng.randint(1, 12), rng.randint(1, 28)
            ).isoformat(),
            "lifespan": [str(start), str(ended) if ended else None],
            "members": members,
            "works": [],
            "core": core,
        }
        w.add_node(
            f"artist:{name}",
            type="artist",
            domain="music",
            name=name,
            popularity=_pop(i),
            core=core,
        )
        for member in members:
            w.graph.add_edge(f"person:{member[2]}", f"artist:{name}", key="member_of")
        for k in range(rng.randint(2, 4)):
            s = None
            while s is None:
                s = snames.take(_title(rng))
            released = date(
                max(start, 1990) + rng.randint(0, 8), rng.randint(1, 12), rng.randint(1, 28)
            )
            song = {
                "name": s,
                "artist": name,
                "author": _name(rng) if rng.random() < 0.5 else name,
                "release_country": rng.choice(COUNTRIES),
                "release_date": released.isoformat(),
                "core": core and k == 0,
            }
            w.songs[s] = song
            w.artists[name]["works"].append(s)
            w.graph.add_edge(f"artist:{name}", f"song:{s}", key="performed")
            w.add_node(
                f"song:{s}",
                type="song",
                domain="music",
                name=s,
                popularity=_pop(i),
                core=song["core"],
            )
            if song["core"]:
                for alt in _lookalikes(s, "song")[: max(1, noise // 10)]:
                    if snames.take(alt):
                        w.songs[alt] = {
                            **song,
                            "name": alt,
                            "artist": rng.choice(so_far),
                            "core": False,
                        }
                        w.artists[w.songs[alt]["artist"]]["works"].append(alt)
                        w.add_node(
                            f"song:{alt}",
                            type="song",
                            domain="music",
                            name=alt,
                            popularity="tail",
                            core=False,
                        )
    # weekly Billboard Hot 100 (top 10 here) from 2023-01-07 on, Saturdays
    songs = sorted(w.songs)
    standing = rng.sample(songs, min(10, len(songs)))
    history: dict[str, dict[str, int]] = {}
    week = date(2023, 1, 7)
    last: dict[str, int] = {}
    while week <= END:
        if rng.random() < 0.5:
            standing[rng.randrange(len(standing))] = rng.choice(songs)
            standing = list(dict.fromkeys(standing))
            while len(standing) < min(10, len(songs)):
                cand = rng.choice(songs)
                if cand not in standing:
                    standing.append(cand)
        rng.shuffle(standing) if rng.random() < 0.3 else None
        chart = []
        for rank, s in enumerate(standing, 1):
            h = history.setdefault(s, {"weeks": 0, "peak": rank})
            h["weeks"] += 1
            h["peak"] = min(h["peak"], rank)
            chart.append(
                {
                    "rank": rank,
                    "song": s,
                    "artist": w.songs[s]["artist"],
                    "rank_last_week": last.get(s),
                    "weeks_in_chart": h["weeks"],
                    "top_position": h["peak"],
                }
            )
        last = {s: r for r, s in enumerate(standing, 1)}
        w.charts[week] = chart
        week += timedelta(days=7)
    # Grammys
    core_artists = [a for a, v in w.artists.items() if v["core"]]
    core_songs = [s for s, v in w.songs.items() if v["core"]]
    for year in range(2000, 2025):
        w.grammys[year] = {
            "best_new_artist": rng.choice(core_artists),
            "song_of_the_year": rng.choice(core_songs),
            "album_of_the_year": f"{rng.choice(_WORDS)} {rng.choice(_NOUNS)}",
        }
        w.grammys[year]["album_artist"] = rng.choice(core_artists)


# --- sports -----------------------------------------------------------------------------


def _sports(w: CragWorld, rng: random.Random, n_core: int) -> None:
    cities = [_name(rng, 1) for _ in range(max(6, min(30, n_core)))]
    nba_teams = [
        f"{c} {rng.choice(['Hawks', 'Comets', 'Giants', 'Kings', 'Wolves'])}" for c in cities
    ]
    soccer_teams = [f"{c} {rng.choice(['FC', 'United', 'City', 'Athletic'])}" for c in cities]
    for t in nba_teams:
        w.add_node(
            f"team:{t}", type="nba_team", domain="sports", name=t, popularity="head", core=True
        )
    for t in soccer_teams:
        w.add_node(
            f"team:{t}", type="soccer_team", domain="sports", name=t, popularity="torso", core=True
        )
    d = date(2023, 10, 24)
    game_id = 22300001
    while d <= date(2024, 6, 15):
        if d.weekday() in (1, 3, 5):
            teams = rng.sample(nba_teams, len(nba_teams) // 2 * 2)
            for home, away in zip(teams[::2], teams[1::2], strict=True):
                ph, pa = rng.randint(90, 135), rng.randint(90, 135)
                if ph == pa:
                    ph += 1
                w.nba.append(
                    {
                        "game_id": str(game_id),
                        "game_date": d.isoformat(),
                        "team_name_home": home,
                        "team_name_away": away,
                        "pts_home": ph,
                        "pts_away": pa,
                        "wl_home": "W" if ph > pa else "L",
                        "wl_away": "L" if ph > pa else "W",
                    }
                )
                w.graph.add_edge(f"team:{home}", f"team:{away}", key=f"nba:{game_id}")
                game_id += 1
        if d.weekday() == 5:
            teams = rng.sample(soccer_teams, len(soccer_teams) // 2 * 2)
            for home, away in zip(teams[::2], teams[1::2], strict=True):
                gh, ga = rng.randint(0, 4), rng.randint(0, 3)
                w.soccer.append(
                    {
                        "date": d.isoformat(),
                        "home": home,
                        "away": away,
                        "home_goals": gh,
                        "away_goals": ga,
                        "attendance": rng.randint(8000, 60000),
                    }
                )
        d += timedelta(days=1)


# --- open -------------------------------------------------------------------------------


def _open(w: CragWorld, rng: random.Random, n_core: int, noise: int) -> None:
    unique = _Unique()
    kinds = [
        ("river", "a river"),
        ("mountain", "a mountain"),
        ("inventor", "an inventor"),
        ("city", "a city"),
        ("novel", "a novel"),
    ]

    def make(r: random.Random) -> str:
        return _name(r, r.choice([1, 2]))

    for i in range(n_core):
        name = None
        while name is None:
            name = unique.take(make(rng))
        group = [(name, True)] + [
            (n, False) for n in _noise_names(rng, name, "open", noise, make, unique)
        ]
        for n, core in group:
            kind, article = rng.choice(kinds)
            facts: dict[str, Any] = {"type": kind, "country": rng.choice(COUNTRIES)}
            if kind in ("river", "mountain"):
                facts["length_km" if kind == "river" else "height_m"] = rng.randint(50, 8000)
            elif kind == "inventor":
                facts["born"] = str(rng.randint(1800, 1990))
                facts["known_for"] = (
                    f"the {rng.choice(_WORDS).lower()} {rng.choice(_NOUNS).lower()}"
                )
            elif kind == "city":
                facts["population"] = rng.randint(10_000, 9_000_000)
            else:
                facts["author"] = _name(rng)
                facts["published"] = str(rng.randint(1850, 2022))
            text = f"{n} is {article} in {facts['country']}. " + " ".join(
                f"Its {k.replace('_', ' ')} is {v}."
                for k, v in facts.items()
                if k not in ("type", "country")
            )
            w.open_entities[n] = {"summary_text": text, "summary_structured": facts, "core": core}
            w.add_node(
                f"open:{n}", type="open", domain="open", name=n, popularity=_pop(i), core=core
            )
