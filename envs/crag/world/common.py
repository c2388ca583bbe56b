"""What the domain generators share: vocabularies, name makers, the trading calendar."""

from __future__ import annotations

import functools
import random
from datetime import date, timedelta

START = date(2022, 1, 3)  # first trading day of the generated history


END = date(2024, 12, 31)


POPULARITY = ("head", "torso", "tail")


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


WORDS = [
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


NOUNS = [
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


def random_name(rng: random.Random, parts: int = 2) -> str:
    # 2-4 syllables: about 346k one-word names, enough for the large world's 730k song titles
    # and 243k company names (2-3 syllables gave 14k, and the large world never finished)
    return " ".join(
        "".join(rng.choice(_SYL) for _ in range(rng.randint(2, 4))).capitalize()
        for _ in range(parts)
    )


def random_title(rng: random.Random) -> str:
    # A few short, common-word titles (the hardest to disambiguate), then an unbounded space.
    roll = rng.random()
    if roll < 0.15:
        return rng.choice(WORDS)
    if roll < 0.4:
        return f"{rng.choice(WORDS)} {rng.choice(NOUNS)}"
    if roll < 0.7:
        return f"The {rng.choice(NOUNS)} of {random_name(rng, 1)}"
    return f"{random_name(rng, 1)} {rng.choice(NOUNS)}"


@functools.cache
def world_trading_days() -> tuple[date, ...]:
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


class UniqueNames:
    """Hands out names not used before (case-insensitively) within one namespace."""

    def __init__(self) -> None:
        self.used: set[str] = set()

    def take(self, name: str) -> str | None:
        key = name.casefold()
        if key in self.used:
            return None
        self.used.add(key)
        return name


def lookalikes(name: str, kind: str) -> list[str]:
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


def popularity_of(i: int) -> str:
    return POPULARITY[i % 3]


def noise_names(rng, name, kind, noise, make, unique) -> list[str]:
    """``noise`` distractor names: look-alikes first, then random same-type names."""
    out = []
    for n in lookalikes(name, kind):
        if len(out) < noise and unique.take(n):
            out.append(n)
    while len(out) < noise:
        n = unique.take(make(rng))
        if n:
            out.append(n)
    return out
