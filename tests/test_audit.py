"""The shortcut audit: each baseline catches the shortcut it is for, and passes balanced data."""

from __future__ import annotations

from raleval.analysis.audit import (
    audit_family,
    false_premise_check,
    knn_predict,
    named_entities,
    nb_predict,
)
from raleval.records import Level, Task, TaskTags


def _task(i: int, question: str, answer: str, family: str = "x", qtype: str = "simple") -> Task:
    return Task(
        id=f"t{i}",
        domain="d",
        level=Level.KU,
        family=family,
        question=question,
        answers=[answer],
        tags=TaskTags(question_type=qtype),
    )


def _baseline(audit, name):
    return next(b for b in audit.baselines if b.name == name)


def test_named_entities_quotes_then_capitalised_spans():
    q = "Is 'Blue Note' older than Miles Davis of Columbia University?"
    assert named_entities(q) == ["Blue Note", "Miles Davis of Columbia University"]


def test_classifiers_learn_a_wording_that_gives_the_answer_away():
    train = ["Is the red gem shiny?", "Is the blue stone dull?"] * 5
    labels = ["yes", "no"] * 5
    assert knn_predict(train, labels, ["Is the red gem bright?"]) == ["yes"]
    assert nb_predict(train, labels, ["blue stone"]) == ["no"]


def test_string_rule_catches_a_kind_named_inside_the_name():
    tasks = []
    for i in range(40):
        if i % 2:
            tasks.append(_task(i, f"Is Kor{i} Stone a kind of Stone?", "yes"))
        else:
            tasks.append(_task(i, f"Is Kor{i} Stone a kind of Bird?", "no"))
    audit = audit_family("x", tasks)
    rule = _baseline(audit, "string_rule")
    assert rule.accuracy == 1.0 and rule.chance == 0.5
    assert not audit.passed


def test_unbalanced_yes_no_fails_on_the_majority_baseline():
    tasks = [_task(i, f"Is item {i} heavy?", "yes" if i % 10 else "no") for i in range(40)]
    audit = audit_family("x", tasks)
    majority = _baseline(audit, "majority")
    assert majority.chance == 0.5 and majority.accuracy == 0.9
    assert not audit.passed


def test_balanced_random_answers_pass():
    import random

    rng = random.Random(3)
    tasks = [_task(i, f"Is gadget {i} heavy?", rng.choice(["yes", "no"])) for i in range(60)]
    audit = audit_family("x", tasks)
    assert audit.passed, audit.baselines


def test_false_premise_wording_is_caught():
    tasks = [_task(i, f"What is the price of stock {i}?", f"{i}") for i in range(30)]
    tasks += [
        _task(
            100 + i,
            f"Why did the moon base {i} close in 1850?",
            "invalid question",
            family="fp",
            qtype="false_premise",
        )
        for i in range(30)
    ]
    check = false_premise_check(tasks)
    assert check is not None and check.accuracy == 1.0 and check.chance == 0.5


def test_cli_audit_json_reports_every_family_and_exits_by_the_verdict():
    import json

    from typer.testing import CliRunner

    from raleval.app.cli import app

    result = CliRunner().invoke(
        app, ["audit", "--env", "scholar", "--world", "small", "--per-family", "40", "--json"]
    )
    report = json.loads(result.stdout)
    assert [f["family"] for f in report["families"]] == ["1-3", "2-4", "3-5"]
    assert result.exit_code == (0 if report["passed"] else 1)
    names = {b["name"] for b in report["families"][2]["baselines"]}
    assert {"majority", "char_knn", "word_nb", "string_rule", "subject_attr"} <= names


def _audit_task_file(tmp_path, tasks):
    """`raleval audit --env scholar --tasks FILE` on ``tasks`` written to a file."""
    from typer.testing import CliRunner

    from raleval.app.cli import app
    from raleval.store import write_tasks

    path = tmp_path / "tasks.jsonl"
    write_tasks(path, tasks)
    return CliRunner().invoke(app, ["audit", "--env", "scholar", "--tasks", str(path)])


def test_cli_audit_fails_on_a_shortcut_task_file(tmp_path):
    tasks = [_task(i, f"Is item {i} heavy?", "yes" if i % 10 else "no") for i in range(40)]
    result = _audit_task_file(tmp_path, tasks)
    assert result.exit_code == 1, result.stdout
    assert "FAIL" in result.stdout


# -- position: lists at any depth, in text, and what does not count ----------------------------


def test_observed_lists_finds_nested_series_and_written_lists():
    from raleval.analysis.audit import observed_lists

    record = {"title": "T", "cast": [{"name": "A"}, {"name": "B"}]}
    assert list(observed_lists(record)) == [[{"name": "A"}, {"name": "B"}]]
    series = {"2024-01-02": 3.5, "2024-01-03": 4.0}
    assert list(observed_lists(series)) == [
        [{"key": "2024-01-02", "value": 3.5}, {"key": "2024-01-03", "value": 4.0}]
    ]
    page = "(Result 1 / 1) Frequent collaborators: Ann Lee, Bo Ma and Cy Ng."
    assert list(observed_lists(page)) == [["Ann Lee", "Bo Ma", "Cy Ng"]]
    missed = "Could not find Morrow. Similar: ['Morrow (dravel)', 'Morrow (tellin)']."
    assert list(observed_lists(missed)) == [["Morrow (dravel)", "Morrow (tellin)"]]


def _listed(i: int, answer_first: bool) -> tuple[Task, list]:
    names = [f"Name{i}x{k}" for k in range(4)]
    answer = names[0] if answer_first else names[(i % 3) + 1]
    task = _task(i, f"Who chaired meeting {i}?", answer, family="p")
    return task, [[{"name": n} for n in names]]


def test_position_baseline_catches_an_answer_always_first():
    from raleval.analysis.audit import position_baseline

    pairs = [_listed(i, True) for i in range(20)]
    score = position_baseline([t for t, _ in pairs], [r for _, r in pairs])
    assert score.name == "position" and score.accuracy == 1.0 and score.chance == 0.25
    assert score.n == 20


def test_position_baseline_passes_answers_spread_over_the_list():
    from raleval.analysis.audit import position_baseline

    pairs = [_listed(i, False) for i in range(21)]
    score = position_baseline([t for t, _ in pairs], [r for _, r in pairs])
    # answers at 2nd, 3rd, 4th place in turn: last a third of the time, never first
    assert score.accuracy == 7 / 21 and score.chance == 0.25


def test_position_skips_items_the_question_names_tables_and_numbers():
    from raleval.analysis.audit import answer_position, position_baseline

    # a search for the movie the question names: the first hit is found by its title
    hits = [[{"title": "Tazor Road", "year": "1999"}, {"title": "Tazor Roads", "year": "2001"}]]
    named = _task(1, "When was the movie Tazor Road released?", "1999")
    assert answer_position(named, hits) is None  # numeric answer
    named = _task(2, "Who directed the movie Tazor Road?", "Ana Vel")
    hits = [[{"title": "Tazor Road", "director": "Ana Vel"}, {"title": "Other", "director": "B"}]]
    assert answer_position(named, hits) is None
    # columns of a table: their order is their shape
    table = _task(3, "Which song topped the chart that week?", "Dream")
    assert answer_position(table, [[["Dream"], ["The Band"]]]) is None
    # both options named, in the order the page lists them: position counts
    option = _task(4, "Which concept does Morrow belong to: dravel or tellin?", "dravel")
    missed = ["Could not find Morrow. Similar: ['Morrow (dravel)', 'Morrow (tellin)']."]
    assert answer_position(option, missed) == ([0], ["Morrow (dravel)", "Morrow (tellin)"])
    few = position_baseline([option] * 3, [missed] * 3)
    assert few == "3 answers in a list observation (< 10)"


def test_a_family_too_small_to_judge_says_so():
    from raleval.analysis.audit import audit_tasks

    tasks = [_task(i, f"Is gadget {i} heavy?", "yes" if i % 2 else "no") for i in range(12)]
    report = audit_tasks(tasks)
    family = report.families[0]
    assert family.verdict == "too few items" and not family.passed
    assert family.not_judged["family"] == "too few items: 12 < 20"
    assert report.verdict == "too few items" and not report.passed and not report.failed
    assert report.to_json()["families"][0]["verdict"] == "too few items"


def test_cli_audit_exits_3_when_a_family_is_too_small(tmp_path):
    tasks = [_task(i, f"Is gadget {i} heavy?", "yes" if i % 2 else "no") for i in range(12)]
    result = _audit_task_file(tmp_path, tasks)
    assert result.exit_code == 3, result.stdout
    assert "too few items" in result.stdout
