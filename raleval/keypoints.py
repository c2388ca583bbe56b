"""RAGEval's key-point metrics, decided by rules over typed key points.

RAGEval (Zhu et al., 2024, section 3.3) grades a free-text answer against the key points of its
ground truth: **completeness** is the share of key points the answer covers, **hallucination**
the share it contradicts, **irrelevance** the share it neither covers nor contradicts (the
three add up to 1). RAGEval asks an LLM to judge each key point; raleval's generated worlds
know every fact, so a key point is a typed value (:class:`raleval.records.KeyPoint`) and the
judgement is a rule:

- **covered**: the answer states the value. A number: some number written in the answer
  (thousands separators allowed) equals it; a year: some four-digit year equals it; an entity
  or a list member: the value or an alias occurs in the answer as a whole run of normalised
  tokens (``raleval.text``, the rule the taxonomy's evidence check uses).
  An entity with ``choices``: a longer choice holding the value is another value
  ("associate professor" does not state "professor").
- **contradicted** (only if not covered): the answer states a different value *for the same
  slot*: next to a word naming the slot (a cue, matched as a word prefix: ``cit`` matches
  "cited" and "citations") it writes another value of the same kind. A number or year: the
  nearest number (year) within :data:`WINDOW` words of a cue differs from the value and is
  not the value of another of the task's key points ("45 papers, cited 1,234 times" does not
  contradict the paper count with 1,234). An entity: another of the slot's ``choices`` (the
  values the world allows: positions, genders) occurs within the window. An entity without
  choices and a list member are never contradicted by rule: naming an extra interest does not
  deny one, and an open-vocabulary name (a title, an organisation) cannot be told from text
  about something else by rule; such a wrong value counts as missing (irrelevance).
- **missing** (irrelevance): neither.

An answer covering a value and also writing a different one for the slot counts as covering
it: the rules do not decide which of two stated values the answer means.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from raleval.text import contains_tokens, normalize_answer, spaced

WINDOW = 4  # words either side of a cue in which a different value contradicts a key point

_NUMBER = re.compile(r"(?<![\w.])\d{1,3}(?:,\d{3})+(?![\d,])|(?<![\w.,])\d+(?:\.\d+)?(?![\w])")
_YEAR = re.compile(r"^(1[5-9]\d\d|2[01]\d\d)$")
_WORD = re.compile(r"\d{1,3}(?:,\d{3})+(?![\d])|\d+(?:\.\d+)?|[^\W\d_]+(?:['-][^\W\d_]+)*|\d+")


@dataclass(frozen=True)
class KeyPointScores:
    """RAGEval's three shares over a task's key points, with each point's verdict."""

    completeness: float
    hallucination: float
    irrelevance: float
    verdicts: list[str] = field(default_factory=list)  # covered | contradicted | missing

    def to_dict(self) -> dict[str, Any]:
        return {
            "completeness": self.completeness,
            "hallucination": self.hallucination,
            "irrelevance": self.irrelevance,
            "verdicts": list(self.verdicts),
        }


def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def numbers_in(text: str) -> list[float]:
    """Every number written in ``text`` (``1,234``, ``3.5``, ``2019``; inside Chinese too:
    ``发放500万元``, ``2023年7月28日``) as a float."""
    return [v for m in _NUMBER.finditer(spaced(text)) if (v := _number(m.group(0))) is not None]


def _words(text: str) -> list[str]:
    """Words and numbers in order, lower case, numbers kept whole (``1,234``); each CJK
    character is a word of its own (``raleval.text.spaced``)."""
    return [w.lower() for w in _WORD.findall(spaced(text))]


def _value_of(kind: str, word: str) -> float | None:
    if not word[0].isdigit():
        return None
    if kind == "year":
        return float(word) if _YEAR.match(word) else None
    return _number(word)


def _covers(point: Any, answer: str, answer_tokens: list[str]) -> bool:
    if point.kind in ("number", "year"):
        want = _number(point.value)
        if want is None:
            return False
        found = numbers_in(answer)
        if point.kind == "year":
            found = [v for v in found if _YEAR.match(str(int(v))) and v == int(v)]
        return want in found
    own = [normalize_answer(a).split() for a in [point.value, *point.aliases]]
    # a longer choice holding the value is another value: "associate professor" does not
    # state "professor"
    tokens = list(answer_tokens)
    for choice in point.choices:
        longer = normalize_answer(choice).split()
        if longer in own or not any(contains_tokens(longer, o) for o in own if o):
            continue
        tokens = _masked(tokens, longer)
    return any(contains_tokens(tokens, o) for o in own if o)


def _masked(tokens: list[str], phrase: list[str]) -> list[str]:
    """``tokens`` with every occurrence of ``phrase`` blanked out."""
    out, n, i = list(tokens), len(phrase), 0
    while i <= len(out) - n:
        if out[i : i + n] == phrase:
            out[i : i + n] = [""] * n
            i += n
        else:
            i += 1
    return out


def _cue_positions(words: list[str], cues: Sequence[str]) -> list[tuple[int, int]]:
    """(start, end) word spans where a cue occurs; each cue word matches as a prefix."""
    spans = []
    for cue in cues:
        parts = _words(cue)
        if not parts:
            continue
        n = len(parts)
        for i in range(len(words) - n + 1):
            if all(words[i + k].startswith(parts[k]) for k in range(n)):
                spans.append((i, i + n))
    return spans


def _contradicts(point: Any, words: list[str], others: set[float]) -> bool:
    spans = _cue_positions(words, point.cues)
    if not spans:
        return False
    if point.kind in ("number", "year"):
        want = _number(point.value)
        for start, end in spans:
            best: tuple[int, float] | None = None
            for i in range(max(0, start - WINDOW), min(len(words), end + WINDOW)):
                value = _value_of(point.kind, words[i])
                if value is None:
                    continue
                distance = start - i if i < start else i - end + 1
                if best is None or distance < best[0]:
                    best = (distance, value)
            if best is not None and best[1] != want and best[1] not in others:
                return True
        return False
    if point.kind == "entity" and point.choices:
        own = {normalize_answer(a) for a in [point.value, *point.aliases]}
        wrong = [c for c in point.choices if normalize_answer(c) not in own]
        for start, end in spans:
            window = words[max(0, start - WINDOW) : end + WINDOW]
            near = normalize_answer(" ".join(window)).split()
            # not covered: a choice written here is not part of the value
            if any(contains_tokens(near, normalize_answer(c).split()) for c in wrong):
                return True
    return False


def judge_key_points(answer: str | None, points: Sequence[Any]) -> list[str]:
    """Each key point's verdict on ``answer``: ``covered``, ``contradicted`` or ``missing``."""
    text = answer or ""
    tokens = normalize_answer(text).split()
    words = _words(text)
    verdicts = []
    for point in points:
        if _covers(point, text, tokens):
            verdicts.append("covered")
            continue
        others = {
            v
            for p in points
            if p is not point and p.kind in ("number", "year")
            if (v := _number(p.value)) is not None
        }
        verdicts.append("contradicted" if _contradicts(point, words, others) else "missing")
    return verdicts


def score_key_points(answer: str | None, points: Sequence[Any]) -> KeyPointScores:
    """Completeness, hallucination and irrelevance of ``answer`` over ``points``."""
    verdicts = judge_key_points(answer, points)
    n = len(verdicts) or 1
    covered = verdicts.count("covered") / n
    contradicted = verdicts.count("contradicted") / n
    return KeyPointScores(
        completeness=covered,
        hallucination=contradicted,
        irrelevance=verdicts.count("missing") / n,
        verdicts=verdicts,
    )


def oracle_text(points: Sequence[Any], shown: Sequence[str]) -> str | None:
    """What a reader who writes only what the tools showed answers: the statement of every
    key point whose value (or an alias) appears in ``shown``, in order; None if none does."""
    tokens = [normalize_answer(s).split() for s in shown]
    raw = " ".join(shown)
    said = []
    for point in points:
        if point.kind in ("number", "year"):
            seen = _covers(point, raw, [])
        else:
            names = [normalize_answer(a).split() for a in [point.value, *point.aliases]]
            seen = any(contains_tokens(t, n) for t in tokens for n in names if n)
        if seen:
            said.append(point.statement)
    return " ".join(said) if said else None
