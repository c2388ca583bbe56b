"""A yes or a no said in other words (issue 59): the paraphrase lists in grading/rules.py, and
the real models' paraphrases in grading/real_answers.jsonl that they were checked against."""

import json
from pathlib import Path

import pytest

from raleval.grading.real_validation import load_real_set, rules_verdicts
from raleval.grading.rules import grade, parse_boolean

PARAPHRASES = [
    # real answers from the stored studies (all but the fourth in grading/real_answers.jsonl)
    ("Scott Derrickson and Ed Wood are both of the same nationality.", True),
    ("Local H and For Against are both from the United States.", True),
    ("Miduntahol and Fenrozor Kaquafen are in different countries.", False),
    ("Scott Derrickson and Ed Wood were of different nationalities.", False),
    ("The answer to this question is no.\n\nThe answer to the question is no.", False),
    # the list's other forms
    ("It is.", True),
    ("They are both.", True),
    ("They are not.", False),
    ("Neither of them.", False),
    ("They are not the same.", False),
    ("Both were not born there.", False),
    ("The answer is: yes", True),
    ("Certainly.", True),
]


@pytest.mark.parametrize("answer,says", PARAPHRASES)
def test_a_paraphrase_says_yes_or_no(answer, says):
    assert parse_boolean(answer) is says
    gold = "yes" if says else "no"
    other = "no" if says else "yes"
    assert grade(answer, [gold], "boolean").correct
    assert not grade(answer, [other], "boolean").correct


@pytest.mark.parametrize(
    "answer",
    [
        "Fenrozor Kaquafen",  # names one of the two, no verdict
        "The answer to this question is:",  # cut off
        "Possibly, possibly not.",  # hedged both ways
        "The United States, The United Kingdom",
        "Laleli Mosque and Esma Sultan Mansion",
    ],
)
def test_what_says_neither_is_no_verdict(answer):
    assert parse_boolean(answer) is None
    assert not grade(answer, ["yes"], "boolean").correct
    assert not grade(answer, ["no"], "boolean").correct


def test_the_real_set_holds_paraphrases_and_the_rules_read_them():
    """The items added for issue 59: real yes/no answers that open with no verdict word.
    The rules agree with the hand labels on all but one, an answer that restates the
    question's claim ("The Vasar Giants scored more points than ...", a yes), which no
    paraphrase in the list reads."""
    items = [
        i
        for i in load_real_set()
        if i.answer_type == "boolean" and i.label in ("right", "wrong") and i.id >= "real-214"
    ]
    assert len(items) == 14
    said = rules_verdicts(items)
    missed = [
        i.answer
        for i, v in zip(items, said, strict=True)
        if (v == "accurate") != (i.label == "right")
    ]
    assert missed == [
        "The Vasar Giants scored more points than the Dradundra Giants on 2024-02-24."
    ]
    # every one is a real answer stored in the studies, under the run it names
    root = Path(__file__).parents[1] / "studies"
    assert all((root / i.run).is_dir() or (root / "local-models" / i.run).is_dir() for i in items)
    assert json.dumps([i.label for i in items]).count("right") == 7
