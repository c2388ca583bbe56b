"""--backend processes: episodes run in local worker processes, the driver alone writes.

Each test runs real worker interpreters (``raleval.app.process_backend``); a lost
worker is a real SIGKILL of one of them, and Ctrl-C is a real SIGINT to a `raleval run`.
"""

from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import sys
import threading
import time

import psutil
import pytest

from raleval.store import RESULTS

from .conftest import run_config
from .test_crash_safety import comparable

pytestmark = [pytest.mark.slow, pytest.mark.integration]

OPTIONS = {"limit": 24, "tasks_per_family": 24, "env_options": {"size": "small"}}
WORKER = "raleval.app.process_backend"


def workers_of(pid: int) -> list[psutil.Process]:
    out = []
    for child in psutil.Process(pid).children(recursive=True):
        try:
            if WORKER in " ".join(child.cmdline()):
                out.append(child)
        except psutil.Error:
            continue
    return out


@pytest.mark.parametrize("slots", [None, 1])
def test_a_processes_run_equals_the_local_run_and_resumes(tmp_path, slots):
    """With one slot per worker each holds two episodes at a time and is handed the rest one
    by one as it returns them (the driver's top-up and its word that no more will come)."""
    fed = {"max_connections": slots} if slots else {}
    local, _ = run_config(tmp_path / "local", **OPTIONS)
    pooled, results = run_config(
        tmp_path / "pool", backend="processes", workers=2, **fed, **OPTIONS
    )
    assert pooled.ran == 24 and pooled.mean_f1 == 1.0 and pooled.worker_errors == []
    assert sorted(p.name for p in pooled.run_dir.iterdir()) == [
        ".raleval.lock",
        "header.json",
        RESULTS,
        "tasks.jsonl",
    ]
    assert len(results) == 24 and {t.attempt for t in results} == {0}
    assert comparable(pooled.run_dir.parent) == comparable(local.run_dir.parent)
    again, _ = run_config(tmp_path / "pool", backend="processes", workers=2, **fed, **OPTIONS)
    assert again.ran == 0 and again.skipped == 24  # resume skips what is on disk


def test_a_killed_worker_costs_no_episode_and_duplicates_none(tmp_path):
    """SIGKILL one worker once some episodes are written: its unreturned episodes go to a new
    worker, none is written twice, none is lost."""
    results_path = tmp_path / "scholar__react__scripted_oracle__scholar-ks" / RESULTS
    killed: list[int] = []

    def kill_one() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            done = len(results_path.read_text().splitlines()) if results_path.exists() else 0
            victims = workers_of(os.getpid())
            if done >= 3 and victims:
                victims[0].kill()
                killed.append(victims[0].pid)
                return
            time.sleep(0.02)

    killer = threading.Thread(target=kill_one)
    killer.start()
    summary, results = run_config(
        tmp_path,
        backend="processes",
        workers=2,
        max_connections=2,
        model_options={"latency_s": 0.1},  # episodes last long enough to be killed mid-way
        **OPTIONS,
    )
    killer.join()
    assert len(killed) == 1
    assert summary.worker_errors == ["worker process killed by signal 9"]
    assert summary.ran == 24 and summary.failures == {} and summary.mean_f1 == 1.0
    keys = collections.Counter((t.task_id, t.epoch) for t in results)
    assert len(keys) == 24 and set(keys.values()) == {1}
    assert {t.attempt for t in results} == {0}
    assert workers_of(os.getpid()) == []  # no worker outlives the run


def test_workers_that_cannot_start_leave_the_episodes_to_a_resume(tmp_path, capsys):
    # the driver never resolves the model: workers that cannot make it fail every round,
    # and the run says why, writing nothing
    summary, results = run_config(
        tmp_path, backend="processes", workers=2, model="scripted/nonexistent", **OPTIONS
    )
    assert results == [] and summary.ran == 0
    assert summary.failures == {"worker_process_lost": 24}
    assert len(summary.worker_errors) == 6  # two workers, three rounds
    assert all("nonexistent" in e for e in summary.worker_errors)
    err = capsys.readouterr().err
    assert "processes: a worker ended early (24 episode(s) not returned)" in err


def test_ctrl_c_stops_the_workers_and_a_resume_completes(tmp_path):
    cmd = [
        sys.executable, "-m", "raleval", "run", "--model", "scripted/oracle",
        "-M", "latency_s=0.05", "-E", "size=small", "--tasks", "scholar-ks",
        "--tasks-per-family", "40", "--max-connections", "2", "--display", "none",
        "--backend", "processes", "--workers", "2", "--log-dir", str(tmp_path),
    ]  # fmt: skip
    results_path = tmp_path / "scholar__react__scripted_oracle__scholar-ks" / RESULTS
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    deadline = time.monotonic() + 120
    while not (results_path.exists() and len(results_path.read_text().splitlines()) >= 3):
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
        time.sleep(0.02)
    workers = workers_of(proc.pid)
    assert len(workers) == 2
    # a terminal's Ctrl-C reaches the whole process group: the workers ignore it
    for p in (proc.pid, *(w.pid for w in workers)):
        os.kill(p, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "episodes in flight are dropped" in err and "resume with: raleval run" in err
    assert not any(w.is_running() and w.status() != psutil.STATUS_ZOMBIE for w in workers)
    partial = results_path.read_text().splitlines()
    assert 3 <= len(partial) < 40 and all(json.loads(x) for x in partial)
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    ids = [json.loads(x)["task_id"] for x in results_path.read_text().splitlines()]
    assert len(ids) == len(set(ids)) == 40


def test_workers_import_the_driver_s_raleval_not_one_in_the_working_directory(
    tmp_path, monkeypatch
):
    """Started from a folder that holds another ``raleval/`` (a checkout of another version),
    the workers still run the driver's code: they start on its ``sys.path``, not with the
    working directory first (as ``python -m`` would put it)."""
    decoy = tmp_path / "elsewhere"
    (decoy / "raleval").mkdir(parents=True)
    (decoy / "raleval" / "__init__.py").write_text("raise ImportError('the decoy raleval')\n")
    monkeypatch.chdir(decoy)
    options = {**OPTIONS, "limit": 4, "tasks_per_family": 4}
    pooled, results = run_config(tmp_path / "pool", backend="processes", workers=1, **options)
    assert pooled.worker_errors == [] and pooled.ran == 4 and len(results) == 4
