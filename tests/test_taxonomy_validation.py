"""raleval's labels against hand-labelled trajectories (tests/data).

- ``taxonomy_scripted.jsonl``: scripted agents failing in known ways (every stop reason x
  correct/wrong x evidence/no evidence, misuse in every workflow, invalid premises, titles);
  labels from the paper's definitions (``build_taxonomy_scripted.py``). 100% agreement.
- ``taxonomy_real.jsonl``: SmolLM2-135M (``local/smollm2-135m``, CPU) episodes, each labelled
  by hand with a one-line reason; the agreement is printed (README quotes it).
"""

import json
from pathlib import Path

import pytest

from raleval.analysis.scoring import score_trajectory
from raleval.records import StopReason, Task, Termination, Trajectory

DATA = Path(__file__).parent / "data"


def _cases(name):
    return [json.loads(line) for line in (DATA / name).read_text().splitlines() if line.strip()]


SCRIPTED = _cases("taxonomy_scripted.jsonl")


def test_scripted_set_covers_every_stop_reason_and_outcome():
    assert len(SCRIPTED) >= 60
    seen = {tuple(c["name"].split("/")) for c in SCRIPTED if len(c["name"].split("/")) == 3}
    want = {
        (s.value, c, e)
        for s in StopReason
        for c in ("correct", "wrong")
        for e in ("evidence", "no-evidence")
    }
    assert want <= seen
    assert all(c["reason"] for c in SCRIPTED)


@pytest.mark.parametrize("case", SCRIPTED, ids=[c["name"] for c in SCRIPTED])
def test_scripted_agreement_is_total(case):
    traj = Trajectory.model_validate(case["trajectory"])
    score_trajectory(traj, Task.model_validate(case["task"]))
    assert traj.error_type.value == case["label"], (traj.error_cause, case["reason"])
    assert (traj.error_subcause == "harness_limit") is case["harness_limit"]


BUDGET_STOPS = (
    (Termination.step_limit, None),
    (Termination.cost_limit, "cost_budget"),
    (Termination.timeout, "wall_clock"),
    (Termination.context_limit, "token_budget"),
    (Termination.context_limit, "context_window"),
)


def _under_every_budget(case, steps=None):
    """``case``'s episode cut before answering by each budget: (label, cause, sub-cause)."""
    labels = {}
    for term, cause in BUDGET_STOPS:
        data = {**case["trajectory"], "termination": term, "termination_cause": cause}
        data["answer"] = None  # cut before answering
        if steps is not None:
            data["steps"] = steps
        traj = Trajectory.model_validate(data)
        score_trajectory(traj, Task.model_validate(case["task"]))
        labels[(term.value, cause)] = (
            traj.error_type.value,
            traj.error_cause,
            traj.error_subcause,
        )
    return labels


def test_a_looping_trajectory_is_re_under_every_budget():
    """R-Eval: "There is an issue with the logic of the retrieval if the process is halted":
    an episode that made only valid calls (here the same call, looping) until a budget stopped
    it is RE whichever budget tripped first, with the budget kept in the cause."""
    base = next(c for c in SCRIPTED if c["name"] == "answered/wrong/no-evidence")
    loop = [{**base["trajectory"]["steps"][0], "index": i} for i in range(6)]
    labels = _under_every_budget(base, loop)
    assert {label for label, _, _ in labels.values()} == {"RE"}, labels
    assert labels[("step_limit", None)][1:] == ("RE:step_budget", None)
    assert labels[("cost_limit", "cost_budget")][1:] == ("RE:cost_budget", None)
    assert labels[("timeout", "wall_clock")][1:] == ("RE:time_budget", "harness_limit")
    assert labels[("context_limit", "token_budget")][1:] == ("RE:token_budget", None)
    assert labels[("context_limit", "context_window")][1:] == (
        "RE:context_overflow",
        "harness_limit",
    )
    evidence = next(c for c in SCRIPTED if c["name"] == "answered/wrong/evidence")
    assert {label for label, _, _ in _under_every_budget(evidence).values()} == {"GE"}


def test_misuse_then_a_budget_stop_stays_te():
    """Improper use interrupted the retrieval; the budget that stopped it afterwards does not
    turn the episode into a reasoning error."""
    case = next(c for c in SCRIPTED if c["name"] == "misuse/react/bad_arguments")
    labels = _under_every_budget(case)
    assert {label for label, _, _ in labels.values()} == {"TE"}, labels
    assert labels[("step_limit", None)][1] == "TE:step_budget:bad_arguments"


def test_real_local_model_agreement_is_printed(capsys):
    real = _cases("taxonomy_real.jsonl")
    assert len(real) >= 20 and all(c["reason"] for c in real)
    agree, lines = 0, []
    for case in real:
        traj = Trajectory.model_validate(case["trajectory"])
        score_trajectory(traj, Task.model_validate(case["task"]))
        got = traj.error_type.value
        agree += got == case["label"]
        if got != case["label"]:
            lines.append(f"  {traj.task_id}: hand {case['label']}, raleval {got}: {case['reason']}")
    with capsys.disabled():
        print(f"\nreal-trajectory agreement: {agree}/{len(real)}")
        print("\n".join(lines))
    # a floor, not the figure: the figure is printed and quoted in the README
    assert agree / len(real) >= 0.8
