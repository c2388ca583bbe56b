"""Per-type grading (issue 19's acceptance floors), the phrase grammar, relaxed F1, the one
scoring path, and the CLI."""

import json
import subprocess
import sys
from datetime import datetime, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from raleval.analysis.scoring import aggregate, score_trajectory
from raleval.answers import AnswerType, infer_answer_type
from raleval.grading.rules import (
    DEFAULT_GRAMMAR,
    PhraseGrammar,
    answer_amount,
    gpt2_tokens,
    grade,
    relaxed_f1,
)
from raleval.records import AgentSpec, ErrorType, Step, Task, Trajectory

TEN = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa"]


def test_list_of_ten_naming_one_is_not_correct():
    v = grade("gamma", [", ".join(TEN)], "list")
    assert not v.correct and v.score <= 0.3
    assert (v.precision, v.recall) == (1.0, 0.1)


@pytest.mark.parametrize(
    "answer",
    [
        ", ".join(reversed(TEN)),
        "; ".join(TEN[5:] + TEN[:5]),
        "\n".join(TEN),
        "alpha, beta, gamma, delta, epsilon, zeta, eta, theta, iota and kappa",
        "Kappa; Iota\nTheta, eta and zeta & epsilon, delta, gamma, beta and alpha",
    ],
)
def test_list_of_ten_in_any_order_and_separator_is_correct(answer):
    v = grade(answer, [", ".join(TEN)], "list")
    assert v.correct and v.score == 1.0


def test_list_extra_item_is_not_correct_and_element_aliases_count():
    elements = [["MIT", "Massachusetts Institute of Technology"], ["Stanford University"]]
    assert grade("Massachusetts Institute of Technology and Stanford University", ["x"], "list",
                 elements=elements).correct  # fmt: skip
    v = grade("MIT, Stanford University, Harvard", ["x"], "list", elements=elements)
    assert not v.correct and v.precision == pytest.approx(2 / 3)


def test_a_list_element_that_is_only_an_article_can_be_matched():
    # "A" (a grade, a vitamin, a blood type) normalised to nothing and was never matched
    letters = [chr(c) for c in range(ord("a"), ord("k"))]
    v = grade(", ".join(reversed(letters)).upper(), [", ".join(letters)], "list")
    assert v.correct and (v.precision, v.recall) == (1.0, 1.0)
    v = grade("B, C", [", ".join(["A", "B", "C"])], "list")
    assert not v.correct and v.recall == pytest.approx(2 / 3)


def test_element_with_a_comma_is_matched_whole():
    elements = [["Tsinghua University, Beijing"], ["Fudan University"]]
    v = grade("Fudan University; Tsinghua University, Beijing", ["x"], "list", elements=elements)
    assert v.correct


@pytest.mark.parametrize(
    ("answer", "gold", "kind", "correct"),
    [
        ("2010", "1991", "year", False),
        ("It was published in 1991.", "1991", "year", True),
        ("42", "43", "count", False),
        ("43 papers", "43", "count", True),
        ("forty-three", "43", "count", False),
        ("three", "3", "count", True),
        ("187,965,000,000", "187965000000.0", "number", True),
        ("$187.97 billion", "187965000000.0", "number", True),
        ("187965000000", "187965000000.0", "number", True),
        ("$18.8 billion", "187965000000.0", "number", False),
        ("In 2024 it was $187.97B", "187965000000.0", "number", True),
        ("618 ft", "618.23", "number", True),
        ("618 m", "618000000", "number", False),  # "m" after a space is a unit, not million
        ("$3.2 M", "3200000", "number", True),
        ("March 5th, 2024", "2024-03-05", "date", True),
        ("5 March 2024", "2024-03-05", "date", True),
        ("2024-03-06", "2024-03-05", "date", False),
        ("Yes, it is.", "yes", "boolean", True),
        ("No", "yes", "boolean", False),
        ("It is not.", "no", "boolean", True),
        ("Unknown Pleasures", "Unknown Pleasures", "entity", True),
        ("The answer is Paris.", "Paris", "entity", True),
        ("Paris or London", "Paris", "entity", False),
        ("Peking University Institute for AI", "Tsinghua University Institute for AI",
         "entity", False),
        ("Ada Lin", "Ada", "entity", False),
        ("invalid question", "invalid question", "invalid_premise", True),
        ("The premise is false: there is no such company.", "invalid question",
         "invalid_premise", True),
        ("Invalid Litter Dept.", "invalid question", "invalid_premise", False),
    ],
)  # fmt: skip
def test_type_rules(answer, gold, kind, correct):
    assert grade(answer, [gold], kind).correct is correct


def test_entity_needs_a_match_not_half_the_tokens():
    v = grade("Peking University Institute for AI", ["Tsinghua University Institute for AI"])
    assert v.f1 >= 0.5 and not v.correct  # token F1 stays beside, as the paper's metric


def test_unknown_pleasures_is_an_answer_and_i_dont_know_abstains():
    v = grade("Unknown Pleasures", ["Unknown Pleasures"])
    assert v.correct and not v.abstained and v.crag == "accurate"
    v = grade("I don't know", ["Unknown Pleasures"])
    assert v.abstained and not v.correct and v.crag == "missing"


@pytest.mark.parametrize(
    "title",
    [
        "Unknown Pleasures",
        "Unknown Mortal Orchestra",
        "None but the Lonely Heart",
        "None of the Above",
        "No Doubt",
        "No Country for Old Men",
        "Invalid Litter Dept.",
        "Nobody Knows",
        "N/A Records Ltd",
        "Unknown Soldier (film)",
    ],
)
def test_titles_with_abstention_words_are_answers(title):
    assert not DEFAULT_GRAMMAR.abstains(title)
    assert not DEFAULT_GRAMMAR.claims_invalid(title)
    assert grade(title, [title]).correct


@pytest.mark.parametrize(
    "text",
    [
        "I don't know",
        "I don’t know.",
        "Unknown.",
        "unknown",
        "Unknown because no tool returned it",
        "I'm not sure.",
        "N/A",
        "I cannot determine this from the results.",
        "There is not enough information to answer.",
        "The answer is not available.",
        "Sorry, I don't know which one.",
        "It is hard to say, but I don't know.",  # CRAG: "i don't know" anywhere is missing
    ],
)
def test_abstentions(text):
    assert DEFAULT_GRAMMAR.abstains(text)


def test_grammar_is_configurable(tmp_path):
    path = tmp_path / "phrases.json"
    path.write_text(json.dumps({"abstain": [r"keine ahnung"], "invalid": [r"\bfalsche frage\b"]}))
    grammar = PhraseGrammar.from_file(path)
    assert grammar.abstains("Keine Ahnung.") and not DEFAULT_GRAMMAR.abstains("Keine Ahnung.")
    assert grammar.claims_invalid("Das ist eine falsche Frage")
    assert grammar.abstains("I don't know")  # defaults kept
    with pytest.raises(ValueError, match="unknown phrase kind"):
        DEFAULT_GRAMMAR.extended(refuse=["no"])


def test_gpt2_tokens_are_gpt2s():
    # GPT-2's published ids: "Hello" 15496, " world" 995
    assert gpt2_tokens("Hello world") == [15496, 995]


def test_relaxed_f1_is_position_wise_token_match():
    assert relaxed_f1("Denver Broncos", ["Denver Broncos"]) == 1.0
    # same tokens shifted by one position: nothing matches position-wise
    assert relaxed_f1("the Denver Broncos", ["Denver Broncos"]) == 0.0
    # 2 of 3 prediction tokens match the 2 gold tokens in place: P 2/3, R 1, F1 0.8
    assert relaxed_f1("Denver Broncos win", ["Denver Broncos"]) == pytest.approx(0.8)
    assert relaxed_f1(None, ["x"]) == 0.0


@given(st.integers(min_value=1, max_value=10**12))
def test_amounts_with_separators_read_back(n):
    assert answer_amount(f"{n:,}") == n
    assert answer_amount(f"${n}") == n


@pytest.mark.parametrize(
    ("question", "gold", "metric", "qtype", "kind"),
    [
        ("What are the interests of X?", "a, b", "set_f1", None, AnswerType.list),
        ("In which year did X graduate?", "1999", "f1", None, AnswerType.year),
        ("How many papers has X?", "12", "f1", None, AnswerType.count),
        ("What is the market cap of X?", "187965000000.0", "f1", None, AnswerType.number),
        ("When was X released?", "2013-06-23", "f1", None, AnswerType.date),
        ("Is X a kind of Y?", "yes", "f1", None, AnswerType.boolean),
        ("Who won?", "invalid question", "f1", "false_premise", AnswerType.invalid_premise),
        ("Where does X work?", "University of Y", "f1", None, AnswerType.entity),
    ],
)
def test_inferred_types(question, gold, metric, qtype, kind):
    assert infer_answer_type(question, [gold], metric, qtype) is kind


def test_old_task_file_gets_types_inferred_with_a_warning(tmp_path):
    from raleval.store import AnswerTypeInferredWarning, read_tasks

    old = {"id": "t", "domain": "scholar", "level": "KS", "family": "1-3",
           "question": "What are the interests of X?", "answers": ["a, b"],
           "metric": "set_f1"}  # fmt: skip
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps(old) + "\n")
    with pytest.warns(AnswerTypeInferredWarning, match="inferred list: 1"):
        (task,) = read_tasks(path)
    assert task.answer_type is AnswerType.list and task.elements == [["a"], ["b"]]


def test_soay_list_gold_is_one_list_answer(tmp_path):
    from raleval.tasks.loaders import load_soay

    path = tmp_path / "1.jsonl"
    path.write_text(json.dumps({"Query_en": "Interests of X?", "Answer": ["nlp", "ir", "kg"]}))
    (task,) = load_soay(path).tasks
    assert task.answer_type is AnswerType.list and len(task.elements) == 3
    assert not grade("nlp", task.answers, task.answer_type, elements=task.elements).correct


# --- one scoring path ---------------------------------------------------------------------------


def _traj(task_id, answer, steps=()):
    return Trajectory(
        task_id=task_id,
        agent=AgentSpec(workflow="react", model="m", env="e"),
        answer=answer,
        termination="finished",
        steps=list(steps),
        started_at=datetime(2026, 1, 1, tzinfo=timezone.utc),
        wall_time_s=1.0,
    )


def test_every_slicing_adds_up_to_the_overall_score():
    tasks, trajs = {}, []
    answers = ["$187.97 billion", "$18.8 billion", "I don't know", "187965000000"]
    for i in range(24):
        task = Task(
            id=f"t{i}",
            domain=f"crag/{['finance', 'movie', 'music'][i % 3]}",
            level=["KS", "KA"][i % 2],
            family=f"crag-{['simple', 'set'][i % 2]}",
            question="What is the market capitalization of X?",
            answers=["187965000000.0"],
            answer_type="number",
            tags={"question_type": ["simple", "comparison"][i % 2],
                  "popularity": ["head", "torso", "tail"][i % 3],
                  "dynamism": ["static", "real-time"][i % 4 // 2]},
        )  # fmt: skip
        tasks[task.id] = task
        t = _traj(task.id, answers[i % 4])
        score_trajectory(t, task)
        trajs.append(t)
    overall = aggregate(trajs)["all"]
    # 12 correct, 6 missing, 6 incorrect: the per-episode tolerance, not exact match
    assert (overall.correct, overall.missing, overall.hallucination) == (0.5, 0.25, 0.25)
    slicings = {
        "family": lambda t: tasks[t.task_id].family,
        "level": lambda t: tasks[t.task_id].level.value,
        "domain": lambda t: tasks[t.task_id].domain,
        "type": lambda t: tasks[t.task_id].tags.question_type,
        "popularity": lambda t: tasks[t.task_id].tags.popularity,
        "dynamism": lambda t: tasks[t.task_id].tags.dynamism,
    }
    for name, key in slicings.items():
        groups = aggregate(trajs, key)
        n = sum(g.n for g in groups.values())
        assert n == len(trajs), name
        for field in ("correct", "score", "f1", "missing", "hallucination", "crag_score"):
            total = sum(getattr(g, field) * g.n for g in groups.values()) / n
            assert total == pytest.approx(getattr(overall, field)), (name, field)


def test_crag_slices_use_the_episode_verdicts(tmp_path):
    from raleval.analysis.runs import Run, crag_slices

    task = Task(id="t", domain="crag/finance", level="KS", family="crag-simple",
                question="Market cap of X?", answers=["187965000000.0"], answer_type="number",
                tags={"question_type": "simple"})  # fmt: skip
    t = _traj("t", "$187.97 billion")
    score_trajectory(t, task)
    run = Run(tmp_path, None, {"t": task}, [t])
    assert crag_slices(run)["question_type"]["simple"]["accuracy"] == 1.0  # was 0: exact match


# --- CLI ------------------------------------------------------------------------------------------


def _grade(*args):
    out = subprocess.run(
        [sys.executable, "-m", "raleval", "grade", *args],
        capture_output=True,
        text=True,
        check=False,
    )
    return out


def test_cli_grade_json():
    out = _grade("--gold", json.dumps(TEN), "--answer", "delta", "--type", "list", "--json")
    assert out.returncode == 0, out.stderr
    v = json.loads(out.stdout)
    assert {"correct", "score", "abstained", "f1", "em", "relaxed_f1"} <= set(v)
    assert v["correct"] is False and v["score"] <= 0.3 and v["abstained"] is False
    out = _grade("--gold", "Unknown Pleasures", "--gold", "UP", "--answer", "up", "--json")
    assert json.loads(out.stdout)["correct"] is True


def test_cli_grade_infers_the_type_from_the_gold():
    """Without --type the gold's own shape decides: a float gold is an amount."""
    for answer, correct in [
        ("187,965,000,000", True),
        ("$187.97 billion", True),
        ("187965000000", True),
        ("$18.8 billion", False),
    ]:
        out = _grade("--gold", "187965000000.0", "--answer", answer, "--json")
        verdict = json.loads(out.stdout)
        assert (verdict["answer_type"], verdict["correct"]) == ("number", correct), answer


def test_cli_grade_explains_and_rejects_bad_input():
    out = _grade("--gold", "187965000000.0", "--answer", "$18.8 billion", "--type", "number")
    assert out.returncode == 0 and out.stdout.startswith("not correct (number)")
    assert "relative tolerance 0.005" in out.stdout
    bad = _grade("--gold", "a, b", "--answer", "a", "--type", "list")
    assert bad.returncode == 2 and "JSON array" in bad.stderr


def test_score_lists_changed_episodes_of_an_old_run(tmp_path):
    """A run written before answer types: tasks without answer_type, labels by F1 >= 0.5."""
    from raleval.store import RESULTS, TASKS

    task = {"id": "t1", "domain": "scholar", "level": "KS", "family": "1-3",
            "question": "What are the interests of X?", "answers": [", ".join(TEN)],
            "metric": "set_f1"}  # fmt: skip
    year = {"id": "t2", "domain": "scholar", "level": "KS", "family": "1-3",
            "question": "In which year did X graduate?", "answers": ["1991"]}  # fmt: skip
    run = tmp_path / "run"
    run.mkdir()
    (run / TASKS).write_text(json.dumps(task) + "\n" + json.dumps(year) + "\n")
    old = []
    for tid, answer in (("t1", "alpha"), ("t2", "1991")):
        t = _traj(tid, answer, [Step(index=0, tool="searchPerson", observation="No match.")])
        t.scores = {"f1": 1.0, "em": 1.0}
        t.error_type, t.error_cause = ErrorType.AM, "AM:from_memory"
        old.append(t.model_dump_json(exclude={"stop_reason", "error_subcause"}))
    (run / RESULTS).write_text("\n".join(old) + "\n")
    out = subprocess.run(
        [sys.executable, "-m", "raleval", "score", str(run)],
        capture_output=True,
        text=True,
        check=False,
        env={**__import__("os").environ, "COLUMNS": "200"},
    )
    assert out.returncode == 0, out.stderr
    assert "1 episode(s) changed label or correctness" in out.stdout
    assert "t1 epoch 0: AM (AM:from_memory) -> RE (RE:wrong_answer); correct True -> False" in (
        out.stdout
    )
    assert "answer type" in out.stderr  # the inferred-type warning


def test_score_lists_budget_stops_that_became_reasoning_errors(tmp_path):
    """A run labelled before issue 34: a wrong, ungrounded episode cut by the step budget was
    TE; re-scored it is RE with the budget in its cause, and `raleval score` lists it."""
    from raleval.records import Termination
    from raleval.store import RESULTS, TASKS

    task = {"id": "t1", "domain": "scholar", "level": "KS", "family": "1-3",
            "question": "In which year did X graduate?", "answers": ["1991"],
            "answer_type": "year"}  # fmt: skip
    run = tmp_path / "run"
    run.mkdir()
    (run / TASKS).write_text(json.dumps(task) + "\n")
    loop = [Step(index=i, tool="searchPerson", observation="No match.") for i in range(3)]
    t = _traj("t1", None, loop)
    t.termination = Termination.step_limit
    t.scores = {"correct": 0.0, "f1": 0.0, "em": 0.0}
    t.error_type, t.error_cause = ErrorType.TE, "TE:step_budget"
    (run / RESULTS).write_text(t.model_dump_json() + "\n")
    out = subprocess.run(
        [sys.executable, "-m", "raleval", "score", str(run)],
        capture_output=True,
        text=True,
        check=False,
        env={**__import__("os").environ, "COLUMNS": "200"},
    )
    assert out.returncode == 0, out.stderr
    assert "1 episode(s) changed label or correctness" in out.stdout
    assert "t1 epoch 0: TE (TE:step_budget) -> RE (RE:step_budget); correct False -> False" in (
        out.stdout
    )


@pytest.mark.parametrize(
    ("answer", "verdict"),
    [
        ("No", False), ("no, it is not", False), ("Wrong.", False), ("Never.", False),
        ("**No**", False), ("Nope", False), ("No it does not", False), ("Yes", True),
        ("Yes, Paris is.", True), ("Right, it is", True), ("Correct", True),
        # a verdict word qualifying a noun is not a yes or a no: the answer says something else
        ("a wrong answer", None), ("No information available", None), ("Not sure", None),
        ("True Detective", None), ("False premise", None), ("correct answer", None),
        ("No one knows", None),
    ],
)  # fmt: skip
def test_a_yes_or_no_is_a_verdict_not_a_word_that_opens_a_phrase(answer, verdict):
    """'a wrong answer' graded as "no" made a made-up answer right wherever the gold was no
    (found by a defect model written for issue 46)."""
    from raleval.grading.rules import grade, parse_boolean

    assert parse_boolean(answer) is verdict
    if verdict is None:
        for gold in ("no", "yes"):
            assert not grade(answer, [gold], "boolean").correct
