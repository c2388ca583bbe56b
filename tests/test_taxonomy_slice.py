"""Golden tests of each taxonomy branch on hand-written trajectories."""

from datetime import datetime, timezone

import pytest

from raleval.analysis.taxonomy import REVAL_THRESHOLD, classify, evidence_found
from raleval.records import AgentSpec, Step, Trajectory


def _traj(answer, termination="finished", steps=(), cause=None):
    return Trajectory(
        task_id="t",
        agent=AgentSpec(workflow="react", model="m", env="e"),
        answer=answer,
        termination=termination,
        termination_cause=cause,
        steps=list(steps),
        started_at=datetime(2026, 1, 1, tzinfo=timezone.utc),
        wall_time_s=1.0,
    )


OBS = Step(index=0, tool="searchPerson", observation='[{"name": "Ada Lin", "num_pubs": 17}]')
FINISH_17 = Step(index=1, tool="Finish", arguments={"answer": "17"}, observation=None)
THOUGHT_ONLY = Step(
    index=0, thought="I think it is 17", tool="searchPerson", observation="No person found."
)


@pytest.mark.parametrize(
    ("traj", "label", "cause"),
    [
        (_traj("17", steps=[OBS, FINISH_17]), "EM", "EM:grounded"),
        (_traj("17", steps=[THOUGHT_ONLY, FINISH_17]), "AM", "AM:from_memory"),
        (_traj("12", steps=[OBS]), "GE", "GE:evidence_ignored"),
        (_traj("12", steps=[THOUGHT_ONLY]), "RE", "RE:wrong_answer"),
        # halted on a budget after valid calls only: R-Eval's RE, the budget in the cause
        (_traj(None, "step_limit", [THOUGHT_ONLY]), "RE", "RE:step_budget"),
        (
            _traj(
                None, "invalid_format", [Step(index=0, kind="parse_error", cause="invalid_format")]
            ),
            "TE",
            "TE:unparseable_output:invalid_format",
        ),
        (_traj(None, "llm_error", [], "empty_response"), "ME", "ME:model_failure:empty_response"),
        (_traj(None, "tool_fault", [], "timeout"), "ME", "ME:tool_failure:timeout"),
        # the wall clock is a budget like the step count (was ME, then TE: the machine moved it)
        (_traj(None, "timeout", [], "wall_clock"), "RE", "RE:time_budget"),
        # evidence retrieved, then the model backend died before any answer: GE (R-Eval asks
        # whether the scratchpad held the answer before it asks why the process stopped)
        (_traj(None, "llm_error", [OBS], "backend_error"), "GE", "GE:evidence_ignored"),
        # no evidence, then the backend died: ME
        (_traj(None, "llm_error", [], "backend_error"), "ME", "ME:model_failure:backend_error"),
        # evidence retrieved, budget spent without answering: still GE
        (_traj(None, "step_limit", [OBS]), "GE", "GE:evidence_ignored"),
    ],
)
def test_every_branch(traj, label, cause):
    assert classify(traj, ["17"]) == (label, cause)


def test_own_finish_line_is_not_evidence():
    assert not evidence_found(_traj("17", steps=[THOUGHT_ONLY, FINISH_17]), ["17"])


def test_short_gold_does_not_match_inside_other_tokens():
    step = Step(index=0, tool="x", observation="the year 2017 and 170 items")
    assert not evidence_found(_traj("17", steps=[step]), ["17"])


def test_reval_threshold_is_lenient():
    traj = _traj("Ada Lin of the Qerrin Institute of Technology Labs", steps=[OBS])
    assert classify(traj, ["Ada"], REVAL_THRESHOLD)[0] == "EM"
    assert classify(traj, ["Ada"])[0] == "GE"


def test_abstention_is_correct_only_where_no_answer_exists():
    from raleval.analysis.scoring import score_trajectory
    from raleval.records import Task

    base = {"id": "t", "domain": "scholar", "level": "KS", "family": "x", "question": "q"}
    unanswerable = Task(**base, answers=["I don't know"], tags={"answerable": False})
    premise = Task(**base, answers=["invalid question"], tags={"question_type": "false_premise"})
    normal = Task(**base, answers=["17"])
    for task, rejection in ((unanswerable, "I do not know."), (premise, "Invalid question.")):
        # no tool call: the rejection came from the model alone, AM (issue 19: it was EM)
        t = _traj(rejection)
        score_trajectory(t, task)
        assert (t.scores["f1"], t.error_type, t.error_cause) == (1.0, "AM", "AM:correct_rejection")
        checked = _traj(rejection, steps=[THOUGHT_ONLY])
        score_trajectory(checked, task)
        assert (checked.error_type, checked.error_cause) == ("EM", "EM:correct_rejection")
        wrong = _traj("17")
        score_trajectory(wrong, task)
        assert wrong.scores["f1"] == 0.0 and wrong.error_type == "RE"
    # CRAG: "I don't know" on a false premise is missing (0), not a correct rejection
    idk = _traj("I don't know")
    score_trajectory(idk, premise)
    assert (idk.scores["crag"], idk.scores["missing"]) == (0.0, 1.0)
    assert idk.error_cause != "EM:correct_rejection"
    t = _traj("I don't know")
    score_trajectory(t, normal)
    assert t.scores == {
        "correct": 0.0,
        "score": 0.0,
        "f1": 0.0,
        "em": 0.0,
        "relaxed_f1": 0.0,
        "crag": 0.0,
        "missing": 1.0,
    }
    assert t.error_type == "RE"
