"""A seeded, fictional academic world shaped like AMiner, stored in SQLite.

- Names are assembled from invented syllables, so no answer can come from a model's memory.
- Productivity is heavy-tailed (Pareto author weights); citations come from real citation edges
  drawn by preferential attachment (Price's model), so citation counts follow a power law and
  equal each paper's in-degree.
- About 4% of scholars share a name with another (namesakes) and 2% have a near-same name (one
  letter changed), at other organizations, as on AMiner; organizations have aliases and
  abbreviations.
- ``generate_world(size, seed, path)`` streams rows into SQLite with bounded Python state; the
  same ``(size, seed)`` always produces the same rows (see ``content_hash``).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import random
import sqlite3
from array import array
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from raleval.envs._sqlite import insert_batched

GENERATOR_VERSION = 3

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
    rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, name TEXT NOT NULL,
    org INTEGER NOT NULL, gender TEXT, position TEXT, interests TEXT NOT NULL, email TEXT,
    education TEXT, bio TEXT, n_citation INTEGER NOT NULL DEFAULT 0,
    n_pubs INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE pubs (
    rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, title TEXT NOT NULL,
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

INDEXES = """
CREATE INDEX authorship_person ON authorship (person, pub);
CREATE INDEX persons_org ON persons (org, n_citation);
CREATE INDEX persons_citation ON persons (n_citation);
"""


def _hex_id(rng: random.Random) -> str:
    return f"{rng.getrandbits(96):024x}"


def _word(rng: random.Random, syllables: int) -> str:
    parts = [rng.choice(_ONSETS) + rng.choice(_VOWELS) for _ in range(syllables)]
    return ("".join(parts) + rng.choice(_CODAS)).capitalize()


def _near_name(rng: random.Random, name: str) -> str:
    """The same name with one letter of the surname changed (a near namesake)."""
    first, last = name.split(" ", 1)
    i = rng.randrange(1, len(last)) if len(last) > 1 else 0
    letter = rng.choice("aeiourstnl".replace(last[i].lower(), ""))
    return f"{first} {last[:i]}{letter}{last[i + 1 :]}"


def generate_world(size: str, seed: int, path: Path) -> Path:
    """Generate the world ``(size, seed)`` into a new SQLite file at ``path``."""
    if size not in SIZES:
        raise ValueError(f"unknown world size {size!r}; choose one of {', '.join(SIZES)}")
    n_persons, n_pubs = SIZES[size]
    # The seed string names only (size, seed): a schema change must not reshuffle the world.
    rng = random.Random(f"scholar-world/2/{size}/{seed}")
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    db = sqlite3.connect(tmp)
    db.execute("PRAGMA journal_mode=OFF")
    db.execute("PRAGMA synchronous=OFF")
    db.executescript(SCHEMA)
    db.executemany("INSERT INTO topics VALUES (?, ?)", list(enumerate(TOPICS)))

    # Vocabulary grows with the world so that names stay varied at a million scholars.
    n_first = max(300, int(n_persons**0.5) * 2)
    n_last = max(1200, int(n_persons**0.5) * 8)
    first_names = sorted({_word(rng, rng.choice((1, 2))) for _ in range(n_first)})
    surnames = sorted({_word(rng, 2) + rng.choice(_SURNAME_ENDS) for _ in range(n_last)})

    n_orgs = max(8, n_persons // 60)
    orgs = []
    for k in range(n_orgs):
        place = _word(rng, rng.choice((2, 3)))
        name = rng.choice(_ORG_KINDS).format(p=place)
        abbrev = "".join(w[0] for w in name.replace(" of ", " ").split() if w[0].isupper())
        aliases = [abbrev, name.replace("University of ", "U. ").replace("Institute of", "Inst.")]
        orgs.append((k + 1, _hex_id(rng), name, json.dumps(aliases)))
    db.executemany("INSERT INTO orgs VALUES (?, ?, ?, ?)", orgs)

    person_org = array("i", [0]) * (n_persons + 1)
    person_topics: list[tuple[int, ...]] = [()] * (n_persons + 1)
    recent: list[str] = []

    def persons() -> Iterator[tuple]:
        for pid in range(1, n_persons + 1):
            r = rng.random()
            if recent and r < 0.04:
                name = rng.choice(recent)  # a namesake
            elif recent and r < 0.06:
                name = _near_name(rng, rng.choice(recent))
            else:
                name = f"{rng.choice(first_names)} {rng.choice(surnames)}"
            if len(recent) < 5000:
                recent.append(name)
            else:
                recent[rng.randrange(5000)] = name
            org = rng.randrange(n_orgs) + 1
            person_org[pid] = org
            topics = tuple(rng.sample(range(len(TOPICS)), rng.randint(2, 6)))
            person_topics[pid] = topics
            interests = [TOPICS[t] for t in topics]
            gender = rng.choice(("male", "female"))
            position = rng.choice(POSITIONS)
            org_name = orgs[org - 1][2]
            education = f"Ph.D., {orgs[rng.randrange(n_orgs)][2]}, {rng.randint(1985, 2020)}"
            pronoun = "He" if gender == "male" else "She"
            bio = (
                f"{name} is a {position} at {org_name}. {pronoun} works on "
                f"{', '.join(interests[:-1])} and {interests[-1]}, and received a "
                f"{education}."
            )
            first, last = name.split(" ", 1)
            abbrev = json.loads(orgs[org - 1][3])[0].lower()
            email = f"{first[0].lower()}.{last.lower()}{rng.randint(1, 99)}@{abbrev}.edu.invalid"
            yield (
                pid,
                _hex_id(rng),
                name,
                org,
                gender,
                position,
                json.dumps(interests),
                email,
                education,
                bio,
            )

    insert_batched(
        db,
        "INSERT INTO persons (rowid, id, name, org, gender, position, interests, "
        "email, education, bio) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        persons(),
    )

    members: dict[int, array] = {}
    for pid in range(1, n_persons + 1):
        members.setdefault(person_org[pid], array("i")).append(pid)
    cum = np.cumsum(np.array([rng.paretovariate(1.3) for _ in range(n_persons)]))
    lead_draws = iter(
        np.searchsorted(cum, np.array([rng.random() * cum[-1] for _ in range(n_pubs)])) + 1
    )
    venues = sorted(
        {f"{rng.choice(_VENUE_WORDS)} on {t.title()}" for t in TOPICS}
        | {f"{_word(rng, 2).upper()[:4]} {rng.choice(_VENUE_WORDS)}" for _ in range(40)}
    )
    partners: dict[int, array] = {}
    auth_pub, auth_person = array("i"), array("i")
    cite_src, cite_dst = array("i"), array("i")
    # Preferential attachment: each paper appears once, plus once per citation received.
    attach = array("i")
    years = sorted(rng.randint(1995, 2025) for _ in range(n_pubs))

    def pubs() -> Iterator[tuple]:
        for pub in range(1, n_pubs + 1):
            k = rng.choice((1, 2, 2, 3, 3, 3, 4, 5))
            lead = int(next(lead_draws))
            authors = [lead]
            for _ in range(4 * k):
                if len(authors) >= k:
                    break
                r = rng.random()
                if r < 0.5 and lead in partners:
                    pick = rng.choice(partners[lead])
                elif r < 0.8:
                    pick = rng.choice(members[person_org[lead]])
                else:
                    pick = int(np.searchsorted(cum, rng.random() * cum[-1])) + 1
                if pick not in authors:
                    authors.append(pick)
            for pos, a in enumerate(authors):
                auth_pub.append(pub)
                auth_person.append(a)
                if pos:
                    partners.setdefault(lead, array("i")).append(a)
            refs = set()
            if attach:
                for _ in range(rng.randint(0, 8)):
                    refs.add(attach[rng.randrange(len(attach))])
            for dst in sorted(refs):
                cite_src.append(pub)
                cite_dst.append(dst)
                attach.append(dst)
            attach.append(pub)
            topic = TOPICS[rng.choice(person_topics[lead])]
            method = rng.choice(_METHOD)
            title = (
                f"{rng.choice(_ADJ)} {method} for {topic.title()}: "
                f"the {_word(rng, 2)} {rng.choice(('Approach', 'Benchmark', 'Framework'))}"
            )
            abstract = (
                f"We study {topic} and propose a {method.lower()} method. "
                f"Experiments on {rng.randint(2, 9)} benchmarks show consistent gains."
            )
            yield (pub, _hex_id(rng), title, years[pub - 1], rng.choice(venues), abstract)

    insert_batched(
        db,
        "INSERT INTO pubs (rowid, id, title, year, venue, abstract) VALUES (?, ?, ?, ?, ?, ?)",
        pubs(),
    )

    a_pub = np.frombuffer(auth_pub, dtype=np.int32)
    a_person = np.frombuffer(auth_person, dtype=np.int32)
    positions = np.zeros(len(a_pub), dtype=np.int32)
    starts = np.flatnonzero(np.r_[True, a_pub[1:] != a_pub[:-1]])
    positions = np.arange(len(a_pub)) - np.repeat(starts, np.diff(np.r_[starts, len(a_pub)]))
    insert_batched(
        db,
        "INSERT INTO authorship VALUES (?, ?, ?)",
        zip(a_pub.tolist(), positions.tolist(), a_person.tolist(), strict=True),
    )
    c_src = np.frombuffer(cite_src, dtype=np.int32)
    c_dst = np.frombuffer(cite_dst, dtype=np.int32)
    insert_batched(
        db, "INSERT INTO citations VALUES (?, ?)", zip(c_src.tolist(), c_dst.tolist(), strict=True)
    )

    pub_cit = np.bincount(c_dst, minlength=n_pubs + 1)
    db.executemany(
        "UPDATE pubs SET n_citation = ? WHERE rowid = ?",
        zip(pub_cit[1:].tolist(), range(1, n_pubs + 1), strict=True),
    )
    person_cit = np.bincount(a_person, weights=pub_cit[a_pub], minlength=n_persons + 1)
    person_pubs = np.bincount(a_person, minlength=n_persons + 1)
    db.executemany(
        "UPDATE persons SET n_citation = ?, n_pubs = ? WHERE rowid = ?",
        zip(
            person_cit[1:].astype(np.int64).tolist(),
            person_pubs[1:].tolist(),
            range(1, n_persons + 1),
            strict=True,
        ),
    )
    insert_batched(
        db,
        "INSERT INTO person_topics VALUES (?, ?, ?)",
        ((t, int(person_cit[p]), p) for p in range(1, n_persons + 1) for t in person_topics[p]),
    )

    # Coauthor edges: every unordered author pair of every paper, counted.
    lo, hi = array("q"), array("q")
    bounds = np.r_[starts, len(a_pub)].tolist()
    persons_list = a_person.tolist()
    for s, e in itertools.pairwise(bounds):
        group = persons_list[s:e]
        for i in range(len(group)):
            for j in range(i + 1, len(group)):
                x, y = group[i], group[j]
                lo.append(min(x, y))
                hi.append(max(x, y))
    keys = np.frombuffer(lo, dtype=np.int64) * (n_persons + 1) + np.frombuffer(hi, np.int64)
    uniq, counts = np.unique(keys, return_counts=True)
    ua, ub = (uniq // (n_persons + 1)).tolist(), (uniq % (n_persons + 1)).tolist()
    cnt = counts.tolist()
    insert_batched(
        db,
        "INSERT INTO coauthors VALUES (?, ?, ?)",
        (row for i in range(len(cnt)) for row in ((ua[i], ub[i], cnt[i]), (ub[i], ua[i], cnt[i]))),
    )

    db.executescript(INDEXES)
    cits = np.sort(person_cit[1:])[::-1]
    meta = {
        "generator_version": str(GENERATOR_VERSION),
        "size": size,
        "seed": str(seed),
        "n_persons": str(n_persons),
        "n_pubs": str(n_pubs),
        # popularity buckets: head = top 10% by citations, torso = next 30%, tail = rest
        "head_min_citation": str(int(cits[max(0, int(0.1 * n_persons) - 1)])),
        "torso_min_citation": str(int(cits[max(0, int(0.4 * n_persons) - 1)])),
    }
    db.executemany("INSERT INTO meta VALUES (?, ?)", sorted(meta.items()))
    db.commit()
    db.execute("VACUUM")
    db.close()
    os.replace(tmp, path)
    # The search indexes are part of the world: saved beside it now, so that every process
    # maps them instead of tokenising millions of strings when it opens the world.
    from raleval.envs.scholar.store import ScholarStore  # (store.py imports this module)

    store = ScholarStore(path)
    store.warm()
    store.close()
    return path


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
