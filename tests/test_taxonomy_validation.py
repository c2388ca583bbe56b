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


def test_one_trajectory_gets_one_label_under_every_budget():
    """The same episode cut at the same point by the step, the cost, the time and the token
    budget (or the model's context window): the class never depends on which limit tripped
    first."""
    base = next(c for c in SCRIPTED if c["name"] == "answered/wrong/no-evidence")
    evidence = next(c for c in SCRIPTED if c["name"] == "answered/wrong/evidence")
    for case in (base, evidence):
        labels = {}
        for term, cause in (
            (Termination.step_limit, None),
            (Termination.cost_limit, "cost_budget"),
            (Termination.timeout, "wall_clock"),
            (Termination.context_limit, "token_budget"),
            (Termination.context_limit, "context_window"),
        ):
            data = {**case["trajectory"], "termination": term, "termination_cause": cause}
            data["answer"] = None  # cut before answering
            traj = Trajectory.model_validate(data)
            score_trajectory(traj, Task.model_validate(case["task"]))
            labels[(term.value, cause)] = (traj.error_type.value, traj.error_subcause)
        assert len({label for label, _ in labels.values()}) == 1, labels
        assert labels[("timeout", "wall_clock")][1] == "harness_limit"
        assert labels[("step_limit", None)][1] is None


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
