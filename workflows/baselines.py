"""Two baselines that bracket the agent workflows.

- ``direct``: the model answers from what it knows, with no tools. On raleval's fictional
  worlds this should be near zero; anything it gets right is answer-from-memory (AM).
- ``planned``: CRAG-style planned retrieval. One call writes the lookups as JSON (entities and
  aspects of the question), the harness runs them, one call answers from the results. No
  interleaving: later lookups cannot use earlier results.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from string import Template
from typing import Any, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from pydantic import Field

from raleval.environment import Environment
from raleval.model import Capabilities, GenerateRequest, Message, Model, tool_call_schema
from raleval.records import OutcomeKind, Termination, ToolCall
from raleval.registry import register_workflow
from raleval.toolcalls import tool_calls_from_content
from raleval.workflow import GoldPlan, SolvedExample, Workflow
from raleval.workflows.common import (
    DEFAULT_CONTEXT_TOKENS,
    Decoding,
    EpisodeRecord,
    WorkflowConfig,
    episode_env,
    episode_model,
    examples_text,
    fit_observation,
    load_prompt,
    observation_room,
    render_tool_lines,
    routed,
)


class BaselineState(TypedDict, total=False):
    question: str
    rec: EpisodeRecord
    results: list[str]


class PlannedConfig(WorkflowConfig):
    """The planned baseline's budget."""

    max_steps: int = Field(10, ge=1)  # lookups of the plan that run


def build_direct_graph(model: Model, env: Environment, config: WorkflowConfig | None = None) -> Any:
    """One model call, no tools."""
    cfg = config or WorkflowConfig()
    template = load_prompt("direct", env, cfg.prompt_file)

    async def answer(state: BaselineState, config: RunnableConfig) -> BaselineState:
        ep_model = episode_model(config, model)
        rec = state.get("rec") or EpisodeRecord()
        prompt = template.substitute(
            question=state["question"], examples=examples_text(cfg, config)
        ).rstrip()
        gen = await rec.generate(ep_model, prompt, (Message("user", prompt),), cfg, ("\n",))
        if gen is not None:
            rec.answer = gen.text.strip()
            rec.add_step(tool="Finish", arguments={"answer": rec.answer})
            rec.finish(Termination.finished)
        return {"rec": rec}

    graph = StateGraph(BaselineState)
    graph.add_node("answer", answer)
    graph.add_edge(START, "answer")
    graph.add_edge("answer", END)
    return graph.compile()


def _answer_template() -> Template:
    path = resources.files("raleval.workflows").joinpath("prompts", "planned", "answer.txt")
    return Template(path.read_text(encoding="utf-8"))


def plan_schema(tools: tuple[Any, ...], max_calls: int) -> dict[str, Any]:
    """The plan's JSON schema: a list of one to ``max_calls`` calls of ``tools``, each
    ``{"tool": name, "arguments": {...}}`` as the prompt shows it."""
    return _plan_schema(tuple(tools), max_calls)


@functools.lru_cache(maxsize=256)
def _plan_schema(tools: tuple[Any, ...], max_calls: int) -> dict[str, Any]:
    declared = [t.json_schema() for t in tools]
    return tool_call_schema(declared, many=True, name_key="tool", max_calls=max_calls)


def build_planned_graph(model: Model, env: Environment, config: PlannedConfig | None = None) -> Any:
    """Plan the lookups as JSON, run them, answer from the results."""
    cfg = config or PlannedConfig()
    plan_template = load_prompt("planned", env, cfg.prompt_file)
    answer_template = _answer_template()
    context_limit = (
        cfg.max_context_tokens or model.capabilities.context_window or DEFAULT_CONTEXT_TOKENS
    )

    def plan_decoding(ep_env: Environment) -> Decoding:
        # a model that declares constrained decoding writes nothing but a plan
        return Decoding(json_schema=plan_schema(ep_env.tools, cfg.max_steps))

    async def plan(state: BaselineState, config: RunnableConfig) -> BaselineState:
        ep_model, ep_env = episode_model(config, model), episode_env(config, env)
        rec = state.get("rec") or EpisodeRecord()
        tool_list = render_tool_lines(ep_env)  # the episode's tools
        prompt = plan_template.substitute(
            tools=tool_list, question=state["question"], examples=examples_text(cfg, config)
        ).rstrip()
        gen = await rec.generate(
            ep_model, prompt, (Message("user", prompt),), cfg, (), decoding=plan_decoding(ep_env)
        )
        if gen is None:
            return {"rec": rec}
        calls = tool_calls_from_content(gen.text)
        if not calls:
            rec.add_step(
                thought=gen.text,
                kind=OutcomeKind.parse_error,
                cause="invalid_plan",
                observation="The plan held no function call.",
            )
        results: list[str] = []
        # the answer prompt holds every result: each gets what the context has left
        so_far = answer_template.substitute(question=state["question"], results="")
        for call in calls[: cfg.max_steps]:
            if rec.done:  # a tool fault ended the episode
                break
            result = await ep_env.call(call.tool, call.arguments)
            label = f"{call.tool}({json.dumps(call.arguments)}): "
            room = observation_room(ep_model, cfg, context_limit, f"{so_far}\n{label}", rec)
            result.observation = fit_observation(ep_model, result.observation, room)
            rec.add_step(
                result,
                tool=call.tool,
                arguments=call.arguments,
                raw_action=json.dumps({"tool": call.tool, "arguments": call.arguments}),
            )
            results.append(label + result.observation)
            so_far += "\n" + results[-1]
        return {"rec": rec, "results": results}

    async def answer(state: BaselineState, config: RunnableConfig) -> BaselineState:
        ep_model = episode_model(config, model)
        rec = state["rec"]
        results = "\n".join(state.get("results") or []) or "(nothing)"
        prompt = answer_template.substitute(question=state["question"], results=results).rstrip()
        gen = await rec.generate(ep_model, prompt, (Message("user", prompt),), cfg, ("\n",))
        if gen is not None:
            rec.answer = gen.text.strip()
            rec.add_step(tool="Finish", arguments={"answer": rec.answer})
            rec.finish(Termination.finished)
        return {}

    async def after_plan(state: BaselineState) -> str:
        return END if state["rec"].done else "answer"

    graph = StateGraph(BaselineState)
    graph.add_node("plan", routed(plan, after_plan), destinations=("answer", END))
    graph.add_node("answer", answer)
    graph.add_edge(START, "plan")
    graph.add_edge("answer", END)
    return graph.compile()


@register_workflow("direct")
class Direct(Workflow):
    """No tools: what the model knows (the AM calibration)."""

    name = "direct"

    def build(self, model: Model, env: Environment) -> Any:
        return build_direct_graph(model, env, self.config)

    def decoding(self, capabilities: Capabilities) -> str:
        return "one answer line: stopped at the newline"

    def recursion_limit(self) -> int:
        return 10

    def render_example(self, example: SolvedExample, env: Environment) -> str:
        # no tools: the demonstration is the question and its answer
        return f"Question: {example.question}\nAnswer: {example.answer}"

    def shown_observations(self, request: GenerateRequest) -> list[str] | None:
        return None  # no tools: nothing limits what the answer may rest on

    def gold_reply(
        self, request: GenerateRequest, plan: GoldPlan, env: Environment
    ) -> tuple[str, list[ToolCall]]:
        return f" {plan.answer}", []


PLAN_CUE = "Calls:"  # the plan prompt ends here (prompts/planned/default.txt)
FOUND_CUE = "Information found:"  # the answer prompt's results follow (prompts/planned/answer.txt)


@register_workflow("planned")
class Planned(Workflow):
    """CRAG-style: one call plans the lookups as JSON, the tools run, one call answers."""

    name = "planned"
    Config = PlannedConfig
    config: PlannedConfig

    def build(self, model: Model, env: Environment) -> Any:
        return build_planned_graph(model, env, self.config)

    def decoding(self, capabilities: Capabilities) -> str:
        n = self.config.max_steps
        if capabilities.json_schema:
            plan = f"plan constrained to a JSON schema (a list of 1-{n} calls of the tools)"
        else:
            plan = "plan in free text, its JSON calls read from it (no constrained decoding here)"
        return f"{plan}; answer: one line, stopped at the newline"

    def recursion_limit(self) -> int:
        return 10

    def render_example(self, example: SolvedExample, env: Environment) -> str:
        """The plan (the calls as JSON), what the calls found, and the answer."""
        calls = [{"tool": c.tool, "arguments": c.arguments} for c, _ in example.calls]
        found = [
            f"{c.tool}({json.dumps(c.arguments)}): {' '.join(obs.split())}"
            for c, obs in example.calls
        ]
        return "\n".join(
            [
                f"Question: {example.question}",
                f"{PLAN_CUE} {json.dumps(calls, ensure_ascii=False)}",
                "Information found:",
                *found,
                f"Answer: {example.answer}",
            ]
        )

    def shown_observations(self, request: GenerateRequest) -> list[str] | None:
        """The answer prompt's "Information found" block, one line a call."""
        prompt = request.messages[-1].content if request.messages else ""
        _, found, rest = prompt.partition(f"\n{FOUND_CUE}\n")
        return rest.splitlines() if found else []

    def gold_reply(
        self, request: GenerateRequest, plan: GoldPlan, env: Environment
    ) -> tuple[str, list[ToolCall]]:
        prompt = request.messages[-1].content if request.messages else ""
        if prompt.rstrip().endswith(PLAN_CUE):
            return json.dumps([c.model_dump() for c in plan.calls]), []
        return f" {plan.answer}", []
