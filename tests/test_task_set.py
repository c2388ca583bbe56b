"""One call prepares a run's task set (raleval.app.taskset, raleval.tasks.catalog.prepare_tasks):
the same tasks, selection and demonstrations as loading, filtering, selecting and drawing them
one by one, with subgoals attached to the chosen tasks only."""

from __future__ import annotations

import dataclasses

import pytest

from raleval.app.demonstrations import demonstration_tasks, demonstration_world
from raleval.app.taskset import TaskSetRequest, prepare_task_set
from raleval.config import RunConfig
from raleval.tasks.catalog import TaskRequest, load_tasks, prepare_tasks
from raleval.tasks.sampling import select
from raleval.tasks.subgoals import SUBGOALS


def _fields(**overrides) -> dict:
    fields = {"spec": "scholar", "env_name": "scholar", "per_family": 4, "seed": 0, "limit": 5}
    return {**fields, **overrides}


def _request(**overrides) -> TaskRequest:
    return TaskRequest(**_fields(**overrides))


def test_prepared_tasks_are_the_loaded_and_selected_ones(scholar_env):
    prepared = prepare_tasks(_request(sample_seed=3), scholar_env)
    expected = select(load_tasks("scholar", scholar_env, "scholar", 4, 0), 5, None, 3)
    assert [t.model_dump() for t in prepared.tasks] == [t.model_dump() for t in expected]
    assert any(t.metadata.get(SUBGOALS) for t in prepared.tasks)
    assert prepared.selection == {}
    assert prepared.foreign is None


def test_subgoals_are_attached_to_the_chosen_tasks_only(scholar_env):
    seen = []

    def keep(pool):
        seen.extend(pool)
        return pool[1:], {"pool": len(pool), "kept": len(pool) - 1}

    prepared = prepare_tasks(_request(limit=2), scholar_env, keep)
    assert len(seen) > 2
    chosen = {t.id for t in prepared.tasks}
    assert seen[0].id not in chosen  # the filter's choice is what selection sees
    assert prepared.selection == {"pool": len(seen), "kept": len(seen) - 1}
    assert all(SUBGOALS in t.metadata for t in prepared.tasks if t.solution)
    assert not any(SUBGOALS in t.metadata for t in seen if t.id not in chosen)


def test_named_tasks_skip_the_pool_filter(scholar_env):
    pool = load_tasks("scholar", scholar_env, "scholar", 4, 0)
    ids = (pool[2].id, pool[0].id)

    def refuse(pool):
        raise AssertionError("a --sample-id run is not filtered")

    prepared = prepare_tasks(_request(limit=None, sample_ids=ids), scholar_env, refuse)
    assert tuple(t.id for t in prepared.tasks) == ids


def test_tasks_of_another_world_are_named(scholar_env, tmp_path):
    from raleval.envs.scholar import make_scholar_env
    from raleval.store import write_tasks

    other = make_scholar_env(size="tiny", seed=1)
    path = tmp_path / "other.jsonl"
    write_tasks(path, load_tasks("scholar", other, "scholar", 2, 0))
    request = _request(spec=str(path))
    foreign = prepare_tasks(request, scholar_env).foreign
    assert foreign is not None and "was made for world" in foreign
    assert prepare_tasks(request, other).foreign is None
    allowed = dataclasses.replace(request, allow_foreign=True)
    assert prepare_tasks(allowed, scholar_env).foreign is None


def test_prepared_task_set_matches_the_demonstrations_drawn_one_by_one(scholar_env, tmp_path):
    config = RunConfig(env="scholar", model="scripted/oracle", tasks="scholar", log_dir=tmp_path)
    config = config.model_copy(update={"env_options": {"size": "tiny"}, "tasks_per_family": 4})
    request = TaskSetRequest(**_fields(), workflow="react", shots=2, env_options={"size": "tiny"})
    prepared = prepare_task_set(request, scholar_env)
    world = demonstration_world(config, scholar_env)
    expected = demonstration_tasks(config, scholar_env, list(prepared.tasks), 2, world)
    assert {f: [t.id for t in g] for f, g in prepared.demonstrations.items()} == {
        f: [t.id for t in g] for f, g in expected.items()
    }
    assert prepared.demonstrations and set(prepared.examples) == set(prepared.demonstrations)
    for family, group in prepared.examples.items():
        assert len(group) == len(prepared.demonstrations[family])
        example, _tools = group[0]
        assert example.question == prepared.demonstrations[family][0].question
        assert example.calls and all(text for _, text in example.calls)
    with pytest.raises(dataclasses.FrozenInstanceError):
        prepared.tasks = ()  # type: ignore[misc]


def test_a_resumed_run_keeps_its_recorded_tasks(scholar_env):
    first = prepare_task_set(TaskSetRequest(**_fields(), workflow="react"), scholar_env)
    changed = first.tasks[0].model_copy(update={"question": "as recorded"})
    again = prepare_task_set(
        TaskSetRequest(**_fields(), workflow="react", recorded=(changed,)), scholar_env
    )
    assert again.tasks[0].question == "as recorded"
    assert [t.id for t in again.tasks] == [t.id for t in first.tasks]
