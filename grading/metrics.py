"""Answer metrics as pure functions ``(prediction, golds) -> float``.

SQuAD/HotpotQA normalisation as R-Eval scores it: lower-case, drop punctuation and the articles
a/an/the, collapse whitespace. F1 and EM take the maximum over all gold aliases. Text with CJK
characters is cut into words by jieba for F1 (``raleval.text.words``), as CRUD-RAG cuts it.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from raleval.registry import register_metric
from raleval.text import has_cjk, normalize_answer, words

_YES_NO = {"yes", "no", "noanswer"}


def _f1_single(prediction: str, gold: str) -> float:
    pred_n, gold_n = normalize_answer(prediction), normalize_answer(gold)
    # yes/no answers are all or nothing (HotpotQA's rule, kept by R-Eval)
    if (pred_n in _YES_NO or gold_n in _YES_NO) and pred_n != gold_n:
        return 0.0
    pred_t, gold_t = words(prediction), words(gold)
    if not pred_t or not gold_t:
        return float(pred_t == gold_t)
    common = Counter(pred_t) & Counter(gold_t)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred_t), same / len(gold_t)
    return 2 * precision * recall / (precision + recall)


@register_metric("f1")
def f1_score(prediction: str | None, golds: Sequence[str]) -> float:
    """Token F1, best over gold aliases; a missing prediction scores 0."""
    if prediction is None:
        return 0.0
    return max((_f1_single(prediction, g) for g in golds), default=0.0)


@register_metric("em")
def exact_match(prediction: str | None, golds: Sequence[str]) -> float:
    """1.0 if the normalised prediction equals a normalised gold alias."""
    if prediction is None:
        return 0.0
    p = normalize_answer(prediction)
    return float(any(p == normalize_answer(g) for g in golds))


_ABSTAIN = re.compile(
    r"^(i (do not|don't|dont) know|unknown|no answer|cannot (be )?(answer|determined)"
    # "Unable to answer" is RAGEval's English gold for its unanswerable DragonBall questions
    r"|unable to (answer|determine|be determined)"
    r"|not (sure|known|available)|invalid question|n/?a)\b",
    re.IGNORECASE,
)


# Chinese: RGB counts an answer holding "信息不足" anywhere as a rejection (its evalue.py); the
# other phrases that say the documents do not settle it count the same way, while a plain "don't
# know" counts only as the answer's opening words (a long answer may report that someone
# "不知道" something)
_ABSTAIN_ZH_ANYWHERE = re.compile(
    r"信息不足|无法推断|无法回答|无法确定|无法得知|无法判断|没有足够(的)?信息|未提供(相关|足够)?信息"
)
_ABSTAIN_ZH_START = re.compile(r"^(我)?(不知道|不清楚|不确定|无法|没有答案|未知)")


def declines_in_chinese(prediction: str) -> bool:
    """Whether a Chinese answer declines ("信息不足", "无法推断", "我不知道")."""
    text = prediction.strip().strip("。！，、：:“”‘’\"' ")
    if not has_cjk(text):
        return False
    return bool(_ABSTAIN_ZH_ANYWHERE.search(text) or _ABSTAIN_ZH_START.match(text))


def is_abstention(prediction: str | None) -> bool:
    """Whether an answer declines to answer ("I don't know", CRAG's "missing"; "信息不足")."""
    if prediction is None:
        return True
    if declines_in_chinese(prediction):
        return True
    text = prediction.strip().strip(".!\"' ").lower().replace("’", "'")
    return not text or bool(_ABSTAIN.match(text))


# --- R-Eval's relaxation -------------------------------------------------------------------

RELAXED_THRESHOLD = 0.05


def relaxed_match(prediction: str | None, golds: Sequence[str]) -> float:
    """1.0 when token F1 reaches 0.05, the threshold at which R-Eval's error-analysis code calls
    an answer accurate. Not R-Eval's relaxed F1: that is ``raleval.grading.rules.relaxed_f1``
    (registered as ``relaxed`` and ``relaxed_f1``)."""
    return float(f1_score(prediction, golds) >= RELAXED_THRESHOLD)


# --- numbers and dates ----------------------------------------------------------------------

_NUMBER = re.compile(r"[-+]?\$?\d[\d,]*(?:\.\d+)?|[-+]?\$?\.\d+")
_SCALE = {
    "thousand": 1e3,
    "k": 1e3,
    "million": 1e6,
    "m": 1e6,
    "billion": 1e9,
    "bn": 1e9,
    "b": 1e9,
    "trillion": 1e12,
    "t": 1e12,
}
# word scales may follow a space ("3.2 billion"); letter scales must be attached ("$3.2B"),
# so "618 m" (metres) stays 618
_SCALED = re.compile(
    r"([-+]?\$?\d[\d,]*(?:\.\d+)?)(?:\s*(thousand|million|billion|trillion|bn)|(k|m|b|t))\b",
    re.IGNORECASE,
)
_DATE_FORMATS = (
    "%Y-%m-%d",
    "%Y-%m-%d %H:%M:%S",
    "%Y/%m/%d",
    "%m/%d/%Y",
    "%B %d, %Y",
    "%b %d, %Y",
    "%d %B %Y",
    "%d %b %Y",
    "%B %d %Y",
)
_DATE_CANDIDATES = re.compile(
    r"\d{4}-\d{2}-\d{2}(?: \d{2}:\d{2}:\d{2})?|\d{4}/\d{1,2}/\d{1,2}|\d{1,2}/\d{1,2}/\d{4}"
    r"|[A-Za-z]{3,9}\.? \d{1,2},? \d{4}|\d{1,2} [A-Za-z]{3,9} \d{4}"
)


def parse_number(text: str | None) -> float | None:
    """The first number in ``text`` ("$1,234.5", "3.2 billion", "-7"); ``None`` if none."""
    if not text:
        return None
    scaled = _SCALED.search(text)
    plain = _NUMBER.search(text)
    if scaled and plain and scaled.start() == plain.start():
        value = float(scaled.group(1).replace(",", "").replace("$", ""))
        return value * _SCALE[(scaled.group(2) or scaled.group(3)).lower()]
    if plain is None:
        return None
    return float(plain.group(0).replace(",", "").replace("$", ""))


def parse_date(text: str | None):
    """The first date in ``text`` in a common format (ISO, US, "March 5, 2024", ...)."""
    from datetime import datetime

    if not text:
        return None
    for candidate in _DATE_CANDIDATES.findall(text):
        candidate = candidate.replace(".", "")
        for fmt in _DATE_FORMATS:
            try:
                return datetime.strptime(candidate, fmt).date()
            except ValueError:
                continue
    return None


def numeric_match(
    prediction: str | None, golds: Sequence[str], rel_tol: float = 0.01, abs_tol: float = 0.0
) -> float:
    """1.0 if the prediction's number (or date) equals a gold's within tolerance.

    Dates compare exactly whatever their format; numbers within ``rel_tol`` of the gold (1% by
    default, so 618.23 ft vs 618 ft counts, as CRAG's judge examples do) or ``abs_tol``.
    """
    if prediction is None:
        return 0.0
    pred_date = parse_date(prediction)
    pred_num = parse_number(prediction)
    for gold in golds:
        gold_date = parse_date(gold)
        if gold_date is not None:
            if pred_date == gold_date:
                return 1.0
            continue
        gold_num = parse_number(gold)
        if gold_num is None or pred_num is None:
            continue
        if abs(pred_num - gold_num) <= max(abs_tol, rel_tol * abs(gold_num)):
            return 1.0
    return 0.0


@register_metric("numeric")
def numeric_metric(prediction: str | None, golds: Sequence[str]) -> float:
    return numeric_match(prediction, golds)


# --- sets -------------------------------------------------------------------------------------

_SET_SPLIT = re.compile(r"\s*(?:[,;\n]|\band\b|&)\s*", re.IGNORECASE)


def split_items(text: str | None) -> set[str]:
    """The normalised items of a set answer ("a, b and c" -> {"a", "b", "c"})."""
    if not text:
        return set()
    return {n for part in _SET_SPLIT.split(text) if (n := normalize_answer(part))}


def set_precision_recall(prediction: str | None, gold: str) -> tuple[float, float, float]:
    """(precision, recall, F1) of a set answer against the gold set, order-insensitive."""
    pred, want = split_items(prediction), split_items(gold)
    if not pred or not want:
        return 0.0, 0.0, 0.0
    hit = len(pred & want)
    if hit == 0:
        return 0.0, 0.0, 0.0
    p, r = hit / len(pred), hit / len(want)
    return p, r, 2 * p * r / (p + r)


@register_metric("set_f1")
def set_f1(prediction: str | None, golds: Sequence[str]) -> float:
    """Set-answer F1, best over gold aliases."""
    return max((set_precision_recall(prediction, g)[2] for g in golds), default=0.0)


# --- structured profiles (2-4) ------------------------------------------------------------------

_FIELD = re.compile(r"^\s*([A-Za-z_ .]+?)\s*[:=]\s*(.+?)\s*$")


def parse_fields(text: str | None) -> dict[str, str]:
    """``key: value`` pairs separated by ``;`` or new lines; keys lower-cased."""
    out: dict[str, str] = {}
    for part in re.split(r"[;\n]", text or ""):
        m = _FIELD.match(part)
        if m:
            out[m.group(1).strip().lower().replace(" ", "_")] = m.group(2)
    return out


@register_metric("fields")
def field_accuracy(prediction: str | None, golds: Sequence[str]) -> float:
    """Fraction of the gold profile's fields the prediction states correctly (each field is
    scored on its own, by normalised equality)."""
    best = 0.0
    pred = parse_fields(prediction)
    for gold in golds:
        want = parse_fields(gold)
        if not want:
            continue
        right = sum(
            1
            for k, v in want.items()
            if k in pred and normalize_answer(pred[k]) == normalize_answer(v)
        )
        best = max(best, right / len(want))
    return best


# --- CRAG's three-way verdict ---------------------------------------------------------------

ACCURATE, MISSING, INCORRECT = "accurate", "missing", "incorrect"


def crag_verdict(
    prediction: str | None, golds: Sequence[str], judge=None, question: str = ""
) -> str:
    """CRAG's decision rules: "I don't know" (or no answer) is missing; lower-cased exact
    equality is accurate; when both prediction and gold say "invalid" (false premise) it is
    accurate, when only one does it is not; everything else goes to ``judge`` if given
    (a callable ``(question, gold, prediction) -> bool``), else to deterministic rules
    (normalised EM, numbers/dates within 1%, equal sets)."""
    if (
        prediction is None
        or not prediction.strip()
        or "i don't know" in prediction.lower().replace("’", "'")
    ):
        return MISSING
    if is_abstention(prediction) and "invalid" not in prediction.lower():
        return MISSING
    low = prediction.strip().lower()
    for gold in golds:
        g = gold.strip().lower()
        if low == g:
            return ACCURATE
        if ("invalid" in low) != ("invalid" in g):
            continue
        if "invalid" in low:
            return ACCURATE
        if judge is not None:
            if judge(question, gold, prediction):
                return ACCURATE
            continue
        if exact_match(prediction, [gold]) or numeric_match(prediction, [gold]):
            return ACCURATE
        items = split_items(gold)
        if len(items) > 1 and split_items(prediction) == items:
            return ACCURATE
    return INCORRECT


_VERDICT_POINTS = {ACCURATE: 1.0, MISSING: 0.0, INCORRECT: -1.0}


@register_metric("crag")
def crag_points(prediction: str | None, golds: Sequence[str]) -> float:
    """+1 accurate, 0 missing, -1 incorrect (hallucinated): CRAG's per-answer score."""
    return _VERDICT_POINTS[crag_verdict(prediction, golds)]


def crag_score(verdicts: Sequence[str]) -> dict[str, float]:
    """accuracy, missing, hallucination and score = accuracy - hallucination."""
    n = len(verdicts) or 1
    acc = sum(v == ACCURATE for v in verdicts) / n
    miss = sum(v == MISSING for v in verdicts) / n
    hall = sum(v == INCORRECT for v in verdicts) / n
    return {"accuracy": acc, "missing": miss, "hallucination": hall, "score": acc - hall}


def says_invalid(prediction: str | None) -> bool:
    """Whether an answer calls the question invalid (CRAG's false-premise answer)."""
    return "invalid" in (prediction or "").lower()


def is_rejection(prediction: str | None) -> bool:
    """Whether an answer declines: an abstention or "invalid question"."""
    return is_abstention(prediction) or says_invalid(prediction)


def rejection_rate(predictions: Sequence[str | None]) -> float:
    """RGB's rejection rate: the share of answers that decline (on questions whose answer is
    not in the environment, 1.0 is perfect)."""
    if not predictions:
        return 0.0
    return sum(map(is_rejection, predictions)) / len(predictions)
