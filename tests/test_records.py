import json

import pytest
from pydantic import ValidationError

from raleval.records import Level, Step, Task, Termination, Trajectory


def _task(**kw):
    data = {
        "id": "t1",
        "domain": "scholar",
        "level": "KS",
        "family": "1-3",
        "question": "Q?",
        "answers": ["42"],
    }
    data.update(kw)
    return Task(**data)


def test_task_round_trips_through_json():
    t = _task(
        solution=[{"tool": "searchPerson", "arguments": {"name": "A"}}], tags={"popularity": "tail"}
    )
    again = Task.model_validate_json(t.model_dump_json())
    assert again == t
    assert again.level is Level.KS
    assert again.solution[0].arguments == {"name": "A"}


@pytest.mark.parametrize(
    "bad", [{"answers": []}, {"level": "KX"}, {"typo_field": 1}, {"tags": {"popularity": "famous"}}]
)
def test_task_rejects_bad_fields(bad):
    with pytest.raises(ValidationError):
        _task(**bad)


def test_trajectory_forbids_unknown_fields_and_keeps_schema_version():
    data = {
        "task_id": "t1",
        "agent": {"workflow": "react", "model": "scripted/oracle", "env": "scholar"},
        "termination": "finished",
        "started_at": "2026-01-01T00:00:00Z",
        "wall_time_s": 1.0,
    }
    traj = Trajectory(**data)
    dumped = json.loads(traj.model_dump_json())
    assert dumped["schema_version"] == 1
    assert Trajectory.model_validate(dumped).termination is Termination.finished
    with pytest.raises(ValidationError):
        Trajectory(**data, bogus=True)
    with pytest.raises(ValidationError):
        Step(index=0, kind="exploded")


def test_a_run_records_the_commit_its_process_started_on(monkeypatch):
    """A chunk of a study runs for hours; a commit made meanwhile must not be recorded for the
    cells it starts later (they run the code the process loaded)."""
    import subprocess
    from types import SimpleNamespace

    from raleval.app import rundir

    heads = iter(["a" * 40, "b" * 40])
    monkeypatch.setattr(
        subprocess, "run", lambda *a, **k: SimpleNamespace(returncode=0, stdout=next(heads))
    )
    rundir.git_revision.cache_clear()
    try:
        assert rundir.git_revision() == "a" * 40
        assert rundir.git_revision() == "a" * 40  # HEAD moved; the process's code did not
    finally:
        rundir.git_revision.cache_clear()
