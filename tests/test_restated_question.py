"""Removing a restated question from an answer: the same result as the pattern it is defined
by, while answers too short to hold the question skip building that pattern."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from raleval.grading.freetext import strip_restated_question
from raleval.records import Task

CRAG_DEV = Path(__file__).resolve().parents[1] / "studies" / "data" / "crag-dev.jsonl"


def by_definition(answer: str | None, question: str) -> str | None:
    """The definition: the question's words in order, any punctuation between them, matched
    case-insensitively as a whole, once (compiled afresh for every question)."""
    words = re.findall(r"[^\W_]+", question or "")
    if answer is None or len(words) < 3:
        return answer
    pattern = r"(?<![^\W_])" + r"[\W_]+".join(map(re.escape, words)) + r"(?![^\W_])[?.!]?"
    return re.sub(pattern, " ", answer, count=1, flags=re.IGNORECASE)


def _variants(question: str) -> list[str]:
    words = re.findall(r"[^\W_]+", question)
    tight = " ".join(words)  # the shortest text that restates it
    return [
        question,
        question.upper(),
        f"{question} 42",
        f"Well, {question.lower()}! It is 42.",
        tight,
        tight[:-1],  # one character short of a restatement
        tight[1:],
        "-".join(words) + "?",
        f"x{tight}",  # glued to a word before: no restatement
        "",
        "42",
    ]


QUESTIONS = [Task.model_validate_json(line).question for line in CRAG_DEV.read_text().splitlines()]


@pytest.mark.parametrize("question", QUESTIONS, ids=range(len(QUESTIONS)))
def test_real_questions_restated_every_way_match_the_definition(question):
    for answer in _variants(question):
        assert strip_restated_question(answer, question) == by_definition(answer, question)


def test_case_pairs_the_pattern_treats_as_one_letter():
    # re's IGNORECASE matches these one character for one: the shortcut must not skip them
    for question, answer in [
        ("is the ſun up today", "IS THE SUN UP TODAY"),
        ("what is 5 \u212a in celsius", "What is 5 k in Celsius?"),
        ("did ıt rain in izmir", "DID IT RAIN IN İZMIR"),
        ("straße or strasse which", "STRASSE or STRASSE which"),
    ]:
        assert strip_restated_question(answer, question) == by_definition(answer, question)
        assert strip_restated_question(answer + " yes", question) == by_definition(
            answer + " yes", question
        )


def test_random_texts_match_the_definition():
    rng = random.Random(7)
    alphabet = "abcsSKkıiİſ _-?.!,'1"
    for _ in range(3000):
        question = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 24)))
        words = re.findall(r"[^\W_]+", question)
        joined = rng.choice([" ", "-", ", ", "_"]).join(words)
        answer = rng.choice(
            [
                joined,
                joined.swapcase(),
                joined[: max(0, len(joined) - 1)],
                "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30))),
                f"{rng.choice(['', 'so ', 'x'])}{joined}{rng.choice(['', '?', 'a', '. ok'])}",
            ]
        )
        assert strip_restated_question(answer, question) == by_definition(answer, question), (
            answer,
            question,
        )


def test_short_answers_come_back_as_they_were():
    question = "Which venue published the paper on graph retrieval?"
    for answer in (None, "Paris", "NeurIPS 2023", "graph retrieval"):
        assert strip_restated_question(answer, question) is answer
    assert strip_restated_question(question, question) == " "
