"""Yes/no items carry the fact that decides them as evidence (issue 45): every generated
yes/no task names what its answer reads, its gold solution shows all of it, and an episode
that made the gold calls and answered right is EM (the word "yes" is never evidence)."""

from datetime import datetime, timezone

import pytest

from raleval import registry
from raleval.analysis.scoring import score_trajectory
from raleval.records import AgentSpec, Step, Trajectory

ENVS = ("scholar", "wiki", "crag")


@pytest.fixture(scope="module")
def yes_no_tasks():
    envs = {name: registry.envs.get(name)(size="tiny") for name in ENVS}
    out = []
    for family in registry.task_families.load_all().values():
        if family.env not in envs:
            continue
        env = envs[family.env]
        for seed in (0, 1):
            for task in family.generate(env, 12, seed):
                if task.answers and task.answers[0].strip().lower() in ("yes", "no"):
                    out.append((env, task))
    return out


def _episode(env, task, answer: str) -> Trajectory:
    session = env.session(task)
    steps = [
        Step(index=i, tool=c.tool, arguments=c.arguments, observation=r.observation)
        for i, c in enumerate(task.solution or [])
        for r in [session.call_sync(c.tool, c.arguments)]
    ]
    steps.append(Step(index=len(steps), tool="Finish", arguments={"answer": answer}))
    return Trajectory(
        task_id=task.id,
        agent=AgentSpec(workflow="react", model="m", env=task.domain),
        answer=answer,
        termination="finished",
        steps=steps,
        started_at=datetime(2026, 1, 1, tzinfo=timezone.utc),
        wall_time_s=1.0,
    )


def test_every_yes_no_family_names_its_deciding_fact(yes_no_tasks):
    families = {t.family for _, t in yes_no_tasks}
    # wiki's kind-of and property questions, scholar's rank, CRAG's comparisons at least
    assert {"2-1", "2-2", "2-4", "crag-comparison"} <= families, families
    missing = [t.id for _, t in yes_no_tasks if not t.evidence]
    assert missing == []


def test_a_grounded_yes_no_answer_is_em_and_a_blind_one_am(yes_no_tasks):
    for env, task in yes_no_tasks:
        gold = task.answers[0]
        traj = _episode(env, task, gold)
        score_trajectory(traj, task)
        assert (traj.error_type.value, traj.scores["correct"]) == ("EM", 1.0), task.id
        blind = _episode(env, task.model_copy(update={"solution": []}), gold)
        score_trajectory(blind, task)
        assert blind.error_type.value == "AM", task.id
