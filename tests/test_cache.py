"""The LLM response cache: a repeated deterministic run reproduces results with no model call."""

from __future__ import annotations

import asyncio
import contextlib
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
