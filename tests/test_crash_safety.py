"""Runs killed with SIGKILL or stopped with Ctrl-C lose nothing and duplicate nothing."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

N_TASKS = 40
RUN = "scholar__react__scripted_oracle__scholar-ks"


def command(log_dir: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "raleval",
        "run",
        "--model",
        "scripted/oracle",
        "-M",
        "latency_s=0.03",
        "-E",
        "size=small",
        "--tasks",
        "scholar-ks",
        "--tasks-per-family",
        str(N_TASKS),
        "--max-connections",
        "4",
        "--display",
        "none",
        "--log-dir",
        str(log_dir),
    ]


def start(log_dir: Path) -> subprocess.Popen:
    return subprocess.Popen(
        command(log_dir),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def lines(log_dir: Path, run: str = RUN) -> list[str]:
    path = log_dir / run / "results.jsonl"
    return path.read_text().splitlines() if path.exists() else []


def wait_for_lines(log_dir: Path, n: int, proc: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while len(lines(log_dir)) < n:
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        assert time.monotonic() < deadline, "the run made no progress"
        time.sleep(0.05)


def comparable(log_dir: Path, run: str = RUN) -> dict[str, tuple]:
    """What must be identical between runs: everything but timings and dates."""
    out = {}
    for line in lines(log_dir, run):
        r = json.loads(line)
        out[r["task_id"]] = (
            r["answer"],
            r["termination"],
            r["error_type"],
            json.dumps(r["scores"], sort_keys=True),
            [
                (s["tool"], json.dumps(s["arguments"], sort_keys=True), s["observation"], s["kind"])
                for s in r["steps"]
            ],
            [c["output"] for c in r["llm_calls"]],
        )
    return out


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    log_dir = tmp_path_factory.mktemp("reference")
    out = subprocess.run(command(log_dir), capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return comparable(log_dir)


@pytest.mark.slow
def test_sigkill_at_random_points_then_resume_matches_an_uninterrupted_run(tmp_path, reference):
    rng = random.Random(7)
    kills = 0
    for _ in range(4):
        proc = start(tmp_path)
        done_before = len(lines(tmp_path))
        if done_before >= N_TASKS:
            proc.wait(timeout=60)
            break
        wait_for_lines(tmp_path, done_before + 1, proc)
        time.sleep(rng.uniform(0.0, 0.4))  # somewhere in the middle of the run
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.wait(timeout=30)
    final = start(tmp_path)
    assert final.wait(timeout=300) == 0, final.stderr.read()
    assert kills >= 3
    raw = lines(tmp_path)
    assert all(json.loads(x) for x in raw)  # no torn line survives
    ids = [json.loads(x)["task_id"] for x in raw]
    assert len(ids) == len(set(ids)) == N_TASKS  # every task exactly once
    assert comparable(tmp_path) == reference  # identical to the uninterrupted run


@pytest.mark.slow
def test_ctrl_c_finishes_running_episodes_then_resume_completes(tmp_path, reference):
    proc = start(tmp_path)
    wait_for_lines(tmp_path, 3, proc)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "stopping: no new episodes" in err and "resume with: raleval run" in err
    partial = lines(tmp_path)
    assert 3 <= len(partial) < N_TASKS and all(json.loads(x) for x in partial)
    again = start(tmp_path)
    assert again.wait(timeout=300) == 0
    assert comparable(tmp_path) == reference


@pytest.mark.slow
def test_second_ctrl_c_stops_at_once_without_corrupting_results(tmp_path):
    proc = start(tmp_path)
    wait_for_lines(tmp_path, 2, proc)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    started = time.monotonic()
    proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert time.monotonic() - started < 10
    assert all(json.loads(x) for x in lines(tmp_path))


@pytest.mark.slow
def test_two_runs_started_together_on_one_directory_write_each_episode_once(tmp_path):
    """The same command started twice at once: the second is refused (exit 2, naming the
    first's pid) before it writes anything, and the first writes every task exactly once."""
    cmd = [*command(tmp_path), "-M", "latency_s=0.2"]  # the later -M wins: a run of seconds
    procs = [
        subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outcomes = [(p.wait(timeout=300), p.stderr.read() if p.stderr else "") for p in procs]
    codes = sorted(code for code, _ in outcomes)
    assert codes == [0, 2], outcomes
    winner = next(p for p, (code, _) in zip(procs, outcomes, strict=True) if code == 0)
    refusal = next(err for code, err in outcomes if code == 2)
    assert f"another raleval run (pid {winner.pid}) is writing" in refusal
    ids = [json.loads(x)["task_id"] for x in lines(tmp_path)]
    assert len(ids) == len(set(ids)) == N_TASKS
