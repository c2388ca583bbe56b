"""Run model-written Python in an OS-level sandbox, with tool calls proxied to the parent.

The program runs in a separate interpreter (``python -I -S``, empty environment, an empty
working directory) confined by mechanisms of the kernel, not by restricted builtins:

- rlimits: CPU seconds, address space, file size, open files;
- a fresh network namespace (no interfaces) when the kernel allows one;
- Landlock: reads only the Python standard library, writes only its working directory, no TCP
  connect or bind, no signals or abstract sockets outside its own domain;
- seccomp: no sockets, no fork/clone/exec, no ptrace, no kill, no namespace or mount calls.

The program sees stub functions for the tools; each call is sent as one JSON line on stdout and
answered by the parent on stdin, so the environment's data never enters the sandbox. The parent
treats every line as untrusted (size-limited, schema-checked) and kills the child on a wall-clock
timeout. Where Landlock or seccomp is unavailable, :func:`check_isolation` says so and PAL
refuses to run unless explicitly allowed to run unsandboxed.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import json
import os
import platform
import resource
import shutil
import sys
import sysconfig
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

MAX_LINE = 1 << 20  # one proxy message
LANDLOCK_CREATE_RULESET_VERSION = 1
_SYS_LANDLOCK_CREATE_RULESET = 444


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


# The child's bootstrap. It imports what it needs, then locks itself down, then reads the
# program. Kept as source text because it runs in a bare interpreter (-I -S).
BOOTSTRAP = r"""
import ctypes, json, os, sys, struct, traceback, builtins, math, re, collections, itertools
import functools, statistics, datetime, random, string, heapq, bisect, fractions, decimal
libc = ctypes.CDLL(None, use_errno=True)
conf = json.loads(sys.stdin.readline())
real_stdout, proxy_in = sys.stdout, sys.stdin
sys.stdout = sys.stderr  # print() in the program must not write on the proxy channel

def lockdown(conf):
    # --- Landlock -------------------------------------------------------------------------
    abi = conf["abi"]
    fs_all = (1 << (16 if abi >= 5 else 15 if abi >= 3 else 14 if abi >= 2 else 13)) - 1
    net_all = 3 if abi >= 4 else 0
    scoped = 3 if abi >= 6 else 0
    attr = struct.pack("QQQ", fs_all, net_all, scoped)
    fd = libc.syscall(444, attr, len(attr), 0)
    if fd < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset")
    READ = (1 << 2) | (1 << 3)  # READ_FILE | READ_DIR
    EXEC = 1 << 0
    for path, access in conf["paths"]:
        o_path = os.open(path, os.O_PATH | os.O_CLOEXEC)
        allowed = (READ | EXEC) if access == "r" else fs_all
        rule = struct.pack("=Qi", allowed, o_path)
        if libc.syscall(445, fd, 1, rule, 0) < 0:
            raise OSError(ctypes.get_errno(), "landlock_add_rule " + path)
        os.close(o_path)
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        raise OSError(ctypes.get_errno(), "no_new_privs")
    if libc.syscall(446, fd, 0) < 0:
        raise OSError(ctypes.get_errno(), "landlock_restrict_self")
    os.close(fd)
    # --- seccomp: deny dangerous syscalls with EPERM -------------------------------------------
    deny = conf["deny"]
    BPF_LD_W_ABS, BPF_JEQ_K, BPF_JGE_K, BPF_RET_K = 0x20, 0x15, 0x35, 0x06
    ALLOW, KILL, ERRNO_EPERM = 0x7FFF0000, 0x80000000, 0x00050000 | 1
    prog = [(BPF_LD_W_ABS, 0, 0, 4), (BPF_JEQ_K, 1, 0, 0xC000003E), (BPF_RET_K, 0, 0, KILL),
            (BPF_LD_W_ABS, 0, 0, 0), (BPF_JGE_K, len(deny) + 1, 0, 0x40000000)]
    for i, nr in enumerate(deny):
        prog.append((BPF_JEQ_K, len(deny) - i, 0, nr))
    prog += [(BPF_RET_K, 0, 0, ALLOW), (BPF_RET_K, 0, 0, ERRNO_EPERM)]
    buf = b"".join(struct.pack("HBBI", *ins) for ins in prog)
    arr = ctypes.create_string_buffer(buf)
    fprog = struct.pack("HxxxxxxQ", len(prog), ctypes.addressof(arr))
    if libc.prctl(22, 2, ctypes.c_char_p(fprog), 0, 0) != 0:  # PR_SET_SECCOMP, FILTER
        raise OSError(ctypes.get_errno(), "seccomp")

def send(obj):
    real_stdout.write(json.dumps(obj, default=str) + "\n")
    real_stdout.flush()

def make_stub(name):
    def stub(*args, **kwargs):
        if args:
            raise TypeError(f"{name}() takes keyword arguments only, e.g. {name}(x=...)")
        send({"type": "call", "tool": name, "arguments": kwargs})
        line = proxy_in.readline()
        if not line:
            raise RuntimeError("tool proxy closed")
        reply = json.loads(line)
        if reply.get("error"):
            raise RuntimeError(reply["error"])
        return reply["result"]
    stub.__name__ = name
    return stub

if conf["enforce"]:
    lockdown(conf)
program = json.loads(proxy_in.readline())["program"]
env = {"__name__": "__pal__", "__builtins__": builtins}
for name in conf["tools"]:
    env[name] = make_stub(name)
try:
    exec(compile(program, "<program>", "exec"), env)
except BaseException as exc:
    send({"type": "error", "error": f"{type(exc).__name__}: {exc}",
          "traceback": traceback.format_exc(limit=5)[-2000:]})
else:
    if "final_result" not in env:
        send({"type": "error", "error": "NameError: the program did not set final_result"})
    else:
        send({"type": "result", "result": repr(env["final_result"]) if not isinstance(
            env["final_result"], (str, int, float, bool, list, dict, type(None)))
            else env["final_result"]})
"""

# x86_64 syscall numbers the program may not make.
DENIED_SYSCALLS = {
    "socket": 41,
    "connect": 42,
    "accept": 43,
    "bind": 49,
    "listen": 50,
    "socketpair": 53,
    "clone": 56,
    "fork": 57,
    "vfork": 58,
    "execve": 59,
    "kill": 62,
    "ptrace": 101,
    "setuid": 105,
    "setgid": 106,
    "chroot": 161,
    "mount": 165,
    "umount2": 166,
    "pivot_root": 155,
    "tkill": 200,
    "tgkill": 234,
    "keyctl": 250,
    "unshare": 272,
    "perf_event_open": 298,
    "setns": 308,
    "process_vm_readv": 310,
    "process_vm_writev": 311,
    "bpf": 321,
    "execveat": 322,
    "userfaultfd": 323,
    "io_uring_setup": 425,
    "clone3": 435,
    "accept4": 288,
    "sendmsg": 46,
    "sendto": 44,
}


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
    cause: str | None = None  # program_error | timeout | killed | proxy_violation | ...
    traceback: str | None = None
    calls: list[dict[str, Any]] = field(default_factory=list)
    stderr: str = ""


def _preexec(limits: SandboxLimits, new_netns: bool) -> Callable[[], None]:
    def setup() -> None:
        mb = 1 << 20
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s))
        resource.setrlimit(resource.RLIMIT_AS, (limits.memory_mb * mb, limits.memory_mb * mb))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_mb * mb, limits.file_mb * mb))
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        os.setsid()
        if new_netns:
            libc = ctypes.CDLL(None, use_errno=True)
            clone_newnet, clone_newuser = 0x40000000, 0x10000000
            if libc.unshare(clone_newnet) != 0:
                libc.unshare(clone_newuser | clone_newnet)  # unprivileged users need a userns

    return setup


def _readable_roots() -> list[str]:
    paths = {sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"]}
    dynload = os.path.join(sysconfig.get_paths()["platstdlib"], "lib-dynload")
    paths.add(dynload)
    # ctypes needs the shared C library loader paths to stay readable for already-mapped libs.
    return sorted(p for p in paths if os.path.isdir(p))


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
    conf = {
        "enforce": enforce,
        "abi": landlock_abi() if enforce else 0,
        "tools": tools,
        "deny": sorted(DENIED_SYSCALLS.values()),
        "paths": [[p, "r"] for p in _readable_roots()] + [[workdir, "rw"]],
    }
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
        preexec_fn=_preexec(limits, new_netns=enforce),
        limit=MAX_LINE,
    )
    assert proc.stdin and proc.stdout and proc.stderr
    result = SandboxResult(ok=False)

    async def converse() -> None:
        proc.stdin.write((json.dumps(conf) + "\n").encode())
        proc.stdin.write((json.dumps({"program": program}) + "\n").encode())
        await proc.stdin.drain()
        while True:
            try:
                line = await proc.stdout.readline()
            except (ValueError, asyncio.LimitOverrunError):
                result.cause, result.error = "proxy_violation", "proxy message too large"
                return
            if not line:
                result.cause = result.cause or "killed"
                result.error = result.error or "the program's process died without a result"
                return
            try:
                msg = json.loads(line)
                kind = msg["type"]
            except (ValueError, KeyError, TypeError):
                result.cause, result.error = "proxy_violation", "malformed proxy message"
                return
            if kind == "call":
                tool, args = msg.get("tool"), msg.get("arguments")
                if not isinstance(tool, str) or tool not in tools or not isinstance(args, dict):
                    reply = {"error": f"unknown tool {tool!r}"}
                elif len(result.calls) >= limits.max_tool_calls:
                    result.cause, result.error = "proxy_violation", "too many tool calls"
                    return
                else:
                    data = await call_tool(tool, args)
                    result.calls.append({"tool": tool, "arguments": args})
                    reply = {"result": data}
                proc.stdin.write((json.dumps(reply, default=str) + "\n").encode())
                await proc.stdin.drain()
            elif kind == "result":
                result.ok, result.result = True, msg.get("result")
                return
            elif kind == "error":
                result.cause, result.error = "program_error", str(msg.get("error"))[:2000]
                result.traceback = str(msg.get("traceback", ""))[:2000] or None
                return
            else:
                result.cause, result.error = "proxy_violation", f"unexpected message {kind!r}"
                return

    try:
        await asyncio.wait_for(converse(), timeout=limits.wall_s)
    except asyncio.TimeoutError:
        result.ok, result.cause = False, "timeout"
        result.error = f"the program ran longer than {limits.wall_s:.0f} s"
    except (BrokenPipeError, ConnectionResetError):
        result.cause, result.error = "killed", "the program's process closed the proxy"
    finally:
        if proc.returncode is None and result.cause == "killed":
            # The proxy closed because the process is exiting: let asyncio's watcher collect
            # its status. Killing it now would make Popen.poll() reap it first, and the watcher
            # would then report 255 instead of the signal that ended it.
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(proc.wait(), timeout=2.0)
        if proc.returncode is None:
            proc.kill()
        await proc.wait()
        stderr = await proc.stderr.read()
        result.stderr = stderr.decode(errors="replace")[-4000:]
        if not result.ok and result.cause == "killed" and proc.returncode and proc.returncode < 0:
            result.error = f"the program was killed by signal {-proc.returncode}"
            if -proc.returncode in (9, 24):  # SIGKILL from RLIMIT_CPU hard limit, SIGXCPU
                result.cause = "resource_limit"
        shutil.rmtree(workdir, ignore_errors=True)
    return result
