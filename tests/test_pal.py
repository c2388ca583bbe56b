"""PAL: the sandbox contains adversarial programs, and the workflow records what happened."""

from __future__ import annotations

import asyncio
import os
import socket
import threading

import pytest

from raleval.workflows import sandbox
from raleval.workflows.sandbox import SandboxLimits, check_isolation, run_program

from .conftest import run_config

pytestmark = pytest.mark.skipif(
    check_isolation() is not None, reason=f"no OS isolation here: {check_isolation()}"
)

FAST = SandboxLimits(cpu_s=1, wall_s=5.0, memory_mb=256)


async def _echo(name, args):
    return {"tool": name, "args": args}


def run(program: str, limits: SandboxLimits = FAST):
    return asyncio.run(run_program(program, ["lookup"], _echo, limits))


@pytest.fixture
def listener():
    """A loopback TCP listener that records whether anything connected to it."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    srv.settimeout(0.5)
    hits: list[str] = []

    def accept():
        try:
            conn, _ = srv.accept()
            hits.append("connected")
            conn.close()
        except OSError:
            pass

    t = threading.Thread(target=accept)
    t.start()
    yield srv.getsockname()[1], hits
    t.join()
    srv.close()


def test_a_benign_program_calls_tools_through_the_proxy():
    r = run("x = lookup(q='a')\nfinal_result = [x['tool'], x['args']['q']]")
    assert r.ok and r.result == ["lookup", "a"]
    assert r.calls == [{"tool": "lookup", "arguments": {"q": "a"}}]


@pytest.mark.parametrize(
    ("name", "program"),
    [
        ("read /etc/passwd", "final_result = open('/etc/passwd').read()"),
        (
            "list the user's home",
            f"import os\nfinal_result = os.listdir({os.path.expanduser('~')!r})",
        ),
        ("read the repository", f"final_result = open({__file__!r}).read()"),
        (
            "read the parent's environment",
            "import os\nfinal_result = open(f'/proc/{os.getppid()}/environ').read()",
        ),
        ("fork", "import os\nos.fork()\nfinal_result = 1"),
        ("subprocess", "import subprocess\nfinal_result = subprocess.run(['true']).returncode"),
        ("exec a shell", "import os\nos.execv('/bin/sh', ['sh'])"),
        ("kill the parent", "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)"),
    ],
)
def test_escape_attempts_are_contained_and_reported(name, program):
    r = run(program)
    assert not r.ok, f"{name} was not contained: {r.result!r}"
    assert r.cause == "program_error"
    assert any(
        word in r.error
        for word in ("PermissionError", "Operation not permitted", "AssertionError", "NameError")
    ), r.error


def test_ptrace_on_the_parent_is_refused():
    r = run(
        "import os, ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "rc = libc.ptrace(16, os.getppid(), 0, 0)\nfinal_result = [rc, ctypes.get_errno()]"
    )
    assert r.ok and r.result == [-1, 1]  # PTRACE_ATTACH -> EPERM


def test_writes_stay_inside_the_working_directory(tmp_path):
    outside = tmp_path / "pwned"
    r = run(f"open({str(outside)!r}, 'w').write('x')\nfinal_result = 1")
    assert not r.ok and "Permission denied" in r.error and not outside.exists()
    inside = run("open('note.txt', 'w').write('hi')\nfinal_result = open('note.txt').read()")
    assert inside.ok and inside.result == "hi"


def test_socket_to_a_loopback_listener_never_connects(listener):
    port, hits = listener
    r = run(
        f"import socket\ns = socket.socket()\ns.connect(('127.0.0.1', {port}))\n"
        "final_result = 'connected'"
    )
    assert not r.ok and "Operation not permitted" in r.error
    assert hits == []


def test_ctypes_system_runs_nothing(tmp_path):
    marker = tmp_path / "ran"
    r = run(f"import ctypes\nfinal_result = ctypes.CDLL(None).system(b'touch {marker}')")
    assert not marker.exists()
    assert not r.ok or r.result != 0  # system() could not start a shell


def test_environment_is_empty_of_the_parent_secrets(monkeypatch):
    monkeypatch.setenv("RALEVAL_TEST_SECRET", "hunter2")
    r = run("import os\nfinal_result = sorted(os.environ)")
    assert r.ok and "RALEVAL_TEST_SECRET" not in r.result
    assert all("hunter2" not in str(v) for v in r.result)


def test_infinite_loop_is_killed_at_the_cpu_limit():
    r = run("while True:\n    pass")
    assert not r.ok and r.cause in ("resource_limit", "timeout")


def test_sleeping_program_is_killed_at_the_wall_limit():
    r = run("import time\ntime.sleep(60)", SandboxLimits(cpu_s=5, wall_s=1.0))
    assert not r.ok and r.cause == "timeout"


def test_memory_bomb_is_stopped():
    r = run("x = bytearray(2 ** 31)\nfinal_result = len(x)")
    assert not r.ok and "MemoryError" in r.error


def test_fork_bomb_is_stopped():
    r = run("import os\nwhile True:\n    os.fork()")
    assert not r.ok and "Operation not permitted" in r.error


def test_tampering_with_the_tool_proxy_is_reported():
    r = run(
        "import sys\nsys.__stdout__.write('{not json\\n')\nsys.__stdout__.flush()\nfinal_result = 1"
    )
    assert not r.ok and r.cause == "proxy_violation"
    forged = run(
        "import sys, json\nsys.__stdout__.write(json.dumps({'type': 'call', "
        "'tool': 'os.system', 'arguments': {}}) + '\\n')\nsys.__stdout__.flush()\n"
        "final_result = sys.stdin.readline()"
    )
    assert forged.ok and "unknown tool" in forged.result  # the parent refused the forged call
    flood = run("import sys\nsys.__stdout__.write('x' * (2 ** 21))\nsys.__stdout__.flush()")
    assert not flood.ok and flood.cause in ("proxy_violation", "killed")


def test_the_run_continues_after_every_attack(tmp_path):
    """A PAL run whose programs attack the sandbox still records every episode."""
    from raleval.records import Termination

    summary, results = run_config(tmp_path, workflow="pal", model="scripted/oracle", limit=3)
    assert summary.mean_f1 == 1.0 and all(r.termination is Termination.finished for r in results)


def test_pal_oracle_records_tool_calls_as_steps(tmp_path):
    summary, results = run_config(tmp_path, workflow="pal", limit=4)
    assert summary.mean_f1 == 1.0
    r = results[0]
    assert [s.tool for s in r.steps] == ["searchPerson", "Finish"]
    assert r.steps[0].kind.value == "ok" and r.steps[-1].thought.startswith("r0 = searchPerson(")
    assert r.error_type.value == "EM"


def test_program_exception_is_a_tool_using_error(tmp_path, scholar_env):
    from raleval.workflows.common import EpisodeRecord
    from raleval.workflows.pal import build_pal_graph

    from .test_runner import CapturingModel

    model = CapturingModel(
        [
            "```python\npeople = searchPerson(name='Nobody Atall')\n"
            "final_result = people[0]['num_pubs']\n```"
        ],
        prefill=False,
    )
    rec = EpisodeRecord()
    asyncio.run(build_pal_graph(model, scholar_env).ainvoke({"question": "Q?", "rec": rec}))
    assert rec.termination.value == "program_error"
    assert rec.termination_cause == "IndexError"
    assert rec.steps[-1].cause == "program_error:IndexError"
    assert "IndexError: list index out of range" in rec.steps[-1].observation
    prompt = model.requests[0].messages[0].content
    assert "def searchPerson(name: str | None = None" in prompt  # tools rendered as stubs


def _pal_episode(scholar_env, program: str):
    from raleval.workflows.common import EpisodeRecord
    from raleval.workflows.pal import build_pal_graph

    from .test_runner import CapturingModel

    model = CapturingModel([f"```python\n{program}\n```"], prefill=False)
    rec = EpisodeRecord()
    asyncio.run(build_pal_graph(model, scholar_env).ainvoke({"question": "Q?", "rec": rec}))
    return rec


def test_a_misused_tool_raises_inside_the_program_and_is_recorded(scholar_env):
    # the study's SmolLM2 passed searchPublication an argument it does not take: the refusal
    # escaped the program as a harness error, and the episode was dropped from the scores as
    # an infrastructure failure instead of labelled a tool-using error
    rec = _pal_episode(scholar_env, "r = searchPublication(organization='X')\nfinal_result = r")
    assert rec.termination.value == "program_error"
    assert rec.termination_cause == "RuntimeError"
    assert [s.kind.value for s in rec.steps] == ["misuse", "misuse"]
    assert rec.steps[0].tool == "searchPublication" and rec.steps[0].cause == "bad_arguments"
    assert "Extra inputs are not permitted" in rec.steps[-1].observation


def test_a_program_may_catch_a_refused_call_and_go_on(scholar_env):
    program = (
        "try:\n    searchPublication(organization='X')\nexcept RuntimeError as e:\n"
        "    note = str(e)[:7]\nfinal_result = note"
    )
    rec = _pal_episode(scholar_env, program)
    assert rec.termination.value == "finished" and rec.answer == "Invalid"
    assert [s.kind.value for s in rec.steps] == ["misuse", "ok"]


def test_pal_refuses_without_isolation_unless_told(tmp_path, monkeypatch):
    from raleval.config import ConfigError

    monkeypatch.setattr(sandbox, "landlock_abi", lambda: 0)  # a kernel without Landlock
    with pytest.raises(ConfigError, match="pal_unsafe=true"):
        run_config(tmp_path, workflow="pal", limit=1)
    summary, _ = run_config(
        tmp_path, workflow="pal", limit=1, workflow_options={"pal_unsafe": True}, run_name="unsafe"
    )
    assert summary.mean_f1 == 1.0
    assert os.path.isdir(tmp_path / "unsafe")
