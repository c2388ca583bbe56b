"""Native function calling: the model is bound to the tools' JSON schemas with LangChain's
``bind_tools`` and answers with structured tool calls.

The tools node runs every call through the environment, which (like LangGraph's ``ToolNode``
with ``handle_tool_errors=True``) turns every failure, unknown tools and bad arguments
included, into an observation the model reads; unlike ``ToolNode`` it also records each call
as a classified step. The episode ends when the model calls ``Finish(answer)`` or replies
without a tool call (the reply is then the answer). A reply's calls run in the order written:
a ``Finish`` after other calls ends the episode once those have run (their observations are
in the record, though the answer was written before they were seen); calls after it never run.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.messages import ToolMessage as LCToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from pydantic import Field

from raleval.environment import Environment
from raleval.model import Capabilities, GenerateRequest, Generation, Model
from raleval.records import OutcomeKind, Step, Termination, ToolCall
from raleval.registry import register_workflow
from raleval.toolcalls import is_calls_only
from raleval.workflow import GoldPlan, Workflow, tool_call_decoding
from raleval.workflows.call_ids import reply_call_ids
from raleval.workflows.common import (
    DEFAULT_CONTEXT_TOKENS,
    ONE_CALL,
    Decoding,
    EpisodeRecord,
    SolvedExample,
    WorkflowConfig,
    ended_at_context,
    episode_env,
    episode_model,
    episode_prefix,
    examples_text,
    fit_observation,
    given_steps,
    load_prompt,
    observation_room,
    routed,
    tool_schemas,
)
from raleval.workflows.langchain_model import RalevalChatModel, to_raleval_messages

FINISH_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "Finish",
        "description": "Give the final answer and end the task.",
        "parameters": {
            "type": "object",
            "properties": {"answer": {"type": "string", "description": "the final answer"}},
            "required": ["answer"],
        },
    },
}


class FCState(TypedDict, total=False):
    question: str
    rec: EpisodeRecord
    messages: Annotated[list[BaseMessage], add_messages]
    turns: int


def transcript(messages: tuple[Any, ...]) -> str:
    """A flat text view of chat messages, for prompt-delta recording and token budgets."""
    parts = []
    for m in messages:
        calls = "".join(f" -> {c.tool}({json.dumps(c.arguments)})" for c in m.tool_calls)
        parts.append(f"{m.role}: {m.content}{calls}")
    return "\n".join(parts)


class FunctionCallingConfig(WorkflowConfig):
    """Native function calling's budget."""

    max_steps: int = Field(10, ge=1)  # model turns
    # Several calls in one reply, run in the order written. Off by default: one call a turn
    # (parallel_tool_calls false; with schema decoding a schema of one call), and of a reply
    # that still holds several, only the first runs.
    parallel_calls: bool = False


def build_function_calling_graph(
    model: Model, env: Environment, config: FunctionCallingConfig | None = None
) -> Any:
    """Compile the native function-calling graph for ``model`` on ``env``'s tools."""
    cfg = config or FunctionCallingConfig()
    system = load_prompt("function_calling", env, cfg.prompt_file)
    context_limit = (
        cfg.max_context_tokens or model.capabilities.context_window or DEFAULT_CONTEXT_TOKENS
    )
    decoding = Decoding("required", True) if cfg.parallel_calls else ONE_CALL

    def schemas_of(ep_env: Environment) -> tuple[list[dict[str, Any]], str]:
        # the episode's tools (an environment may offer a question only some); they travel
        # with every request, so they count in the budget like the messages
        schemas, text = tool_schemas(ep_env.tools, FINISH_TOOL)
        return list(schemas), text

    async def start_from(
        prefix: list[Step], config: RunnableConfig, rec: EpisodeRecord, so_far: str
    ) -> list[BaseMessage]:
        """The given steps, recorded, as the assistant's tool calls and their results."""
        ep_env, ep_model = episode_env(config, env), episode_model(config, model)
        out: list[BaseMessage] = []

        def fit(text: str) -> str:
            # sized as the live tools node sizes a call's result: after the assistant turn
            # that made the call and the tool message's own label
            room = observation_room(ep_model, cfg, context_limit, so_far + "\ntool: ", rec)
            return fit_observation(ep_model, text, room)

        taken: list[str] = []
        for group in reply_groups(prefix):
            # one assistant turn per reply, as the live episode sent it: its calls, the ids
            # they were given (or those of their position), then one tool message per call
            turn = sum(isinstance(m, AIMessage) for m in out)
            ids = reply_call_ids([recorded_call_id(given) for given in group], turn, taken)

            def turn_of(steps: list[Step], ids: list[str] = ids) -> AIMessage:
                return AIMessage(
                    content=steps[0].thought or "",
                    tool_calls=[
                        {"name": s.tool or "", "args": dict(s.arguments or {}), "id": i}
                        for s, i in zip(steps, ids, strict=False)
                    ],
                )

            so_far += "\n" + transcript(to_raleval_messages([turn_of(group)]))
            recorded: list[Step] = []
            for given in group:
                got = await given_steps(rec, ep_env, [given], fit)
                if not got:
                    break
                recorded += got
                so_far += "\ntool: " + (got[0].observation or "")
            if not recorded:
                break
            taken += ids[: len(recorded)]
            out.append(turn_of(recorded))
            out += [
                LCToolMessage(
                    content=got.observation or "",
                    tool_call_id=i,
                    name=got.tool or "",
                    status="success" if got.kind is OutcomeKind.ok else "error",
                )
                for got, i in zip(recorded, ids, strict=False)
            ]
            if len(recorded) < len(group):
                break
        rec.extra["prefix_steps"] = len(rec.steps)
        return out

    async def agent(state: FCState, config: RunnableConfig) -> FCState:
        ep_model = episode_model(config, model)
        schemas, schema_text = schemas_of(episode_env(config, env))
        rec = state.get("rec") or EpisodeRecord()
        if rec.done:  # a tool fault ended the episode
            return {"rec": rec}
        new: list[BaseMessage] = []
        messages = list(state.get("messages") or [])
        if not messages:
            text = system.substitute(examples=examples_text(cfg, config))
            new = [SystemMessage(text), HumanMessage(f"Question: {state['question']}")]
            if prefix := episode_prefix(config):
                so_far = schema_text + transcript(to_raleval_messages(new))
                new += await start_from(prefix, config, rec, so_far)
                # the prefix's replies are the episode's first turns
                state = {**state, "turns": sum(isinstance(m, AIMessage) for m in new)}
                if rec.done:
                    return {"rec": rec, "messages": new}
            messages = new
        turns = state.get("turns", 0) + 1
        if turns > cfg.max_steps:
            rec.finish(Termination.step_limit)
            return {"rec": rec, "messages": new}
        flat = transcript(to_raleval_messages(messages))
        if ended_at_context(rec, ep_model, cfg, context_limit, schema_text + flat):
            return {"rec": rec, "messages": new}

        async def recorded(request: GenerateRequest) -> Generation | None:
            return await rec.generate(
                ep_model, flat, request.messages, cfg, request.stop, request.tools, decoding
            )

        chat = RalevalChatModel(
            generate_fn=recorded, max_tokens=cfg.max_tokens, temperature=cfg.temperature
        ).bind_tools(schemas)
        reply: AIMessage = await chat.ainvoke(messages)
        if reply.response_metadata.get("raleval_failed"):
            return {"rec": rec, "messages": new, "turns": turns}
        if len(reply.tool_calls) > 1 and not cfg.parallel_calls:
            # one call a turn: the rest were never sent to a tool (the model call's record
            # keeps every call it wrote)
            reply = reply.model_copy(update={"tool_calls": reply.tool_calls[:1]})
        thought = reply.content if isinstance(reply.content, str) else str(reply.content)
        if reply.tool_calls and is_calls_only(thought):
            # schema decoding writes the calls as the reply's text (the model call's record
            # keeps it): sent back beside the calls, the chat template would show the model
            # each call twice, where a native server's reply holds the calls alone
            reply = reply.model_copy(update={"content": ""})
            thought = ""
        # calls run in the order written (the tools node); Finish ends the episode where it
        # stands, so here only a reply that opens with it (or has no call) ends it
        first = reply.tool_calls[0] if reply.tool_calls else None
        finish = first if first is not None and first["name"] == "Finish" else None
        if finish is not None or not reply.tool_calls:
            answer = str(finish["args"].get("answer", "")) if finish else thought.strip()
            rec.answer = answer
            rec.add_step(
                thought=thought or None,
                tool="Finish",
                arguments={"answer": answer},
                raw_action=json.dumps(finish["args"]) if finish else None,
            )
            rec.finish(Termination.finished)
        return {"rec": rec, "messages": [*new, reply], "turns": turns}

    async def tools(state: FCState, config: RunnableConfig) -> FCState:
        ep_env, ep_model = episode_env(config, env), episode_model(config, model)
        rec = state["rec"]
        last = state["messages"][-1]
        so_far = schemas_of(ep_env)[1] + transcript(to_raleval_messages(state["messages"]))
        thought = last.content if isinstance(last.content, str) and last.content else None
        turn = sum(isinstance(m, AIMessage) for m in state["messages"]) - 1  # this reply's
        out: list[BaseMessage] = []
        for call in last.tool_calls:
            if call["name"] == "Finish":  # after other calls of the same reply: it ends here
                rec.answer = str(call["args"].get("answer", ""))
                rec.add_step(
                    thought=thought,
                    tool="Finish",
                    arguments={"answer": rec.answer},
                    raw_action=json.dumps(call["args"]),
                )
                rec.finish(Termination.finished)
                break
            result = await ep_env.call(call["name"], call["args"])
            # the room counts the tool message's own label: an observation that filled the
            # context to the last token ended the episode at the next turn (context_limit)
            room = observation_room(ep_model, cfg, context_limit, so_far + "\ntool: ", rec)
            result.observation = fit_observation(ep_model, result.observation, room)
            so_far += "\ntool: " + result.observation
            rec.add_step(
                result,
                thought=thought,
                tool=call["name"],
                arguments=call["args"],
                raw_action=call_record(call["id"], turn, call["name"], call["args"]),
            )
            thought = None
            out.append(
                LCToolMessage(
                    content=result.observation,
                    tool_call_id=call["id"],
                    name=call["name"],
                    status="success" if result.kind.value == "ok" else "error",
                )
            )
        return {"messages": out}

    async def after_agent(state: FCState) -> str:
        return END if state["rec"].done else "tools"

    graph = StateGraph(FCState)
    graph.add_node("agent", routed(agent, after_agent), destinations=("tools", END))
    graph.add_node("tools", tools)
    graph.add_edge(START, "agent")
    graph.add_edge("tools", "agent")
    return graph.compile()


def call_record(call_id: str, turn: int, name: str, arguments: dict[str, Any]) -> str:
    """A call as its step records it (``raw_action``): its id and the reply (``turn``) it was
    one of, so that a replay sends it in the same assistant turn under the same id."""
    return json.dumps({"id": call_id, "turn": turn, "name": name, "arguments": arguments})


def _recorded(step: Step) -> dict[str, Any]:
    try:
        data = json.loads(step.raw_action or "")
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def recorded_call_id(step: Step) -> str | None:
    """The id a step's call was sent under, where its step recorded one."""
    got = _recorded(step).get("id")
    return got if isinstance(got, str) else None


def reply_groups(steps: list[Step]) -> list[list[Step]]:
    """``steps`` as the replies that made them: consecutive calls recorded with the same
    ``turn`` were one reply; a step without one (a gold call put in) is a reply of its own."""
    groups: list[list[Step]] = []
    last: Any = None
    for step in steps:
        turn = _recorded(step).get("turn")
        if groups and isinstance(turn, int) and turn == last:
            groups[-1].append(step)
        else:
            groups.append([step])
        last = turn if isinstance(turn, int) else None
    return groups


def render_calls_example(example: SolvedExample, finish: dict[str, Any]) -> str:
    """A solved task as Call / Result lines (the function-calling workflows' examples)."""
    lines = [f"Question: {example.question}"]
    for call, observation in example.calls:
        lines += [
            f"Call: {call.tool}({json.dumps(call.arguments, ensure_ascii=False)})",
            f"Result: {' '.join(observation.split())}",
        ]
    lines.append(f"Call: Finish({json.dumps(finish, ensure_ascii=False)})")
    return "\n".join(lines)


def render_fc_example(example: SolvedExample, env: Environment) -> str:
    return render_calls_example(example, {"answer": example.answer})


def native_gold_reply(
    request: GenerateRequest, plan: GoldPlan, finish: dict[str, Any]
) -> tuple[str, list[ToolCall]]:
    """The oracle's reply in native tool calls: the next gold call (one per turn, counted by
    the tool results so far), then ``Finish`` with ``finish`` as its arguments."""
    done = sum(1 for m in request.messages if m.role == "tool")
    if done < len(plan.calls):
        return "", [plan.calls[done]]
    return "", [ToolCall(tool="Finish", arguments=finish)]


@register_workflow("function_calling")
class FunctionCalling(Workflow):
    """Native tool calls through LangChain's ``bind_tools``; ``Finish(answer)`` ends it."""

    name = "function_calling"
    Config = FunctionCallingConfig
    config: FunctionCallingConfig
    accepts_prefix = True

    def build(self, model: Model, env: Environment) -> Any:
        return build_function_calling_graph(model, env, self.config)

    def recursion_limit(self) -> int:
        return 3 * self.config.max_steps + 10

    def decoding(self, capabilities: Capabilities) -> str:
        return tool_call_decoding(capabilities, self.config.parallel_calls) + (
            "; tool_choice required (Finish is a tool)"
        )

    def render_example(self, example: SolvedExample, env: Environment) -> str:
        return render_fc_example(example, env)

    def gold_reply(
        self, request: GenerateRequest, plan: GoldPlan, env: Environment
    ) -> tuple[str, list[ToolCall]]:
        return native_gold_reply(request, plan, {"answer": plan.answer})
