"""DFSDT: ToolBench's depth-first search decision tree over function calls (``DFS_woFilter``).

- Each assistant message adds up to three tree levels (Thought if it has text, Action, Action
  Input), so the default depth limit of 12 allows about four tool calls along one path.
- At each state up to ``dfsdt_width`` (2) children are generated one after the other; the
  second and later get a diversity message listing the earlier children's actions.
- ``Finish(return_type="give_answer", final_answer=...)`` ends the search with the answer.
- ``Finish(return_type="give_up_and_restart")`` abandons the state that chose it: the search
  backtracks one step earlier, whose next child is generated.
- A child at the depth limit is pruned and its parent tries a sibling.
- A query budget (model calls) bounds the whole search.

The search runs as an explicit stack inside a LangGraph loop; every node of the tree is kept in
the trajectory (``extra["tree"]``), abandoned branches included.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from pydantic import Field

from raleval.environment import Environment
from raleval.model import Capabilities, GenerateRequest, Message, Model
from raleval.records import OutcomeKind, Termination, ToolCall
from raleval.registry import register_workflow
from raleval.toolcalls import is_calls_only
from raleval.workflow import GoldPlan, Workflow, tool_call_decoding
from raleval.workflows.call_ids import reply_call_ids
from raleval.workflows.common import (
    DEFAULT_CONTEXT_TOKENS,
    ONE_CALL,
    EpisodeRecord,
    SolvedExample,
    WorkflowConfig,
    ended_at_context,
    episode_env,
    episode_model,
    examples_text,
    fit_observation,
    load_prompt,
    observation_room,
    routed,
    tool_schemas,
)
from raleval.workflows.function_calling import native_gold_reply, render_calls_example

FINISH_SCHEMA: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "Finish",
        "description": "Give the final answer, or give up on this path and restart.",
        "parameters": {
            "type": "object",
            "properties": {
                "return_type": {"type": "string", "enum": ["give_answer", "give_up_and_restart"]},
                "final_answer": {"type": "string", "description": "the answer (give_answer)"},
            },
            "required": ["return_type"],
        },
    },
}


@dataclass
class TreeNode:
    id: int
    parent: int | None
    depth: int
    thought: str | None = None
    tool: str | None = None
    arguments: dict[str, Any] | None = None
    observation: str | None = None
    status: str = "open"  # open | answer | give_up | pruned | exhausted | invalid
    messages: list[Message] = field(default_factory=list, repr=False)
    children: list[int] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("messages")
        return d


class DFSState(TypedDict, total=False):
    question: str
    rec: EpisodeRecord
    stack: list[int]
    tree: list[TreeNode]
    queries: int


def diversity_message(previous: list[TreeNode]) -> Message:
    tried = [
        {"name": n.tool, "arguments": n.arguments, "function_output": n.observation}
        for n in previous
    ]
    return Message(
        "user",
        "You have tried this step before and those tries did not lead to an answer. Your "
        f"earlier actions from this state were: {json.dumps(tried, ensure_ascii=False)}. "
        "Choose an action different from all of them.",
    )


class DFSDTConfig(WorkflowConfig):
    """ToolBench's DFS_woFilter_w2: tree width, depth in Thought/Action/Input levels, and the
    number of model calls the whole search may make."""

    dfsdt_width: int = Field(2, ge=1)
    dfsdt_max_depth: int = Field(12, ge=2)
    dfsdt_query_budget: int = Field(60, ge=1)


def build_dfsdt_graph(model: Model, env: Environment, config: DFSDTConfig | None = None) -> Any:
    """Compile the DFSDT graph for ``model`` on ``env``'s tools."""
    cfg = config or DFSDTConfig()
    system = load_prompt("dfsdt", env, cfg.prompt_file)
    context_limit = (
        cfg.max_context_tokens or model.capabilities.context_window or DEFAULT_CONTEXT_TOKENS
    )

    async def step(state: DFSState, config: RunnableConfig) -> DFSState:
        ep_model, ep_env = episode_model(config, model), episode_env(config, env)
        # the episode's tools (an environment may offer a question only some), sent with
        # every request and so counted in the budget
        schemas, schema_text = tool_schemas(ep_env.tools, FINISH_SCHEMA)
        rec = state.get("rec") or EpisodeRecord()
        tree = state.get("tree")
        if tree is None:
            root = TreeNode(
                0,
                None,
                0,
                status="root",
                messages=[
                    Message("system", system.substitute(examples=examples_text(cfg, config))),
                    Message("user", f"Question: {state['question']}"),
                ],
            )
            tree, stack = [root], [0]
        else:
            stack = list(state["stack"])
        queries = state.get("queries", 0)
        if not stack:
            rec.finish(Termination.finished, "tree_exhausted")  # every path gave up
            return {"rec": rec, "tree": tree, "stack": stack}
        if queries >= cfg.dfsdt_query_budget:
            rec.finish(Termination.step_limit, "query_budget")
            return {"rec": rec, "tree": tree, "stack": stack}
        node = tree[stack[-1]]
        if len(node.children) >= cfg.dfsdt_width:
            node.status = "exhausted" if node.status == "open" else node.status
            stack.pop()  # all children tried: back to the parent, which tries its next child
            return {"rec": rec, "tree": tree, "stack": stack}
        messages = list(node.messages)
        if node.children:
            messages.append(diversity_message([tree[c] for c in node.children]))
        flat = "\n".join(f"{m.role}: {m.content}" for m in messages)
        if ended_at_context(rec, ep_model, cfg, context_limit, schema_text + flat):
            return {"rec": rec, "tree": tree, "stack": stack}
        gen = await rec.generate(ep_model, flat, tuple(messages), cfg, (), schemas, ONE_CALL)
        queries += 1
        if gen is None:
            return {"rec": rec, "tree": tree, "stack": stack, "queries": queries}
        call = gen.tool_calls[0] if gen.tool_calls else None
        # schema decoding writes the call as the reply's text (the model call's record keeps
        # it): it is no thought, and goes back to the model as the turn's call alone, as a
        # native reply would, not shown twice by the chat template
        text = "" if call is not None and is_calls_only(gen.text) else gen.text
        thought = text.strip() or None
        depth = node.depth + (1 if thought else 0) + (2 if call else 0)
        child = TreeNode(
            len(tree),
            node.id,
            depth,
            thought=thought,
            tool=call.tool if call else None,
            arguments=call.arguments if call else None,
        )
        tree.append(child)
        node.children.append(child.id)
        # the call's id: the provider's, else the tree node's (unique in the episode, never
        # random); each tool message below answers it (the other calls of a reply are dropped)
        taken = [i for m in node.messages for i in m.tool_call_ids]
        given = gen.tool_call_ids[:1] or [""]
        call_id = reply_call_ids(given, child.id, taken)[0]
        assistant = Message(
            "assistant", text, (call,) if call else (), tool_call_ids=(call_id,) if call else ()
        )
        if call is None:
            child.status = "invalid"
            rec.add_step(
                thought=thought,
                kind=OutcomeKind.parse_error,
                cause="no_function_call",
                observation="No function was called.",
            )
            child.messages = [
                *node.messages,
                assistant,
                Message("user", "Call one of the functions."),
            ]
        elif call.tool == "Finish":
            kind = str(call.arguments.get("return_type", ""))
            if kind == "give_answer" and "final_answer" in call.arguments:
                child.status = "answer"
                rec.answer = str(call.arguments["final_answer"])
                rec.add_step(thought=thought, tool="Finish", arguments=call.arguments)
                rec.finish(Termination.finished)
                return {"rec": rec, "tree": tree, "stack": stack, "queries": queries}
            if kind == "give_up_and_restart":
                child.status = "give_up"
                rec.add_step(
                    thought=thought,
                    tool="Finish",
                    arguments=call.arguments,
                    observation="Gave up on this path; restarting from an earlier step.",
                )
                stack.pop()  # abandon the state that gave up: its parent tries a sibling
                return {"rec": rec, "tree": tree, "stack": stack, "queries": queries}
            child.status = "invalid"
            child.observation = (
                'Finish needs return_type "give_answer" with final_answer, or '
                '"give_up_and_restart".'
            )
            rec.add_step(
                thought=thought,
                tool="Finish",
                arguments=call.arguments,
                observation=child.observation,
                kind=OutcomeKind.misuse,
                cause="bad_arguments",
            )
            child.messages = [
                *node.messages,
                assistant,
                Message("tool", child.observation, tool_call_id=call_id),
            ]
        else:
            result = await ep_env.call(call.tool, call.arguments)
            so_far = f"{schema_text}\n{flat}\nassistant: {gen.text}"
            room = observation_room(ep_model, cfg, context_limit, so_far + "\ntool: ", rec)
            result.observation = fit_observation(ep_model, result.observation, room)
            child.observation = result.observation
            rec.add_step(result, thought=thought, tool=call.tool, arguments=call.arguments)
            child.messages = [
                *node.messages,
                assistant,
                Message("tool", result.observation, tool_call_id=call_id),
            ]
        if child.depth >= cfg.dfsdt_max_depth:
            child.status = "pruned"  # too deep: the parent tries its next child
        else:
            stack.append(child.id)
        return {"rec": rec, "tree": tree, "stack": stack, "queries": queries}

    async def after(state: DFSState) -> str:
        rec = state["rec"]
        if rec.done:
            rec.extra["tree"] = [n.summary() for n in state["tree"]]
            return END
        return "step"

    graph = StateGraph(DFSState)
    graph.add_node("step", routed(step, after), destinations=("step", END))
    graph.add_edge(START, "step")
    return graph.compile()


def render_dfsdt_example(example: SolvedExample, env: Environment) -> str:
    return render_calls_example(
        example, {"return_type": "give_answer", "final_answer": example.answer}
    )


@register_workflow("dfsdt")
class DFSDT(Workflow):
    """ToolBench's depth-first search decision tree; the whole tree is recorded."""

    name = "dfsdt"
    Config = DFSDTConfig
    config: DFSDTConfig

    def build(self, model: Model, env: Environment) -> Any:
        return build_dfsdt_graph(model, env, self.config)

    def recursion_limit(self) -> int:
        return 2 * self.config.dfsdt_query_budget + 10

    def decoding(self, capabilities: Capabilities) -> str:
        # ToolBench's call format (Finish with return_type) is the tools' own schema here
        return tool_call_decoding(capabilities) + "; tool_choice required (Finish is a tool)"

    def render_example(self, example: SolvedExample, env: Environment) -> str:
        return render_dfsdt_example(example, env)

    def gold_reply(
        self, request: GenerateRequest, plan: GoldPlan, env: Environment
    ) -> tuple[str, list[ToolCall]]:
        return native_gold_reply(
            request, plan, {"return_type": "give_answer", "final_answer": plan.answer}
        )
