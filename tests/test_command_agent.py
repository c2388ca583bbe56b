"""Any program as an agent (``--workflow command:"CMD ..."``): a curl-only shell agent and
one written with the official openai and mcp SDKs complete tasks through raleval's two
endpoints; a program that hangs, crashes or prints garbage is recorded as such and the run
goes on; hostile requests to the endpoints leave the episode's record intact."""

from __future__ import annotations

import asyncio
import shlex
import shutil
import sys

import aiohttp
import pytest

from raleval import registry
from raleval.config import ConfigError
from raleval.records import ErrorType, OutcomeKind, Termination, ToolCall
from raleval.workflows.common import EpisodeRecord
from raleval.workflows.endpoints import EpisodeEndpoints
from raleval.workflows.external import EpisodeBridge

from .conftest import REPO, run_config

CURL_AGENT = f"command:sh {REPO / 'examples' / 'agents' / 'curl_agent.sh'}"
SDK_AGENT = f"command:{sys.executable} {REPO / 'tests' / 'fixtures' / 'agents' / 'sdk_agent.py'}"
FIVE = {"tasks": None, "tasks_per_family": 2, "limit": 5}


def _sh(script: str) -> str:
    return f"command:sh -c {shlex.quote(script)}"


def _check_answered_through_both(results):
    assert len(results) == 5
    for traj in results:
        assert traj.termination is Termination.finished, traj.termination_cause
        assert traj.scores["correct"] == 1.0 and traj.error_type is ErrorType.EM
        tool_steps = [s for s in traj.steps if s.tool != "Finish"]
        assert tool_steps and all(s.kind is OutcomeKind.ok for s in tool_steps)
        info = traj.extra["command"]
        # every model call went through the OpenAI endpoint and every tool call through MCP
        assert info["chat"] == traj.n_llm_calls == len(tool_steps) + 1
        assert info["mcp"] >= len(tool_steps) and info["refused"] == 0
        assert traj.scores["progress"] == 1.0


@pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl")
def test_a_curl_shell_agent_completes_five_tasks_through_both_endpoints(tmp_path):
    _, results = run_config(tmp_path, workflow=CURL_AGENT, **FIVE)
    _check_answered_through_both(results)
    # it gave its answers with the MCP Finish tool
    assert all(t.extra["command"]["mcp"] == len(t.steps) for t in results)


def test_an_agent_on_the_official_sdks_completes_five_tasks(tmp_path):
    pytest.importorskip("mcp")
    _, results = run_config(tmp_path, workflow=SDK_AGENT, **FIVE)
    _check_answered_through_both(results)


def _three(tmp_path, workflow, **options):
    _, results = run_config(
        tmp_path, workflow=workflow, workflow_options=options, tasks=None, limit=3
    )
    assert len(results) == 3  # the run went on past every failing episode
    return results


def test_a_hanging_program_and_its_children_are_killed_at_the_time_limit(tmp_path):
    pids = tmp_path / "pids"
    script = f"sleep 300 & echo $! >> {pids}; sleep 300"
    results = _three(tmp_path, _sh(script), time_limit_s=1)
    for traj in results:
        assert traj.termination is Termination.timeout
        assert traj.termination_cause == "command_timeout"
        assert traj.error_type is ErrorType.RE and traj.error_cause == "RE:time_budget"
    for pid in pids.read_text().split():  # the background child was killed too
        assert not _running(int(pid))


def _running(pid: int) -> bool:
    """Whether ``pid`` still runs (a killed child whose reaper has not reaped it is a zombie)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False


def test_a_crash_is_a_program_error_with_its_stderr(tmp_path):
    for traj in _three(tmp_path, _sh("echo 'it broke' >&2; exit 7")):
        assert traj.termination is Termination.program_error
        assert traj.termination_cause == "command_exit:7"
        assert traj.steps[-1].kind is OutcomeKind.parse_error
        assert traj.steps[-1].observation == "it broke\n"
        assert traj.error_type is ErrorType.TE


def test_death_by_a_signal_is_named(tmp_path):
    for traj in _three(tmp_path, _sh("kill -SEGV $$")):
        assert traj.termination_cause == "command_signal:SIGSEGV"


@pytest.mark.parametrize(
    "script, cause",
    [
        ("printf '\\377\\376garbage'", "command_output:not_utf8"),
        ("printf 'an\\000swer'", "command_output:control_characters"),
        ("true", "command_output:empty"),
        ("yes", "command_output:too_long"),  # never ends by itself: cut and killed
    ],
)
def test_garbage_output_is_invalid_format(tmp_path, script, cause):
    for traj in _three(tmp_path, _sh(script), max_output_chars=100):
        assert traj.termination is Termination.invalid_format
        assert traj.termination_cause == cause
        assert traj.steps[-1].kind is OutcomeKind.parse_error
        assert traj.answer is None


def test_plain_stdout_is_the_answer_when_nothing_called_finish(tmp_path):
    for traj in _three(tmp_path, _sh("cat >/dev/null; echo '  forty two  '")):
        assert traj.termination is Termination.finished and traj.answer == "forty two"


def test_a_command_that_runs_nothing_is_refused():
    with pytest.raises(ConfigError, match="not an executable"):
        registry.workflows.get("command:no-such-program-xyz --flag").configure({}).preflight()
    with pytest.raises(ConfigError, match="CMD"):
        registry.workflows.get("command:").configure({}).preflight()


# --- the endpoints themselves, against hostile requests ------------------------------------


class Echo:
    """A model that calls searchPerson once, then answers."""

    name = "echo"

    def __init__(self):
        from raleval.model import Capabilities

        self.capabilities = Capabilities()

    def count_tokens(self, text):
        return len(text) // 4

    async def generate(self, request):
        from raleval.model import Generation

        if any(m.role == "tool" for m in request.messages):
            return Generation(text="X", prompt_tokens=5, completion_tokens=1)
        call = ToolCall(tool="searchPerson", arguments={"name": "Ada"})
        return Generation(text="", tool_calls=[call], prompt_tokens=5, completion_tokens=1)


def test_hostile_requests_are_refused_and_the_record_stays_whole(scholar_env):
    from raleval.workflows.command import CommandConfig

    async def scenario():
        rec = EpisodeRecord()
        bridge = EpisodeBridge(
            rec, Echo(), scholar_env.session(), CommandConfig(), 4096, record_unknown_calls=False
        )
        ended = asyncio.Event()
        ends = EpisodeEndpoints(bridge, "secret", "echo", ended.set)
        await ends.start()
        chat = f"{ends.openai_base}/chat/completions"
        auth = {"Authorization": "Bearer secret"}
        statuses = []
        try:
            async with aiohttp.ClientSession() as http:

                async def post(url, headers=auth, **kw):
                    async with http.post(url, headers=headers, **kw) as r:
                        statuses.append(r.status)
                        return r.status, await r.json(content_type=None)

                user = {"role": "user", "content": "Who?"}
                # no token, a wrong token, a token in the wrong scheme
                assert (await post(chat, headers={}, json={"messages": [user]}))[0] == 401
                bad = {"Authorization": "Bearer secreT"}
                assert (await post(chat, headers=bad, json={"messages": [user]}))[0] == 401
                basic = {"Authorization": "Basic secret"}
                assert (await post(ends.mcp_url, headers=basic, json={}))[0] == 401
                # what the real API refuses
                orphan = {"role": "tool", "tool_call_id": "call_never", "content": "x"}
                for body in (
                    {"messages": [user, orphan]},
                    {"messages": [user], "stream": True},
                    {"messages": []},
                    {"messages": [{"role": "wizard", "content": "x"}]},
                    {"messages": [user], "max_tokens": -1},
                    [1, 2, 3],
                ):
                    status, err = await post(chat, json=body)
                    assert status == 400 and err["error"]["type"] == "invalid_request_error"
                status, _ = await post(chat, data=b"\xff{not json")
                assert status == 400
                status, _ = await post(chat, data=b"[" * 2_000_000)
                assert status == 413
                # JSON-RPC garbage to MCP
                status, err = await post(ends.mcp_url, data=b"{")
                assert status == 400 and err["error"]["code"] == -32700
                rpc = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {}}
                _, err = await post(ends.mcp_url, json=rpc)
                assert err["error"]["code"] == -32602
                rpc = {"jsonrpc": "2.0", "id": 2, "method": "evil/exec"}
                _, err = await post(ends.mcp_url, json=rpc)
                assert err["error"]["code"] == -32601
                assert not rec.steps and not rec.llm_calls  # nothing refused was recorded

                # the episode itself still works: a call, its result, the answer
                _, reply = await post(chat, json={"messages": [user]})
                call = reply["choices"][0]["message"]["tool_calls"][0]
                args = {"name": "searchPerson", "arguments": {"name": "Ada"}}
                rpc = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": args}
                _, res = await post(ends.mcp_url, json=rpc)
                obs = res["result"]["content"][0]["text"]
                tool_msg = {"role": "tool", "tool_call_id": call["id"], "content": obs}
                assistant = reply["choices"][0]["message"]
                _, reply = await post(chat, json={"messages": [user, assistant, tool_msg]})
                assert reply["choices"][0]["message"]["content"] == "X"
                finish = {"name": "Finish", "arguments": {"answer": "X"}}
                rpc = {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": finish}
                _, res = await post(ends.mcp_url, json=rpc)
                assert res["result"]["isError"] is False
        finally:
            await ends.stop()
        return rec, ended, ends

    rec, ended, ends = asyncio.run(scenario())
    assert [s.tool for s in rec.steps] == ["searchPerson", "Finish"]
    assert rec.answer == "X" and rec.termination is Termination.finished and ended.is_set()
    assert len(rec.llm_calls) == 2
    assert ends.counts["refused"] == 11  # 3 without the token, 8 chat requests refused


def test_a_command_names_its_run_directory_without_path_characters(tmp_path):
    from raleval.config import RunConfig

    one = RunConfig(env="scholar", workflow='command:sh "my agents/a.sh" --x /etc').slug()
    two = RunConfig(env="scholar", workflow="command:sh b.sh").slug()
    agent = RunConfig(env="scholar", workflow="agent:pkg/agents.py:make").slug()
    for slug in (one, two, agent):
        assert "/" not in slug and " " not in slug and ":" not in slug
    assert one.split("__")[1].startswith("command-sh-") and one != two
    assert agent.split("__")[1].startswith("agent-agents.py_make-")


@pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl")
def test_a_spent_model_budget_ends_the_episode_at_the_endpoint(tmp_path):
    """The second chat call is refused (429, the episode is over): the curl agent gives up,
    and the episode ends on its step budget, not on the program's exit."""
    for traj in _three(tmp_path, CURL_AGENT, max_steps=1):
        assert traj.termination is Termination.step_limit
        assert traj.n_llm_calls == 1 and traj.extra["command"]["chat"] == 2
        assert [s.tool for s in traj.steps] == ["searchPerson"]
        assert traj.extra["command"]["exit"] == 3  # the script's "model error" exit
