"""A seeded, fictional academic world shaped like AMiner.

Names are assembled from invented syllables so that no answer can come from a model's memory;
citations and productivity are heavy-tailed; some scholars share a name (namesakes) at different
organizations, and organizations have aliases and abbreviations, as on AMiner.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from functools import cached_property

import networkx as nx

SIZES: dict[str, tuple[int, int]] = {
    # scholars, publications
    "tiny": (120, 360),
    "small": (5_000, 15_000),
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

_TOPICS = [
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
]
_VENUE_WORDS = ["Symposium", "Conference", "Workshop", "Transactions", "Journal"]
_POSITIONS = [
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


@dataclass
class Organization:
    id: str
    name: str
    aliases: list[str]


@dataclass
class Scholar:
    id: str
    name: str
    org: str  # organization id
    gender: str
    position: str
    interests: list[str]
    email: str
    education: str
    bio: str
    pubs: list[str] = field(default_factory=list)
    n_citation: int = 0


@dataclass
class Publication:
    id: str
    title: str
    year: int
    venue: str
    authors: list[str]
    n_citation: int
    abstract: str

    @property
    def pdf_link(self) -> str:
        return f"https://papers.raleval.invalid/{self.id}.pdf"


class ScholarWorld:
    """All entities of one generated world plus its coauthor graph."""

    def __init__(
        self,
        size: str,
        seed: int,
        orgs: dict[str, Organization],
        scholars: dict[str, Scholar],
        pubs: dict[str, Publication],
    ) -> None:
        self.size, self.seed = size, seed
        self.orgs, self.scholars, self.pubs = orgs, scholars, pubs

    @cached_property
    def coauthors(self) -> nx.Graph:
        """Undirected coauthor graph; edge weight = number of joint publications."""
        g = nx.Graph()
        g.add_nodes_from(self.scholars)
        for pub in self.pubs.values():
            a = pub.authors
            for i in range(len(a)):
                for j in range(i + 1, len(a)):
                    if g.has_edge(a[i], a[j]):
                        g[a[i]][a[j]]["weight"] += 1
                    else:
                        g.add_edge(a[i], a[j], weight=1)
        return g

    def popularity(self, scholar_id: str) -> str:
        """head / torso / tail bucket by citation rank (top 10% / next 30% / rest)."""
        rank = self._citation_rank[scholar_id]
        n = len(self.scholars)
        if rank < 0.1 * n:
            return "head"
        return "torso" if rank < 0.4 * n else "tail"

    @cached_property
    def _citation_rank(self) -> dict[str, int]:
        ordered = sorted(self.scholars.values(), key=lambda s: (-s.n_citation, s.id))
        return {s.id: i for i, s in enumerate(ordered)}


def _hex_id(rng: random.Random) -> str:
    return f"{rng.getrandbits(96):024x}"


def _word(rng: random.Random, syllables: int) -> str:
    parts = [rng.choice(_ONSETS) + rng.choice(_VOWELS) for _ in range(syllables)]
    return ("".join(parts) + rng.choice(_CODAS)).capitalize()


def generate_world(size: str = "tiny", seed: int = 0) -> ScholarWorld:
    """Build a world deterministically from ``(size, seed)``."""
    if size not in SIZES:
        raise ValueError(f"unknown world size {size!r}; choose one of {', '.join(SIZES)}")
    n_scholars, n_pubs = SIZES[size]
    rng = random.Random(f"scholar-world/{size}/{seed}")

    first_names = sorted({_word(rng, rng.choice((1, 2))) for _ in range(400)})
    surnames = sorted({_word(rng, 2) + rng.choice(_SURNAME_ENDS) for _ in range(1500)})

    n_orgs = max(8, n_scholars // 60)
    orgs: dict[str, Organization] = {}
    for _ in range(n_orgs):
        place = _word(rng, rng.choice((2, 3)))
        name = rng.choice(_ORG_KINDS).format(p=place)
        abbrev = "".join(w[0] for w in name.replace("of ", "").split() if w[0].isupper())
        org = Organization(_hex_id(rng), name, [abbrev, name.replace("University of ", "U. ")])
        orgs[org.id] = org
    org_ids = list(orgs)

    scholars: dict[str, Scholar] = {}
    names: list[str] = []
    for _ in range(n_scholars):
        # About 4% of scholars reuse an existing name: AMiner-style namesakes.
        if names and rng.random() < 0.04:
            name = rng.choice(names)
        else:
            name = f"{rng.choice(first_names)} {rng.choice(surnames)}"
        names.append(name)
        sid = _hex_id(rng)
        org = rng.choice(org_ids)
        interests = rng.sample(_TOPICS, rng.randint(2, 6))
        first, last = name.split(" ", 1)
        gender = rng.choice(("male", "female"))
        position = rng.choice(_POSITIONS)
        phd_org = orgs[rng.choice(org_ids)].name
        phd_year = rng.randint(1985, 2020)
        education = f"Ph.D., {phd_org}, {phd_year}"
        pronoun = "He" if gender == "male" else "She"
        bio = (
            f"{name} is a {position} at {orgs[org].name}. {pronoun} works on "
            f"{', '.join(interests[:-1])} and {interests[-1]}, and received a {education}."
        )
        email = f"{first[0].lower()}.{last.lower().replace(' ', '')}{rng.randint(1, 99)}@" + (
            orgs[org].aliases[0].lower() + ".edu.invalid"
        )
        scholars[sid] = Scholar(sid, name, org, gender, position, interests, email, education, bio)

    sids = list(scholars)
    by_org: dict[str, list[str]] = {}
    for sid in sids:
        by_org.setdefault(scholars[sid].org, []).append(sid)
    # Productivity is heavy-tailed: a few prolific authors write many papers.
    cum: list[float] = []
    total = 0.0
    for _ in sids:
        total += rng.paretovariate(1.3)
        cum.append(total)
    venues = sorted(
        {f"{rng.choice(_VENUE_WORDS)} on {t.title()}" for t in _TOPICS}
        | {f"{_word(rng, 2).upper()[:4]} {rng.choice(_VENUE_WORDS)}" for _ in range(20)}
    )
    partners: dict[str, list[str]] = {}
    pubs: dict[str, Publication] = {}
    for _ in range(n_pubs):
        k = min(len(sids), rng.choice((1, 2, 2, 3, 3, 3, 4, 5)))
        lead = rng.choices(sids, cum_weights=cum, k=1)[0]
        authors = [lead]
        for _attempt in range(4 * k):
            if len(authors) >= k:
                break
            # Collaborations repeat and cluster by organization, as in real coauthor graphs.
            r = rng.random()
            if r < 0.5 and partners.get(lead):
                pick = rng.choice(partners[lead])
            elif r < 0.8:
                pick = rng.choice(by_org[scholars[lead].org])
            else:
                pick = rng.choices(sids, cum_weights=cum, k=1)[0]
            if pick not in authors:
                authors.append(pick)
        for a in authors[1:]:
            partners.setdefault(lead, []).append(a)
        topic = rng.choice(scholars[lead].interests)
        title = f"{rng.choice(_ADJ)} {rng.choice(_METHOD)} for {topic.title()}"
        if rng.random() < 0.5:
            title += f" with {_word(rng, 2)}"
        year = rng.randint(1995, 2025)
        n_cit = int(rng.paretovariate(1.1) * 3) - 3 + rng.randint(0, 3)
        pid = _hex_id(rng)
        abstract = (
            f"We study {topic} and propose {title.split(' for ')[0].lower()}. "
            f"Experiments on {rng.randint(2, 9)} benchmarks show consistent gains."
        )
        venue = rng.choice(venues)
        pubs[pid] = Publication(pid, title, year, venue, authors, max(0, n_cit), abstract)
        for a in authors:
            scholars[a].pubs.append(pid)
    for s in scholars.values():
        s.n_citation = sum(pubs[p].n_citation for p in s.pubs)
    return ScholarWorld(size, seed, orgs, scholars, pubs)
