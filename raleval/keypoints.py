"""RAGEval's key-point metrics, decided by rules over typed key points.

RAGEval (Zhu et al., 2024, section 3.3) grades a free-text answer against the key points of its
ground truth: **completeness** is the share of key points the answer covers, **hallucination**
the share it contradicts, **irrelevance** the share it neither covers nor contradicts (the
three add up to 1). RAGEval asks an LLM to judge each key point; raleval's generated worlds
know every fact, so a key point is a typed value (:class:`raleval.records.KeyPoint`) and the
judgement is a rule. The answer is cut into sentences (:func:`sentences`); in each, every
number, year and name of an entity slot's vocabulary (its ``choices``) it writes is *bound* to
the key point whose cue (a word naming the slot, matched as a word prefix: ``cit`` matches
"cited" and "citations") is nearest in the sentence (:func:`_bind` breaks ties). Then:

- **covered**: the fact is stated. A number or year: a value bound to the key point equals it
  (thousands separators allowed). An entity or a list member: the value or an alias occurs as
  a whole run of normalised tokens (``raleval.text``) in a sentence holding one of its cues; a
  longer choice holding the value is another value ("associate professor" does not state
  "professor"). A key point without cues: its value anywhere.
- **contradicted** (only if not covered): a different value is bound to it: a number or year
  (so two swapped numbers are both contradicted, each beside the other's cue), or another of an
  entity's choices that is not another key point's value. An entity without choices and a list
  member are never contradicted: naming an extra interest does not deny one, and a name outside
  the world's vocabulary cannot be told from text about something else by rule.
- **missing** (irrelevance): neither.

An answer covering a value and also writing a different one for the slot counts as covering
it: the rules do not decide which of two stated values the answer means.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from raleval.text import contains_tokens, normalize_answer, spaced

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


@lru_cache(maxsize=65536)
def _phrase(text: str) -> tuple[str, ...]:
    """``_words`` of a cue, choice, value or statement, cached: the same few hundred phrases
    are matched against every sentence of every answer."""
    return tuple(_words(text))


@lru_cache(maxsize=65536)
def _normalised(text: str) -> tuple[str, ...]:
    """``normalize_answer(text).split()`` of a value, alias or choice, cached."""
    return tuple(normalize_answer(text).split())


def _value_of(kind: str, word: str) -> float | None:
    if not word[0].isdigit():
        return None
    if kind == "year":
        return float(word) if _YEAR.match(word) else None
    return _number(word)


def _states_value(point: Any, text: str, tokens: list[str]) -> bool:
    """Whether ``text`` (normalised: ``tokens``) writes the point's value anywhere (the value
    alone, without its cue: what a tool's observation shows)."""
    if point.kind in ("number", "year"):
        want = _number(point.value)
        if want is None:
            return False
        found = numbers_in(text)
        if point.kind == "year":
            found = [v for v in found if _YEAR.match(str(int(v))) and v == int(v)]
        return want in found
    own = [list(_normalised(a)) for a in [point.value, *point.aliases]]
    # a longer choice holding the value is another value: "associate professor" does not
    # state "professor"
    tokens = list(tokens)
    for choice in point.choices:
        longer = list(_normalised(choice))
        if longer in own or not any(contains_tokens(longer, o) for o in own if o):
            continue
        tokens = _masked(tokens, longer)
    return any(contains_tokens(tokens, o) for o in own if o)


def writes_value(point: Any, text: str) -> bool:
    """Whether ``text`` writes the point's value (or an alias) anywhere, with or without the
    words that name its slot: a question that does gives the value away."""
    return _states_value(point, text, normalize_answer(text).split())


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
        parts = _phrase(cue)
        if not parts:
            continue
        n = len(parts)
        for i in range(len(words) - n + 1):
            if all(words[i + k].startswith(parts[k]) for k in range(n)):
                spans.append((i, i + n))
    return spans


# --- sentences: the window in which a value belongs to a cue ------------------------------------

# a sentence ends at . ! ? ; followed by a space and a word that does not start lower case
# ("received a Ph.D. in 2006" goes on), at a line break, or at Chinese 。！？；
_BOUNDARY = re.compile(r"[.!?;]+[\"'”’)]*(?=\s+[^\sa-z]|\s*$)|[。！？；]+[”’」』]*|\n+")
# "Dr. Lin", "J. Smith": a title or an initial before a name ends no sentence ("Ph.D. in" goes
# on by the rule above; "holds a Ph.D. It ..." ends)
_ABBREVIATION = re.compile(
    r"(?:(?<![\w.])[A-Z]|\b(?:Dr|Mr|Mrs|Ms|Prof|St|Jr|Sr|No|vs|e\.g|i\.e))\.$"
)


def sentences(text: str, keep: Sequence[str] = ()) -> list[str]:
    """``text`` cut into sentences; a boundary inside an occurrence of one of ``keep`` (the
    key points' values: a title may hold "?" or ". ") or after an abbreviation is not one."""
    lowered = text.lower()
    protected = []
    for phrase in keep:
        needle = phrase.lower()
        if not needle:
            continue
        start = lowered.find(needle)
        while start != -1:
            protected.append((start, start + len(needle)))
            start = lowered.find(needle, start + 1)
    out, last = [], 0
    for m in _BOUNDARY.finditer(text):
        if any(a <= m.start() < b for a, b in protected):
            continue
        if m.group(0).startswith(".") and _ABBREVIATION.search(text[last : m.start() + 1]):
            continue
        out.append(text[last : m.end()])
        last = m.end()
    out.append(text[last:])
    return [piece for piece in out if piece.strip()]


@dataclass
class _Reading:
    """What the answer writes for each key point: the values bound to its cues."""

    bound: dict[int, list[Any]] = field(default_factory=dict)  # point index -> values


def _choice_spans(words: list[str], choices: Sequence[str]) -> list[tuple[int, int, str]]:
    """Occurrences of ``choices`` in ``words``, longest first, none overlapping another."""
    taken = [False] * len(words)
    spans = []
    present = set(words)
    for choice in sorted(set(choices), key=lambda c: (-len(_phrase(c)), c)):
        parts = list(_phrase(choice))
        n = len(parts)
        if not n or parts[0] not in present:
            continue
        for i in range(len(words) - n + 1):
            if words[i : i + n] == parts and not any(taken[i : i + n]):
                spans.append((i, i + n, choice))
                taken[i : i + n] = [True] * n
    return spans


def _distance(a: tuple[int, int], b: tuple[int, int]) -> int:
    """Words between two spans (0 when adjacent or overlapping)."""
    return max(0, b[0] - a[1], a[0] - b[1])


def _bind(
    points: Sequence[Any],
    candidates: list[int],
    span: tuple[int, int],
    cues: dict[int, list[tuple[int, int]]],
    sentence: set[str],
    equal: Any,
) -> list[int]:
    """The key points a value written at ``span`` is bound to, among ``candidates`` (points
    whose cue is in the sentence and whose kind the value fits): the nearest cue's; among
    points whose cues are equally near, the one whose statement's own words the sentence
    shares most, then the one whose value it is; else all of them."""
    near = {i: min(_distance(span, c) for c in cues[i]) for i in candidates}
    best = min(near.values())
    tied = [i for i in candidates if near[i] == best]
    if len(tied) > 1:
        own = {i: set(_phrase(points[i].statement)) - set(_phrase(points[i].value)) for i in tied}
        shared = {
            i: len((own[i] - set().union(*(own[j] for j in tied if j != i))) & sentence)
            for i in tied
        }
        top = max(shared.values())
        tied = [i for i in tied if shared[i] == top]
    if len(tied) > 1:
        mine = [i for i in tied if equal(points[i])]
        tied = mine or tied
    return tied


def _read(
    text: str, points: Sequence[Any]
) -> tuple[_Reading, list[tuple[str, set[int], list[str]]]]:
    """Bind every number, year and entity choice the answer writes to the key point whose cue
    is nearest to it in its sentence (:func:`_bind`); returns the binding and each sentence
    with the key points whose cues it holds and its normalised tokens."""
    reading = _Reading({i: [] for i in range(len(points))})
    keep = [a for p in points for a in [p.value, *p.aliases, *p.choices]]
    normalised = []
    for piece in sentences(text, keep):
        words = _words(piece)
        cues = {i: _cue_positions(words, p.cues) for i, p in enumerate(points)}
        cues = {i: spans for i, spans in cues.items() if spans}
        normalised.append((piece, set(cues), normalize_answer(piece).split()))
        if not cues:
            continue
        sentence = set(words)
        numeric = [i for i in cues if points[i].kind in ("number", "year")]
        for k, word in enumerate(words):
            value = _number(word) if word[0].isdigit() else None
            if value is None or not numeric:
                continue
            fits = [i for i in numeric if _value_of(points[i].kind, word) is not None]
            if not fits:
                continue
            # a year-shaped number that a year's cue is as near to as a count's is the year
            chosen = _bind(
                points, fits, (k, k + 1), cues, sentence, lambda p, v=value: _number(p.value) == v
            )
            if len(chosen) > 1 and any(points[i].kind == "year" for i in chosen):
                chosen = [i for i in chosen if points[i].kind == "year"]
            for i in chosen:
                reading.bound[i].append(value)
        closed = [i for i in cues if points[i].kind == "entity" and points[i].choices]
        vocabulary = {c for i in closed for c in points[i].choices}
        for start, end, choice in _choice_spans(words, sorted(vocabulary)):
            fits = [i for i in closed if choice in points[i].choices]
            chosen = _bind(
                points,
                fits,
                (start, end),
                cues,
                sentence,
                lambda p, c=choice: (
                    normalize_answer(c) in {normalize_answer(a) for a in [p.value, *p.aliases]}
                ),
            )
            for i in chosen:
                reading.bound[i].append(choice)
    return reading, normalised


def _own(point: Any) -> set[str]:
    return {normalize_answer(a) for a in [point.value, *point.aliases]}


def judge_key_points(answer: str | None, points: Sequence[Any]) -> list[str]:
    """Each key point's verdict on ``answer``: ``covered``, ``contradicted`` or ``missing``."""
    text = answer or ""
    reading, normalised = _read(text, points)
    verdicts = []
    for i, point in enumerate(points):
        bound = reading.bound[i]
        if not point.cues:  # nothing names the slot: the value written anywhere states it
            tokens = normalize_answer(text).split()
            verdicts.append("covered" if _states_value(point, text, tokens) else "missing")
            continue
        if point.kind in ("number", "year"):
            want = _number(point.value)
            if want in bound:
                verdicts.append("covered")
            else:
                verdicts.append("contradicted" if bound else "missing")
            continue
        # an entity or a member: the value written in a sentence that names the slot
        stated = any(
            i in cued and _states_value(point, piece, tokens) for piece, cued, tokens in normalised
        )
        if stated:
            verdicts.append("covered")
        elif point.kind == "entity" and point.choices:
            others = {normalize_answer(v) for p in points if p is not point for v in _own(p)}
            wrong = [
                c
                for c in bound
                if normalize_answer(c) not in _own(point) and normalize_answer(c) not in others
            ]
            verdicts.append("contradicted" if wrong else "missing")
        else:
            verdicts.append("missing")
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
            seen = _states_value(point, raw, [])
        else:
            names = [normalize_answer(a).split() for a in [point.value, *point.aliases]]
            seen = any(contains_tokens(t, n) for t in tokens for n in names if n)
        if seen:
            said.append(point.statement)
    return " ".join(said) if said else None
