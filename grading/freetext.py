"""Free-text golds that restate the question, graded on their answer-bearing part.

CRAG's published golds are sentences that repeat the question ("the shortest highway in the
us, i-878 in new york, is only 3,696 feet long."). Token overlap with such a gold rewards an
answer for restating the question: "The shortest highway in the US is 17 feet." shares half
its words with it. CRAG itself never grades free text by overlap (exact match, then an LLM
judge; its paper, section 4). Here a free-text answer is graded on what the gold says beyond
the question:

- the **answer-bearing part** of a text is its runs of tokens that are neither in the question
  nor function words, split at punctuation; a number is one token whatever its separators
  ("3,696" and "3696" are the same value) and a name is one run ("new york"), so a part is
  matched whole, never word by word;
- **correct**: the answer equals the gold (normalised EM), or it states every number of the
  gold's answer-bearing part, or it contains every run of it;
- **wrong**: the answer says nothing the question does not (a restated question, a cut-off
  "was:"), or it states numbers and none is the gold's, or it shares no token with the gold's
  answer-bearing part;
- **ungraded** otherwise (a part of the runs named, a gold that says nothing beyond the
  question): rules cannot decide it, and it is counted as such, never guessed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from raleval.text import contains_tokens, normalize_answer

CORRECT, WRONG, UNGRADED = "correct", "wrong", "ungraded"

# A gold that is not an answer (CRAG's dev file holds the string 'nan'): nothing to grade by.
NOT_ANSWERS = frozenset({"", "nan", "null"})


def is_answer(gold: str | None) -> bool:
    """Whether ``gold`` is an answer at all: not empty, not whitespace, and not a missing value
    written out ('nan', 'null'; "none" can be an answer and is kept)."""
    return gold is not None and gold.strip().lower() not in NOT_ANSWERS


# Function words: never answer-bearing on their own (they join the question to its answer).
_FUNCTION_WORDS_TEXT = """a an the and or nor but of in on at to for from by with as into onto
about over under up down out off than then so if is are was were be been being am has have had
do does did this that these those it its it's he she they we you i me him her his hers their
theirs them our ours your yours my mine who whom whose which what when where why how there here
some any each every all both either neither only also very more most such not no yes one's s"""
FUNCTION_WORDS = frozenset(_FUNCTION_WORDS_TEXT.split())
# A number (separators and decimals kept in one token), or a word with inner hyphens,
# apostrophes, ampersands or dots ("i-878", "at&t", "o'neil"); anything else splits runs.
_TOKEN = re.compile(
    r"(?P<num>[-+]?\d{1,3}(?:,\d{3})+(?:\.\d+)?%?|[-+]?\d+(?:\.\d+)?%?)(?![\w-])"
    r"|(?P<word>[^\W_]+(?:[-'’&.][^\W_]+)*)"
    r"|(?P<gap>[^\s\w]+)"
)


def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", "").rstrip("%"))
    except ValueError:
        return None


def _tokens(text: str) -> list[str | None]:
    """Lower-cased tokens of ``text``; ``None`` marks punctuation (a run boundary); a number
    is written in one canonical form (``3,696`` -> ``3696``)."""
    out: list[str | None] = []
    for m in _TOKEN.finditer(text.replace("’", "'")):
        if m.group("num"):
            value = _number(m.group("num"))
            out.append(f"{value:g}" if value is not None else m.group("num"))
        elif m.group("word"):
            out.append(m.group("word").lower())
        else:
            out.append(None)
    return out


def _is_number(token: str) -> bool:
    return _number(token) is not None


def answer_bearing(text: str | None, question: str) -> list[tuple[str, ...]]:
    """The runs of ``text``'s tokens that the question does not contain and that are not
    function words: what ``text`` says beyond the question, each run kept whole."""
    asked = {t for t in _tokens(question) if t is not None}
    runs: list[tuple[str, ...]] = []
    run: list[str] = []
    for tok in _tokens(text or ""):
        if tok is None or tok in asked or tok in FUNCTION_WORDS:
            if run:
                runs.append(tuple(run))
            run = []
        else:
            run.append(tok)
    if run:
        runs.append(tuple(run))
    return list(dict.fromkeys(runs))


def answer_bearing_text(text: str | None, question: str) -> str:
    """The answer-bearing part as text, runs joined by ", " (what F1 is computed on)."""
    return ", ".join(" ".join(r) for r in answer_bearing(text, question))


@dataclass(frozen=True)
class FreeTextVerdict:
    """``state`` is correct, wrong or ungraded; ``why`` one line that says which rule."""

    state: str
    why: str


def _numbers_equal(a: str, b: str, rel_tol: float) -> bool:
    x, y = _number(a), _number(b)
    if x is None or y is None:
        return False
    return x == y or abs(x - y) <= rel_tol * abs(y)


def grade_free_text(
    answer: str | None, golds: Sequence[str], question: str, rel_tol: float = 0.005
) -> FreeTextVerdict:
    """Grade a free-text ``answer`` on the golds' answer-bearing parts (module docstring)."""
    if answer is not None and any(normalize_answer(answer) == normalize_answer(g) for g in golds):
        return FreeTextVerdict(CORRECT, "free text: equals the gold")
    said = answer_bearing(answer, question)
    said_tokens = [t for run in said for t in run]
    if not said_tokens:
        return FreeTextVerdict(WRONG, "free text: says nothing the question does not")
    said_numbers = [t for t in said_tokens if _is_number(t)]
    states: list[FreeTextVerdict] = []
    for gold in golds:
        parts = answer_bearing(gold, question)
        if not parts:
            states.append(FreeTextVerdict(UNGRADED, "free text: the gold restates the question"))
            continue
        numbers = [t for run in parts for t in run if _is_number(t)]
        if numbers:
            if all(any(_numbers_equal(s, n, rel_tol) for s in said_numbers) for n in numbers):
                states.append(FreeTextVerdict(CORRECT, "free text: states the gold's numbers"))
                continue
            if said_numbers and not any(
                _numbers_equal(s, n, rel_tol) for s in said_numbers for n in numbers
            ):
                states.append(
                    FreeTextVerdict(WRONG, "free text: states numbers, none of them the gold's")
                )
                continue
        covered = sum(contains_tokens(said_tokens, list(run)) for run in parts)
        if covered == len(parts):
            states.append(
                FreeTextVerdict(CORRECT, f"free text: names all {len(parts)} answer-bearing parts")
            )
        elif not set(said_tokens) & {t for run in parts for t in run}:
            states.append(
                FreeTextVerdict(WRONG, "free text: shares nothing with the gold's answer")
            )
        else:
            states.append(
                FreeTextVerdict(
                    UNGRADED,
                    f"free text: names {covered} of {len(parts)} answer-bearing parts; "
                    "rules cannot decide",
                )
            )
    for state in (CORRECT, UNGRADED, WRONG):
        for v in states:
            if v.state == state:
                return v
    return FreeTextVerdict(UNGRADED, "free text: no gold to grade against")


def strip_restated_question(answer: str | None, question: str) -> str | None:
    """``answer`` without a restatement of the whole question (its words in order, any
    punctuation between them), so the question's own words never grade it; answers that do
    not restate it come back unchanged."""
    words = _WORD.findall(question or "")
    if answer is None or len(words) < 3:
        return answer
    # A case-insensitive match takes one character of the answer for each of the pattern's,
    # so an answer shorter than the question's words with one character between each holds
    # no restatement: most answers are, and they skip compiling the question's pattern (a
    # pattern per question: re's cache of 512 missed on every episode, ~0.25 ms each).
    if len(answer) < sum(map(len, words)) + len(words) - 1:
        return answer
    return _restatement(tuple(words)).sub(" ", answer, count=1)


_WORD = re.compile(r"[^\W_]+")


@lru_cache(maxsize=256)
def _restatement(words: tuple[str, ...]) -> re.Pattern[str]:
    """The question's words in order, any punctuation between them (cached: a run grades
    each question once per epoch, a rescoring again)."""
    pattern = r"(?<![^\W_])" + r"[\W_]+".join(map(re.escape, words)) + r"(?![^\W_])[?.!]?"
    return re.compile(pattern, re.IGNORECASE)


def question_alternatives(question: str) -> list[str]:
    """The options an either-or question offers ("..., Melbelva Road or Velvet Tide?" ->
    both; "owned by time warner or universal pictures?" -> "time warner", "universal
    pictures": the left option is taken as long as the right one, or as the text after the
    last comma or colon). Found by the last " or ", with no regex backtracking on long text."""
    text = (question or "").strip().rstrip("?").strip()
    at = text.lower().rfind(" or ")
    if at < 0:
        return []
    right_text = text[at + 4 :]
    if re.search(r"[,:;?]", right_text):
        return []
    left, right = re.split(r"[,:;?]", text[:at])[-1].split(), right_text.split()
    if not left or not right:
        return []
    options = [" ".join(right), " ".join(left[-len(right) :])]
    if len(left) <= 4:
        options.append(" ".join(left))
    return list(dict.fromkeys(o for o in options if o))
