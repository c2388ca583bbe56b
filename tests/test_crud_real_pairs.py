"""The ``crud`` and ``rageval`` metric profiles against CRUD-RAG's and RAGEval's own metric code
on 200 of CRUD-RAG's released Chinese pairs (tests/data/crud_real_metric_pairs.jsonl: 100
reference summaries against the one-sentence event of the same record, 100 RAGQuestEval key
facts against their extracted answers; made by tests/data/make_crud_real_pairs.py, scored by
the originals' code, unmodified, with benchmarks/crud_metric_reference.py).

The one departure, shared by every profile: an answer identical to its reference after the
metric's own tokenization scores 1.0, where CRUD-RAG's unsmoothed BLEU gives a copy of under
four jieba pieces 0 and RAGEval's rouge_chinese gives any copy 0.999999995."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from raleval.grading.longform import crud_bleu, crud_rouge_l, overlap_scores, rageval_rouge_l
from raleval.text import has_cjk, segment

PAIRS = Path(__file__).parent / "data" / "crud_real_metric_pairs.jsonl"
TOLERANCE = 0.005


def _pairs() -> list[dict]:
    return [json.loads(line) for line in PAIRS.read_text(encoding="utf-8").splitlines()]


def _copy(row: dict) -> bool:
    """The answer has the reference's jieba pieces (what both profiles compare)."""
    return segment(row["answer"]) == segment(row["reference"])


def test_the_pairs_are_200_of_crud_rags_own_with_the_originals_values():
    rows = _pairs()
    assert len(rows) == 200
    assert [r["kind"] for r in rows].count("summary") == 100
    assert [r["kind"] for r in rows].count("key_info") == 100
    assert sum(has_cjk(r["reference"]) for r in rows) >= 190  # a few key facts are "NP137"
    assert len({r["source"] for r in rows}) == 200
    assert {r["source"].split(":")[0] for r in rows} == {
        "event_summary.json",
        "QuestAnswer1Doc_quest_gt_save.json",
        "QuestAnswer2Docs_quest_gt_save.json",
        "QuestAnswer3Docs_quest_gt_save.json",
    }
    # the values spread over 0..1, so agreement is not agreement on a constant
    rouge = [r["crud_rouge_l"] for r in rows]
    assert min(rouge) == 0.0 and max(rouge) == 1.0 and 0.1 < sum(rouge) / len(rouge) < 0.9
    assert sum(0 < r["crud_bleu"] < 1 for r in rows) > 80
    assert sum(_copy(r) for r in rows) >= 10  # copies, where the departure shows


@pytest.mark.parametrize(
    ("key", "metric"),
    [
        ("crud_rouge_l", crud_rouge_l),
        ("crud_bleu", crud_bleu),
        ("crud_bleu_penalty", lambda a, g: crud_bleu(a, g, with_penalty=True)),
        ("rageval_rouge_l", rageval_rouge_l),
    ],
)
def test_profiles_equal_the_originals_code_on_every_pair_but_copies(key, metric):
    off, departures = [], []
    for r in _pairs():
        got = metric(r["answer"], [r["reference"]])
        if _copy(r):
            assert got == 1.0, (r["source"], got)
            if abs(got - r[key]) > TOLERANCE:
                departures.append(r["source"])
        elif abs(got - r[key]) > TOLERANCE:
            off.append((r["source"], r[key], got))
    assert off == []
    # the copies CRUD-RAG's BLEU scores 0 (under four pieces) are the only pairs that differ
    expected = [r["source"] for r in _pairs() if _copy(r) and r[key] < 1.0 - TOLERANCE]
    assert departures == expected
    if key.startswith("crud_bleu"):
        assert len(departures) == 13
    else:
        assert departures == []


def test_profile_crud_through_overlap_scores_is_crud_rag_on_every_pair_but_copies():
    for r in _pairs():
        got = overlap_scores(r["answer"], [r["reference"]], "crud")
        assert got["rouge_l"] == pytest.approx(r["crud_rouge_l"], abs=TOLERANCE)
        want = 1.0 if _copy(r) else r["crud_bleu"]
        assert got["bleu"] == pytest.approx(want, abs=TOLERANCE)


@pytest.mark.parametrize("profile", ["standard", "crud", "rageval"])
def test_every_copy_among_the_real_pairs_scores_one_under_every_profile(profile):
    texts = {t for r in _pairs() for t in (r["reference"], r["answer"])}
    low = {
        (text[:20], name, score)
        for text in texts
        for name, score in overlap_scores(text, [text], profile).items()
        if score != 1.0
    }
    assert low == set()
