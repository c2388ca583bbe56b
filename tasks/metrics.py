"""Answer metrics as pure functions ``(prediction, golds) -> float``.

SQuAD/HotpotQA normalisation as R-Eval scores it: lower-case, drop punctuation and the articles
a/an/the, collapse whitespace. F1 and EM take the maximum over all gold aliases.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence

from raleval.registry import register_metric

_PUNCT = set(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_YES_NO = {"yes", "no", "noanswer"}


def normalize_answer(text: str) -> str:
    """SQuAD normalisation."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def _f1_single(prediction: str, gold: str) -> float:
    pred_n, gold_n = normalize_answer(prediction), normalize_answer(gold)
    # yes/no answers are all or nothing (HotpotQA's rule, kept by R-Eval)
    if (pred_n in _YES_NO or gold_n in _YES_NO) and pred_n != gold_n:
        return 0.0
    pred_t, gold_t = pred_n.split(), gold_n.split()
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
    r"|not (sure|known|available)|invalid question|n/?a)\b",
    re.IGNORECASE,
)


def is_abstention(prediction: str | None) -> bool:
    """Whether an answer declines to answer ("I don't know", CRAG's "missing")."""
    if prediction is None:
        return True
    text = prediction.strip().strip(".!\"' ").lower().replace("’", "'")
    return not text or bool(_ABSTAIN.match(text))
