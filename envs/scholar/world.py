"""A seeded, fictional academic world shaped like AMiner, stored in SQLite.

- Names are assembled from invented syllables, so no answer can come from a model's memory.
- Productivity is heavy-tailed (Pareto author weights); citations come from real citation edges
  drawn by preferential attachment (Price's model), so citation counts follow a power law and
  equal each paper's in-degree.
- About 4% of scholars share a name with another (namesakes) and 2% have a near-same name (one
  letter changed), at other organizations, as on AMiner; organizations have aliases and
  abbreviations.
- ``generate_world(size, seed, path)`` draws every column as a numpy array from one seeded
  generator and writes each table in key order (a large world's tables and search indexes in
  forked processes at once); the same ``(size, seed)`` always produces the same rows (see
  ``content_hash``). Regular collaborators: every scholar has a circle of six,
  half of a paper's coauthors come from the lead author's circle.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import multiprocessing
import os
import random
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from raleval.envs.fuzzy import FuzzyIndex, stamp_index
from raleval.processes import die_with_parent

GENERATOR_VERSION = 4

_log = logging.getLogger(__name__)

SIZES: dict[str, tuple[int, int]] = {
    # scholars, publications
    "tiny": (120, 360),
    "small": (5_000, 15_000),
    # 25k scholars + 75k papers: the 100k-page encyclopedia the wiki benchmark uses
    "medium": (25_000, 75_000),
    "large": (1_000_000, 3_000_000),
}

_ONSETS = [
    "b",
    "br",
    "c",
    "d",
    "dr",
    "f",
    "g",
    "gr",
    "h",
    "j",
    "k",
    "kr",
    "l",
    "m",
    "n",
    "p",
    "qu",
    "r",
    "s",
    "st",
    "t",
    "tr",
    "v",
    "w",
    "z",
    "sh",
    "th",
    "y",
]
_VOWELS = ["a", "e", "i", "o", "u", "ai", "ei", "ou", "ia", "y"]
_CODAS = ["", "n", "r", "l", "s", "th", "nd", "rk", "x", "m", "v", "rt"]
_SURNAME_ENDS = ["", "berg", "ton", "ski", "ova", "ini", "ard", "holt", "quist", "ez", "ani", "ic"]
_SYLLABLES = [o + v for o in _ONSETS for v in _VOWELS]

TOPICS = [
    "graph neural networks",
    "knowledge graphs",
    "entity linking",
    "question answering",
    "retrieval augmented generation",
    "information retrieval",
    "machine translation",
    "reinforcement learning",
    "computer vision",
    "object detection",
    "federated learning",
    "differential privacy",
    "recommender systems",
    "speech recognition",
    "program synthesis",
    "causal inference",
    "time series forecasting",
    "contrastive learning",
    "robotics",
    "database systems",
    "distributed systems",
    "compilers",
    "formal verification",
    "computational biology",
    "protein folding",
    "quantum computing",
    "network security",
    "human computer interaction",
    "data mining",
    "social network analysis",
    "optimization",
    "bayesian inference",
    "natural language generation",
    "semantic parsing",
    "text mining",
    "image segmentation",
    "adversarial robustness",
    "model compression",
    "edge computing",
    "blockchain",
]
_ADJ = [
    "Scalable",
    "Efficient",
    "Robust",
    "Adaptive",
    "Interpretable",
    "Hierarchical",
    "Self-Supervised",
    "Sparse",
    "Probabilistic",
    "Incremental",
    "Unified",
    "Lightweight",
    "Federated",
    "Causal",
    "Structured",
    "Multilingual",
]
_METHOD = [
    "Attention",
    "Contrastive Learning",
    "Graph Transformers",
    "Message Passing",
    "Variational Inference",
    "Prompt Tuning",
    "Knowledge Distillation",
    "Beam Search",
    "Dual Encoders",
    "Mixture of Experts",
    "Curriculum Learning",
    "Meta-Learning",
    "Diffusion Models",
    "Retrieval",
    "Program Induction",
    "Active Learning",
]
_VENUE_WORDS = ["Symposium", "Conference", "Workshop", "Transactions", "Journal"]
POSITIONS = [
    "Professor",
    "Associate Professor",
    "Assistant Professor",
    "Researcher",
    "Associate Researcher",
    "Lecturer",
    "Engineer",
    "Senior Engineer",
    "Ph.D Student",
]
_ORG_KINDS = [
    "University of {p}",
    "{p} Institute of Technology",
    "{p} Research Laboratory",
    "{p} State University",
    "{p} Academy of Sciences",
]

SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE orgs (
    rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, name TEXT NOT NULL,
    aliases TEXT NOT NULL
);
CREATE TABLE persons (
    rowid INTEGER PRIMARY KEY, id TEXT NOT NULL, name TEXT NOT NULL,
    org INTEGER NOT NULL, gender TEXT, position TEXT, interests TEXT NOT NULL, email TEXT,
    education TEXT, bio TEXT, n_citation INTEGER NOT NULL DEFAULT 0,
    n_pubs INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE pubs (
    rowid INTEGER PRIMARY KEY, id TEXT NOT NULL, title TEXT NOT NULL,
    year INTEGER, venue TEXT, n_citation INTEGER NOT NULL DEFAULT 0, abstract TEXT
);
CREATE TABLE authorship (
    pub INTEGER NOT NULL, position INTEGER NOT NULL, person INTEGER NOT NULL,
    PRIMARY KEY (pub, position)
) WITHOUT ROWID;
CREATE TABLE citations (src INTEGER NOT NULL, dst INTEGER NOT NULL,
    PRIMARY KEY (src, dst)) WITHOUT ROWID;
CREATE TABLE coauthors (a INTEGER NOT NULL, b INTEGER NOT NULL, weight INTEGER NOT NULL,
    PRIMARY KEY (a, b)) WITHOUT ROWID;
CREATE TABLE topics (rowid INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE TABLE person_topics (topic INTEGER NOT NULL, n_citation INTEGER NOT NULL,
    person INTEGER NOT NULL, PRIMARY KEY (topic, n_citation, person)) WITHOUT ROWID;
"""

# Ids are unique through indexes built after the rows (a B-tree sorted once): a UNIQUE column
# checked row by row inserted three million random keys, 10 of the pubs table's 14 seconds.
_PERSON_INDEXES = """
CREATE UNIQUE INDEX persons_id ON persons (id);
CREATE UNIQUE INDEX pubs_id ON pubs (id);
CREATE INDEX persons_org ON persons (org, n_citation);
CREATE INDEX persons_citation ON persons (n_citation);
"""
INDEXES = "\nCREATE INDEX authorship_person ON authorship (person, pub);" + _PERSON_INDEXES


def _word(rng: random.Random, syllables: int) -> str:
    parts = [rng.choice(_ONSETS) + rng.choice(_VOWELS) for _ in range(syllables)]
    return ("".join(parts) + rng.choice(_CODAS)).capitalize()


def _near_name(rng: random.Random, name: str) -> str:
    """The same name with one letter of the surname changed (a near namesake)."""
    first, last = name.split(" ", 1)
    i = rng.randrange(1, len(last)) if len(last) > 1 else 0
    letter = rng.choice("aeiourstnl".replace(last[i].lower(), ""))
    return f"{first} {last[:i]}{letter}{last[i + 1 :]}"


def _hex_ids(h: str) -> list[str]:
    """Random 96-bit ids as 24 hex digits, from ``g.bytes(12 * n).hex()``."""
    return [h[i : i + 24] for i in range(0, len(h), 24)]


def _pick(g: np.random.Generator, cum: np.ndarray, n: int) -> np.ndarray:
    """``n`` person rowids drawn with the weights whose running sum is ``cum``."""
    return np.searchsorted(cum, g.random(n) * cum[-1], side="right") + 1


def _first_k_distinct(cand: np.ndarray, k: np.ndarray) -> np.ndarray:
    """Per row, the first ``k`` distinct values of ``cand`` in column order, left-aligned and
    padded with 0 (fewer when the row has fewer distinct values)."""
    rows, width = cand.shape
    fresh = np.ones(cand.shape, dtype=bool)
    for j in range(1, width):
        fresh[:, j] = ~(cand[:, :j] == cand[:, j : j + 1]).any(axis=1)
    rank = np.cumsum(fresh, axis=1)
    keep = fresh & (rank <= k[:, None])
    out = np.zeros((rows, int(k.max(initial=1))), dtype=cand.dtype)
    r, c = np.nonzero(keep)
    out[r, rank[r, c] - 1] = cand[r, c]
    return out


def _citations(refs: np.ndarray, u: np.ndarray, n_pubs: int) -> tuple[np.ndarray, np.ndarray]:
    """Citation edges (src, dst) by preferential attachment (Price's model), sorted.

    Paper ``s`` draws 0-8 references from an urn that holds every earlier paper once plus
    once per citation it has received, which is: with probability (papers before) / (urn
    size) a uniformly chosen earlier paper, else the target of a uniformly chosen earlier
    citation. Each edge that copies an earlier edge's target points at it, and pointer
    jumping resolves all chains at once instead of paper by paper. ``refs`` is each paper's
    number of references and ``u`` one uniform draw per reference."""
    src = np.repeat(np.arange(1, n_pubs + 1, dtype=np.int64), refs)
    first_edge = np.repeat(np.cumsum(refs) - refs, refs)
    urn = (src - 1) + first_edge
    j = np.minimum((u * urn).astype(np.int64), urn - 1)
    direct = j < src - 1
    ptr = np.where(direct, np.arange(len(src)), j - (src - 1))
    target = np.where(direct, j + 1, 0)
    while True:
        nxt = ptr[ptr]
        if np.array_equal(nxt, ptr):
            break
        ptr = nxt
    dst = target[ptr]
    keys = _distinct(src * (n_pubs + 1) + dst)  # a paper cites each paper once
    return keys // (n_pubs + 1), keys % (n_pubs + 1)


def _distinct(values: np.ndarray) -> np.ndarray:
    """Sorted distinct values (np.unique's hash path took minutes on 12M int64 keys). The
    stable sort finds runs: citation keys come sorted by paper, 7x faster than quicksort."""
    values = np.sort(values, kind="stable")
    return values[np.r_[True, values[1:] != values[:-1]]]


def _insert(db: sqlite3.Connection, table: str, columns: list, rowid: bool = True) -> None:
    """Insert columns (equal-length lists or arrays) as rows; the rows exist only as the
    executemany iterator consumes them. ``rowid=False``: the columns leave out the first, an
    INTEGER PRIMARY KEY that SQLite numbers 1, 2, ... itself (the table must be empty)."""
    marks = ", ".join(["?"] * len(columns) if rowid else ["NULL"] + ["?"] * len(columns))
    lists = [c.tolist() if isinstance(c, np.ndarray) else c for c in columns]
    db.executemany(f"INSERT INTO {table} VALUES ({marks})", zip(*lists, strict=True))


def _packing(columns: list[np.ndarray]) -> tuple[np.ndarray, list[str]] | None:
    """Non-negative integer columns packed into one int64 per row (the first column in the
    highest bits, so packed values sort as the rows do), with the SQL that unpacks each
    column from ``value``; None when they do not fit in 63 bits."""
    widths = [max(1, int(c.max(initial=0)).bit_length()) for c in columns]
    if sum(widths) > 63 or any(int(c.min(initial=0)) < 0 for c in columns):
        return None
    packed, parts, shift = np.zeros(len(columns[0]), dtype=np.int64), [], sum(widths)
    for c, w in zip(columns, widths, strict=True):
        shift -= w
        packed |= c.astype(np.int64) << shift
        parts.append(f"(value >> {shift}) & {(1 << w) - 1}")
    return packed, parts


def _insert_packed(
    db: sqlite3.Connection, table: str, packed: np.ndarray, parts: list[str]
) -> None:
    """Insert rows packed by :func:`_packing`: sent as a JSON array per chunk that SQLite
    unpacks, twice as fast as executemany (one Python object per row and column made up most
    of the insert time)."""
    sql = f"INSERT INTO {table} SELECT {', '.join(parts)} FROM json_each(?)"
    for start in range(0, len(packed), 1_000_000):
        db.execute(sql, (str(packed[start : start + 1_000_000].tolist()),))


def _insert_ints(db: sqlite3.Connection, table: str, columns: list[np.ndarray]) -> None:
    """Insert non-negative integer columns as rows (packed when they fit in 63 bits)."""
    packing = _packing(columns)
    if packing is None:
        return _insert(db, table, columns)
    _insert_packed(db, table, *packing)


def _insert_sorted(db: sqlite3.Connection, table: str, columns: list[np.ndarray]) -> None:
    """Insert integer rows in key order (the columns, left to right, are the key): sorting the
    packed rows costs a fraction of an argsort and three gathers."""
    packing = _packing(columns)
    if packing is None:
        order = np.lexsort(columns[::-1])
        return _insert(db, table, [c[order] for c in columns])
    packed, parts = packing
    packed.sort()
    _insert_packed(db, table, packed, parts)


@dataclass
class _Draws:
    """Every random column of a world, drawn in one fixed order; text is formatted later
    (in whichever process writes it) from these."""

    size: str
    seed: int
    n_persons: int
    n_pubs: int
    orgs: list[tuple[int, str, str, str]]
    org_names: list[str]
    org_abbrev: list[str]
    person_hex: str  # the ids, 24 hex digits each
    names: list[str]
    org: np.ndarray
    n_topics: np.ndarray
    ptopics: np.ndarray  # (n_persons + 1, 6): row i holds person i's topics in order
    gender: np.ndarray
    position: np.ndarray
    edu_org: np.ndarray
    edu_year: np.ndarray
    mail_no: np.ndarray
    pub_hex: str
    cand: np.ndarray  # (n_pubs, 8): a paper's lead and candidate coauthors
    n_auth: np.ndarray
    cit_refs: np.ndarray  # each paper's number of references
    cit_u: np.ndarray  # one uniform draw per reference
    years: np.ndarray
    topic: np.ndarray
    method: np.ndarray
    adj: np.ndarray
    kind: np.ndarray
    n_bench: np.ndarray
    s1: np.ndarray
    s2: np.ndarray
    coda: np.ndarray
    venues: list[str]
    venue: np.ndarray
    # derived from the draws by derive(): no random numbers, and not needed by the search
    # indexes, which start building before it
    authors: np.ndarray = field(init=False)  # (n_pubs, k): authors in order, padded with 0
    a_pub: np.ndarray = field(init=False)
    a_pos: np.ndarray = field(init=False)
    a_person: np.ndarray = field(init=False)
    c_src: np.ndarray = field(init=False)
    c_dst: np.ndarray = field(init=False)
    pub_cit: np.ndarray = field(init=False)
    person_cit: np.ndarray = field(init=False)
    person_pubs: np.ndarray = field(init=False)

    def derive(self) -> None:
        """Authorship (the first distinct candidates), citation edges and the counts."""
        self.authors = _first_k_distinct(self.cand, self.n_auth)
        del self.cand
        has = self.authors > 0
        self.a_pub = np.repeat(np.arange(1, self.n_pubs + 1), has.sum(axis=1))
        self.a_pos = np.nonzero(has)[1]
        self.a_person = self.authors[has]
        self.c_src, self.c_dst = _citations(self.cit_refs, self.cit_u, self.n_pubs)
        del self.cit_refs, self.cit_u
        self.pub_cit = np.bincount(self.c_dst, minlength=self.n_pubs + 1)
        weighted = np.bincount(
            self.a_person, weights=self.pub_cit[self.a_pub], minlength=self.n_persons + 1
        )
        self.person_cit = weighted.astype(np.int64)
        self.person_pubs = np.bincount(self.a_person, minlength=self.n_persons + 1)


def _draw(size: str, seed: int) -> _Draws:
    """Draw the world ``(size, seed)``: every call on the two generators in the order that
    defines the world (moving one reshuffles everything after it)."""
    n_persons, n_pubs = SIZES[size]
    # The seed string names only (size, seed): a schema change must not reshuffle the world.
    key = f"scholar-world/{GENERATOR_VERSION}/{size}/{seed}"
    rng = random.Random(key)  # the small vocabularies
    g = np.random.default_rng(int.from_bytes(hashlib.sha256(key.encode()).digest()[:16], "big"))

    # Vocabulary grows with the world so that names stay varied at a million scholars.
    n_first = max(300, int(n_persons**0.5) * 2)
    n_last = max(1200, int(n_persons**0.5) * 8)
    first_names = sorted({_word(rng, rng.choice((1, 2))) for _ in range(n_first)})
    surnames = sorted({_word(rng, 2) + rng.choice(_SURNAME_ENDS) for _ in range(n_last)})

    n_orgs = max(8, n_persons // 60)
    org_names, org_abbrev, orgs = [], [], []
    for k in range(n_orgs):
        place = _word(rng, rng.choice((2, 3)))
        name = rng.choice(_ORG_KINDS).format(p=place)
        abbrev = "".join(w[0] for w in name.replace(" of ", " ").split() if w[0].isupper())
        aliases = [abbrev, name.replace("University of ", "U. ").replace("Institute of", "Inst.")]
        orgs.append((k + 1, f"{rng.getrandbits(96):024x}", name, json.dumps(aliases)))
        org_names.append(name)
        org_abbrev.append(abbrev.lower())

    # --- scholars ------------------------------------------------------------------------------
    person_hex = g.bytes(12 * n_persons).hex()
    fi = g.integers(len(first_names), size=n_persons).tolist()
    si = g.integers(len(surnames), size=n_persons).tolist()
    names = [f"{first_names[a]} {surnames[b]}" for a, b in zip(fi, si, strict=True)]
    # About 4% share an earlier scholar's name (namesakes) and 2% a near-same name, drawn from
    # the last 5,000 scholars; in row order, so a namesake of a namesake has the first name.
    r = g.random(n_persons)
    back = 1 + (g.random(n_persons) * np.minimum(np.arange(n_persons), 5000)).astype(np.int64)
    for i in np.flatnonzero((r < 0.06) & (np.arange(n_persons) > 0)).tolist():
        source = names[i - int(back[i])]
        names[i] = source if r[i] < 0.04 else _near_name(rng, source)
    org = g.integers(1, n_orgs + 1, n_persons)
    # 2-6 distinct research topics per scholar: the first k of a random order of the 40.
    n_topics = g.integers(2, 7, n_persons)
    ptopics = np.zeros((n_persons + 1, 6), dtype=np.int64)
    for lo in range(0, n_persons, 200_000):
        keys = g.random((min(200_000, n_persons - lo), len(TOPICS)), dtype=np.float32)
        first6 = np.argpartition(keys, 5, axis=1)[:, :6]
        order = np.argsort(np.take_along_axis(keys, first6, axis=1), axis=1)
        ptopics[lo + 1 : lo + 1 + len(keys)] = np.take_along_axis(first6, order, axis=1)
    gender = g.integers(2, size=n_persons)
    position = g.integers(len(POSITIONS), size=n_persons)
    edu_org = g.integers(n_orgs, size=n_persons)
    edu_year = g.integers(1985, 2021, n_persons)
    mail_no = g.integers(1, 100, n_persons)

    # --- papers ------------------------------------------------------------------------------
    pub_hex = g.bytes(12 * n_pubs).hex()
    # Productivity is heavy-tailed: lead authors are drawn with Pareto(1.3) weights, capped at
    # the expected largest of n draws (n ** (1 / 1.3)). Uncapped, one freak draw in a seed
    # outweighed everyone else and led 73% of a small world's papers.
    weights = np.minimum(g.pareto(1.3, n_persons) + 1.0, n_persons ** (1 / 1.3))
    cum = np.cumsum(weights)
    lead = _pick(g, cum, n_pubs)
    n_auth = g.choice(np.array([1, 2, 2, 3, 3, 3, 4, 5]), n_pubs)
    # Every scholar has a circle of six regular collaborators (mostly colleagues); a paper's
    # other authors come half from the lead's circle, 30% from the lead's organization and
    # the rest from anyone (Pareto weighted), so coauthor pairs repeat as they do on AMiner.
    by_org = np.argsort(org, kind="stable") + 1
    org_start = np.searchsorted(org[by_org - 1], np.arange(n_orgs + 2))
    org_size = np.diff(org_start)

    def colleague(of: np.ndarray) -> np.ndarray:
        o = org[of - 1]
        return by_org[org_start[o] + (g.random(len(of)) * org_size[o]).astype(np.int64)]

    circle = np.zeros((n_persons + 1, 6), dtype=np.int64)
    everyone = np.arange(1, n_persons + 1)
    for c in range(6):
        near = g.random(n_persons) < 0.7
        circle[1:, c][near] = colleague(everyone[near])
        circle[1:, c][~near] = _pick(g, cum, int((~near).sum()))
    width = 8  # the lead and seven draws for at most four coauthors (repeats are dropped)
    cand = np.empty((n_pubs, width), dtype=np.int64)
    cand[:, 0] = lead
    for c in range(1, width):
        u = g.random(n_pubs)
        own, org_mate = u < 0.5, (u >= 0.5) & (u < 0.8)
        anyone = ~(own | org_mate)
        column = cand[:, c]
        column[own] = circle[lead[own], g.integers(6, size=int(own.sum()))]
        column[org_mate] = colleague(lead[org_mate])
        column[anyone] = _pick(g, cum, int(anyone.sum()))
    del circle
    cit_refs = g.integers(0, 9, n_pubs)
    cit_refs[0] = 0  # the first paper has nothing to cite
    cit_u = g.random(int(cit_refs.sum()))

    years = np.sort(g.integers(1995, 2026, n_pubs))
    topic = ptopics[lead, (g.random(n_pubs) * n_topics[lead - 1]).astype(np.int64)]
    method = g.integers(len(_METHOD), size=n_pubs)
    adj = g.integers(len(_ADJ), size=n_pubs)
    kind = g.integers(3, size=n_pubs)
    n_bench = g.integers(2, 10, n_pubs)
    s1 = g.integers(len(_SYLLABLES), size=n_pubs)
    s2 = g.integers(len(_SYLLABLES), size=n_pubs)
    coda = g.integers(len(_CODAS), size=n_pubs)
    venues = sorted(
        {f"{rng.choice(_VENUE_WORDS)} on {t.title()}" for t in TOPICS}
        | {f"{_word(rng, 2).upper()[:4]} {rng.choice(_VENUE_WORDS)}" for _ in range(40)}
    )
    venue = g.integers(len(venues), size=n_pubs)
    return _Draws(
        size, seed, n_persons, n_pubs, orgs, org_names, org_abbrev, person_hex, names, org,
        n_topics, ptopics, gender, position, edu_org, edu_year, mail_no, pub_hex, cand, n_auth,
        cit_refs, cit_u, years, topic, method, adj, kind, n_bench, s1, s2, coda, venues, venue,
    )  # fmt: skip


def _titles(d: _Draws) -> list[str]:
    kinds, topic_titles = ("Approach", "Benchmark", "Framework"), [t.title() for t in TOPICS]
    cap = [s.capitalize() for s in _SYLLABLES]
    adj, method, topic = d.adj.tolist(), d.method.tolist(), d.topic.tolist()
    s1, s2, coda, kind = d.s1.tolist(), d.s2.tolist(), d.coda.tolist(), d.kind.tolist()
    return [
        f"{_ADJ[adj[i]]} {_METHOD[method[i]]} for {topic_titles[topic[i]]}: "
        f"the {cap[s1[i]]}{_SYLLABLES[s2[i]]}{_CODAS[coda[i]]} {kinds[kind[i]]}"
        for i in range(d.n_pubs)
    ]


PEOPLE = ("persons", "pubs")


def _write_people(d: _Draws, path: Path) -> None:
    """The persons and pubs tables (every text column), with their indexes, into a new file."""
    db = _new_db(path)
    db.executescript(SCHEMA)  # the same tables as the world's, so that it copies them as pages
    edu = [
        f"Ph.D., {d.org_names[o]}, {y}"
        for o, y in zip(d.edu_org.tolist(), d.edu_year.tolist(), strict=True)
    ]
    quoted = [json.dumps(t) for t in TOPICS]
    interests, bios, emails = [], [], []
    gender, position, mail_no = d.gender.tolist(), d.position.tolist(), d.mail_no.tolist()
    org_list = d.org.tolist()
    for i, (name, k, tops) in enumerate(
        zip(d.names, d.n_topics.tolist(), d.ptopics[1:].tolist(), strict=True)
    ):
        mine = tops[:k]
        interests.append("[" + ", ".join([quoted[t] for t in mine]) + "]")
        o = org_list[i] - 1
        first, last = name.split(" ", 1)
        bios.append(
            f"{name} is a {POSITIONS[position[i]]} at {d.org_names[o]}. "
            f"{'She' if gender[i] else 'He'} works on "
            f"{', '.join([TOPICS[t] for t in mine[:-1]])} and {TOPICS[mine[-1]]}, "
            f"and received a {edu[i]}."
        )
        emails.append(
            f"{first[0].lower()}.{last.lower()}{mail_no[i]}@{d.org_abbrev[o]}.edu.invalid"
        )
    _insert(
        db,
        "persons",
        [
            _hex_ids(d.person_hex),
            d.names,
            d.org,
            [("male", "female")[x] for x in gender],
            [POSITIONS[x] for x in position],
            interests,
            emails,
            edu,
            bios,
            d.person_cit[1:],
            d.person_pubs[1:],
        ],
        rowid=False,
    )
    del interests, emails, edu, bios
    titles = _titles(d)
    # an abstract is one of topics x methods x benchmark counts: formatted once each and
    # picked by code (a million f-strings a second formatted the same few thousand again)
    bench_counts, n_methods = int(d.n_bench.max(initial=0)) + 1, len(_METHOD)
    texts = [
        f"We study {topic} and propose a {method.lower()} method. "
        f"Experiments on {n} benchmarks show consistent gains."
        for topic in TOPICS
        for method in _METHOD
        for n in range(bench_counts)
    ]
    codes = (d.topic * n_methods + d.method) * bench_counts + d.n_bench
    abstracts = [texts[c] for c in codes.tolist()]
    _insert(
        db,
        "pubs",
        [
            _hex_ids(d.pub_hex),
            titles,
            d.years,
            [d.venues[v] for v in d.venue.tolist()],
            d.pub_cit[1:],
            abstracts,
        ],
        rowid=False,
    )
    del titles, abstracts
    db.executescript(_PERSON_INDEXES)
    db.commit()
    db.close()


def _write_links(db: sqlite3.Connection, d: _Draws) -> None:
    """The integer tables but coauthors: authorship, citations, person_topics, each in key
    order (appends to the B-trees)."""
    with _timed("authorship"):
        _insert_ints(db, "authorship", [d.a_pub, d.a_pos, d.a_person])
    with _timed("authorship index"):
        db.execute("CREATE INDEX authorship_person ON authorship (person, pub)")
    with _timed("citations"):
        _insert_ints(db, "citations", [d.c_src, d.c_dst])
    with _timed("person_topics"):
        pt_person = np.repeat(np.arange(1, d.n_persons + 1), d.n_topics)
        pt_topic = d.ptopics[1:][np.arange(6) < d.n_topics[:, None]]
        _insert_sorted(db, "person_topics", [pt_topic, d.person_cit[pt_person], pt_person])


def _write_coauthors(d: _Draws, path: Path) -> None:
    """Coauthor edges into a new file: every unordered author pair of every paper, counted,
    both directions."""
    authors, n = d.authors, d.n_persons + 1
    pairs = [
        (authors[:, i], authors[:, j])
        for i in range(authors.shape[1])
        for j in range(i + 1, authors.shape[1])
    ]
    lo = np.concatenate([np.minimum(x, y)[(x > 0) & (y > 0)] for x, y in pairs])
    hi = np.concatenate([np.maximum(x, y)[(x > 0) & (y > 0)] for x, y in pairs])
    uniq, counts = np.unique(lo * n + hi, return_counts=True)
    del lo, hi
    ua, ub = uniq // n, uniq % n
    ca, cb, cw = np.concatenate([ua, ub]), np.concatenate([ub, ua]), np.concatenate([counts] * 2)
    db = _new_db(path)
    db.executescript(SCHEMA)  # the world's tables, so that it copies them as pages
    _insert_sorted(db, "coauthors", [ca, cb, cw])
    db.commit()
    db.close()


def _write_search(d: _Draws, folder: Path) -> None:
    """The names and titles search indexes, saved unstamped (the world is still being
    written; :func:`generate_world` stamps them when it is complete)."""
    FuzzyIndex(d.names).save(folder / "names")
    FuzzyIndex(_titles(d)).save(folder / "titles")


def _new_db(path: Path) -> sqlite3.Connection:
    path.unlink(missing_ok=True)
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode=OFF")
    db.execute("PRAGMA synchronous=OFF")
    # The smallest page cache (1 MB) makes CREATE INDEX three times faster: SQLite's sorter
    # then sorts runs that fit the CPU cache and merges them, where one 250 MB run took 13 s
    # for the authorship index. Appending rows in key order needs no cache.
    db.execute("PRAGMA cache_size=-1024")
    return db


def _die_with_parent(parent: int) -> None:
    """Die with the build that forked this step (``parent``), so that a killed build leaves
    no step running; a build killed before the step got that far (under load a forked step
    can take a second to, and a CI run once killed the build first and found the step still
    running) stops it here."""
    if not die_with_parent(parent):
        os._exit(1)


@contextlib.contextmanager
def _timed(step: str):
    """Log a build step's wall and CPU seconds (``logging`` at DEBUG level)."""
    wall, cpu = time.perf_counter(), time.process_time()
    yield
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    _log.debug("scholar world: %s took %.1f s (%.1f s CPU)", step, wall, cpu)


def _step(parent: int, target, *args) -> None:
    _die_with_parent(parent)
    with _timed(target.__name__.strip("_")):
        target(*args)


class _Steps:
    """Build steps run beside the main one in forked processes (which share the drawn columns
    without copying them), or in turn in this process when ``parallel`` is false."""

    def __init__(self, parallel: bool) -> None:
        self.parallel = parallel
        self.running: dict[str, multiprocessing.process.BaseProcess] = {}

    def start(self, name: str, target, *args) -> None:
        if not self.parallel:
            with _timed(target.__name__.strip("_")):
                target(*args)
            return
        process = multiprocessing.get_context("fork").Process(
            target=_step,
            args=(os.getpid(), target, *args),
            name=f"scholar-world-{name}",
            daemon=True,
        )
        process.start()
        self.running[name] = process

    def wait(self, name: str) -> None:
        process = self.running.pop(name, None)
        if process is None:
            return
        process.join()
        if process.exitcode != 0:
            raise RuntimeError(f"world build step {name!r} failed (exit code {process.exitcode})")

    def stop(self) -> None:
        for process in self.running.values():
            process.kill()
            process.join()
        self.running.clear()


def generate_world(size: str, seed: int, path: Path, parallel: bool | None = None) -> Path:
    """Generate the world ``(size, seed)`` into a new SQLite file at ``path``.

    Columns are drawn as numpy arrays (a million scholars and three million papers in
    seconds, where drawing them row by row took minutes); only the text is formatted per row.
    With ``parallel`` (the default from 100,000 papers on a machine with two cores or more),
    the persons and pubs tables and the search indexes are written in two forked processes
    while this one writes the integer tables; the file is the same either way. The world
    appears at ``path`` only when complete: a killed build leaves dot-files, never a world.
    """
    if size not in SIZES:
        raise ValueError(f"unknown world size {size!r}; choose one of {', '.join(SIZES)}")
    if parallel is None:
        parallel = SIZES[size][1] >= 100_000 and (os.cpu_count() or 1) > 1
    path.parent.mkdir(parents=True, exist_ok=True)  # before any step writes a file into it
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    # steps that write tables into files of their own, copied in when done
    sides = {"coauthors": (_write_coauthors, ("coauthors",)), "people": (_write_people, PEOPLE)}
    side = {name: tmp.with_suffix(f".{name}.tmp") for name in sides}
    with _timed("draw"):
        d = _draw(size, seed)
    steps = _Steps(parallel)
    try:
        steps.start("search", _write_search, d, index_folder(path))
        with _timed("derive"):
            d.derive()
        for name, (write, _) in sides.items():
            steps.start(name, write, d, side[name])
        db = _new_db(tmp)
        db.executescript(SCHEMA + _PERSON_INDEXES)
        db.executemany("INSERT INTO topics VALUES (?, ?)", list(enumerate(TOPICS)))
        db.executemany("INSERT INTO orgs VALUES (?, ?, ?, ?)", d.orgs)
        with _timed("write_links"):
            _write_links(db, d)
        for name, (_, tables) in sides.items():
            with _timed(f"wait for {name}"):
                steps.wait(name)
            # into empty tables with the same indexes, SQLite copies rows and index entries
            # as they are (no decoding, no sorting)
            db.execute("ATTACH DATABASE ? AS side", (str(side[name]),))
            with _timed(f"copy {name}"):
                for table in tables:
                    db.execute(f"INSERT INTO main.{table} SELECT * FROM side.{table}")
                db.commit()
            db.execute("DETACH DATABASE side")
            side[name].unlink()
        cits = np.sort(d.person_cit[1:])[::-1]
        meta = {
            "generator_version": str(GENERATOR_VERSION),
            "size": size,
            "seed": str(seed),
            "n_persons": str(d.n_persons),
            "n_pubs": str(d.n_pubs),
            # popularity buckets: head = top 10% by citations, torso = next 30%, tail = rest
            "head_min_citation": str(int(cits[max(0, int(0.1 * d.n_persons) - 1)])),
            "torso_min_citation": str(int(cits[max(0, int(0.4 * d.n_persons) - 1)])),
        }
        db.executemany("INSERT INTO meta VALUES (?, ?)", sorted(meta.items()))
        db.commit()
        db.close()
        with _timed("wait for search"):
            steps.wait("search")
    except BaseException:
        steps.stop()
        for file in (tmp, *side.values()):
            file.unlink(missing_ok=True)
        raise
    # The search indexes are part of the world: saved beside it, so that every process maps
    # them instead of tokenising millions of strings when it opens the world; the stamp says
    # which file they belong to.
    stamp = {"world_bytes": str(tmp.stat().st_size), **meta}
    for name in ("names", "titles"):
        stamp_index(index_folder(path) / name, stamp)
    os.replace(tmp, path)
    return path


def index_folder(world: Path) -> Path:
    """Where a world's search indexes are saved: beside it, ``<world>.index/``."""
    return world.with_name(f"{world.stem}.index")


def content_hash(path: Path) -> str:
    """SHA-256 over every table's rows in key order: equal iff the data is identical."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    h = hashlib.sha256()
    for table, order in (
        ("meta", "key"),
        ("orgs", "rowid"),
        ("persons", "rowid"),
        ("pubs", "rowid"),
        ("authorship", "pub, position"),
        ("citations", "src, dst"),
        ("coauthors", "a, b"),
        ("person_topics", "topic, n_citation, person"),
    ):
        h.update(table.encode())
        for row in db.execute(f"SELECT * FROM {table} ORDER BY {order}"):
            h.update(repr(row).encode())
    db.close()
    return h.hexdigest()
