"""Hostile model replies: a model server on 127.0.0.1 answering 10 MB, and parsers fed
adversarial text. Replies are bounded before anything parses them, cut replies are flagged in
the recorded call, and every parser is linear in its input."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from raleval.envs.scholar import make_scholar_env
from raleval.model import GenerateRequest, Message, ModelError, reply_char_limit
from raleval.records import Termination
from raleval.toolcalls import tool_calls_from_content
from raleval.workflows.pal import extract_program
from raleval.workflows.parsing import ActionParseError, parse_action

from .conftest import run_config

TEN_MB = 10 * 1024 * 1024
QUADRATIC = "a(" * (TEN_MB // 2)  # one call-shaped span every two characters, none closed


def _completion(content: str) -> bytes:
    message = {"role": "assistant", "content": content}
    return json.dumps({"choices": [{"index": 0, "message": message}]}).encode()


class HostileModelServer:
    """Chat completions whose size and shape the request's ``model`` field picks."""

    REPLIES: ClassVar[dict[str, Callable[[], bytes]]] = {
        "huge": lambda: _completion("x" * TEN_MB),
        "huge-quadratic": lambda: _completion(QUADRATIC),
        "big": lambda: _completion("Thought: " + "a(" * 400_000),
    }

    def __init__(self) -> None:
        from aiohttp import web

        async def completions(request: web.Request) -> web.StreamResponse:
            name = (await request.json())["model"]
            if name == "huge-chunked":  # no Content-Length: the client must count
                response = web.StreamResponse()
                await response.prepare(request)
                head = b'{"choices": [{"index": 0, "message": {"content": "'
                await response.write(head)
                for _ in range(TEN_MB // 65536):
                    await response.write(b"y" * 65536)
                await response.write(b'"}}]}')
                return response
            return web.Response(body=self.REPLIES[name](), content_type="application/json")

        self.loop = asyncio.new_event_loop()
        app = web.Application(client_max_size=1 << 20)
        app.router.add_post("/v1/chat/completions", completions)
        self.runner = web.AppRunner(app, access_log=None)
        self.loop.run_until_complete(self.runner.setup())
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        self.loop.run_until_complete(site.start())
        self.port = site._server.sockets[0].getsockname()[1]
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def url(self, behaviour: str) -> str:
        return f"openai-compatible/{behaviour}@http://127.0.0.1:{self.port}/v1"

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@pytest.fixture(scope="module")
def model_server():
    s = HostileModelServer()
    yield s
    s.stop()


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


@pytest.mark.parametrize("behaviour", ["huge", "huge-quadratic", "huge-chunked"])
@pytest.mark.parametrize("workflow", ["react", "pal"])
def test_a_10_mb_reply_ends_the_episode_as_a_model_error(
    tmp_path, model_server, behaviour, workflow
):
    summary, results = run_config(
        tmp_path, workflow=workflow, model=model_server.url(behaviour), limit=1
    )
    (r,) = results
    assert r.termination is Termination.llm_error and r.termination_cause == "reply_too_large"
    assert r.llm_calls[-1].error.startswith("reply_too_large: the reply")
    assert _size(summary.run_dir) < 2 * 1024 * 1024


@pytest.mark.parametrize("workflow", ["react", "pal"])
def test_a_long_reply_under_the_byte_limit_is_cut_and_flagged(tmp_path, model_server, workflow):
    summary, results = run_config(
        tmp_path, workflow=workflow, model=model_server.url("big"), limit=1
    )
    (r,) = results
    call = r.llm_calls[0]
    limit = len(call.output)
    assert limit in (reply_char_limit(128), reply_char_limit(1024))
    assert call.error == f"reply_truncated: kept {limit} characters"
    # the cut reply still reaches the workflow, which judges it as it would any reply
    if workflow == "react":
        assert r.steps[0].cause == "invalid_format"
    else:
        assert r.termination is Termination.program_error and r.termination_cause == "SyntaxError"
    assert _size(summary.run_dir) < 2 * 1024 * 1024


def test_the_provider_refuses_a_body_over_its_limit(model_server):
    from raleval.agents.openai_compat import OpenAICompatibleModel

    model = OpenAICompatibleModel("huge", base_url=f"http://127.0.0.1:{model_server.port}/v1")
    request = GenerateRequest(messages=(Message("user", "hi"),), max_tokens=16)
    with pytest.raises(ModelError) as info:
        asyncio.run(model.generate(request))
    assert info.value.cause == "reply_too_large"
    assert (
        str(info.value)
        == f"the reply declares {len(_completion('x' * TEN_MB))} bytes, over 4194304"
    )


def test_the_provider_cuts_text_past_the_token_budget(model_server):
    from raleval.agents.openai_compat import OpenAICompatibleModel

    model = OpenAICompatibleModel("big", base_url=f"http://127.0.0.1:{model_server.port}/v1")
    request = GenerateRequest(messages=(Message("user", "hi"),), max_tokens=16)
    gen = asyncio.run(model.generate(request))
    assert gen.truncated and len(gen.text) == reply_char_limit(16)
    assert gen.text.startswith("Thought: a(a(")


# --- parsers on adversarial text -------------------------------------------------------------

TOOLS = make_scholar_env("tiny").tools

ADVERSARIAL = {
    "call starts": QUADRATIC,
    "one long word": "a" * TEN_MB + "(",
    "open brackets": "Search[" * (TEN_MB // 7),
    "parentheses": "(" * TEN_MB,
    "quotes in a call": "searchPerson(name='" + "\\'" * (TEN_MB // 2),
    "many lines": "Action: x(\n" * (TEN_MB // 11),
    "whitespace": " " * TEN_MB + "Finish[",
}


@pytest.mark.parametrize("name", sorted(ADVERSARIAL))
def test_parse_action_is_linear_on_10_mb_of_adversarial_text(name):
    text = ADVERSARIAL[name]
    try:
        parsed = parse_action(text, TOOLS)
    except ActionParseError:
        parsed = None
    if name == "whitespace":
        assert parsed is not None and parsed.is_finish


def test_tool_calls_from_content_is_linear_on_10_mb_of_open_objects():
    assert tool_calls_from_content('{"name": "a", "arguments": ' * (TEN_MB // 27)) == []
    assert tool_calls_from_content("{" * TEN_MB) == []
    assert tool_calls_from_content('{"a":' * (TEN_MB // 5)) == []


def test_extract_program_is_linear_on_10_mb_of_fences():
    assert extract_program("```" + " " * TEN_MB) == "```" + " " * TEN_MB
    assert extract_program("``` x" * (TEN_MB // 5)).startswith("``` x")


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("aS_([])'\"=,\\ \n`{}:Finish")), max_size=400))
def test_parse_action_only_ever_raises_its_own_error(text):
    try:
        action = parse_action(text, TOOLS)
    except ActionParseError:
        return
    assert action.raw and isinstance(action.arguments, dict)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400))
def test_tool_calls_from_content_never_raises(text):
    assert isinstance(tool_calls_from_content(text), list)
