"""Call-level scores against gold solutions (analysis/calls.py): golden cases by hand."""

from __future__ import annotations

from datetime import datetime, timezone

from raleval.analysis.calls import call_scores, needs_order, normalize_arguments
from raleval.analysis.scoring import score_trajectory
from raleval.analysis.summary import render_table, summarize
from raleval.records import AgentSpec, Step, Task, Termination, ToolCall, Trajectory

QUESTION = "How many citations does Ada Lin of Grikrart Institute have?"
GOLD = [
    ToolCall(
        tool="searchPerson", arguments={"name": "Ada Lin", "organization": "Grikrart Institute"}
    ),
    ToolCall(tool="getPersonBasicInfo", arguments={"person_id": "p7"}),
]


def _task(solution=GOLD, **metadata) -> Task:
    return Task(
        id="t1",
        domain="scholar",
        level="KS",
        family="1-3",
        question=QUESTION,
        answers=["63"],
        solution=solution,
        metadata=metadata,
    )


def _traj(calls: list[tuple[str, dict]], observations: list[str] | None = None) -> Trajectory:
    observations = observations or ["..."] * len(calls)
    steps = [
        Step(index=i, tool=tool, arguments=args, observation=obs)
        for i, ((tool, args), obs) in enumerate(zip(calls, observations, strict=True))
    ]
    steps.append(Step(index=len(steps), tool="Finish", arguments={"answer": "63"}))
    return Trajectory(
        task_id="t1",
        agent=AgentSpec(workflow="react", model="scripted/x", env="scholar"),
        steps=steps,
        answer="63",
        termination=Termination.finished,
        started_at=datetime(2026, 1, 1, tzinfo=timezone.utc),
        wall_time_s=0.1,
    )


def test_the_gold_path_scores_one_with_normalised_arguments():
    traj = _traj(
        [
            (
                "searchPerson",
                {"name": "  ada  LIN", "organization": "grikrart institute", "interest": None},
            ),
            ("getPersonBasicInfo", {"person_id": "P7"}),
        ],
        ["[]", '{"num_citation": 63}'],
    )
    assert call_scores(traj, _task()) == {
        "call_precision": 1.0,
        "call_recall": 1.0,
        "call_f1": 1.0,
        "evidence_retrieved": 1.0,
        "on_gold_path": 1.0,
    }


def test_a_wrong_call_lowers_precision_and_marks_the_departure():
    traj = _traj(
        [
            ("searchPerson", {"name": "Ada Lin", "organization": "Grikrart Institute"}),
            ("getPersonPubs", {"person_id": "p7"}),
            ("getPersonBasicInfo", {"person_id": "p7"}),
        ]
    )
    scores = call_scores(traj, _task())
    assert scores["call_precision"] == 2 / 3
    assert scores["call_recall"] == 1.0
    assert scores["on_gold_path"] == 0.0
    assert scores["first_departure"] == 1.0
    assert scores["evidence_retrieved"] == 0.0


def test_order_counts_where_a_call_needs_an_earlier_result():
    assert needs_order(QUESTION, GOLD) == [False, True]
    # the person id before the search that finds it: the dependent call does not count
    traj = _traj(
        [
            ("getPersonBasicInfo", {"person_id": "p7"}),
            ("searchPerson", {"name": "Ada Lin", "organization": "Grikrart Institute"}),
        ]
    )
    scores = call_scores(traj, _task())
    assert scores["call_recall"] == 0.5
    assert scores["call_precision"] == 0.5
    assert scores["first_departure"] == 0.0


def test_independent_calls_match_in_any_order():
    both = [
        ToolCall(tool="searchPerson", arguments={"name": "Ada Lin"}),
        ToolCall(tool="searchPerson", arguments={"organization": "Grikrart Institute"}),
    ]
    assert needs_order(QUESTION, both) == [False, False]
    traj = _traj(
        [
            ("searchPerson", {"organization": "Grikrart Institute"}),
            ("searchPerson", {"name": "Ada Lin"}),
        ]
    )
    scores = call_scores(traj, _task(solution=both))
    assert (scores["call_precision"], scores["call_recall"]) == (1.0, 1.0)
    # the departure point is order-free where matching is: the second look-up first stays on
    # the path (it was off the path at step 0 when only recall was order-free, issue 46)
    assert scores["on_gold_path"] == 1.0 and "first_departure" not in scores
    # ... and a wrong call after it is where the agent left
    traj = _traj(
        [
            ("searchPerson", {"organization": "Grikrart Institute"}),
            ("getPersonPubs", {"person_id": "p7"}),
        ]
    )
    assert call_scores(traj, _task(solution=both))["first_departure"] == 1.0


def test_an_alternative_path_is_scored_when_it_fits_better():
    alt = [[{"tool": "searchPerson", "arguments": {"name": "Ada Lin"}}]]
    traj = _traj([("searchPerson", {"name": "Ada Lin"})])
    scores = call_scores(traj, _task(alt_solutions=alt))
    assert (scores["call_precision"], scores["call_recall"], scores["on_gold_path"]) == (
        1.0,
        1.0,
        1.0,
    )


def test_a_retry_of_the_same_call_stays_on_the_path_but_costs_precision():
    call = ("searchPerson", {"name": "Ada Lin", "organization": "Grikrart Institute"})
    scores = call_scores(_traj([call, call]), _task())
    assert scores["on_gold_path"] == 1.0
    assert scores["call_precision"] == 0.5
    assert scores["call_recall"] == 0.5


def test_no_calls_and_no_solution():
    scores = call_scores(_traj([]), _task())
    assert (scores["call_precision"], scores["call_recall"], scores["on_gold_path"]) == (
        0.0,
        0.0,
        1.0,
    )
    assert call_scores(_traj([]), _task(solution=None)) == {}


def test_normalised_arguments_compare_numbers_by_value():
    assert normalize_arguments({"k": "3", "x": None}) == normalize_arguments({"k": 3.0})


def test_scoring_stores_them_and_the_table_shows_them():
    traj = _traj([("searchPerson", {"name": "Ada Lin", "organization": "Grikrart Institute"})])
    task = _task()
    score_trajectory(traj, task)
    assert traj.scores["call_precision"] == 1.0
    assert traj.scores["call_recall"] == 0.5
    rows = summarize([traj], {"t1": task})
    assert (rows[0].call_precision, rows[0].call_recall) == (1.0, 0.5)
    table = render_table(rows).renderables[0]  # the scores table (the label mix follows)
    headers = [c.header for c in table.columns]
    assert headers[4:6] == ["F1", "±"] and headers[7:9] == ["call P", "call R"]
    assert list(table.columns[8].cells) == ["0.500"]  # fractions, as the matrix prints them
