"""Golden tests of the answer metrics: SQuAD's and CRAG's conventions, sets, numbers, profiles,
and the optional LLM judge (a fake model, counted, so caching is visible)."""

import pytest

from raleval import registry
from raleval.grading.judge import LLMJudge, parse_verdict
from raleval.grading.metrics import (
    crag_score,
    crag_verdict,
    exact_match,
    f1_score,
    field_accuracy,
    numeric_match,
    parse_date,
    parse_number,
    rejection_rate,
    relaxed_match,
    set_f1,
    set_precision_recall,
)
from raleval.model import Generation, ModelBase


@pytest.mark.parametrize(
    ("pred", "gold", "em", "f1"),
    [
        # SQuAD: articles and punctuation do not count, case neither
        ("The Denver Broncos", "Denver Broncos", 1.0, 1.0),
        ("denver broncos!", "Denver Broncos.", 1.0, 1.0),
        ("an apple", "apple", 1.0, 1.0),
        ("Broncos", "Denver Broncos", 0.0, 2 / 3),
        ("the the the", "the", 1.0, 1.0),  # both normalise to nothing
        # HotpotQA: yes/no are all or nothing
        ("yes", "no", 0.0, 0.0),
        ("yes it is", "yes", 0.0, 0.0),
        ("Yes.", "yes", 1.0, 1.0),
    ],
)
def test_squad_conventions(pred, gold, em, f1):
    assert exact_match(pred, [gold]) == em
    assert f1_score(pred, [gold]) == pytest.approx(f1)


def test_relaxed_is_revals_accuracy_threshold():
    long = "word " * 30 + "Denver"
    assert f1_score(long, ["Denver Broncos"]) < 0.1
    assert relaxed_match(long, ["Denver Broncos"]) == 1.0
    assert relaxed_match("Boston", ["Denver Broncos"]) == 0.0


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("$1,234.50", 1234.5),
        ("3.2 billion", 3.2e9),
        ("$3.2B", 3.2e9),
        ("618 m", 618.0),
        ("none", None),
    ],
)
def test_parse_number(text, value):
    assert parse_number(text) == value


@pytest.mark.parametrize("text", ["2024-03-05", "March 5, 2024", "03/05/2024", "5 March 2024"])
def test_parse_date_formats(text):
    assert parse_date(text).isoformat() == "2024-03-05"


@pytest.mark.parametrize(
    ("pred", "gold", "ok"),
    [
        ("618 ft", "618.23 ft", 1.0),  # CRAG: rounding is fine
        ("about 620", "618.23", 1.0),  # 0.29% off: within the default 1%
        ("about 630", "618.23", 0.0),  # 1.9% off
        ("1.3 million", "1,300,000", 1.0),
        ("12", "13", 0.0),
        ("March 5, 2024", "2024-03-05", 1.0),
        ("2024-03-06", "2024-03-05", 0.0),
        (None, "1", 0.0),
    ],
)
def test_numeric_match(pred, gold, ok):
    assert numeric_match(pred, [gold]) == ok


def test_numeric_tolerance_is_a_knob():
    assert numeric_match("620", ["618.23"], rel_tol=0.001) == 0.0
    assert numeric_match("101", ["100"], rel_tol=0.0, abs_tol=1.0) == 1.0


def test_set_answers_ignore_order_and_score_partial():
    assert set_f1("Zed, Yan and Xu", ["xu, yan, zed"]) == 1.0
    p, r, _ = set_precision_recall("xu, yan, wu", "xu, yan, zed")
    assert (p, r) == (pytest.approx(2 / 3), pytest.approx(2 / 3))
    assert set_precision_recall("xu", "xu; yan") == (1.0, 0.5, pytest.approx(2 / 3))
    assert set_f1("", ["xu"]) == 0.0


def test_profile_fields_are_scored_one_by_one():
    gold = "position: Professor; organization: Qerrin Institute; phd_year: 2004"
    assert field_accuracy(gold.upper(), [gold]) == 1.0
    assert field_accuracy("position: professor\nphd year: 2005", [gold]) == pytest.approx(1 / 3)
    assert field_accuracy("Professor at Qerrin", [gold]) == 0.0


@pytest.mark.parametrize(
    ("pred", "golds", "verdict"),
    [
        ("I don't know", ["Paris"], "missing"),
        ("i don't know, maybe Paris", ["Paris"], "missing"),  # CRAG: contains the phrase
        (None, ["Paris"], "missing"),
        ("paris", ["Paris"], "accurate"),
        ("Invalid question", ["invalid question"], "accurate"),
        ("invalid question.", ["Paris"], "incorrect"),
        ("Paris", ["invalid question"], "incorrect"),
        ("London", ["Paris"], "incorrect"),
        ("618 ft", ["618.23 ft"], "accurate"),
        ("Yan, Xu", ["Xu, Yan"], "accurate"),
        ("Xu", ["Xu, Yan"], "incorrect"),  # an incomplete set is wrong, as CRAG's judge rules
        ("Lyon", ["Paris", "Lyon"], "accurate"),  # alt_ans count
    ],
)
def test_crag_verdict(pred, golds, verdict):
    assert crag_verdict(pred, golds) == verdict


def test_crag_score_is_accuracy_minus_hallucination():
    s = crag_score(["accurate", "accurate", "missing", "incorrect"])
    assert s == {"accuracy": 0.5, "missing": 0.25, "hallucination": 0.25, "score": 0.25}
    # a system that always abstains scores exactly 0
    assert crag_score(["missing"] * 5)["score"] == 0.0


def test_rejection_rate():
    assert rejection_rate(["I don't know", "invalid question", "Paris", None]) == 0.75
    assert rejection_rate([]) == 0.0


@pytest.mark.parametrize(
    ("text", "score"),
    [
        ('{"explanation": "same", "score": 1}', 1),
        ('thinking {"a": 1} then {"explanation": "no", "score": 0}', 0),
        ('{"score": 2}', None),
        ('{"score": true}', None),
        ("no json", None),
    ],
)
def test_parse_verdict(text, score):
    assert parse_verdict(text) == score


class _FakeJudge(ModelBase):
    calls = 0

    def __init__(self, name, reply="1"):
        self.name = f"judgefake/{name}"
        self.reply = reply

    async def generate(self, request):
        type(self).calls += 1
        pred = request.messages[-1].content.rsplit("Prediction: ", 1)[1]
        score = 1 if pred.strip().lower().startswith("w. shakespeare") else 0
        if self.reply == "garbage":
            return Generation(text="I think so")
        return Generation(text=f'{{"explanation": "x", "score": {score}}}')


def test_llm_judge_is_cached_and_averaged(tmp_path):
    registry.models.register("judgefake")(lambda name, **o: _FakeJudge(name, o.get("reply", "1")))
    judge = LLMJudge(["judgefake/a", "judgefake/b"], cache_path=tmp_path / "c.sqlite")
    verdict = crag_verdict("W. Shakespeare", ["William Shakespeare"], judge=judge, question="Who?")
    assert verdict == "accurate" and _FakeJudge.calls == 2
    assert crag_verdict("Marlowe", ["William Shakespeare"], judge=judge) == "incorrect"
    before = _FakeJudge.calls
    crag_verdict("W. Shakespeare", ["William Shakespeare"], judge=judge, question="Who?")
    assert _FakeJudge.calls == before  # served from the cache
    judge.close()
    bad = LLMJudge(["judgefake/c"], cache_path=tmp_path / "d.sqlite", reply="garbage")
    assert crag_verdict("W. Shakespeare", ["William Shakespeare"], judge=bad) == "incorrect"
    assert bad.unreadable == 1
    bad.close()
