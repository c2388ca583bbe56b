"""MCP both ways: raleval's environments served with the official SDK, and any MCP server
evaluated as an environment (stdio subprocesses and streamable HTTP on 127.0.0.1)."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from raleval import registry
from raleval.app.runner import run_sync
from raleval.config import build_config
from raleval.envs.mcp import MCPEnv
from raleval.records import OutcomeKind
from raleval.store import write_tasks
from raleval.tasks.catalog import load_tasks

from .conftest import REPO

SERVE = [sys.executable, "-m", "raleval", "serve", "--mcp"]
SCHOLAR = " ".join([*SERVE, "--env", "scholar", "-E", "size=tiny"])
EXAMPLE = f"{sys.executable} {REPO / 'examples' / 'mcp_server' / 'server.py'}"
SCHOLAR_TOOLS = [
    "searchPerson",
    "searchPublication",
    "getCoauthors",
    "getPersonInterest",
    "getPublication",
    "getPersonBasicInfo",
    "getPersonPubs",
]


def _children() -> list[str]:
    psutil = pytest.importorskip("psutil")
    return [" ".join(p.cmdline()) for p in psutil.Process().children(recursive=True)]


def test_official_client_lists_scholar_tools_and_calls_search_person():
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(
        command=SERVE[0], args=[*SERVE[1:], "--env", "scholar", "-E", "size=tiny"]
    )
    in_process = registry.envs.get("scholar")(size="tiny")
    name = in_process.store.query("SELECT name FROM persons LIMIT 1")[0][0]

    async def session() -> tuple[list, object]:
        async with Client(params) as client:
            tools = (await client.list_tools()).tools
            return tools, await client.call_tool("searchPerson", {"name": name})

    tools, result = asyncio.run(session())
    assert [t.name for t in tools] == SCHOLAR_TOOLS
    search = tools[0]
    assert search.description == in_process.tool("searchPerson").description
    assert search.input_schema["properties"].keys() == {"name", "organization", "interest"}
    assert result.is_error is False
    expected = asyncio.run(in_process.call("searchPerson", {"name": name}))
    assert result.content[0].text == expected.observation
    assert result.structured_content == {"result": expected.data}
    assert name in result.content[0].text


@pytest.fixture(scope="module")
def scholar_tasks(tmp_path_factory) -> Path:
    env = registry.envs.get("scholar")(size="tiny")
    path = tmp_path_factory.mktemp("tasks") / "scholar_tiny.jsonl"
    write_tasks(path, load_tasks("scholar", env, "scholar", 2, 0))
    return path


def _run(tmp_path: Path, env: str, options: dict, tasks: Path, workflow: str) -> list[dict]:
    cfg = build_config(
        {
            "env": env,
            "env_options": options,
            "tasks": str(tasks),
            "model": "scripted/oracle",
            "workflow": workflow,
            "log_dir": tmp_path,
            "run_name": f"{env}-{workflow}",
        }
    )
    summary = run_sync(cfg)
    return [
        json.loads(line) for line in (summary.run_dir / "results.jsonl").read_text().splitlines()
    ]


@pytest.mark.slow
@pytest.mark.parametrize("workflow", ["react", "function_calling"])
def test_scholar_over_mcp_matches_in_process(tmp_path, scholar_tasks, workflow):
    local = _run(tmp_path, "scholar", {"size": "tiny"}, scholar_tasks, workflow)
    remote = _run(tmp_path, "mcp", {"command": SCHOLAR}, scholar_tasks, workflow)
    assert len(local) == len(remote) == 6
    by_id = {r["task_id"]: r for r in remote}
    for mine in local:
        theirs = by_id[mine["task_id"]]
        steps = [(s["tool"], s["arguments"], s["observation"], s["kind"]) for s in mine["steps"]]
        assert [
            (s["tool"], s["arguments"], s["observation"], s["kind"]) for s in theirs["steps"]
        ] == steps
        # the in-process run showed its families' demonstrations (so it says whether an answer
        # copied one); an MCP server's tools come with none, so its episodes carry no such flag
        assert mine["scores"].pop("copied_demonstration") == 0.0
        assert "copied_demonstration" not in theirs["scores"]
        assert theirs["scores"] == mine["scores"]
        assert theirs["answer"] == mine["answer"]
        assert theirs["scores"]["f1"] == 1.0
        assert theirs["scores"]["call_precision"] == theirs["scores"]["call_recall"] == 1.0
    assert not any("serve --mcp" in c for c in _children()), "a server process outlived the run"


def test_example_server_tools_errors_and_clean_shutdown():
    env = MCPEnv(command=EXAMPLE)
    try:
        assert [t.name for t in env.tools] == ["search_books", "get_book", "get_author"]
        assert env.tool("get_book").react_signature() == "get_book(book_id=...)"
        assert "book_id: str" in env.tool("get_book").python_stub()
        assert env.shared is False  # not a raleval server: a connection per episode
        session = env.session()
        ok = asyncio.run(session.call("get_author", {"author_id": "a2"}))
        assert ok.kind is OutcomeKind.ok
        assert ok.data == {"name": "Tomas Reyes", "born": 1970, "country": "Chile"}
        bad = asyncio.run(session.call("get_book", {"book_id": "zz"}))
        assert bad.kind is OutcomeKind.misuse and bad.cause == "tool_error"
        assert "no book 'zz'" in bad.observation
        unknown = asyncio.run(session.call("lend_book", {}))
        assert (unknown.kind, unknown.cause) == (OutcomeKind.misuse, "unknown_tool")
        missing = asyncio.run(session.call("get_book", {}))
        assert missing.kind is OutcomeKind.misuse and missing.cause == "bad_arguments"
        assert len([c for c in _children() if "server.py" in c]) == 2  # root + the episode's
        asyncio.run(session.aclose())
        assert len([c for c in _children() if "server.py" in c]) == 1
    finally:
        env.close()
    assert not any("server.py" in c for c in _children())


def test_a_dead_server_is_a_tool_fault_not_a_crash():
    env = MCPEnv(command=SCHOLAR)
    try:
        session = env.session()
        psutil = pytest.importorskip("psutil")
        for p in psutil.Process().children(recursive=True):
            if "serve" in " ".join(p.cmdline()):
                p.kill()
        result = asyncio.run(session.call("searchPerson", {"name": "x"}))
        assert result.kind is OutcomeKind.tool_fault
        assert result.cause.startswith(("connection_error", "mcp_error"))
    finally:
        env.close()


def test_unreachable_command_is_a_user_error():
    with pytest.raises(ValueError, match="cannot open the MCP server"):
        MCPEnv(command=f"{sys.executable} -c 'import sys; sys.exit(3)'", timeout_s=5)
    with pytest.raises(ValueError, match="exactly one of"):
        MCPEnv()


def test_stateful_wiki_sessions_are_per_episode():
    cmd = " ".join([*SERVE, "--env", "wiki", "-E", "size=tiny"])
    env = MCPEnv(command=cmd)
    try:
        assert env.shared is True  # a raleval server: one connection, a session id per episode
        assert env.tool("Search").react_signature() == "Search[entity]"
        twin = registry.envs.get("wiki")(size="tiny")  # the in-process environment
        assert [t.name for t in env.tools] == [t.name for t in twin.tools]
        a, b = env.session(), env.session()
        lookup_before = asyncio.run(a.call("Lookup", {"keyword": "the"}))
        assert lookup_before.observation.startswith("No page has been searched yet")
        page = asyncio.run(a.call("Search", {"entity": _any_wiki_title()}))
        assert page.kind is OutcomeKind.ok
        after_a = asyncio.run(a.call("Lookup", {"keyword": "the"}))
        after_b = asyncio.run(b.call("Lookup", {"keyword": "the"}))
        assert after_a.observation != lookup_before.observation  # a's page is now open
        assert after_b.observation == lookup_before.observation  # b's is not
        assert env.prompt_template("react") == twin.prompt_template("react")
    finally:
        env.close()


def _any_wiki_title() -> str:
    env = registry.envs.get("scholar")(size="tiny")
    return env.store.query("SELECT name FROM persons LIMIT 1")[0][0]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.integration
def test_streamable_http_with_token():
    port = _free_port()
    proc = subprocess.Popen(
        [
            *SERVE,
            "--transport",
            "http",
            "--port",
            str(port),
            "--token",
            "s3cret",
            "--env",
            "scholar",
            "-E",
            "size=tiny",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.2)
        with pytest.raises(ValueError, match="cannot open the MCP server"):
            MCPEnv(url=url, token="wrong", timeout_s=10)
        env = MCPEnv(url=url, token="s3cret")
        try:
            assert [t.name for t in env.tools] == SCHOLAR_TOOLS
            result = asyncio.run(env.session().call("searchPerson", {"name": "nobody at all"}))
            assert (result.kind, result.observation) == (OutcomeKind.ok, "No person found.")
        finally:
            env.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
