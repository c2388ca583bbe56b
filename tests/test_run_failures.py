"""Infrastructure failures are visible, not scored, and retried; exit codes say what happened;
run directories keep one run; duplicate task ids and a full disk stop a run cleanly."""

from __future__ import annotations

import errno
import json
import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from raleval.app.cli import app
from raleval.config import ConfigError
from raleval.failures import failure_cause, latest_attempts
from raleval.records import AgentSpec, Termination, Trajectory
from raleval.store import RESULTS, TASKS, ResultsFile, read_tasks
from tests.stub_openai import StubServer

runner = CliRunner()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def results(run_dir: Path) -> list[dict]:
    return [json.loads(x) for x in (run_dir / RESULTS).read_text().splitlines()]


def test_closed_port_exits_1_then_retry_failed_exits_0(tmp_path):
    """Issue 22's acceptance line: every episode fails against a closed port (exit 1, a
    summary by cause); with the server up, --retry-failed runs only those and exits 0."""
    port = free_port()
    cmd = [
        "run", "--model", f"openai-compatible/ok@http://127.0.0.1:{port}/v1",
        "-M", "max_retries=1", "-M", "backoff_initial_s=0.01", "-M", "backoff_max_s=0.02",
        "--workflow", "direct", "-E", "size=tiny", "--tasks", "scholar-ks",
        "--tasks-per-family", "4", "--display", "none", "--no-cache",
        "--log-dir", str(tmp_path), "--run-name", "r",
        "--no-preflight",  # record the failures (a preflight would stop the run first)
    ]  # fmt: skip
    res = runner.invoke(app, cmd)
    assert res.exit_code == 1, res.output
    assert "4 episode(s) failed for infrastructure reasons" in res.output
    assert "connection_error 4" in res.output and "--retry-failed" in res.output
    first = results(tmp_path / "r")
    assert [r["failure"] for r in first] == ["connection_error"] * 4
    assert {r["attempt"] for r in first} == {0}
    # resuming without --retry-failed runs nothing and still reports the failures
    res = runner.invoke(app, cmd)
    assert res.exit_code == 1 and "0 episodes run, 4 already done" in res.output

    with StubServer(port=port):
        res = runner.invoke(app, [*cmd, "--retry-failed"])
    assert res.exit_code == 0, res.output
    assert "4 episodes run, 0 already done" in res.output
    lines = results(tmp_path / "r")
    assert len(lines) == 8  # earlier attempts kept: the file is append-only
    last = {(r["task_id"], r["epoch"]): r for r in lines}
    assert len(last) == 4
    assert all(r["failure"] is None and r["attempt"] == 1 for r in last.values())
    assert all(r["answer"] == "Paris" for r in last.values())


def test_retry_command_reruns_only_failed(tmp_path):
    port = free_port()
    cmd = [
        "run", "--model", f"openai-compatible/ok@http://127.0.0.1:{port}/v1",
        "-M", "max_retries=0", "--workflow", "direct", "-E", "size=tiny",
        "--tasks", "scholar-ks", "--tasks-per-family", "2", "--display", "none",
        "--no-cache", "--log-dir", str(tmp_path), "--run-name", "r", "--no-preflight",
    ]  # fmt: skip
    assert runner.invoke(app, cmd).exit_code == 1
    with StubServer(port=port) as stub:
        res = runner.invoke(app, ["retry", str(tmp_path / "r"), "--display", "none"])
        assert res.exit_code == 0, res.output
        assert stub.counts == {"ok": 2}
        res = runner.invoke(app, ["retry", str(tmp_path / "r"), "--display", "none"])
        assert res.exit_code == 0 and stub.counts == {"ok": 2}  # nothing failed: nothing rerun


def test_failed_episodes_are_not_scored(tmp_path):
    from raleval.analysis.summary import summarize
    from raleval.records import Task

    def traj(tid: str, attempt: int, term: Termination, cause: str | None, f1: float):
        return Trajectory(
            task_id=tid, agent=AgentSpec(workflow="w", model="m", env="e"), termination=term,
            termination_cause=cause, started_at="2026-01-01T00:00:00Z", wall_time_s=1.0,
            scores={"f1": f1, "correct": f1, "em": f1}, attempt=attempt,
        )  # fmt: skip

    tasks = {
        i: Task(id=i, family="f", level="KS", domain="d", question="q", answers=["a"])
        for i in ("a", "b", "c")
    }
    trajs = [
        traj("a", 0, Termination.llm_error, "connection_error", 0.0),
        traj("a", 1, Termination.finished, None, 1.0),  # the retry wins
        traj("b", 0, Termination.llm_error, "http_503", 0.0),  # still failed: not scored
        traj("c", 0, Termination.llm_error, "empty_response", 0.0),  # the model's failure
    ]
    assert [failure_cause(t) for t in trajs] == [
        "connection_error", None, "http_503", None,
    ]  # fmt: skip
    assert [(t.task_id, t.attempt) for t in latest_attempts(trajs)] == [
        ("a", 1), ("b", 0), ("c", 0),
    ]  # fmt: skip
    (row,) = summarize(trajs, tasks)
    assert (row.n, row.failed, row.f1) == (2, 1, 0.5)
    # a family whose every episode failed shows no scores at all, not zeros
    from rich.console import Console

    from raleval.analysis.summary import render_table

    console = Console(width=80, record=True)
    console.print(render_table(summarize(trajs[2:3], tasks)))
    text = console.export_text()
    assert "│ f      │KS    │0 │     1 │      - │ - │- │   - │   - │" in text


def test_run_dir_without_header_is_refused(tmp_path):
    from tests.conftest import run_config

    summary, _ = run_config(tmp_path, limit=2)
    (summary.run_dir / "header.json").unlink()
    expected = r"holds results without a readable header\.json; give this run its own directory"
    with pytest.raises(ConfigError, match=expected + " with --run-name NAME"):
        run_config(tmp_path, limit=2)
    # --force sets the old contents aside (nothing deleted) and starts a fresh run
    summary, res = run_config(tmp_path, limit=2, force=True)
    assert len(res) == 2
    (aside,) = summary.run_dir.glob("superseded-*")
    assert len((aside / RESULTS).read_text().splitlines()) == 2
    assert (summary.run_dir / "header.json").exists()


def test_other_config_is_refused_naming_it(tmp_path):
    res = runner.invoke(
        app,
        ["run", "--model", "scripted/oracle", "-E", "size=tiny", "--tasks", "scholar-ks",
         "--tasks-per-family", "3", "--display", "none", "--log-dir", str(tmp_path),
         "--run-name", "r"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    res = runner.invoke(
        app,
        ["run", "--model", "scripted/abstain", "-E", "size=tiny", "--tasks", "scholar-ks",
         "--tasks-per-family", "3", "--display", "none", "--log-dir", str(tmp_path),
         "--run-name", "r"],
    )  # fmt: skip
    assert res.exit_code == 2
    assert "holds a run with config model='scripted/oracle'" in res.output
    assert "--run-name NAME" in res.output and "--force" in res.output


def test_duplicate_task_ids_are_refused(tmp_path):
    from tests.conftest import run_config

    summary, _ = run_config(tmp_path, limit=2, run_name="src")
    tasks = read_tasks(summary.run_dir / TASKS)
    lines = [t.model_dump_json() for t in tasks] + [tasks[0].model_dump_json()]
    path = tmp_path / "dup.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ConfigError, match=rf"duplicate task id {tasks[0].id!r} \(tasks 1 and 3\)"):
        run_config(tmp_path, tasks=str(path), run_name="dup")


def test_full_disk_stops_before_next_model_call(tmp_path, monkeypatch):
    """ENOSPC at the write layer (simulated: a tmpfs needs root, see the marked test below):
    the run stops, lines written before stay whole, and a resume completes the run."""
    from raleval import store
    from tests.conftest import run_config

    calls = {"n": 0}
    real = store.ResultsFile.append_many

    def append_many(self, trajs):
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(self, trajs)

    monkeypatch.setattr(store.ResultsFile, "append_many", append_many)
    # Episodes that take as long as a model call (0.1 s), so each is written before the next
    # ends: instant episodes finish several to a write and fill the failing batch with more.
    slow = {"limit": 12, "max_connections": 1, "model_options": {"latency_s": 0.1}}
    summary, res = run_config(tmp_path, **slow)
    assert summary.write_error is not None and "No space left" in summary.write_error
    assert len(res) == 1 and summary.ran == 1 and summary.unwritten == 1
    assert not summary.interrupted
    monkeypatch.setattr(store.ResultsFile, "append_many", real)
    summary, res = run_config(tmp_path, **slow)
    assert summary.skipped == 1 and summary.ran == 11 and len(res) == 12


def test_partial_write_is_cut_back(tmp_path, monkeypatch):
    """A write that fails halfway leaves the file as it was before the batch."""
    import os

    from tests.conftest import run_config

    summary, _ = run_config(tmp_path, limit=2)
    path = summary.run_dir / RESULTS
    before = path.read_bytes()
    f = ResultsFile(path)
    (t,) = list(f)[:1]

    real_fsync = os.fsync

    def failing_fsync(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(OSError):
        f.append_many([t, t])
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert path.read_bytes() == before


def test_limit_is_stratified_and_tasks_file_holds_exactly_the_run(tmp_path):
    from tests.conftest import run_config

    summary, res = run_config(tmp_path, tasks="scholar", limit=9, tasks_per_family=5)
    recorded = read_tasks(summary.run_dir / TASKS)
    families = sorted(t.family for t in recorded)
    assert families == ["1-3"] * 3 + ["2-4"] * 3 + ["3-5"] * 3  # three families, three each
    assert sorted(r.task_id for r in res) == sorted(t.id for t in recorded)
    # a larger limit extends the run with a superset
    summary, res = run_config(tmp_path, tasks="scholar", limit=12, tasks_per_family=5)
    assert summary.skipped == 9 and summary.ran == 3
    assert len(read_tasks(summary.run_dir / TASKS)) == 12


def test_sample_id(tmp_path):
    from tests.conftest import run_config

    summary, _ = run_config(tmp_path, limit=3, run_name="all")
    ids = [t.id for t in read_tasks(summary.run_dir / TASKS)][:2]
    summary, res = run_config(tmp_path, sample_ids=list(reversed(ids)), run_name="two")
    assert sorted(r.task_id for r in res) == sorted(ids)
    with pytest.raises(ConfigError, match="--sample-id 'nope' is not in the task set"):
        run_config(tmp_path, sample_ids=["nope"], run_name="bad")


@pytest.mark.parametrize(("env", "limit"), [("crag", 8), ("wiki", 4)])
def test_env_default_task_sets_run_without_tasks(tmp_path, env, limit):
    res = runner.invoke(
        app,
        ["run", "--model", "scripted/oracle", "--env", env, "-E", "size=tiny", "--limit",
         str(limit), "--tasks-per-family", "4", "--display", "none", "--log-dir", str(tmp_path)],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert f"{limit} episodes run, 0 already done" in res.output
    (run_dir,) = tmp_path.iterdir()
    assert len(read_tasks(run_dir / TASKS)) == limit


@pytest.fixture
def tiny_tmpfs(tmp_path):
    """A 160 KB tmpfs (needs root and mount; skipped elsewhere)."""
    import os
    import subprocess

    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mnt = tmp_path / "full"
    mnt.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=160k", "tmpfs", str(mnt)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


def test_real_full_disk_stops_the_run_with_whole_lines(tiny_tmpfs):
    """A real full filesystem: exit 1 with a clear message, every line on disk whole and
    each one an episode the summary counts as saved."""
    res = runner.invoke(
        app,
        ["run", "--model", "scripted/oracle", "-E", "size=tiny", "--tasks", "scholar-ks",
         "--tasks-per-family", "60", "--max-connections", "1", "--display", "none",
         "--log-dir", str(tiny_tmpfs), "--run-name", "r"],
    )  # fmt: skip
    assert res.exit_code == 1, res.output
    assert "cannot write results: No space left on device" in res.output
    assert "stopped before its next model call" in res.output
    lines = (tiny_tmpfs / "r" / RESULTS).read_text().splitlines()
    assert 0 < len(lines) < 60 and all(json.loads(x)["task_id"] for x in lines)
    assert f"({len(lines)} episodes saved" in " ".join(res.output.split())
