"""The LLM response cache: a repeated deterministic run reproduces results with no model call."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
from dataclasses import replace

from typer.testing import CliRunner

from raleval.app.cli import app
from raleval.cache import CachedModel, ResponseCache, request_key
from raleval.model import GenerateRequest, Generation, Message, ModelBase, ModelError
from raleval.records import ToolCall

from .stub_openai import StubServer

REQ = GenerateRequest(messages=(Message("user", "hi"),), max_tokens=5)


class Counting(ModelBase):
    name = "counting/x"

    def __init__(self, replies):
        self.replies, self.calls = list(replies), 0

    async def generate(self, request):
        self.calls += 1
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply


def test_hits_misses_and_what_is_never_cached(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    inner = Counting(
        [
            ModelError("down"),
            Generation(""),
            Generation("ok", [ToolCall(tool="t", arguments={"a": 1})], 3, 1),
        ]
    )
    model = CachedModel(inner, cache)

    async def go():
        for _ in range(2):
            with contextlib.suppress(ModelError):
                await model.generate(REQ)
        first = await model.generate(REQ)
        again = await model.generate(REQ)
        return first, again

    first, again = asyncio.run(go())
    assert inner.calls == 3  # the failure and the empty reply were not cached; "ok" was
    assert not first.cache_hit and again.cache_hit
    assert again.text == "ok" and again.tool_calls[0].arguments == {"a": 1}
    assert (again.prompt_tokens, again.completion_tokens) == (3, 1)
    assert cache.stats()["by_model"] == {"counting/x": 1}


def test_key_depends_on_everything_that_changes_the_answer():
    base = request_key("m", REQ)
    assert request_key("m", REQ) == base
    assert request_key("other", REQ) != base
    assert request_key("m", REQ, epoch=1) != base
    assert request_key("m", GenerateRequest(messages=REQ.messages, max_tokens=6)) != base
    assert (
        request_key("m", GenerateRequest(messages=REQ.messages, max_tokens=5, temperature=0.7))
        != base
    )
    # what the request asks of decoding: a constrained reply is not the free one
    keys = {
        request_key("m", replace(REQ, **change))
        for change in (
            {"tool_choice": "required"},
            {"parallel_tool_calls": False},
            {"json_schema": {"type": "array"}},
            {"json_schema": {"type": "object"}},
        )
    }
    assert len(keys) == 4 and base not in keys


def test_repeated_run_costs_no_model_calls_and_matches(tmp_path, monkeypatch):
    from .conftest import run_config

    monkeypatch.setenv("RALEVAL_CACHE_DIR", str(tmp_path / "cache"))
    with StubServer() as stub:
        spec = f"openai-compatible/ok@{stub.base_url}"
        _, first = run_config(tmp_path / "a", model=spec, limit=3)
        n = stub.counts["ok"]
        _, again = run_config(tmp_path / "b", model=spec, limit=3)
        assert stub.counts["ok"] == n  # every request was served from the cache
        _, uncached = run_config(tmp_path / "c", model=spec, limit=3, cache=False)
        assert stub.counts["ok"] > n
    # episodes are written in the order they finish: compare them task by task
    strip = lambda rs: [  # noqa: E731
        (r.task_id, r.answer, [s.observation for s in r.steps])
        for r in sorted(rs, key=lambda r: r.task_id)
    ]
    assert strip(first) == strip(again) == strip(uncached)
    assert all(c.cache_hit for r in again for c in r.llm_calls)
    assert not any(c.cache_hit for r in first for c in r.llm_calls)

    res = CliRunner().invoke(app, ["cache", "stats"])
    assert res.exit_code == 0 and "responses" in res.output and spec in res.output
    res = CliRunner().invoke(app, ["cache", "clear"])
    assert res.exit_code == 0 and "removed" in res.output


def test_another_model_served_under_the_same_name_is_not_answered_from_the_cache(
    tmp_path, monkeypatch
):
    """An ``openai-compatible/NAME@URL`` model was cached by that name alone: a server
    restarted with other weights at the same address got the first model's replies. The
    server's own account of what it serves (its model id; for llama.cpp the file's size and
    parameter count) is part of the key; the same server again still hits."""
    import json

    from .conftest import run_config

    monkeypatch.setenv("RALEVAL_CACHE_DIR", str(tmp_path / "cache"))

    def served(n_params):
        entry = {"id": "/m/model.gguf", "owned_by": "llamacpp", "meta": {"n_params": n_params}}
        return json.dumps({"data": [entry]}).encode()

    with StubServer() as stub:
        spec = f"openai-compatible/ok@{stub.base_url}"
        stub.models = served(494_032_768)
        run_config(tmp_path / "a", model=spec, limit=3)
        n = stub.counts["ok"]
        run_config(tmp_path / "b", model=spec, limit=3)
        assert stub.counts["ok"] == n  # the same server: all from the cache
        stub.models = served(1_543_714_304)  # other weights, same path, name and address
        _, swapped = run_config(tmp_path / "c", model=spec, limit=3)
        assert stub.counts["ok"] > n
        assert not any(c.cache_hit for r in swapped for c in r.llm_calls)


def test_each_epoch_has_its_own_cache_entries(tmp_path, monkeypatch):
    from .conftest import run_config

    monkeypatch.setenv("RALEVAL_CACHE_DIR", str(tmp_path / "cache"))
    with StubServer() as stub:
        spec = f"openai-compatible/ok@{stub.base_url}"
        run_config(tmp_path / "one", model=spec, limit=2, epochs=1)
        one = stub.counts["ok"]
        run_config(tmp_path / "two", model=spec, limit=2, epochs=2)
        assert stub.counts["ok"] == 2 * one  # epoch 0 from the cache, epoch 1 asked fresh
        run_config(tmp_path / "three", model=spec, limit=2, epochs=2)
        assert stub.counts["ok"] == 2 * one  # both epochs now cached


def _filled(path, replies):
    """A cache holding one reply per (prompt, reply) pair, keyed as a real request would be."""
    cache = ResponseCache(path)
    for prompt, reply in replies:
        req = GenerateRequest(messages=(Message("user", prompt),), max_tokens=5)
        cache.put(request_key("m/x", req), "m/x", reply)
    return cache


def _get(cache, prompt):
    req = GenerateRequest(messages=(Message("user", prompt),), max_tokens=5)
    return cache.get(request_key("m/x", req))


def test_an_exported_cache_carries_to_another_machine_and_never_overwrites_its_replies(tmp_path):
    """A study's costly cells pay only for calls a smaller budget could not afford while the
    cache lasts; `cache export`/`import` carry it to a new machine (studies/run_chunk.sh)."""
    call = Generation("{}", [ToolCall(tool="Search", arguments={"q": "é"})], 40, 7, 32)
    old = tmp_path / "old.sqlite"
    _filled(old, [("a", Generation("one", [], 3, 1)), ("b", call)]).close()
    runner = CliRunner()
    for name in ("c.jsonl", "c.jsonl.gz"):
        out = tmp_path / name
        res = runner.invoke(app, ["cache", "export", str(out), "--cache-path", str(old)])
        assert res.exit_code == 0 and "2 cached responses written" in res.output, res.output
        lines = (
            gzip.decompress(out.read_bytes()).decode() if name.endswith(".gz") else out.read_text()
        ).splitlines()
        assert [json.loads(x)["key"] for x in lines] == sorted(json.loads(x)["key"] for x in lines)
        new = tmp_path / f"new-{name}.sqlite"
        _filled(new, [("a", Generation("its own", [], 3, 1))]).close()
        res = runner.invoke(app, ["cache", "import", str(out), "--cache-path", str(new)])
        assert res.exit_code == 0 and "1 cached responses added, 1 already there" in res.output
        cache = ResponseCache(new)
        assert _get(cache, "a").text == "its own"  # the new machine's reply stands
        got = _get(cache, "b")
        assert got.cache_hit and got.tool_calls == call.tool_calls
        assert (got.prompt_tokens, got.completion_tokens, got.cached_tokens) == (40, 7, 32)
        res = runner.invoke(app, ["cache", "import", str(out), "--cache-path", str(new)])
        assert "0 cached responses added, 2 already there" in res.output
    res = runner.invoke(app, ["cache", "stats", "--cache-path", str(new)])
    assert res.exit_code == 0 and "2 responses" in res.output and "m/x: 2" in res.output
    res = runner.invoke(app, ["cache", "stats", "--cache-path", str(tmp_path / "none.sqlite")])
    assert res.exit_code == 2 and "no response cache" in res.output
    assert not (tmp_path / "none.sqlite").exists()  # asked, not made
    # the same cache exports the same bytes (a growing one differs by its added lines)
    again = tmp_path / "again.jsonl"
    runner.invoke(app, ["cache", "export", str(again), "--cache-path", str(old)])
    assert again.read_bytes() == (tmp_path / "c.jsonl").read_bytes()


def test_a_broken_cache_export_adds_nothing_and_names_its_line(tmp_path):
    src = tmp_path / "old.sqlite"
    _filled(src, [("a", Generation("one")), ("b", Generation("two"))]).close()
    good = list(ResponseCache(src).export_lines())
    entry = json.loads(good[1])
    broken = {
        "cut short": good[1][: len(good[1]) // 2],
        "a key that is no request key": json.dumps({**entry, "key": "../../etc"}),
        "a generation with a field no reply has": json.dumps(
            {**entry, "generation": {**entry["generation"], "evil": 1}}
        ),
        "a tool call without its tool": json.dumps(
            {**entry, "generation": {**entry["generation"], "tool_calls": [{"arguments": {}}]}}
        ),
    }
    runner = CliRunner()
    for what, line in broken.items():
        file = tmp_path / "bad.jsonl"
        file.write_text(good[0] + "\n" + line + "\n")
        dest = tmp_path / "dest.sqlite"
        res = runner.invoke(app, ["cache", "import", str(file), "--cache-path", str(dest)])
        assert res.exit_code == 2, (what, res.output)
        assert "line 2: not a cache entry" in " ".join(res.output.split()), (what, res.output)
        assert ResponseCache(dest).stats()["entries"] == 0, what  # line 1 was not added either
    res = runner.invoke(app, ["cache", "import", str(tmp_path / "none.jsonl")])
    assert res.exit_code == 2 and "no such file" in res.output
    (tmp_path / "bin.jsonl.gz").write_bytes(b"\x1f\x8b not gzip")
    res = runner.invoke(app, ["cache", "import", str(tmp_path / "bin.jsonl.gz")])
    assert res.exit_code == 2 and "not a cache export" in res.output
