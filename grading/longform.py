"""CRUD-RAG's text-overlap metrics for long-form answers: ROUGE-L, BLEU and BERTScore.

CRUD-RAG (Lyu et al., 2025, section 3.6) scores a generated text against its reference with
ROUGE-L, BLEU, BERTScore and RAGQuestEval (:mod:`raleval.grading.questeval`). Here each is the
maintained implementation, called with settings written down once, so a score is that
library's score:

- ``rouge_l``: ``rouge_score.rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)``, the
  F-measure. rouge-score's own tokenizer (lower case, runs of ``[a-z0-9]``, everything else a
  separator), so case and punctuation never count. Text is first folded to ASCII (NFKD,
  combining marks dropped: "Gödel" -> "Godel"), because that tokenizer *drops* every
  non-ASCII letter ("Gödel" would become "g del"); on ASCII text the score is rouge-score's
  unchanged. No stemming, as CRUD-RAG (``evaluate``'s rouge, whose default is no stemmer).
  Chinese text (a CJK character on either side) is compared by jieba's words
  (``raleval.text.words``), as CRUD-RAG cuts it. Several golds: the best F over them
  (rouge-score's ``score_multi``).
- ``bleu``: ``sacrebleu.sentence_bleu`` with its defaults: tokenizer ``13a`` (WMT's
  mteval-v13a: punctuation split off, case kept), 4-grams, ``exp`` smoothing, effective
  order (the ``zh`` tokenizer for Chinese); divided by 100 so it lies in 0..1 like every other
  raleval metric. Several golds are sacrebleu's multiple references. CRUD-RAG's code uses
  Hugging Face ``evaluate``'s BLEU (unsmoothed) over jieba words and by default divides the
  brevity penalty back out; raleval keeps the standard brevity penalty, so a short answer is
  not rewarded for its precision.
- Profiles (:func:`overlap_scores`, ``raleval score -S profile=...``): ``crud`` is CRUD-RAG's
  own ROUGE-L and BLEU (:func:`crud_rouge_l`, :func:`crud_bleu`), ``rageval`` RAGEval's
  ROUGE-L (:func:`rageval_rouge_l`), each equal to its code on 200 of CRUD-RAG's own pairs
  (tests/data/crud_real_metric_pairs.jsonl) and 200 written ones
  (tests/data/chinese_metric_pairs.jsonl), but for one departure shared by every profile: an
  answer identical to a reference after the metric's own tokenization scores 1.0 (an exact
  copy is the one answer every reading agrees is perfect; unsmoothed 4-gram BLEU scores a
  copy of under four words 0, rouge_chinese's smoothing 0.999999995).
- :func:`bert_score_f1`: ``bert_score.score`` with a local model directory and layer count,
  F1, no idf, no baseline rescaling. Needs the ``bertscore`` extra (torch) and a model
  already on disk: nothing here downloads weights. (CRUD-RAG's code computes its "bertScore"
  as text2vec's sentence-embedding cosine with ``text2vec-base-chinese``; raleval uses the
  BERTScore of Zhang et al., 2020, that the paper names.)

A missing answer (``None``) scores 0, as in :mod:`raleval.grading.metrics`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from raleval.registry import register_metric
from raleval.text import ascii_fold, has_cjk, segment, words

ROUGE_TYPE = "rougeL"
ROUGE_STEMMER = False
BLEU_ORDER = 4


@lru_cache(maxsize=4)
def _rouge_scorer(tokenizer: str = "default") -> Any:
    from rouge_score import rouge_scorer

    tokenizers = {"default": None, "words": _WordTokenizer(), "jieba": _JiebaTokenizer()}
    return rouge_scorer.RougeScorer(
        [ROUGE_TYPE], use_stemmer=ROUGE_STEMMER, tokenizer=tokenizers[tokenizer]
    )


class _WordTokenizer:
    """rouge-score's tokenizer interface over ``raleval.text.words`` (Chinese text)."""

    def tokenize(self, text: str) -> list[str]:
        return words(text)


class _JiebaTokenizer:
    """jieba's cut as CRUD-RAG hands it to rouge-score: every piece, spaces and punctuation
    included, nothing lower-cased."""

    def tokenize(self, text: str) -> list[str]:
        return segment(text)


def warm() -> None:
    """Load rouge-score and sacrebleu now: rouge-score imports nltk, which imports
    scipy.stats (about 1.3 s on this machine's 2 cores), a stall for an event loop that scores
    its first long-form episode inside it."""
    import sacrebleu  # noqa: F401

    _rouge_scorer()


def _lcs_f(scorer: Any, refs: list[str], pred: str) -> float:
    if len(refs) == 1:
        return float(scorer.score(refs[0], pred)[ROUGE_TYPE].fmeasure)
    return float(scorer.score_multi(refs, pred)[ROUGE_TYPE].fmeasure)


@register_metric("rouge_l")
def rouge_l(prediction: str | None, golds: Sequence[str]) -> float:
    """ROUGE-L F-measure (rouge-score, no stemming, ASCII-folded; Chinese cut into words by
    jieba), best over ``golds``."""
    refs = [g for g in golds if g is not None]
    if prediction is None or not refs:
        return 0.0
    if has_cjk(prediction) or any(has_cjk(r) for r in refs):
        return _lcs_f(_rouge_scorer("words"), refs, prediction)
    return _lcs_f(_rouge_scorer(), [ascii_fold(r) for r in refs], ascii_fold(prediction))


@register_metric("bleu")
def bleu(prediction: str | None, golds: Sequence[str]) -> float:
    """Sentence BLEU (sacrebleu defaults: ``13a``, exp smoothing; its ``zh`` tokenizer for
    Chinese) / 100; golds are its references."""
    import sacrebleu

    refs = [g for g in golds if g is not None]
    if prediction is None or not refs:
        return 0.0
    tokenize = "zh" if has_cjk(prediction) or any(has_cjk(r) for r in refs) else "13a"
    score = float(sacrebleu.sentence_bleu(prediction, refs, tokenize=tokenize).score) / 100.0
    return min(score, 1.0)  # sacrebleu's 100 of an exact copy comes back as 100.00000000000004


# --- profiles: a benchmark's own definition where it differs from the standard one ------------

PROFILES = ("standard", "crud", "rageval")


def crud_rouge_l(prediction: str | None, golds: Sequence[str]) -> float:
    """CRUD-RAG's ROUGE-L (``src/metric/common.py:rougeL_score``): rouge-score's LCS F-measure
    over jieba's pieces of the raw text (spaces and punctuation are tokens, case kept)."""
    refs = [g for g in golds if g is not None]
    if prediction is None or not refs:
        return 0.0
    return _lcs_f(_rouge_scorer("jieba"), refs, prediction)


def _ngrams(tokens: list[str], max_order: int) -> Counter:
    return Counter(
        tuple(tokens[i : i + n])
        for n in range(1, max_order + 1)
        for i in range(len(tokens) - n + 1)
    )


def crud_bleu(prediction: str | None, golds: Sequence[str], *, with_penalty: bool = False) -> float:
    """CRUD-RAG's BLEU (``src/metric/common.py:bleu_score``, Hugging Face ``evaluate``'s
    BLEU, Papineni et al.'s unsmoothed corpus BLEU over one sentence) on jieba's pieces of the
    raw text; by default the brevity penalty divided back out, as CRUD-RAG reports it. An
    empty answer or reference, where CRUD-RAG's code fails and logs the error, scores 0. One
    departure: an answer with the same pieces as a reference scores 1.0 (CRUD-RAG's code gives
    a copy of under four pieces 0; 13 of the 200 real pairs in
    tests/data/crud_real_metric_pairs.jsonl are such copies)."""
    refs = [segment(g) for g in golds if g is not None]
    if prediction is None or not refs:
        return 0.0
    pred = segment(prediction)
    ref_len = min(len(r) for r in refs)
    if not pred or ref_len == 0:
        return 0.0
    if any(pred == ref for ref in refs):
        # the profile's one departure from CRUD-RAG's code: an exact copy (the same jieba
        # pieces) scores 1.0, where unsmoothed 4-gram BLEU gives 0 to any copy shorter than
        # four pieces ('陕西西安市' against itself), an artefact of the formula, not a judgement
        return 1.0
    merged: Counter = Counter()
    for ref in refs:
        merged |= _ngrams(ref, BLEU_ORDER)
    overlap = _ngrams(pred, BLEU_ORDER) & merged
    matches = [0] * BLEU_ORDER
    for gram, count in overlap.items():
        matches[len(gram) - 1] += count
    precisions = [
        matches[n] / (len(pred) - n) if len(pred) - n > 0 else 0.0 for n in range(BLEU_ORDER)
    ]
    if min(precisions) <= 0:
        return 0.0
    geo_mean = math.exp(sum(math.log(p) for p in precisions) / BLEU_ORDER)
    ratio = len(pred) / ref_len
    penalty = 1.0 if ratio > 1.0 else math.exp(1 - 1 / ratio)
    if with_penalty:
        return geo_mean * penalty
    return 0.0 if penalty == 0 else geo_mean * penalty / penalty


def rageval_rouge_l(prediction: str | None, golds: Sequence[str]) -> float:
    """RAGEval's ROUGE-L as its published numbers are computed: ``rouge_chinese``'s
    summary-level ROUGE-L F on the raw text, Chinese first cut by jieba and joined with spaces
    (``rageval/evaluation/metrics/rag_metrics/generation/rouge_l.py``); an empty side, or one
    rouge_chinese refuses, scores 0. Best over ``golds``. One departure: the same words on
    both sides score 1.0 (rouge_chinese's smoothed F gives 0.999999995)."""
    from rouge_chinese import Rouge

    refs = [g for g in golds if g is not None]
    if prediction is None or not refs:
        return 0.0
    best = 0.0
    for ref in refs:
        hyp, want = prediction, ref
        if has_cjk(ref):
            hyp, want = " ".join(segment(hyp)), " ".join(segment(want))
        if not hyp or not want:
            continue
        if hyp.split() == want.split():
            # the same words: 1.0, where rouge_chinese's smoothed F gives 0.999999995
            return 1.0
        try:
            scores = Rouge(metrics=["rouge-l"]).get_scores(hyp, want)
        except ValueError:  # a side of only spaces or punctuation: RAGEval scores it 0
            continue
        best = max(best, float(scores[0]["rouge-l"]["f"]))
    return best


_PROFILE_METRICS: dict[str, dict[str, Callable[[str | None, Sequence[str]], float]]] = {
    "standard": {"rouge_l": rouge_l, "bleu": bleu},
    "crud": {"rouge_l": crud_rouge_l, "bleu": crud_bleu},
    "rageval": {"rouge_l": rageval_rouge_l, "bleu": bleu},
}


def check_profile(profile: str) -> str:
    """``profile`` if it names a metric profile, else a ValueError listing them."""
    if profile not in _PROFILE_METRICS:
        raise ValueError(f"unknown metric profile {profile!r}; profiles: {', '.join(PROFILES)}")
    return profile


def overlap_scores(
    prediction: str | None, golds: Sequence[str], profile: str = "standard"
) -> dict[str, float]:
    """``rouge_l`` and ``bleu`` of ``prediction`` against ``golds`` under ``profile``."""
    metrics = _PROFILE_METRICS[check_profile(profile)]
    return {name: metric(prediction, golds) for name, metric in metrics.items()}


class BertScoreUnavailable(RuntimeError):
    """BERTScore cannot run here: the extra is not installed or the model is not on disk."""


BERTSCORE_EXTRA = "pip install 'raleval[bertscore]'"


def bert_score_f1(
    predictions: Sequence[str | None],
    references: Sequence[str],
    *,
    model_type: str | Path,
    num_layers: int,
    batch_size: int = 16,
) -> list[float]:
    """BERTScore F1 of each prediction against its reference (``bert_score.score``: greedy
    cosine matching of the ``num_layers``-th layer's token embeddings, no idf, no rescaling).

    ``model_type`` must be a local directory holding a transformers model and its tokenizer;
    a missing answer scores 0. Raises :class:`BertScoreUnavailable` naming the extra or the
    path when it cannot run, never downloads."""
    if len(predictions) != len(references):
        raise ValueError(f"{len(predictions)} predictions for {len(references)} references")
    path = Path(model_type)
    if not path.is_dir():
        raise BertScoreUnavailable(
            f"BERTScore needs a model directory on this machine; {str(model_type)!r} is not one "
            "(raleval never downloads model weights: save a model with transformers' "
            "save_pretrained and pass its folder)"
        )
    if num_layers < 1:
        raise ValueError(f"num_layers must be at least 1, not {num_layers}")
    try:
        import torch  # noqa: F401  (bert_score needs it; say which extra brings both)
        from bert_score import score as bert_score
    except ImportError as exc:
        raise BertScoreUnavailable(
            f"BERTScore needs the bertscore extra ({BERTSCORE_EXTRA}): {exc}"
        ) from exc
    present = [i for i, p in enumerate(predictions) if p is not None]
    out = [0.0] * len(predictions)
    if not present:
        return out
    _, _, f1 = bert_score(
        [predictions[i] or "" for i in present],
        [references[i] for i in present],
        model_type=str(path),
        num_layers=num_layers,
        batch_size=batch_size,
        idf=False,
        rescale_with_baseline=False,
    )
    for i, value in zip(present, f1.tolist(), strict=True):
        out[i] = float(value)
    return out
