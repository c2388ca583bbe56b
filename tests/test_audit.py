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


def test_cli_audit_fails_on_a_shortcut_task_file(tmp_path):
    from typer.testing import CliRunner

    from raleval.app.cli import app
    from raleval.store import write_tasks

    tasks = [_task(i, f"Is item {i} heavy?", "yes" if i % 10 else "no") for i in range(40)]
    path = tmp_path / "tasks.jsonl"
    write_tasks(path, tasks)
    result = CliRunner().invoke(app, ["audit", "--env", "scholar", "--tasks", str(path)])
    assert result.exit_code == 1, result.stdout
    assert "FAIL" in result.stdout
