"""--backend ray on a local Ray instance with 2 workers equals the single-process run."""

from __future__ import annotations

import importlib.util
import os

import pytest

from raleval.store import RESULTS

from .conftest import run_config
from .test_crash_safety import comparable

pytestmark = [pytest.mark.slow, pytest.mark.integration]


def _need_ray() -> None:
    if importlib.util.find_spec("ray") is None:
        if os.environ.get("CI"):
            pytest.fail("CI installs the ray extra")
        pytest.skip("needs the ray extra")


def test_ray_shards_equal_the_single_process_run(tmp_path):
    _need_ray()
    options = {"limit": 24, "tasks_per_family": 24, "env_options": {"size": "small"}}
    local, _ = run_config(tmp_path / "local", **options)
    sharded, _ = run_config(tmp_path / "ray", backend="ray", workers=2, **options)
    assert sharded.ran == 24 and sharded.mean_f1 == 1.0
    assert not list(sharded.run_dir.glob("results.shard-*.jsonl"))  # merged and removed
    lines = (sharded.run_dir / RESULTS).read_text().splitlines()
    assert len(lines) == 24
    assert comparable(sharded.run_dir.parent) == comparable(local.run_dir.parent)
    again, _ = run_config(tmp_path / "ray", backend="ray", workers=2, **options)
    assert again.ran == 0 and again.skipped == 24  # resume works the same way


def test_merge_is_idempotent_after_a_crash(tmp_path):
    from raleval.app.runner import merge_shards
    from raleval.store import ResultsFile

    _, results = run_config(tmp_path, limit=6)
    run_dir = tmp_path / "scholar__react__scripted_oracle__scholar-ks"
    (run_dir / RESULTS).rename(run_dir / "results.shard-0.jsonl")
    half = results[:3]
    for t in half:  # a crash after merging half of the shard
        ResultsFile(run_dir / RESULTS).append(t)
    assert merge_shards(run_dir) == 3
    keys = [t.task_id for t in ResultsFile(run_dir / RESULTS)]
    assert sorted(keys) == sorted(t.task_id for t in results)
