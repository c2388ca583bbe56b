"""Every workflow's requests pass a server as strict as OpenAI's chat completions API
(tests/openai_conformance.py), run through ``openai-compatible/...`` with a scripted backend
answering behind it; and the strict server's own rules, each shown to bite."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from raleval import registry
from raleval.app.plan import build_env
from raleval.app.runner import run_sync
from raleval.config import RunConfig
from raleval.records import Trajectory
from raleval.store import RESULTS, ResultsFile

from .conftest import options_for
from .openai_conformance import ConformanceServer, OracleBackend, problems

WORKFLOWS = ["react", "function_calling", "pal", "dfsdt", "direct", "planned"]


def _run(
    tmp_path: Path,
    workflow: str,
    tasks: str | None = None,
    limit: int = 10,
    ids: str = "server",
    parallel: bool = False,
    variant: str = "oracle",
    then: Any = None,
    env_name: str = "scholar",
    **options: Any,
) -> tuple[ConformanceServer, list[Trajectory]]:
    env = build_env(env_name, {"size": "tiny"})
    run_dir = tmp_path / "run"
    configured = registry.workflows.get(workflow).configure(options)
    backend = OracleBackend(run_dir, env, configured, parallel, variant)
    with ConformanceServer(backend, ids=ids) as server:
        config = RunConfig(
            env=env_name,
            env_options={"size": "tiny"},
            workflow=workflow,
            workflow_options=options,
            model=f"openai-compatible/strict@{server.base_url}",
            model_options={"max_retries": 0},
            limit=limit,
            log_dir=tmp_path,
            run_name="run",
            cache=then is not None,
            **({"tasks": tasks} if tasks else {}),
        )
        run_sync(config)
        if then is not None:  # more to do against the same server (diagnose the run)
            then(run_dir)
    return server, list(ResultsFile(run_dir / RESULTS))


def _refusals(server: ConformanceServer) -> list[list[str]]:
    return [found for _, found in server.refused]


@pytest.mark.parametrize("ids", ["server", "none"])
@pytest.mark.parametrize("parallel", [False, True], ids=["one-call", "parallel-calls"])
def test_function_calling_passes_the_strict_server_on_ten_scholar_tasks(
    tmp_path: Path, ids: str, parallel: bool
) -> None:
    # a server that answers with several calls at once, run with parallel calls on (off, only
    # a reply's first call would run and be answered)
    options = {"parallel_calls": True} if parallel else {}
    server, trajs = _run(tmp_path, "function_calling", ids=ids, parallel=parallel, **options)
    assert len(trajs) == 10
    assert _refusals(server) == []
    assert not [s.cause for t in trajs for s in t.steps if s.kind.value == "llm_error"]
    assert all(t.termination.value == "finished" for t in trajs), [t.termination for t in trajs]
    assert sum(t.scores.get("f1", 0.0) == 1.0 for t in trajs) >= 8, [t.answer for t in trajs]
    calls = [m for body in server.requests for m in body["messages"] if m.get("tool_calls")]
    assert calls  # episodes went past their first request
    sent = [c["id"] for m in calls for c in m["tool_calls"]]
    if ids == "server":  # the ids the model gave travel back unchanged
        assert server.issued and set(sent) <= set(server.issued)
        answered_later = {i for i in server.issued if i in sent}
        finishing = sum(1 for t in trajs if t.steps and t.steps[-1].tool == "Finish")
        assert len(answered_later) == len(server.issued) - finishing
    else:  # none given: derived from the position, never random
        assert all(i.startswith("call_") for i in sent)
    if parallel:  # a reply's calls stay one assistant turn
        assert any(len(m["tool_calls"]) > 1 for m in calls)


def test_function_calling_ids_are_the_same_in_a_second_run(tmp_path: Path) -> None:
    """Ids derived from positions: two runs send identical requests (a cache can answer)."""
    first, _ = _run(tmp_path / "a", "function_calling", ids="none", limit=4)
    second, _ = _run(tmp_path / "b", "function_calling", ids="none", limit=4)

    def key(body: dict[str, Any]) -> str:
        return json.dumps(body["messages"], sort_keys=True)

    assert sorted(map(key, first.requests)) == sorted(map(key, second.requests))


@pytest.mark.parametrize(
    ("variant", "parallel"),
    [("wrong-tool", False), ("constant", True)],  # constant: the gold calls, then a wrong answer
    ids=["one-call", "parallel-calls"],
)
def test_function_calling_replays_pass_and_a_second_diagnose_asks_nothing(
    tmp_path: Path, variant: str, parallel: bool
) -> None:
    """``raleval diagnose`` replays prefixes of function-calling episodes against the strict
    server: each reply's calls in one assistant turn under their ids, accepted; a second
    ``diagnose --fresh`` sends the same requests, so the response cache answers every one."""
    from typer.testing import CliRunner

    from raleval.analysis.diagnosis import read_diagnoses
    from raleval.app.cli import app

    outputs: list[str] = []

    def diagnose_twice(run_dir: Path) -> None:
        for extra in ([], ["--fresh"]):
            result = CliRunner().invoke(app, ["diagnose", str(run_dir), *extra])
            assert result.exit_code == 0, result.output
            outputs.append(" ".join(result.output.split()))

    server, _ = _run(
        tmp_path, "function_calling", limit=6, parallel=parallel, variant=variant,
        then=diagnose_twice, **({"parallel_calls": True} if parallel else {}),
    )  # fmt: skip
    assert _refusals(server) == []
    diagnoses = read_diagnoses(tmp_path / "run")
    assert diagnoses and sum(d.llm_calls for d in diagnoses) > 0
    assert sum(d.llm_calls for d in diagnoses) == sum(d.cache_hits for d in diagnoses)
    assert "0 sent to the model" in outputs[1], outputs[1]


@pytest.mark.parametrize("workflow", WORKFLOWS)
def test_every_workflow_passes_the_strict_server(tmp_path: Path, workflow: str) -> None:
    server, trajs = _run(tmp_path, workflow, limit=4, **options_for(workflow, max_steps=8))
    assert len(trajs) == 4 and server.requests
    assert _refusals(server) == []
    assert not [s.cause for t in trajs for s in t.steps if s.kind.value == "llm_error"]


# -- the server's rules bite ------------------------------------------------------------------

TOOLS = [{"type": "function", "function": {"name": "searchPerson", "parameters": {
    "type": "object", "properties": {"name": {"type": "string"}}}}}]  # fmt: skip


def _call(call_id: str, name: str = "searchPerson", args: Any = '{"name": "Ada"}') -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}


def _body(*messages: dict, **extra: Any) -> dict:
    return {"model": "m", "messages": [{"role": "user", "content": "q"}, *messages],
            "tools": TOOLS, **extra}  # fmt: skip


def _assistant(*calls: dict, content: Any = None) -> dict:
    return {"role": "assistant", "content": content, "tool_calls": list(calls)}


def _tool(call_id: str, content: Any = "result") -> dict:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def test_a_conversation_openai_takes_passes() -> None:
    body = _body(
        _assistant(_call("a"), _call("b")), _tool("a"), _tool("b"),
        {"role": "assistant", "content": "done"}, {"role": "user", "content": "more"},
    )  # fmt: skip
    assert problems(body) == []


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (_body(_assistant(_call("call_0")), _tool("call_x1")), "must be a response to a preceding"),
        (_body(_tool("a")), "must be a response to a preceding"),
        (_body(_assistant(_call("a"), _call("b")), _tool("a")), "did not have response messages"),
        (_body(_assistant(_call("a")), {"role": "user", "content": "x"}), "did not have response"),
        (_body(_assistant(_call("a"), _call("b")), _tool("b"), _tool("a")), "out of order"),
        (_body(_assistant(_call("a")), _tool("a"), _tool("a")), "must be a response"),
        (_body({"role": "robot", "content": "x"}), "is not one of"),
        (_body({"role": "user", "content": None}), "content"),
        (_body({"role": "assistant", "content": None}), "required unless tool_calls"),
        (_body(_assistant(_call("a", args={"name": "Ada"})), _tool("a")), "expected a string"),
        (_body(_assistant(_call("a", args="{name: Ada")), _tool("a")), "not a JSON object"),
        (_body(_assistant(_call("a", name="search person")), _tool("a")), "valid function name"),
        (_body(_assistant(_call("a")), _tool("a", content=None)), "content"),
        (_body(_assistant(_call("a"), _call("a")), _tool("a")), "duplicate id"),
        (_body(_assistant()), "non-empty array"),
        (_body(stop=["a", "b", "c", "d", "e"]), "> 4"),
        (_body(stop_sequences=["x"]), "Unrecognized request argument"),
        ({"model": "m", "messages": []}, "non-empty array"),
        (
            {
                "model": "m",
                "messages": [{"role": "user", "content": "q"}],
                "tools": [{"type": "function", "function": {"name": "get.person"}}],
            },
            "does not match",
        ),
    ],
)
def test_what_openai_refuses_is_refused(body: dict, says: str) -> None:
    found = problems(body)
    assert found and any(says in p for p in found), found


def test_the_server_answers_400_and_raleval_records_it(tmp_path: Path) -> None:
    """Before this fix every second function-calling request had call_0 against call_<random>:
    the server must turn such a request into an llm_error step ``http_400``."""
    import asyncio

    from raleval.agents.openai_compat import OpenAICompatibleModel
    from raleval.model import GenerateRequest, Message, ModelError
    from raleval.records import ToolCall

    with ConformanceServer(lambda body: ("ok", [])) as server:
        model = OpenAICompatibleModel("m", base_url=server.base_url, max_retries=0)
        mismatched = GenerateRequest(
            messages=(
                Message("user", "q"),
                Message("assistant", "", (ToolCall(tool="searchPerson"),), None, ("call_0",)),
                Message("tool", "r", tool_call_id="call_9f2c"),
            ),
            tools=tuple(TOOLS),
        )

        async def ask() -> str:
            try:
                await model.generate(mismatched)
            except ModelError as exc:
                return exc.cause
            finally:
                await model.aclose()
            return "accepted"

        assert asyncio.run(ask()) == "http_400"
        assert len(server.refused) == 1


# -- testbeds reach every workflow --------------------------------------------------------------


def _request_text(body: dict[str, Any]) -> str:
    return json.dumps(body, ensure_ascii=False)


SETS = {"scholar": "scholar", "crag": "crag-kg", "wiki": "wiki"}
# every workflow on scholar; on CRAG's 38 tools and the wiki's the schema-sending workflows
# (the others render the same tool texts), marked slow: a CRAG run takes minutes here
RENAMED = [
    *(("scholar", w) for w in WORKFLOWS),
    *(
        pytest.param(e, w, marks=pytest.mark.slow)
        for e in ("crag", "wiki")
        for w in ("react", "function_calling")
    ),
]


@pytest.mark.parametrize(("env_name", "workflow"), RENAMED)
def test_renamed_tools_leave_no_real_name_in_any_request(
    tmp_path: Path, workflow: str, env_name: str
) -> None:
    """``@rename-tools``: no request of any workflow names a real tool, in its tool list, its
    schemas' descriptions, its prompt or its demonstrations (captured at the server)."""
    server, trajs = _run(
        tmp_path, workflow, tasks=f"{SETS[env_name]}@rename-tools", limit=4, env_name=env_name,
        **options_for(workflow, max_steps=8),
    )  # fmt: skip
    assert trajs and server.requests and _refusals(server) == []
    env = build_env(env_name, {"size": "tiny"})
    real = sorted({t.name for t in env.tools}, key=len, reverse=True)
    leaks = {
        name: _request_text(body)[max(0, at - 80) : at + 40]
        for body in server.requests
        for name in real
        if (at := _request_text(body).find(name)) >= 0
    }
    assert leaks == {}
