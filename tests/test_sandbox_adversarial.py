"""Hostile PAL programs: each probe attacks the harness or the host from inside the sandbox.

Every probe asserts two things: the harness is unharmed (its rlimits, priority, a canary file's
bytes, mode, times and xattrs, the hostname, the clock, no sandbox temp dir left behind), and
the episode ends with a classified outcome (the program saw the refusal and reported it, or a
cause the workflow records).
"""

from __future__ import annotations

import asyncio
import os
import resource
import socket
import sys
import tempfile
import threading
import time

import pytest

from raleval.workflows.sandbox import (
    MAX_OUTPUT,
    SandboxLimits,
    check_isolation,
    run_program,
)

pytestmark = pytest.mark.skipif(
    check_isolation() is not None, reason=f"no OS isolation here: {check_isolation()}"
)

LIMITS = SandboxLimits(cpu_s=2, wall_s=6.0, memory_mb=256)
CAUSES = {"program_error", "timeout", "resource_limit", "killed", "proxy_violation"}
RLIMITS = sorted(name for name in dir(resource) if name.startswith("RLIMIT_"))
CANARY_TEXT = b"the harness's own file\n"

# A raw system call from the program: ``[return value, errno]``.
RAW = "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"


def _raw(call: str) -> str:
    return RAW + f"rc = {call}\nfinal_result = [rc, ctypes.get_errno()]"


EPERM = [-1, 1]


async def _echo(name, args):
    return {"tool": name, "args": args}


def _snapshot(canary: str) -> dict:
    st = os.stat(canary)
    with open(canary, "rb") as f:
        data = f.read()
    return {
        "rlimits": {name: resource.getrlimit(getattr(resource, name)) for name in RLIMITS},
        "prlimit_nofile": resource.prlimit(os.getpid(), resource.RLIMIT_NOFILE),
        "priority": [
            os.getpriority(os.PRIO_PROCESS, 0),
            os.getpriority(os.PRIO_PGRP, 0),
            os.getpriority(os.PRIO_USER, os.getuid()),
        ],
        "hostname": socket.gethostname(),
        "canary": (data, st.st_mode, st.st_mtime_ns, st.st_uid, st.st_gid, os.listxattr(canary)),
    }


@pytest.fixture
def harness(tmp_path, monkeypatch):
    """A canary file, a private temp root for the sandbox, and the harness's state before."""
    canary = tmp_path / "canary.txt"
    canary.write_bytes(CANARY_TEXT)
    canary.chmod(0o644)
    scratch = tmp_path / "sandbox-tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    before = _snapshot(str(canary))
    wall_before, mono_before = time.time(), time.monotonic()
    yield str(canary)
    after = _snapshot(str(canary))
    assert after == before, "the program changed the harness"
    drift = (time.time() - wall_before) - (time.monotonic() - mono_before)
    assert abs(drift) < 5.0, f"the wall clock moved by {drift:.1f} s"
    assert os.listdir(scratch) == [], "a sandbox temp dir was left behind"


def run(program: str, limits: SandboxLimits = LIMITS):
    return asyncio.run(run_program(program, ["lookup"], _echo, limits))


def classified(r) -> bool:
    return r.ok or r.cause in CAUSES


# (name, program template, expectation). ``{canary}``, ``{ppid}``, ``{prefix}`` are filled in.
# An expectation is a list (the program's result) or a string the error must contain (or a
# tuple of such strings, one of which it must contain).
PROBES = [
    # --- the harness's limits and priority -------------------------------------------------
    (
        "prlimit64 NOFILE on the parent",
        "import resource, os\nresource.prlimit(os.getppid(), resource.RLIMIT_NOFILE, (8, 8))",
        "PermissionError",
    ),
    (
        "prlimit64 CPU on the parent",
        "import resource, os\nresource.prlimit(os.getppid(), resource.RLIMIT_CPU, (1, 1))",
        "PermissionError",
    ),
    (
        "prlimit64 FSIZE on the parent",
        "import resource, os\nresource.prlimit(os.getppid(), resource.RLIMIT_FSIZE, (1, 1))",
        "PermissionError",
    ),
    (
        "raw prlimit64 on the parent",
        _raw("libc.syscall(302, {ppid}, 7, ctypes.c_char_p(bytes(16)), None)"),
        EPERM,
    ),
    (
        "prlimit64 on pid 1",
        "import resource\nresource.prlimit(1, resource.RLIMIT_NOFILE, (8, 8))",
        "PermissionError",
    ),
    (
        "raise its own hard limit",
        "import resource\nresource.setrlimit(resource.RLIMIT_CPU, (10**6, 10**6))",
        "ValueError",  # not allowed to raise the hard limit: no CAP_SYS_RESOURCE
    ),
    (
        "setpriority on the parent",
        "import os\nos.setpriority(os.PRIO_PROCESS, {ppid}, 19)",
        "PermissionError",
    ),
    (
        "setpriority on the user",
        "import os\nos.setpriority(os.PRIO_USER, os.getuid(), 19)",
        "PermissionError",
    ),
    ("setpriority on the group", "import os\nos.setpriority(os.PRIO_PGRP, 0, 19)", "Permission"),
    # --- host files and their metadata ---------------------------------------------------
    ("chmod a host file", "import os\nos.chmod({canary!r}, 0o777)", "PermissionError"),
    ("utime a host file", "import os\nos.utime({canary!r}, (0, 0))", "PermissionError"),
    ("chown a host file", "import os\nos.chown({canary!r}, 1, 1)", "PermissionError"),
    (
        "setxattr on a host file",
        "import os\nos.setxattr({canary!r}, 'user.pwned', b'1')",
        "PermissionError",
    ),
    ("overwrite a host file", "open({canary!r}, 'w').write('pwned')", "PermissionError"),
    ("truncate a host file", "import os\nos.truncate({canary!r}, 0)", "PermissionError"),
    ("unlink a host file", "import os\nos.unlink({canary!r})", "PermissionError"),
    ("read a host file", "final_result = open({canary!r}).read()", "PermissionError"),
    ("read /etc/shadow", "final_result = open('/etc/shadow').read()", "PermissionError"),
    # --- devices and kernel interfaces -----------------------------------------------------
    (
        "mknod a character device",
        "import os, stat\nos.mknod('mem', stat.S_IFCHR | 0o600, os.makedev(1, 1))",
        "PermissionError",
    ),
    (
        "read the kernel log",
        _raw("libc.klogctl(3, ctypes.create_string_buffer(4096), 4096)"),
        EPERM,
    ),
    ("read /dev/kmsg", "final_result = open('/dev/kmsg', 'rb').read(100)", "PermissionError"),
    ("sethostname", "import socket\nsocket.sethostname('pwned')", "PermissionError"),
    ("setdomainname", _raw("libc.setdomainname(b'pwned', 5)"), EPERM),
    ("reboot (bad magic)", _raw("libc.syscall(169, 0, 0, 0, 0)"), EPERM),
    ("clock_settime", _raw("libc.clock_settime(0, ctypes.c_char_p(bytes(16)))"), EPERM),
    ("mount a tmpfs", _raw("libc.mount(b'none', b'.', b'tmpfs', 0, None)"), EPERM),
    ("unshare a user namespace", _raw("libc.unshare(0x10000000)"), EPERM),
    ("bpf", _raw("libc.syscall(321, 0, None, 0)"), EPERM),
    ("perf_event_open", _raw("libc.syscall(298, None, 0, -1, -1, 0)"), EPERM),
    ("io_uring_setup", _raw("libc.syscall(425, 8, ctypes.c_char_p(bytes(120)))"), EPERM),
    ("TIOCSTI on stdin", _raw("libc.ioctl(0, 0x5412, ctypes.c_char_p(b'x'))"), [-1, 25]),
    # --- network ----------------------------------------------------------------------------
    (
        "TCP connect to loopback",
        "import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=1)",
        "PermissionError",
    ),
    (
        "UDP send",
        "import socket\nsocket.socket(socket.AF_INET, socket.SOCK_DGRAM)",
        "PermissionError",
    ),
    ("unix socket", "import socket\nsocket.socket(socket.AF_UNIX)", "PermissionError"),
    # --- signals ------------------------------------------------------------------------------
    ("kill the parent", "import os\nos.kill({ppid}, 9)", "PermissionError"),
    ("signal every process (signal 0)", "import os\nos.kill(-1, 0)", "PermissionError"),
    ("tgkill the parent (signal 0)", _raw("libc.syscall(234, {ppid}, {ppid}, 0)"), EPERM),
    ("ptrace the parent", _raw("libc.ptrace(16, {ppid}, 0, 0)"), EPERM),
    # --- information leaks -----------------------------------------------------------------
    ("list site-packages", "import os\nfinal_result = os.listdir({prefix!r})", "PermissionError"),
    (
        "list the standard library root (holds site-packages)",
        "import os\nfinal_result = os.listdir(os.path.dirname(os.__file__))",
        "PermissionError",
    ),
    ("list /proc", "import os\nfinal_result = os.listdir('/proc')", "PermissionError"),
    (
        "the parent's environment",
        "final_result = open('/proc/{ppid}/environ').read()",
        "PermissionError",
    ),
    ("the parent's command line", "final_result = open('/proc/self/mounts').read()", "Permission"),
    ("the hostname", "import os\nfinal_result = [os.uname().nodename]", ["pal-sandbox"]),
    # --- floods and bombs --------------------------------------------------------------------
    ("fork", "import os\nos.fork()", "PermissionError"),
    ("fork bomb", "import os\nwhile True:\n    os.fork()", "PermissionError"),
    ("threads", "import _thread\n_thread.start_new_thread(print, ())", "RuntimeError"),
    ("exec a shell", "import os\nos.execv('/bin/sh', ['sh'])", "PermissionError"),
    ("memory bomb", "x = bytearray(2 ** 31)", "MemoryError"),
    (
        "recursion with the limit raised",
        "import sys\nsys.setrecursionlimit(10 ** 6)\ndef f(n):\n    return f(n + 1)\nf(0)",
        ("RecursionError", "SystemError", "MemoryError"),  # whichever limit CPython meets
    ),
    (
        "a 100,000-deep final_result",
        "x = []\nfor _ in range(100_000):\n    x = [x]\nfinal_result = x",
        "nested deeper than",
    ),
    ("a 10 MB final_result", "final_result = 'x' * 10_000_000", "larger than"),
    ("a huge int final_result", "final_result = [10 ** 100_000]", "ValueError"),
    (
        "a 100,000-deep tool argument",
        "x = []\nfor _ in range(100_000):\n    x = [x]\nlookup(q=x)",
        "nested deeper than",
    ),
]


@pytest.fixture(scope="module")
def listener():
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    srv.settimeout(0.2)
    hits: list[str] = []
    stop = threading.Event()

    def accept():
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except OSError:
                continue
            hits.append("connected")
            conn.close()

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    yield srv.getsockname()[1], hits
    stop.set()
    t.join()
    srv.close()


# A probe whose work is close to the common CPU limit gets its own, so that what it checks does
# not depend on the machine's speed that hour: the million-frame recursion costs ~1.8 s of CPU
# on the 2-core CI machine, and at 2 s it met the CPU kill (resource_limit) before its
# RecursionError on a slower day. The CPU limit has probes of its own.
PROBE_LIMITS = {
    "recursion with the limit raised": SandboxLimits(cpu_s=10, wall_s=20.0, memory_mb=256)
}


def test_the_suite_has_at_least_thirty_probes():
    assert len(PROBES) >= 30 and len({name for name, _, _ in PROBES}) == len(PROBES)


@pytest.mark.parametrize(("name", "template", "expected"), PROBES, ids=[p[0] for p in PROBES])
def test_probe_is_contained(name, template, expected, harness, listener):
    port, hits = listener
    program = template.format(canary=harness, ppid=os.getpid(), prefix=sys.prefix, port=port)
    r = run(program, PROBE_LIMITS.get(name, LIMITS))
    assert classified(r), (name, r)
    if isinstance(expected, list):
        assert r.ok and r.result == expected, (name, r.result, r.error)
    else:
        assert not r.ok and r.cause == "program_error", (name, r.result, r.cause)
        alternatives = expected if isinstance(expected, tuple) else (expected,)
        assert any(word in r.error for word in alternatives), (name, r.error)
    assert hits == []


def test_a_5_mb_print_ends_with_its_result_and_a_count_of_what_was_dropped(harness):
    r = run("print('x' * 5_000_000)\nfinal_result = 'done'")
    assert r.ok and r.result == "done"
    assert r.stderr_dropped == 5_000_001 - MAX_OUTPUT


def test_a_5_mb_print_without_a_result_is_the_programs_error(harness):
    r = run("import sys\nsys.stderr.write('y' * 5_000_000)")
    assert not r.ok and r.cause == "program_error"
    assert r.error == "NameError: the program did not set final_result"
    assert r.stderr_dropped == 5_000_000 - MAX_OUTPUT


def test_a_stdout_flood_is_a_proxy_violation(harness):
    r = run("import os\nwhile True:\n    os.write(1, b'x' * 65536)")
    assert not r.ok and r.cause == "proxy_violation"


def test_an_infinite_loop_ends_at_the_cpu_limit(harness):
    r = run("while True:\n    pass", SandboxLimits(cpu_s=1, wall_s=6.0))
    assert not r.ok and r.cause == "resource_limit"


def test_a_sleeper_ends_at_the_wall_limit(harness):
    r = run("import time\ntime.sleep(60)", SandboxLimits(cpu_s=5, wall_s=1.0))
    assert not r.ok and r.cause == "timeout"


def test_a_program_that_never_reads_its_tool_reply_ends_at_the_wall_limit(harness):
    r = run(
        "import sys, json\nwhile True:\n    sys.__stdout__.write(json.dumps("
        "{'type': 'call', 'tool': 'lookup', 'arguments': {}}) + '\\n')\n"
        "    sys.__stdout__.flush()",
        SandboxLimits(cpu_s=5, wall_s=2.0, max_tool_calls=10**6),
    )
    assert not r.ok and r.cause in ("timeout", "proxy_violation")


def test_benign_programs_still_import_the_standard_library(harness):
    r = run(
        "import difflib, textwrap, csv, io, collections.abc, email.utils, zoneinfo, hashlib\n"
        "final_result = [round(difflib.SequenceMatcher(None, 'ab', 'abc').ratio(), 2), "
        "textwrap.shorten('a b c d', 5), hashlib.sha256(b'').hexdigest()[:8]]"
    )
    assert r.ok and r.result == [0.8, "[...]", "e3b0c442"], r.error
