"""Agents written elsewhere, evaluated as a workflow: ``--workflow agent:MODULE:FACTORY``.

An agent from any framework (a LangGraph prebuilt agent, smolagents, a plain function) is built
per episode by a factory that receives an :class:`AgentEpisode`: the episode's tools as LangChain
tools and as plain functions, and a LangChain chat model bound to the run's ``--model``. Both
are raleval's own wrappers, so every model call and every tool call is recorded into the
episode's :class:`~raleval.workflows.common.EpisodeRecord` as the built-in workflows record
theirs, whether or not the agent cooperates: the agent never sees the recorder.

The factory returns the agent, which is one of

- a LangChain runnable or LangGraph graph (anything with ``ainvoke``), invoked with
  ``{"messages": [("user", question)]}``; the answer is its last message's text;
- a callable taking the question (async, or sync: then run in a worker thread, whose tool and
  model calls hop back to the episode's event loop), returning the answer as text.

Budgets: the model calls (``max_steps``), the context window, the cost and the wall clock are
checked at every model and tool call the agent makes through the wrappers; once one is spent,
the episode is over, and the wrappers raise :class:`EpisodeOver` (a ``BaseException``, so an
agent's ``except Exception`` does not swallow it). A tool call that names no tool of the
episode never reaches a wrapper (the framework refuses it itself); it is recorded from the
model's reply instead, through the environment, as the misuse it is. An agent that raises ends
the episode as a ``program_error`` (``agent_exception:<type>``); one that returns nothing as
``invalid_format``.

``MODULE`` is an importable module or a ``.py`` file; ``--workflow agent:NAME`` names a factory
registered in the entry-point group ``raleval.agents_external``.
"""

from __future__ import annotations

import asyncio
import contextvars
import importlib
import importlib.util
import inspect
import json
import sys
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, ClassVar, TypedDict

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from pydantic import Field

from raleval.config import ConfigError
from raleval.environment import Environment, ToolResult
from raleval.model import GenerateRequest, Generation, Model
from raleval.records import OutcomeKind, Termination, ToolCall
from raleval.registry import register_workflow
from raleval.scheduling import within
from raleval.workflow import GoldPlan, Workflow
from raleval.workflows.common import (
    DEFAULT_CONTEXT_TOKENS,
    EpisodeRecord,
    WorkflowConfig,
    ended_at_context,
    episode_env,
    episode_model,
    examples_text,
    fit_observation,
    load_prompt,
    observation_room,
    tool_schemas,
)
from raleval.workflows.function_calling import FINISH_TOOL, render_calls_example, transcript
from raleval.workflows.langchain_model import RalevalChatModel, to_raleval_messages

ENTRY_POINT_GROUP = "raleval.agents_external"


class EpisodeOver(BaseException):
    """Raised into the agent by a wrapper once its episode has ended (a budget, a fault)."""


class ExternalAgentConfig(WorkflowConfig):
    """An outside agent's budgets."""

    max_steps: int = Field(10, ge=1)  # model calls


def load_factory(target: str) -> Callable[..., Any]:
    """The factory ``target`` names: ``MODULE:FACTORY`` (a module or a ``.py`` file) or the
    name of an entry point in ``raleval.agents_external``. Raises ConfigError saying why not."""
    if ":" not in target:
        found = {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}
        if target not in found:
            known = ", ".join(sorted(found)) or "(none installed)"
            raise ConfigError(
                f"agent {target!r}: give agent:MODULE:FACTORY or the name of an entry point "
                f"in {ENTRY_POINT_GROUP} (installed: {known})"
            )
        return found[target].load()
    module_name, _, attr = target.rpartition(":")
    try:
        module = import_module_or_file(module_name)
    except (ImportError, OSError, SyntaxError) as exc:
        raise ConfigError(f"agent {target!r}: cannot import {module_name}: {exc}") from exc
    obj: Any = module
    for part in attr.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            raise ConfigError(f"agent {target!r}: {module_name} has no {attr!r}")
    if not callable(obj):
        raise ConfigError(f"agent {target!r}: {attr} is not callable")
    return obj


def import_module_or_file(name: str) -> Any:
    """The module ``name`` names: a ``.py`` file (or a path) or an importable module."""
    if name.endswith(".py") or "/" in name:
        return _module_from_file(Path(name))
    return importlib.import_module(name)


def _module_from_file(path: Path) -> Any:
    path = path.resolve()
    name = f"raleval_agent_{abs(hash(str(path)))}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path} is not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


@dataclass
class AgentEpisode:
    """What an outside agent's factory receives for one episode."""

    question: str
    model: Any  # a LangChain BaseChatModel bound to the run's model, recording every call
    tools: list[Any]  # LangChain tools, one per tool of the episode, recording every call
    functions: list[Callable[..., str]]  # the same tools as plain (sync) functions
    system_prompt: str  # the run's instructions and demonstrations for an agent
    call_tool: Callable[[str, dict[str, Any]], Awaitable[str]] = field(repr=False)


class EpisodeBridge:
    """The recording side of one episode: its model calls, tool calls and budgets."""

    def __init__(
        self,
        rec: EpisodeRecord,
        model: Model,
        env: Environment,
        cfg: ExternalAgentConfig,
        context_limit: int,
        record_unknown_calls: bool = True,
    ) -> None:
        self.rec, self.model, self.env, self.cfg = rec, model, env, cfg
        # a framework refuses a call to no tool itself, and no wrapper sees it: record it from
        # the reply (a program calling over MCP reaches the environment with it instead)
        self.record_unknown_calls = record_unknown_calls
        self.context_limit = context_limit
        self.loop = asyncio.get_running_loop()
        self.loop_thread = threading.get_ident()  # built on the episode's loop
        self.schema_text = tool_schemas(env.tools, FINISH_TOOL)[1]
        self.known = {t.name for t in env.tools}
        self.so_far = self.schema_text  # what the model has been shown, as text (budgets)
        self.thought: str | None = None  # the last reply's text, for the next tool step
        self.model_calls = 0

    def check_open(self) -> None:
        if self.rec.done:
            raise EpisodeOver(self.rec.termination_cause or str(self.rec.termination))
        if self.rec.elapsed() >= self.cfg.time_limit_s:
            self.rec.finish(Termination.timeout, "wall_clock")
            raise EpisodeOver("wall_clock")

    async def generate(self, request: GenerateRequest) -> Generation:
        """One model call of the agent, budgeted and recorded; never returns None."""
        self.check_open()
        self.model_calls += 1
        if self.model_calls > self.cfg.max_steps:
            self.rec.finish(Termination.step_limit)
            raise EpisodeOver("step_limit")
        # the tools the agent bound travel with the request: they count as the prompt does
        flat = json.dumps(list(request.tools), separators=(",", ":")) + transcript(request.messages)
        if ended_at_context(self.rec, self.model, self.cfg, self.context_limit, flat):
            raise EpisodeOver("context")
        gen = await self.rec.generate(
            self.model, flat, request.messages, self.cfg, request.stop, request.tools
        )
        if gen is None:  # recorded, and the episode ended
            raise EpisodeOver(self.rec.termination_cause or "model_failure")
        self.so_far = flat + gen.text
        self.thought = gen.text or None
        for call in gen.tool_calls if self.record_unknown_calls else ():
            if call.tool not in self.known and call.tool != "Finish":
                # the environment classifies it (misuse) from the model's own reply
                await self.tool(call.tool, dict(call.arguments))
        return gen

    async def tool(self, name: str, arguments: dict[str, Any]) -> str:
        """One tool call of the agent, through the episode's environment, recorded."""
        self.check_open()
        if not isinstance(arguments, dict):
            arguments = {"input": arguments}
        result: ToolResult = await self.env.call(name, arguments)
        room = observation_room(self.model, self.cfg, self.context_limit, self.so_far, self.rec)
        result.observation = fit_observation(self.model, result.observation, room)
        self.so_far += "\ntool: " + result.observation
        self.rec.add_step(
            result,
            thought=self.thought,
            tool=name,
            arguments=arguments,
            raw_action=json.dumps({"name": name, "arguments": arguments}, default=str),
        )
        self.thought = None
        return result.observation

    def tool_sync(self, name: str, arguments: dict[str, Any]) -> str:
        """:meth:`tool` from a worker thread (a synchronous agent)."""
        if threading.get_ident() == self.loop_thread:
            raise RuntimeError(
                "a synchronous tool was called on the event loop; an agent that calls tools "
                "synchronously must be a plain (sync) callable, which raleval runs in a thread"
            )
        return asyncio.run_coroutine_threadsafe(self.tool(name, arguments), self.loop).result()

    def langchain_tools(self) -> list[Any]:
        from langchain_core.tools import StructuredTool

        out = []
        for spec in self.env.tools:
            schema = spec.json_schema()["function"]["parameters"]
            out.append(
                StructuredTool(
                    name=spec.name,
                    description=spec.description,
                    # the JSON schema, not the pydantic model: LangChain would validate the
                    # arguments itself and a bad call would never reach the environment
                    # (whose misuse classification the taxonomy reads)
                    args_schema=schema,
                    func=self._sync_caller(spec.name),
                    coroutine=self._async_caller(spec.name),
                )
            )
        return out

    def _async_caller(self, name: str) -> Callable[..., Awaitable[str]]:
        async def call(**kwargs: Any) -> str:
            return await self.tool(name, kwargs)

        return call

    def _sync_caller(self, name: str) -> Callable[..., str]:
        def call(**kwargs: Any) -> str:
            return self.tool_sync(name, kwargs)

        return call

    def functions(self) -> list[Callable[..., str]]:
        """The tools as plain keyword functions, named and documented as the tools are."""
        out = []
        for spec in self.env.tools:
            fn = self._sync_caller(spec.name)
            fn.__name__ = fn.__qualname__ = spec.name
            fn.__doc__ = spec.description
            params = [
                inspect.Parameter(
                    pname,
                    inspect.Parameter.KEYWORD_ONLY,
                    default=inspect.Parameter.empty if f.is_required() else None,
                    annotation=f.annotation,
                )
                for pname, f in spec.params.model_fields.items()
            ]
            fn.__signature__ = inspect.Signature(params, return_annotation=str)  # type: ignore[attr-defined]
            out.append(fn)
        return out

    def chat_model(self) -> Any:
        return EpisodeChatModel(
            generate_fn=self.generate,
            max_tokens=self.cfg.max_tokens,
            temperature=self.cfg.temperature,
            bridge=self,
        )


class EpisodeChatModel(RalevalChatModel):
    """The episode's chat model; ``invoke`` (not only ``ainvoke``) works from a synchronous
    agent's thread, its call made on the episode's event loop."""

    bridge: Any = None

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> Any:
        loop = self.bridge.loop
        if threading.get_ident() == self.bridge.loop_thread:
            raise RuntimeError("invoke() on the event loop: use ainvoke, or a sync agent")
        work = self._agenerate(messages, stop=stop, **kwargs)
        return asyncio.run_coroutine_threadsafe(work, loop).result()


def answer_text(result: Any) -> str | None:
    """The answer in what an agent returned: text, a message, or a messages state."""
    if isinstance(result, dict) and "messages" in result:
        messages = result["messages"]
        result = messages[-1] if messages else None
    if isinstance(result, BaseMessage):
        content = result.content
        if isinstance(content, list):  # content blocks
            content = " ".join(
                b.get("text", "") if isinstance(b, dict) else str(b) for b in content
            )
        return str(content)
    if result is None:
        return None
    return result if isinstance(result, str) else str(result)


async def run_agent(agent: Any, question: str, limit: int) -> Any:
    """Run what a factory built on ``question`` (see the module docstring)."""
    if hasattr(agent, "ainvoke"):
        return await agent.ainvoke({"messages": [("user", question)]}, {"recursion_limit": limit})
    if not callable(agent):
        raise TypeError(f"the factory returned {type(agent).__name__}, not an agent")
    if inspect.iscoroutinefunction(agent) or inspect.iscoroutinefunction(
        type(agent).__call__  # an object whose __call__ is async
    ):
        return await agent(question)
    result = await in_own_thread(agent, question)
    return await result if inspect.isawaitable(result) else result


async def in_own_thread(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` in a thread of its own. Not the loop's default executor: its few workers
    (cores + 4) all held by agents waiting on their model calls left none for the calls
    themselves (a scripted oracle reads its tools in that executor), and every episode hung."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[Any] = loop.create_future()
    context = contextvars.copy_context()

    def settle(result: Any, error: BaseException | None) -> None:
        if done.cancelled():
            return
        if error is not None:
            done.set_exception(error)
        else:
            done.set_result(result)

    def work() -> None:
        try:
            result = context.run(fn, *args)
        except BaseException as exc:  # handed to the episode, which classifies it
            loop.call_soon_threadsafe(settle, None, exc)
        else:
            loop.call_soon_threadsafe(settle, result, None)

    threading.Thread(target=work, name="raleval-agent", daemon=True).start()
    return await done


class ExternalState(TypedDict, total=False):
    question: str
    rec: EpisodeRecord


def build_external_graph(
    model: Model,
    env: Environment,
    factory: Callable[..., Any],
    config: ExternalAgentConfig | None = None,
) -> Any:
    """A one-node graph that builds the outside agent per episode and runs it, recorded."""
    cfg = config or ExternalAgentConfig()
    system = load_prompt("agent", env, cfg.prompt_file)
    context_limit = (
        cfg.max_context_tokens or model.capabilities.context_window or DEFAULT_CONTEXT_TOKENS
    )

    async def run(state: ExternalState, config: RunnableConfig) -> ExternalState:
        rec = state.get("rec") or EpisodeRecord()
        ep_env, ep_model = episode_env(config, env), episode_model(config, model)
        bridge = EpisodeBridge(rec, ep_model, ep_env, cfg, context_limit)
        episode = AgentEpisode(
            question=state["question"],
            model=bridge.chat_model(),
            tools=bridge.langchain_tools(),
            functions=bridge.functions(),
            system_prompt=system.substitute(examples=examples_text(cfg, config)),
            call_tool=bridge.tool,
        )
        try:
            agent = factory(episode)
            if inspect.isawaitable(agent):
                agent = await agent
            remaining = cfg.time_limit_s - rec.elapsed()
            result = await within(
                run_agent(agent, state["question"], 4 * cfg.max_steps + 10), timeout=remaining
            )
        except EpisodeOver:
            return {"rec": rec}
        except asyncio.TimeoutError:
            rec.finish(Termination.timeout, "wall_clock")
            return {"rec": rec}
        except Exception as exc:  # the agent program failed: its own error, recorded
            if not rec.done:
                name = type(exc).__name__
                rec.add_step(
                    kind=OutcomeKind.parse_error,
                    cause=f"agent_exception:{name}",
                    observation=str(exc)[:2000],
                )
                rec.finish(Termination.program_error, f"agent_exception:{name}")
            return {"rec": rec}
        if rec.done:  # a budget ended it while the agent swallowed the signal
            return {"rec": rec}
        answer = answer_text(result)
        if answer is None or not answer.strip():
            rec.finish(Termination.invalid_format, "agent_answer:empty")
            return {"rec": rec}
        rec.answer = answer.strip()
        rec.add_step(thought=None, tool="Finish", arguments={"answer": rec.answer})
        rec.finish(Termination.finished)
        return {"rec": rec}

    graph = StateGraph(ExternalState)
    graph.add_node("agent", run)
    graph.add_edge(START, "agent")
    graph.add_edge("agent", END)
    return graph.compile()


@register_workflow("agent")
class ExternalAgent(Workflow):
    """An agent from another framework (``agent:MODULE:FACTORY``), recorded by its wrappers."""

    name = "agent"
    Config = ExternalAgentConfig
    config: ExternalAgentConfig
    target: ClassVar[str | None] = None

    @classmethod
    def parametrized(cls, target: str) -> type[ExternalAgent]:
        """This workflow bound to the factory ``target`` names (``--workflow agent:TARGET``)."""
        return type("ExternalAgent", (cls,), {"target": target})

    def __reduce__(self) -> Any:
        # the class is made per target at run time: a worker process rebuilds it by its target
        return (_external_agent, (self.target, self.config))

    def factory(self) -> Callable[..., Any]:
        if not self.target:
            raise ConfigError("give the agent as --workflow agent:MODULE:FACTORY")
        return load_factory(self.target)

    def preflight(self) -> None:
        self.factory()  # a ConfigError names what is missing

    def build(self, model: Model, env: Environment) -> Any:
        return build_external_graph(model, env, self.factory(), self.config)

    def render_example(self, example: Any, env: Environment) -> str:
        # the agent's last message is its answer: the example ends in one, not a Finish call
        calls = render_calls_example(example, {"answer": example.answer}).rsplit("\n", 1)[0]
        return f"{calls}\nAnswer: {example.answer}"

    def gold_reply(
        self, request: GenerateRequest, plan: GoldPlan, env: Environment
    ) -> tuple[str, list[ToolCall]]:
        """The gold calls as native tool calls, one a turn, then the answer as plain text (an
        agent's last message is its answer)."""
        done = sum(1 for m in request.messages if m.role == "tool")
        if done < len(plan.calls):
            return "", [plan.calls[done]]
        return plan.answer, []


def _external_agent(target: str | None, config: ExternalAgentConfig) -> ExternalAgent:
    cls = ExternalAgent.parametrized(target) if target else ExternalAgent
    return cls(config)


__all__ = [
    "ENTRY_POINT_GROUP",
    "AgentEpisode",
    "EpisodeOver",
    "ExternalAgent",
    "build_external_graph",
    "load_factory",
    "to_raleval_messages",
]
