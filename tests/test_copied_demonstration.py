"""An answer equal to a demonstration's answer and not to the gold is flagged
``copied_demonstration`` on the episode and counted in every table (issue 45)."""

import pytest

from raleval.analysis.demonstrations import (
    COPIED,
    copied_demonstration,
    demonstration_answers,
    rendered_answer,
)
from raleval.analysis.report import build_report
from raleval.analysis.runs import load_run
from raleval.analysis.study import COLUMNS as STUDY_COLUMNS
from raleval.analysis.summary import render_table, summarize
from raleval.store import read_header

from .conftest import run_config


@pytest.fixture(scope="module")
def oracle_run(tmp_path_factory):
    summary, _ = run_config(
        tmp_path_factory.mktemp("copied"), tasks_per_family=3, workflow_options={"shots": 1}
    )
    return summary.run_dir


def test_the_header_records_the_demonstrations_answers(oracle_run):
    prompts = read_header(oracle_run).prompts
    answers = prompts["answers"]
    assert set(answers) == set(prompts["demonstrations"]) and answers
    # the same answers as the rendered ReAct demonstrations show (Finish[...])
    for family, texts in prompts["rendered"].items():
        assert [rendered_answer(t) for t in texts] == answers[family]
    # a run written before the answers were recorded: read back from the rendered text
    assert demonstration_answers({"rendered": prompts["rendered"]}) == answers


def test_a_copied_demonstration_is_flagged_and_counted(oracle_run):
    run = load_run(oracle_run)
    # flagged as the episodes ran (results.jsonl), and again on re-scoring
    assert all(t.scores[COPIED] == 0.0 for t in run.results)  # the oracle copies nothing
    run.rescore()
    assert all(t.scores[COPIED] == 0.0 for t in run.results)
    answers = read_header(oracle_run).prompts["answers"]
    victim = next(
        t
        for t in run.results
        if run.tasks[t.task_id].family in answers
        and answers[run.tasks[t.task_id].family][0] not in run.tasks[t.task_id].answers
    )
    victim.answer = answers[run.tasks[victim.task_id].family][0]
    run.rescore()
    assert victim.scores[COPIED] == 1.0 and victim.scores["correct"] == 0.0
    assert sum(t.scores[COPIED] for t in run.results) == 1.0
    rows = summarize(run.results, run.tasks)
    assert sum(r.copied for r in rows if r.family != "all") == 1
    assert "copied demonstration" in build_report([run])
    assert all("copied" in columns for columns in STUDY_COLUMNS.values())


@pytest.mark.parametrize(
    ("answer", "golds", "shown", "copied"),
    [
        ("Braikruhouv State University", ["Troulerk"], ["Braikruhouv State University"], True),
        ("braikruhouv state university.", ["Troulerk"], ["Braikruhouv State University"], True),
        ("Troulerk", ["Troulerk"], ["Troulerk"], False),  # the gold itself: not a copy
        # yes/no copies count (issue 62): the demonstration's "yes" where the gold is "no"
        ("yes", ["no"], ["yes"], True),
        ("Yes.", ["no"], ["yes"], True),
        # a closed answer counts even when it is the gold: a copy and a guess look alike
        ("yes", ["yes"], ["yes"], True),
        ("7", ["7"], ["7.0"], True),
        ("no", ["no"], ["yes"], False),
        # numbers by value: "7.0" is the demonstration's "7"
        ("7.0", ["12"], ["7"], True),
        ("1,200", ["12"], ["1200"], True),
        ("12.0", ["12"], ["7"], False),  # the gold written another way
        ("8", ["12"], ["7"], False),
        ("MIT", ["Troulerk"], ["Braikruhouv State University"], False),
        (None, ["Troulerk"], ["Braikruhouv"], False),
    ],
)
def test_copied_demonstration_rule(answer, golds, shown, copied):
    assert copied_demonstration(answer, golds, shown) is copied


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("Action 2: Finish[Braikruhouv State University]", "Braikruhouv State University"),
        ("Question: q\nAnswer: 150", "150"),
        ('Call: Finish({"answer": "Korea"})', "Korea"),
        ('Call: Finish({"return_type": "give_answer", "final_answer": "7"})', "7"),
        ("```python\nr0 = Search(entity='x')\nfinal_result = 'Korea'\n```", "Korea"),
        ("```python\nr0 = f(x=1)\nfinal_result = len(r0)\n```", None),  # an expression
    ],
)
def test_rendered_answers_of_every_workflow(text, answer):
    assert rendered_answer(text) == answer


def test_results_table_shows_the_count(oracle_run):
    from rich.console import Console

    run = load_run(oracle_run)
    run.rescore()
    console = Console(width=120, record=True)
    console.print(render_table(summarize(run.results, run.tasks)))
    lines = console.export_text().splitlines()
    header = next(line for line in lines if "family" in line and "copied" in line)
    assert header.replace("┃", " ").split() == [
        "family",
        "EM",
        "AM",
        "GE",
        "RE",
        "TE",
        "ME",
        "copied",
    ]


def test_demonstrations_come_from_another_world_and_show_no_test_gold(tmp_path):
    """Generated demonstrations are drawn and solved in a world of another seed, and none
    answers with a gold of a task under test (yes/no aside)."""
    from raleval import registry
    from raleval.app.demonstrations import (
        WORLD_SEED,
        demonstration_tasks,
        demonstration_world,
        solved_example,
    )
    from raleval.config import RunConfig
    from raleval.tasks.catalog import load_tasks
    from raleval.text import normalize_answer

    config = RunConfig(
        env="scholar",
        env_options={"size": "tiny"},
        workflow="react",
        model="scripted/oracle",
        tasks="scholar",
        log_dir=tmp_path,
    )
    env = registry.envs.get("scholar")(size="tiny")
    tasks = load_tasks("scholar", env, "scholar", 5, 0)
    world = demonstration_world(config, env)
    assert world is not env
    demos = demonstration_tasks(config, env, tasks, 2, world)
    assert demos and all(t.metadata[WORLD_SEED] == 7919 for g in demos.values() for t in g)
    golds = {normalize_answer(a) for t in tasks for a in t.answers} - {"yes", "no"}
    shown = [t for g in demos.values() for t in g]
    assert not {normalize_answer(t.answers[0]) for t in shown} & golds
    differs = 0
    for demo in shown:
        example = solved_example(demo, env, world)
        there = solved_example(demo.model_copy(update={"metadata": {}}), world)
        assert example.calls == there.calls  # solved where it was drawn
        here = solved_example(demo.model_copy(update={"metadata": {}}), env)
        differs += here.calls != there.calls
    assert differs == len(shown)  # the test world answers its calls otherwise


def test_the_second_study_s_yes_copies_are_caught():
    """The review of issue 62, on the stored cells: Qwen2.5-0.5B with ReAct answered its
    demonstration's "yes" on every task of wiki 2-1 and 2-2 (4 each), right or wrong; the flag
    catches all 8, where it used to ignore yes/no."""
    from pathlib import Path

    cell = (
        Path(__file__).resolve().parents[1]
        / "studies" / "local-models-2" / "wiki__react__local_qwen2.5-0.5b__wiki"
    )  # fmt: skip
    run = load_run(cell)
    run.rescore()
    mine = [t for t in run.scored if run.tasks[t.task_id].family in ("2-1", "2-2")]
    assert len(mine) == 8 and {t.answer for t in mine} == {"yes"}
    assert all(t.scores[COPIED] == 1.0 for t in mine)
    # right and wrong alike: the gold is "no" on some of them
    assert {run.tasks[t.task_id].answers[0] for t in mine} == {"yes", "no"}
