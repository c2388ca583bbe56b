"""Text and records that look like a tool's but hold no gold answer: the pieces the world
testbeds (noise) and the interface testbeds (distractor tools) both draw look-alikes with."""

from __future__ import annotations

import json
import random
import re
from typing import Any


def mention_pattern(values: list[str]) -> re.Pattern[str] | None:
    values = sorted({v for v in values if v and v.strip()}, key=len, reverse=True)
    if not values:
        return None
    alternatives = "|".join(re.escape(v) for v in values)
    return re.compile(rf"(?<![\w]){alternatives}(?![\w])", re.IGNORECASE)


def data_text(data: Any) -> str:
    return data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, default=str)


# --- look-alike records (noise) -------------------------------------------------------------

_NUMBER = re.compile(r"\d+(?:\.\d+)?")
PROPER_NAME = re.compile(r"\b[A-Z][a-z]{2,}\b")


def _jitter_number(text: str, rng: random.Random) -> str:
    def one(m: re.Match[str]) -> str:
        token = m.group(0)
        if "." in token:
            places = len(token.split(".")[1])
            return f"{float(token) * rng.uniform(0.5, 1.5):.{places}f}"
        value = int(token)
        if 1900 <= value <= 2100 and len(token) == 4:  # a year stays a plausible year
            return str(value + rng.choice([-4, -3, -2, -1, 1, 2, 3, 4]))
        changed = max(0, round(value * rng.uniform(0.5, 1.5)))
        return str(changed if changed != value else value + 1).zfill(len(token))

    return _NUMBER.sub(one, text)


def _respell(word: str, rng: random.Random, words: list[str]) -> str:
    """A look-alike of a proper word: its first part joined to the end of another proper word
    of the result (``Noubaisard`` + ``Pyhon`` -> ``Noubhon``), or one vowel changed."""
    donors = [w for w in words if w != word and len(w) >= 4]
    if donors and len(word) >= 4 and rng.random() < 0.5:
        donor = rng.choice(donors)
        out = word[: len(word) // 2] + donor[len(donor) // 2 :]
        if out != word:
            return out
    vowels = [i for i, c in enumerate(word) if c in "aeiou" and i > 0]
    if not vowels:
        return word + rng.choice(["a", "o", "is"])
    i = rng.choice(vowels)
    return word[:i] + rng.choice([v for v in "aeiou" if v != word[i]]) + word[i + 1 :]


def _respell_text(text: str, rng: random.Random, words: list[str], subject: bool) -> str:
    """``text`` with its numbers shifted and, if ``subject``, its first proper name respelled."""
    out = _jitter_number(text, rng)
    match = PROPER_NAME.search(out) if subject else None
    if match:
        out = out[: match.start()] + _respell(match.group(0), rng, words) + out[match.end() :]
    return out


def _answerless(
    text: str, protect: re.Pattern[str] | None, rng: random.Random, words: list[str]
) -> str:
    """``text`` with every protected value in it respelled (a look-alike, not the answer)."""
    if protect is None:
        return text
    for _ in range(3):
        m = protect.search(text)
        if m is None:
            break
        said = m.group(0)
        proper = PROPER_NAME.findall(said)
        other = said.replace(proper[-1], _respell(proper[-1], rng, words)) if proper else None
        text = text[: m.start()] + (other or _jitter_number(said, rng)) + text[m.end() :]
    return text


def lookalike(value: Any, rng: random.Random, words: list[str],
              protect: re.Pattern[str] | None = None, subject: bool = True) -> Any:  # fmt: skip
    """A record of the same shape about another entity: its name (the first capitalised string
    field, or the text's first proper name) respelled, numbers and ids shifted, and any
    protected value (a gold answer) respelled so the record holds no answer."""
    if isinstance(value, str):
        out = _respell_text(value, rng, words, subject) if subject else value
        if " " not in value and any(c.isdigit() for c in value):  # an id: shift its digits
            out = _jitter_number(value, rng)
        return _answerless(out, protect, rng, words)
    if isinstance(value, dict):
        out, named = {}, not subject  # a nested record keeps its names
        for key, item in value.items():
            is_name = not named and isinstance(item, str) and item[:1].isupper()
            named = named or is_name
            if isinstance(item, str):
                out[key] = lookalike(item, rng, words, protect, subject=is_name)
            elif isinstance(item, (dict, list)):
                out[key] = lookalike(item, rng, words, protect, subject=False)
            else:
                out[key] = lookalike(item, rng, words, protect)
        return out
    if isinstance(value, list):
        return [lookalike(v, rng, words, protect, subject) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return int(_jitter_number(str(value), rng)) if value >= 0 else value
    if isinstance(value, float):
        return round(value * rng.uniform(0.5, 1.5), 4)
    return value
