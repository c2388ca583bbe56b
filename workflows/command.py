"""Any program as an agent: ``--workflow command:"CMD ..."``, run once per task.

The program reads the question on stdin and finds in its environment

- ``OPENAI_BASE_URL`` (also ``RALEVAL_OPENAI_BASE_URL``) and ``OPENAI_API_KEY``: an
  OpenAI-compatible chat endpoint on 127.0.0.1 that forwards to the run's ``--model``;
- ``RALEVAL_MCP_URL``: the episode's tools over MCP (streamable HTTP, JSON responses), with a
  ``Finish`` tool; ``RALEVAL_TOKEN`` is the episode's bearer token for both;
- ``RALEVAL_INSTRUCTIONS``: the run's instructions for a text agent (its tools, the reply
  format, demonstrations), ``RALEVAL_MODEL`` the model's name.

Both endpoints record every call into the episode (workflows/endpoints.py), so the program
needs no raleval code. Its answer is its ``Finish`` call, else its stdout. What can go wrong is
recorded and classified, and the run goes on: a program that outlives the time limit is killed
(``timeout``, ``command_timeout``); one that exits non-zero or by a signal without answering is a
``program_error`` (``command_exit:N``, ``command_signal:NAME``, its stderr's tail the step's
observation); stdout that is empty, not UTF-8, holds control characters or exceeds
``max_output_chars`` is ``invalid_format`` (``command_output:...``). A program that spends a
budget (model calls, context, cost) is stopped a grace period later.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import secrets
import shlex
import shutil
import signal
from typing import Any, ClassVar, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from pydantic import Field

from raleval.config import ConfigError
from raleval.environment import Environment
from raleval.model import GenerateRequest, Model
from raleval.records import OutcomeKind, Termination, ToolCall
from raleval.registry import register_workflow
from raleval.workflow import GoldPlan, Workflow
from raleval.workflows.common import (
    DEFAULT_CONTEXT_TOKENS,
    EpisodeRecord,
    episode_env,
    episode_model,
    examples_text,
    load_prompt,
    render_tool_lines,
)
from raleval.workflows.external import EpisodeBridge, ExternalAgentConfig

OBSERVATION = "Observation: "  # how a text agent shows a tool's result (RALEVAL_INSTRUCTIONS)
_ACTION = "Action: "
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
STDERR_TAIL = 2000  # characters of the program's stderr kept with a failure


class CommandConfig(ExternalAgentConfig):
    """A command agent's budgets."""

    max_output_chars: int = Field(4000, ge=1)  # a longer stdout is no answer
    grace_s: float = Field(2.0, ge=0)  # after the episode ended, before the program is killed


class CommandState(TypedDict, total=False):
    question: str
    rec: EpisodeRecord


def command_argv(command: str) -> list[str]:
    """The argument vector of ``command`` (shell words); ConfigError if it runs nothing."""
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise ConfigError(f"command {command!r}: {exc}") from None
    if not argv:
        raise ConfigError('give the program as --workflow command:"CMD ..."')
    exe = argv[0]
    if shutil.which(exe) is None and not (os.path.isfile(exe) and os.access(exe, os.X_OK)):
        raise ConfigError(f"command {command!r}: {exe} is not an executable on PATH or a path")
    return argv


async def _read_capped(stream: asyncio.StreamReader, cap: int, over: asyncio.Event) -> bytes:
    """Read ``stream`` to its end, keeping at most ``cap`` bytes; set ``over`` past it."""
    kept = bytearray()
    while chunk := await stream.read(65536):
        if len(kept) < cap:
            kept += chunk[: cap - len(kept)]
        if len(kept) >= cap and not over.is_set():
            over.set()
    return bytes(kept)


def _kill(proc: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def output_problem(raw: bytes, cap: int, overflowed: bool) -> tuple[str | None, str]:
    """(why stdout is no answer, or None; the answer text)."""
    if overflowed or len(raw) > cap * 4:
        return "command_output:too_long", ""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return "command_output:not_utf8", ""
    text = text.strip()
    if not text:
        return "command_output:empty", ""
    if len(text) > cap:
        return "command_output:too_long", ""
    if _CONTROL.search(text):
        return "command_output:control_characters", ""
    return None, text


def build_command_graph(
    model: Model, env: Environment, argv: list[str], config: CommandConfig | None = None
) -> Any:
    """A one-node graph that runs ``argv`` per episode against the episode's endpoints."""
    from raleval.workflows.endpoints import EpisodeEndpoints

    cfg = config or CommandConfig()
    template = load_prompt("command", env, cfg.prompt_file)
    context_limit = (
        cfg.max_context_tokens or model.capabilities.context_window or DEFAULT_CONTEXT_TOKENS
    )

    async def run(state: CommandState, config: RunnableConfig) -> CommandState:
        rec = state.get("rec") or EpisodeRecord()
        ep_env, ep_model = episode_env(config, env), episode_model(config, model)
        bridge = EpisodeBridge(
            rec, ep_model, ep_env, cfg, context_limit, record_unknown_calls=False
        )
        ended = asyncio.Event()
        token = secrets.token_urlsafe(24)
        endpoints = EpisodeEndpoints(bridge, token, ep_model.name, ended.set)
        await endpoints.start()
        instructions = template.substitute(
            tools=render_tool_lines(ep_env), examples=examples_text(cfg, config)
        )
        child_env = {
            **os.environ,
            "OPENAI_BASE_URL": endpoints.openai_base,
            "RALEVAL_OPENAI_BASE_URL": endpoints.openai_base,
            "OPENAI_API_KEY": token,
            "RALEVAL_TOKEN": token,
            "RALEVAL_MCP_URL": endpoints.mcp_url,
            "RALEVAL_MODEL": ep_model.name,
            "RALEVAL_INSTRUCTIONS": instructions,
        }
        info: dict[str, Any] = {}
        rec.extra["command"] = info
        try:
            await run_program(rec, cfg, argv, state["question"], child_env, ended, info)
        finally:
            await endpoints.stop()
            info.update(endpoints.counts)
        return {"rec": rec}

    graph = StateGraph(CommandState)
    graph.add_node("command", run)
    graph.add_edge(START, "command")
    graph.add_edge("command", END)
    return graph.compile()


async def run_program(
    rec: EpisodeRecord,
    cfg: CommandConfig,
    argv: list[str],
    question: str,
    child_env: dict[str, str],
    ended: asyncio.Event,
    info: dict[str, Any],
) -> None:
    """Run the program once for ``question`` and record how it ended."""
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=child_env,
            start_new_session=True,  # its own process group: a kill reaches its children
        )
    except OSError as exc:
        rec.add_step(kind=OutcomeKind.parse_error, cause="command_start", observation=str(exc))
        rec.finish(Termination.program_error, f"command_start:{type(exc).__name__}")
        return
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    overflow = asyncio.Event()
    out_task = asyncio.ensure_future(_read_capped(proc.stdout, cfg.max_output_chars * 4, overflow))
    err_task = asyncio.ensure_future(_read_capped(proc.stderr, 1 << 16, asyncio.Event()))
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        proc.stdin.write(question.encode("utf-8") + b"\n")
        await proc.stdin.drain()
        proc.stdin.close()

    async def ended_then_grace() -> None:
        await ended.wait()
        await asyncio.sleep(cfg.grace_s)

    stoppers = {
        asyncio.ensure_future(proc.wait()): "exit",
        asyncio.ensure_future(asyncio.sleep(max(0.0, cfg.time_limit_s - rec.elapsed()))): "time",
        asyncio.ensure_future(overflow.wait()): "overflow",
        asyncio.ensure_future(ended_then_grace()): "ended",
    }
    try:
        done, _ = await asyncio.wait(stoppers, return_when=asyncio.FIRST_COMPLETED)
        why = stoppers[next(iter(done))]
    finally:
        for task in stoppers:
            task.cancel()
        if proc.returncode is None:
            _kill(proc)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(proc.wait(), 5)
    raw = await out_task
    err = (await err_task).decode("utf-8", "replace")[-STDERR_TAIL:]
    code = proc.returncode
    info.update(exit=code, stopped_by=why, stdout_bytes=len(raw), stderr_tail=err)
    if rec.done:  # Finish, or a budget the program spent
        return
    if why == "time":
        rec.finish(Termination.timeout, "command_timeout")
        return
    if why != "overflow" and code != 0:
        if code is not None and code < 0:
            cause = f"command_signal:{signal.Signals(-code).name}"
        else:
            cause = f"command_exit:{code}"
        rec.add_step(kind=OutcomeKind.parse_error, cause=cause, observation=err or None)
        rec.finish(Termination.program_error, cause)
        return
    problem, answer = output_problem(raw, cfg.max_output_chars, why == "overflow")
    if problem is not None:
        shown = raw[:200].decode("utf-8", "backslashreplace")
        rec.add_step(kind=OutcomeKind.parse_error, cause=problem, observation=repr(shown))
        rec.finish(Termination.invalid_format, problem)
        return
    rec.answer = answer
    rec.add_step(tool="Finish", arguments={"answer": answer})
    rec.finish(Termination.finished)


@register_workflow("command")
class CommandAgent(Workflow):
    """Any program (``command:"CMD ..."``) with the run's model and the episode's tools served
    to it over HTTP on 127.0.0.1."""

    name = "command"
    Config = CommandConfig
    config: CommandConfig
    command: ClassVar[str | None] = None

    @classmethod
    def parametrized(cls, command: str) -> type[CommandAgent]:
        """This workflow running ``command`` (``--workflow command:CMD``)."""
        return type("CommandAgent", (cls,), {"command": command})

    def __reduce__(self) -> Any:
        # the class is made per command at run time: a worker process rebuilds it by its command
        return (_command_agent, (self.command, self.config))

    def argv(self) -> list[str]:
        return command_argv(self.command or "")

    def preflight(self) -> None:
        self.argv()

    def build(self, model: Model, env: Environment) -> Any:
        return build_command_graph(model, env, self.argv(), self.config)

    def render_example(self, example: Any, env: Environment) -> str:
        import json

        lines = [f"Question: {example.question}"]
        for call, observation in example.calls:
            action = {"name": call.tool, "arguments": call.arguments}
            lines += [
                f"{_ACTION}{json.dumps(action, ensure_ascii=False)}",
                f"{OBSERVATION}{' '.join(observation.split())}",
            ]
        lines.append(f"Answer: {example.answer}")
        return "\n".join(lines)

    def shown_observations(self, request: GenerateRequest) -> list[str] | None:
        if request.tools:
            return super().shown_observations(request)
        return [
            m.content[len(OBSERVATION) :]
            for m in request.messages
            if m.role == "user" and m.content.startswith(OBSERVATION)
        ]

    def gold_reply(
        self, request: GenerateRequest, plan: GoldPlan, env: Environment
    ) -> tuple[str, list[ToolCall]]:
        """Native tool calls when the program sent tools, else the text protocol of
        ``RALEVAL_INSTRUCTIONS``: ``Action: {"name": ..., "arguments": ...}`` per turn, then
        ``Answer: ...``."""
        import json

        done = len(self.shown_observations(request) or [])
        if request.tools:
            if done < len(plan.calls):
                return "", [plan.calls[done]]
            return plan.answer, []
        if done < len(plan.calls):
            call = plan.calls[done]
            action = {"name": call.tool, "arguments": call.arguments}
            return f"{_ACTION}{json.dumps(action, ensure_ascii=False)}", []
        return f"Answer: {plan.answer}", []


def _command_agent(command: str | None, config: CommandConfig) -> CommandAgent:
    cls = CommandAgent.parametrized(command) if command is not None else CommandAgent
    return cls(config)
