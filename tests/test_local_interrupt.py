"""A Ctrl-C at the terminal signals the whole foreground process group. The study's chunk 8,
stopped that way, recorded an in-flight episode as a model-connection failure: the embedded
model server, in raleval's group, died at once, while raleval was giving running episodes
their grace period to finish. The server now runs in its own session."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

PARENT = """
import subprocess, sys, time
from raleval.agents.local import spawn_server
child = spawn_server([sys.executable, "-c", "import time; time.sleep(60)"], subprocess.DEVNULL)
print(child.pid, flush=True)
time.sleep(60)
"""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


def test_a_ctrl_c_to_the_foreground_group_does_not_reach_the_model_server():
    # the parent stands for raleval run as a shell's foreground job: a process group leader
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT], stdout=subprocess.PIPE, start_new_session=True
    )
    child = int(parent.stdout.readline())
    try:
        assert os.getpgid(child) != os.getpgid(parent.pid)
        os.killpg(parent.pid, signal.SIGINT)  # what the terminal sends on Ctrl-C
        parent.wait(timeout=30)
        time.sleep(1.0)  # a server that got the signal is gone by now
        assert _alive(child), "the server died with the Ctrl-C meant for raleval"
    finally:
        parent.kill()
        parent.wait()
        if _alive(child):
            os.kill(child, signal.SIGKILL)
