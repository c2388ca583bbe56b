"""CRUD-RAG's metrics of long-form answers: ROUGE-L and BLEU are rouge-score's and sacrebleu's
(the wiring and the tokenisation pinned), BERTScore through bert-score on a local model, and
RAGQuestEval over a task's key points with a reader model and the response cache."""

from __future__ import annotations

import random

import pytest
import sacrebleu
from rouge_score import rouge_scorer

from raleval import registry
from raleval.tasks.longform_metrics import (
    BertScoreUnavailable,
    ascii_fold,
    bert_score_f1,
    bleu,
    rouge_l,
)

# --- ROUGE-L and BLEU are the libraries' --------------------------------------------------------

_TEXT = (
    "the author wrote papers on graph learning and was cited times by peers in journals "
    "professor university of oslo since joined received award for work"
)
_WORDS = _TEXT.split(" ")


def _sentence(rng: random.Random, n: int) -> list[str]:
    return [rng.choice(_WORDS) for _ in range(n)]


def _pairs(n: int = 100, seed: int = 7) -> list[tuple[str, str, str]]:
    """``n`` (kind, reference, candidate) pairs covering what long-form answers do: share
    words, reorder them, leave text out, change case and punctuation, write numbers."""
    rng = random.Random(seed)
    kinds = [
        "identical",
        "shared",
        "reordered",
        "empty",
        "punctuation",
        "numbers",
        "case",
        "disjoint",
        "truncated",
        "extra",
    ]
    out = []
    for i in range(n):
        kind = kinds[i % len(kinds)]
        ref = _sentence(rng, rng.randint(6, 25))
        if kind == "identical":
            cand = list(ref)
        elif kind == "shared":
            cand = [w if rng.random() < 0.6 else rng.choice(_WORDS) for w in ref]
        elif kind == "reordered":
            cand = list(ref)
            rng.shuffle(cand)
        elif kind == "empty":
            cand = []
        elif kind == "punctuation":
            cand = [w + rng.choice(["", ",", ".", ";", "!", "'s", "-"]) for w in ref]
            ref = [w + rng.choice(["", ",", "."]) for w in ref]
        elif kind == "numbers":
            ref = [*ref, "cited", f"{rng.randint(1, 9)},{rng.randint(100, 999)}", "times"]
            ref += ["in", str(rng.randint(1950, 2024))]
            cand = [*ref[:-1], str(rng.randint(1950, 2024)), "."]
        elif kind == "case":
            cand = [w.upper() if rng.random() < 0.5 else w.capitalize() for w in ref]
        elif kind == "disjoint":
            cand = ["zebra", "quantum", "yellow"][: rng.randint(1, 3)]
        elif kind == "truncated":
            cand = ref[: rng.randint(1, len(ref))]
        else:
            cand = ref + _sentence(rng, rng.randint(1, 10))
        out.append((kind, " ".join(ref), " ".join(cand)))
    return out


PAIRS = _pairs()


def test_pairs_cover_every_kind_and_are_varied():
    kinds = {k for k, _, _ in PAIRS}
    assert len(PAIRS) == 100 and len(kinds) == 10
    assert len({(r, c) for _, r, c in PAIRS}) == 100
    scores = {round(rouge_l(c, [r]), 6) for _, r, c in PAIRS}
    assert len(scores) > 30  # not a handful of degenerate values


def test_rouge_l_is_rouge_score_f_measure_without_stemming():
    lib = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)
    for kind, ref, cand in PAIRS:
        assert rouge_l(cand, [ref]) == lib.score(ref, cand)["rougeL"].fmeasure, (kind, ref, cand)


def test_bleu_is_sacrebleu_sentence_bleu_13a_over_100():
    for kind, ref, cand in PAIRS:
        want = sacrebleu.sentence_bleu(cand, [ref], tokenize="13a").score / 100
        assert bleu(cand, [ref]) == want, (kind, ref, cand)
    # the defaults are what the docs say: 13a, case kept, exp smoothing
    metric = sacrebleu.BLEU(effective_order=True)
    metric.sentence_score("a b", ["a b"])
    assert "tok:13a" in str(metric.get_signature())
    assert "case:mixed" in str(metric.get_signature()) and "smooth:exp" in str(
        metric.get_signature()
    )


def test_tokenisation_rouge_ignores_case_and_punctuation_bleu_keeps_case():
    ref = "The author was cited 1,234 times."
    assert rouge_l("the AUTHOR, was cited 1 234 times", [ref]) == 1.0
    assert bleu(ref, [ref]) == pytest.approx(1.0)
    # 13a splits punctuation off, so spacing around it does not matter ...
    assert bleu("The author was cited 1,234 times .", [ref]) == pytest.approx(1.0)
    # ... but case does (sacrebleu's default)
    assert bleu("the author was cited 1,234 times.", [ref]) < 1.0
    # no stemming: "cites" is not "cited"
    assert rouge_l("cites", ["cited"]) == 0.0


def test_rouge_l_folds_accents_where_rouge_score_would_drop_letters():
    lib = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)
    ref = "Kurt Gödel and José Martí"
    # rouge-score's tokenizer alone drops non-ASCII letters: "Gödel" reads as "g del"
    assert lib.score(ref, "Kurt Godel and Jose Marti")["rougeL"].fmeasure < 1.0
    assert rouge_l("Kurt Godel and Jose Marti", [ref]) == 1.0
    assert ascii_fold(ref) == "Kurt Godel and Jose Marti"
    assert (
        rouge_l("Kurt Gödel", [ref]) == lib.score(ascii_fold(ref), "Kurt Godel")["rougeL"].fmeasure
    )


def test_several_golds_and_missing_answers():
    lib = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)
    golds = ["a paper on graphs", "the author wrote papers on graph learning"]
    cand = "the author wrote on graph learning"
    assert rouge_l(cand, golds) == max(lib.score(g, cand)["rougeL"].fmeasure for g in golds)
    assert bleu(cand, golds) == sacrebleu.sentence_bleu(cand, golds).score / 100
    assert rouge_l(None, golds) == 0.0 and bleu(None, golds) == 0.0
    assert rouge_l(cand, []) == 0.0 and bleu(cand, []) == 0.0


def test_registered_by_name():
    assert {"rouge_l", "bleu"} <= set(registry.metrics.names())
    assert registry.metrics.get("rouge_l") is rouge_l
    assert registry.metrics.get("bleu") is bleu


# --- BERTScore ------------------------------------------------------------------------------


def test_bert_score_refuses_a_model_that_is_not_on_disk(tmp_path):
    with pytest.raises(BertScoreUnavailable, match=r"roberta-large.*never downloads"):
        bert_score_f1(["a"], ["a"], model_type="roberta-large", num_layers=17)
    with pytest.raises(BertScoreUnavailable, match="not one"):
        bert_score_f1(["a"], ["a"], model_type=tmp_path / "absent", num_layers=1)


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory):
    """A two-layer BERT with random weights and a vocabulary written here: bert-score's
    wiring, with no download."""
    pytest.importorskip("torch")
    pytest.importorskip("bert_score")
    transformers = pytest.importorskip("transformers")
    import torch

    folder = tmp_path_factory.mktemp("tiny-bert")
    words = sorted(set(_WORDS) | {"cat", "dog", "sat", "mat", "on", "a"})
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    transformers.BertModel(config).save_pretrained(folder)
    # bert-score truncates at the tokenizer's model_max_length, which a real checkpoint declares
    tokenizer = transformers.BertTokenizer(str(folder / "vocab.txt"), model_max_length=64)
    tokenizer.save_pretrained(folder)
    return folder


def test_bert_score_on_a_local_model(tiny_bert):
    same = "the cat sat on the mat"
    scores = bert_score_f1(
        [same, "a dog on a mat", None],
        [same, "the cat sat on the mat", same],
        model_type=tiny_bert,
        num_layers=2,
    )
    assert scores[0] == pytest.approx(1.0, abs=1e-5)
    assert scores[1] < 0.999
    assert scores[2] == 0.0
