"""Model providers against a real HTTP server on 127.0.0.1, and the optional-extra errors."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import time

import pytest

from raleval.agents.agent import resolve_model
from raleval.model import GenerateRequest, Message, ModelError

from .stub_openai import StubServer


@pytest.fixture(scope="module")
def stub():
    with StubServer() as server:
        yield server


def _model(stub, name, **options):
    options.setdefault("backoff_initial_s", 0.01)
    options.setdefault("backoff_max_s", 0.05)
    return resolve_model(f"openai-compatible/{name}@{stub.base_url}", options)


REQ = GenerateRequest(
    messages=(Message("user", "Capital of France?"),),
    stop=("\nObs",),
    max_tokens=7,
    temperature=0.0,
)


def gen(model, request=REQ):
    return asyncio.run(model.generate(request))


def test_plain_completion_and_token_accounting(stub):
    g = gen(_model(stub, "ok"))
    assert g.text == "Paris"
    assert (g.prompt_tokens, g.completion_tokens, g.cached_tokens) == (11, 3, 5)
    assert g.server_time_s == pytest.approx(0.004)  # llama.cpp-style timings are kept
    sent = [r for r in stub.requests if r["model"] == "ok"][-1]
    assert sent["stop"] == ["\nObs"] and sent["max_tokens"] == 7 and sent["temperature"] == 0.0
    assert sent["messages"] == [{"role": "user", "content": "Capital of France?"}]


def test_prefilled_assistant_turn_is_not_echoed(stub):
    req = GenerateRequest(messages=(Message("user", "Q?"), Message("assistant", "Thought 2:")))
    assert gen(_model(stub, "prefill-echo", prefill=True), req).text == " Paris"


def test_native_tool_calls(stub):
    req = GenerateRequest(
        messages=REQ.messages,
        tools=(
            {
                "type": "function",
                "function": {"name": "searchPerson", "parameters": {"type": "object"}},
            },
        ),
    )
    g = gen(_model(stub, "tool"), req)
    assert [(c.tool, c.arguments) for c in g.tool_calls] == [("searchPerson", {"name": "Ada"})]


def test_tool_call_written_in_content(stub):
    req = GenerateRequest(
        messages=REQ.messages,
        tools=(
            {
                "type": "function",
                "function": {"name": "getCoauthors", "parameters": {"type": "object"}},
            },
        ),
    )
    g = gen(_model(stub, "content-tool"), req)
    assert [(c.tool, c.arguments) for c in g.tool_calls] == [("getCoauthors", {"person_id": "p1"})]


@pytest.mark.parametrize("name", ["429-then-ok", "500-then-ok"])
def test_transient_errors_are_retried_honouring_retry_after(stub, name):
    model = _model(stub, name, backoff_initial_s=5.0, backoff_max_s=5.0)
    start = time.monotonic()
    g = gen(model)
    elapsed = time.monotonic() - start
    assert g.text == "Paris" and model.retries_used == 1
    # Retry-After: 0.2 was used instead of the 5 s exponential back-off.
    assert 0.2 <= elapsed < 3.0


@pytest.mark.parametrize(
    ("name", "cause"),
    [
        ("429-always", "rate_limited"),
        ("500-always", "http_500"),
        ("malformed", "malformed_response"),
        ("no-choices", "malformed_response"),
    ],
)
def test_persistent_failures_raise_model_error_with_cause(stub, name, cause):
    model = _model(stub, name, max_retries=2)
    with pytest.raises(ModelError) as err:
        gen(model)
    assert err.value.cause == cause
    if name.endswith("always"):
        assert stub.counts[name] == 3 and model.retries_used == 2


def test_timeout_is_a_model_error(stub):
    with pytest.raises(ModelError) as err:
        gen(_model(stub, "slow", timeout_s=0.3, max_retries=0))
    assert err.value.cause == "timeout"


def test_one_model_serves_several_event_loops_and_closes_each_session(stub):
    model = _model(stub, "ok")
    assert gen(model).text == "Paris"
    (state,) = model._per_loop.values()
    first = state.session
    assert first.closed  # asyncio.run() shut the loop down, and the session with it
    assert gen(model).text == "Paris"  # a new loop gets a new session
    assert len(model._per_loop) == 1  # the ended loop's entry is gone

    async def run_and_close():
        await model.generate(REQ)
        session = next(iter(model._per_loop.values())).session
        await model.aclose()  # what the runner does at the end of a run
        return session

    assert asyncio.run(run_and_close()).closed


def test_proxies_come_from_the_environment_once(monkeypatch):
    from raleval.agents.openai_compat import env_proxy

    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    assert env_proxy("https://api.openai.com/v1/chat/completions") == "http://proxy.example:3128"
    assert env_proxy("http://127.0.0.1:8000/v1/chat/completions") is None
    monkeypatch.delenv("HTTPS_PROXY")
    assert env_proxy("https://api.openai.com/v1/chat/completions") is None


def test_unreachable_server_is_a_connection_error():
    model = resolve_model(
        "openai-compatible/x@http://127.0.0.1:9/v1",
        {"max_retries": 1, "backoff_initial_s": 0.01, "timeout_s": 2},
    )
    with pytest.raises(ModelError) as err:
        gen(model)
    assert err.value.cause == "connection_error"


def test_failures_become_me_steps_in_a_run(stub, tmp_path):
    from .conftest import run_config

    _, results = run_config(
        tmp_path,
        model=f"openai-compatible/500-always@{stub.base_url}",
        model_options={"max_retries": 1, "backoff_initial_s": 0.01},
        limit=2,
    )
    for r in results:
        assert r.termination.value == "llm_error" and r.answer is None
        assert r.error_cause == "ME:model_failure:http_500"
        assert r.llm_calls[0].error.startswith("http_500")


@pytest.mark.parametrize(
    ("name", "cause"),
    [("context-full", "context_window"), ("context-full-openai", "context_window"),
     ("bad-request", "http_400")],
)  # fmt: skip
def test_a_request_refused_for_the_context_window_ends_at_the_context_limit(
    stub, tmp_path, name, cause
):
    """The study: function calling's estimate of Qwen's chat template fell 75 tokens short, the
    server refused the request (HTTP 400, 8,267 of 8,192 tokens) and the episode was labelled
    ME. A refusal for the window is the harness's context limit, as when the workflow sees it
    coming; any other 400 stays a model failure."""
    from .conftest import run_config

    with pytest.raises(ModelError) as err:
        gen(_model(stub, name, max_retries=0))
    assert err.value.cause == cause
    _, results = run_config(
        tmp_path, model=f"openai-compatible/{name}@{stub.base_url}", limit=1,
        model_options={"max_retries": 0},
    )  # fmt: skip
    (r,) = results
    assert r.llm_calls[0].error.startswith(cause)
    if cause == "context_window":
        assert (r.termination.value, r.termination_cause) == ("context_limit", "context_window")
        assert r.stop_reason.value == "context_overflow" and r.error_type.value != "ME"
        assert r.failure is None and not r.steps  # no step: the request was never answered
    else:
        assert r.error_cause == "ME:model_failure:http_400"


def test_empty_response_is_recorded(stub, tmp_path):
    from .conftest import run_config

    _, results = run_config(tmp_path, model=f"openai-compatible/empty@{stub.base_url}", limit=1)
    assert results[0].error_cause == "ME:model_failure:empty_response"


def test_bad_specs_and_missing_keys(monkeypatch):
    with pytest.raises(ValueError, match="<model>@<base_url>"):
        resolve_model("openai-compatible/qwen")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ValueError, match="OPENAI_API_KEY"):
        resolve_model("openai/gpt-4o-mini")


def test_api_key_is_never_written_to_the_run_header(stub, tmp_path):
    from .conftest import run_config

    summary, _ = run_config(
        tmp_path,
        model=f"openai-compatible/ok@{stub.base_url}",
        model_options={"api_key": "sk-secret-123"},
        limit=1,
    )
    header = (summary.run_dir / "header.json").read_text()
    assert "sk-secret-123" not in header and "<redacted>" in header


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vLLM is installed")
def test_vllm_without_the_extra_names_it():
    with pytest.raises(ModelError, match=r"pip install \"raleval\[vllm\]\""):
        resolve_model("vllm/Qwen/Qwen2.5-0.5B-Instruct")


def test_vllm_batcher_batches_concurrent_requests():
    from raleval.agents.vllm_engine import RequestBatcher
    from raleval.model import Generation

    calls: list[int] = []

    def run_batch(requests):
        calls.append(len(requests))
        return [Generation(text=r.messages[0].content.upper()) for r in requests]

    async def main():
        batcher = RequestBatcher(run_batch, window_s=0.05)
        reqs = [GenerateRequest(messages=(Message("user", f"q{i}"),)) for i in range(5)]
        return await asyncio.gather(*(batcher.submit(r) for r in reqs))

    out = asyncio.run(main())
    assert [g.text for g in out] == ["Q0", "Q1", "Q2", "Q3", "Q4"]
    assert calls == [5]


def test_hf_without_torch_or_path_is_a_clear_error(tmp_path):
    if importlib.util.find_spec("torch") is None:
        with pytest.raises(ModelError, match=r"raleval\[torch\]"):
            resolve_model(f"hf/{tmp_path}")
    else:
        with pytest.raises(ValueError, match="no such local model directory"):
            resolve_model("hf/definitely/not/here")


def test_replay_reproduces_a_recorded_run(tmp_path):
    from .conftest import run_config

    s1, first = run_config(tmp_path, limit=4)
    s2, again = run_config(
        tmp_path,
        model="scripted/replay",
        model_options={"path": str(s1.run_dir / "results.jsonl")},
        limit=4,
    )
    assert s2.mean_f1 == 1.0
    # episodes are written in the order they finish: compare them task by task
    first, again = (sorted(rs, key=lambda r: r.task_id) for rs in (first, again))
    assert [r.task_id for r in again] == [r.task_id for r in first]
    assert [r.answer for r in again] == [r.answer for r in first]
    assert [[s.observation for s in r.steps] for r in again] == [
        [s.observation for s in r.steps] for r in first
    ]


def test_a_model_option_no_provider_takes_is_refused_before_anything_starts(monkeypatch):
    """``-M temperature=0.7`` on the embedded model started its server, then failed with
    "TypeError: OpenAICompatibleModel.__init__() got an unexpected keyword argument"; it is
    refused first, naming the valid options and the -W flag of a workflow option."""
    from raleval.agents import local

    def no_server(*args, **kwargs):
        raise AssertionError("started a server for a refused option")

    monkeypatch.setattr(local, "ensure_server", no_server)
    with pytest.raises(ValueError) as refused:
        resolve_model("local/qwen2.5-0.5b", {"temperature": 0.7, "n_ctx": 4096})
    message = str(refused.value)
    assert "local/qwen2.5-0.5b has no model option 'temperature' (-M)" in message
    assert "-W temperature=0.7" in message and "n_ctx" in message and "timeout_s" in message
    # the provider's own fixed settings are not offered as options
    assert "context_window" not in message and "base_url" not in message
    with pytest.raises(ValueError, match=r"has no model option 'timeout'.*valid: .*timeout_s"):
        resolve_model("openai-compatible/m@http://127.0.0.1:9/v1", {"timeout": 5})
    model = resolve_model("openai-compatible/m@http://127.0.0.1:9/v1", {"timeout_s": 5})
    assert model.name == "openai-compatible/m@http://127.0.0.1:9/v1"


@pytest.mark.parametrize(
    ("models", "window"),
    [
        ({"object": "list", "data": [{"id": "ok", "max_model_len": 4096}]}, 4096),  # vLLM
        # llama.cpp: one model under its file's name, whatever name the client asks for
        (
            {"data": [{"id": "/m/q.gguf", "owned_by": "llamacpp", "meta": {"n_ctx": 2048}}]},
            2048,
        ),
        ({"data": [{"id": "/m/qwen.gguf", "owned_by": "llamacpp"}]}, None),
        ({"data": [{"id": "a", "max_model_len": 4096}, {"id": "b", "max_model_len": 8192}]}, None),
        ({"data": [{"id": "ok"}]}, None),  # Ollama, OpenAI: no window
        ({"data": [{"id": "ok", "max_model_len": 10}]}, None),  # implausible
        ({"data": [{"id": "ok", "max_model_len": "8192"}]}, None),
        ({"data": "nope"}, None),
        ("not json", None),
        (None, None),  # no such route
    ],
)
def test_a_self_hosted_servers_context_window_is_read_from_its_models_route(models, window):
    """A llama.cpp server started with a 2,048-token window refused the first prompt of every
    CRAG episode (38 tools) while raleval budgeted for its 16k default; the window a server
    reports at GET /v1/models is the model's unless -M context_window says otherwise."""
    with StubServer() as server:
        if models is not None:
            server.models = (models if isinstance(models, str) else json.dumps(models)).encode()
        model = resolve_model(f"openai-compatible/ok@{server.base_url}")
        assert model.capabilities.context_window == window
        if "llamacpp" in str(models):  # its own tokenizer counts the budgets
            assert model.tokenize_url == server.base_url.removesuffix("/v1") + "/tokenize"
            assert model.count_tokens("one two three four five six seven") == 7
        else:
            assert model.tokenize_url is None
        assert model.capabilities.max_concurrency is None  # no /props: no slot count
        told = resolve_model(f"openai-compatible/ok@{server.base_url}", {"context_window": 1000})
        assert told.capabilities.context_window == 1000


@pytest.mark.parametrize(
    ("props", "options", "slots"),
    [
        ({"total_slots": 2}, {}, 2),
        ({"total_slots": 2}, {"max_concurrency": 4}, 4),  # -M wins
        ({"total_slots": 0}, {}, None),
        ({"total_slots": "2"}, {}, None),
        ("<html>", {}, None),
    ],
)
def test_a_llamacpp_servers_slots_cap_the_episodes_in_flight(props, options, slots):
    """Eight episodes in flight on a 2-slot llama.cpp server evicted each other's prompt cache:
    5 min 22 s for 8 CRAG episodes that take 2 min 13 s two at a time. Its ``/props`` says how
    many slots it has, and the runner keeps no more episodes in flight."""
    from raleval.app.episodes import episode_slots
    from raleval.config import RunConfig

    with StubServer() as server:
        server.models = json.dumps({"data": [{"id": "m.gguf", "owned_by": "llamacpp"}]}).encode()
        server.props = (props if isinstance(props, str) else json.dumps(props)).encode()
        model = resolve_model(f"openai-compatible/ok@{server.base_url}", options)
        assert model.capabilities.max_concurrency == slots
        config = RunConfig(model=f"openai-compatible/ok@{server.base_url}")
        assert episode_slots(config, model, 8) == (slots or 8)
