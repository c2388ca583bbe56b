"""Progress rate (AgentBoard's, over gold-solution subgoals): 1.0 for every oracle episode,
k/n for an agent that stops after k of n gold calls, any order for independent steps, in order
for dependent ones."""

from datetime import datetime, timezone

import pytest

from raleval import registry
from raleval.analysis.progress import progress_rate, reached_subgoals
from raleval.analysis.runs import load_run, progress_rows
from raleval.analysis.scoring import score_trajectory
from raleval.analysis.summary import render_table, summarize
from raleval.records import AgentSpec, Step, Task, Termination, ToolCall, Trajectory
from raleval.tasks.catalog import load_tasks
from raleval.tasks.subgoals import key_values

from .conftest import run_config

SETS = {"scholar": "scholar", "wiki": "wiki", "crag": "crag-kg"}


def _trajectory(task_id: str, steps: list[Step], answer: str | None = None) -> Trajectory:
    return Trajectory(
        task_id=task_id,
        agent=AgentSpec(workflow="react", model="scripted/test", env="scholar"),
        steps=steps,
        answer=answer,
        termination=Termination.finished,
        started_at=datetime.now(timezone.utc),
        wall_time_s=0.0,
    )


@pytest.mark.parametrize("env", sorted(SETS))
def test_every_oracle_episode_scores_one(tmp_path, env):
    _, results = run_config(tmp_path, env=env, tasks=SETS[env], tasks_per_family=3)
    assert len(results) >= 9
    assert all(r.scores["progress"] == 1.0 for r in results)
    run = load_run(next(tmp_path.glob("*")))
    assert all(row[-1] == "1.000" for row in progress_rows([run]))
    # the run's own table prints it beside F1
    from rich.console import Console

    console = Console(width=120, record=True)
    console.print(render_table(summarize(run.results, run.tasks)))
    header = next(line for line in console.export_text().splitlines() if "F1" in line)
    assert "prog." in header and header.index("prog.") > header.index("F1")


@pytest.mark.parametrize("env", sorted(SETS))
def test_stopping_after_the_first_of_n_gold_calls_scores_one_over_n(env):
    made = registry.envs.get(env)(size="tiny")
    tasks = [t for t in load_tasks(SETS[env], made, env, 6, 0) if len(t.solution or []) >= 2]
    checked = 0
    for task in tasks:
        session = made.session(task)
        first = task.solution[0]
        result = session.call_sync(first.tool, first.arguments)
        later = task.metadata["subgoals"][1:]
        if any(v.lower() in result.observation.lower() for values in later for v in values):
            continue  # the first result already shows a later step's information: reached
        steps = [Step(index=0, tool=first.tool, arguments=first.arguments,
                      observation=result.observation, kind=result.kind)]  # fmt: skip
        traj = _trajectory(task.id, steps)
        score_trajectory(traj, task)
        n = len(task.solution)
        assert traj.scores["progress"] == pytest.approx(1 / n), (task.id, task.metadata)
        checked += 1
    assert checked >= 3


def _task(question: str, calls: list[ToolCall], subgoals: list[list[str]]) -> Task:
    return Task(
        id="t",
        family="1-3",
        level="KS",
        domain="scholar",
        question=question,
        answers=["x"],
        solution=calls,
        metadata={"subgoals": subgoals},
    )


def test_independent_steps_count_in_any_order_dependent_ones_in_order():
    compare = _task(
        "Who has more citations, Ada Lin or Bo Park?",
        [ToolCall(tool="searchPerson", arguments={"name": "Ada Lin"}),
         ToolCall(tool="searchPerson", arguments={"name": "Bo Park"})],
        [["1234"], ["987"]],
    )  # fmt: skip
    only_second = _trajectory("t", [Step(index=0, tool="searchPerson",
                                         arguments={"name": "Bo Park"},
                                         observation='{"num_citation": 987}')])  # fmt: skip
    assert reached_subgoals(only_second, compare) == [False, True]
    assert progress_rate(only_second, compare) == 0.5
    chain = _task(
        "What is the email of Ada Lin?",
        [ToolCall(tool="searchPerson", arguments={"name": "Ada Lin"}),
         ToolCall(tool="getPersonBasicInfo", arguments={"person_id": "p17"})],
        [["p17"], ["ada@lin.org"]],
    )  # fmt: skip
    # the email seen without the step that finds the person: the dependent step is not credited
    lucky = _trajectory("t", [Step(index=0, tool="searchPublication", arguments={"q": "x"},
                                   observation="contact ada@lin.org")])  # fmt: skip
    assert reached_subgoals(lucky, chain) == [False, False]
    both = _trajectory("t", [Step(index=0, tool="searchPerson", arguments={"name": "Ada Lin"},
                                  observation='[{"person_id": "p17"}]'),
                             Step(index=1, tool="getPersonBasicInfo",
                                  arguments={"person_id": "p17"},
                                  observation='{"email": "ada@lin.org"}')])  # fmt: skip
    assert progress_rate(both, chain) == 1.0
    # a task without stored subgoals gets no progress rate, not a zero
    bare = chain.model_copy(update={"metadata": {}})
    assert progress_rate(both, bare) is None


def test_key_values_are_what_later_calls_and_the_answer_read():
    from raleval.environment import ToolResult
    from raleval.records import OutcomeKind

    task = _task(
        "What is the email of Ada Lin?",
        [ToolCall(tool="searchPerson", arguments={"name": "Ada Lin"}),
         ToolCall(tool="getPersonBasicInfo", arguments={"person_id": "p17xx"})],
        [],
    )  # fmt: skip
    task.metadata["answer_expr"] = "r1['email']"
    results = [
        ToolResult("", OutcomeKind.ok, data=[{"person_id": "p17xx", "name": "Ada Lin"}]),
        ToolResult("", OutcomeKind.ok, data={"email": "ada@lin.org", "bio": "long text"}),
    ]
    assert key_values(task, results) == [["p17xx"], ["ada@lin.org"]]
