"""--backend ray on a local Ray cluster: the driver alone writes the run directory.

The cluster's workers are fenced off the test's directory (``tests/ray_hooks.py``: any file
operation under it raises in a worker), so these runs pass only if workers never see the run
directory: they receive tasks and return trajectories, and the driver writes.
"""

from __future__ import annotations

import collections
import importlib.util
import os

import pytest

from raleval.store import RESULTS

from .conftest import REPO, run_config
from .test_crash_safety import comparable

pytestmark = [pytest.mark.slow, pytest.mark.integration]

OPTIONS = {"limit": 24, "tasks_per_family": 24, "env_options": {"size": "small"}}


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory):
    if importlib.util.find_spec("ray") is None:
        if os.environ.get("CI"):
            pytest.fail("CI installs the ray extra")
        pytest.skip("needs the ray extra (pip install 'raleval[ray]')")
    import ray

    from .ray_hooks import CONTROL, FENCE

    fence = tmp_path_factory.mktemp("driver-only")
    control = tmp_path_factory.mktemp("control")
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={
            "env_vars": {FENCE: str(fence), CONTROL: str(control), "PYTHONPATH": str(REPO)},
            "worker_process_setup_hook": "tests.ray_hooks.install",
        },
    )
    yield fence, control
    ray.shutdown()


def test_the_fence_holds(ray_cluster):
    """The check the other tests rely on: a worker cannot read a file in the fenced tree."""
    import ray

    fence, _ = ray_cluster
    (fence / "probe.txt").write_text("driver's\n")

    @ray.remote
    def read(path: str) -> str:
        with open(path) as fh:
            return fh.read()

    with pytest.raises(ray.exceptions.RayTaskError, match="a Ray worker touched"):
        ray.get(read.remote(str(fence / "probe.txt")))


def test_ray_run_equals_the_local_run_and_resumes(ray_cluster, tmp_path):
    fence, _ = ray_cluster
    local, _ = run_config(tmp_path / "local", **OPTIONS)
    sharded, _ = run_config(fence / "ray", backend="ray", workers=2, **OPTIONS)
    assert sharded.ran == 24 and sharded.mean_f1 == 1.0 and sharded.worker_errors == []
    assert sorted(p.name for p in sharded.run_dir.iterdir()) == [
        ".raleval.lock",
        "header.json",
        RESULTS,
        "tasks.jsonl",
    ]
    assert len((sharded.run_dir / RESULTS).read_text().splitlines()) == 24
    assert comparable(sharded.run_dir.parent) == comparable(local.run_dir.parent)
    again, _ = run_config(fence / "ray", backend="ray", workers=2, **OPTIONS)
    assert again.ran == 0 and again.skipped == 24  # resume skips what is on disk


def test_a_lost_worker_costs_no_episode_and_duplicates_none(ray_cluster):
    fence, control = ray_cluster
    (control / "arm").touch()
    summary, results = run_config(fence / "lost", backend="ray", workers=2, **OPTIONS)
    assert (control / "fired").exists()  # a worker did die mid-run
    assert len(summary.worker_errors) == 1
    assert summary.ran == 24 and summary.failures == {}
    keys = collections.Counter((t.task_id, t.epoch) for t in results)
    assert len(keys) == 24 and set(keys.values()) == {1}
    assert {t.attempt for t in results} == {0}


def test_merge_is_idempotent_after_a_crash(tmp_path):
    """Run directories of older versions hold per-worker shard files: merged on resume."""
    from raleval.app.rundir import merge_shards
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


def test_workers_that_cannot_start_leave_the_episodes_to_a_resume(ray_cluster, capsys):
    # the driver never resolves the model (a local one would start a server there): a model
    # the workers cannot make fails every round, and the run says why, writing nothing
    fence, _ = ray_cluster
    summary, results = run_config(
        fence / "nomodel", backend="ray", workers=2, model="scripted/nonexistent", **OPTIONS
    )
    assert results == [] and summary.ran == 0
    assert summary.failures == {"ray_worker_lost": 24}
    assert len(summary.worker_errors) == 6  # two workers, three rounds
    assert all("nonexistent" in e for e in summary.worker_errors)
    assert "ray: a worker ended early (24 episode(s) not returned)" in capsys.readouterr().err
