import pytest

from raleval.grading.metrics import exact_match, f1_score, is_abstention, normalize_answer


@pytest.mark.parametrize(
    ("text", "norm"),
    [
        ("The Eiffel Tower!", "eiffel tower"),
        ("  a  cat,  an apple ", "cat apple"),
        ("Ph.D.", "phd"),
        ("", ""),
    ],
)
def test_squad_normalisation(text, norm):
    assert normalize_answer(text) == norm


@pytest.mark.parametrize(
    ("pred", "golds", "f1"),
    [
        ("17", ["17"], 1.0),
        ("the Qerrin Institute", ["Qerrin Institute of Technology"], 2 / 3),
        ("yes", ["no"], 0.0),
        ("no", ["no answer"], 0.0),
        ("x", ["a", "x y"], 2 / 3),
        (None, ["17"], 0.0),
        ("", ["17"], 0.0),
    ],
)
def test_f1(pred, golds, f1):
    assert f1_score(pred, golds) == pytest.approx(f1)


def test_em_takes_best_alias():
    assert exact_match("The MIT", ["Massachusetts Institute of Technology", "mit"]) == 1.0
    assert exact_match("MIT labs", ["mit"]) == 0.0


@pytest.mark.parametrize(
    "text",
    ["I don't know", "i do not know.", "Unknown", None, "", "invalid question", "I don’t know"],
)
def test_abstentions(text):
    assert is_abstention(text)


@pytest.mark.parametrize("text", ["17", "Knowledge graphs", "unknownland"])
def test_not_abstentions(text):
    assert not is_abstention(text)
