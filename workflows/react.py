"""ReAct: a text Thought / Action / Observation loop that works with any LLM.

Prompt contract (as ReAct and R-Eval write it): the prompt ends in ``Thought {n}:``; the model
writes its thought and ``Action {n}: <call>``; the harness appends ``Observation {n}: <text>``.
Observations are single-line. An unparseable action becomes a recorded ``parse_error`` step
whose observation the model sees; ``max_parse_errors`` of them in a row end the episode as
``invalid_format``.
"""

from __future__ import annotations

import functools
import re
from typing import Any, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command
from pydantic import Field

from raleval.environment import Environment
from raleval.model import Capabilities, GenerateRequest, Message, Model
from raleval.records import OutcomeKind, Step, Termination, ToolCall
from raleval.registry import register_workflow
from raleval.workflow import GoldPlan, Workflow
from raleval.workflows.common import (
    DEFAULT_CONTEXT_TOKENS,
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
    render_tool_lines,
)
from raleval.workflows.parsing import ActionParseError, parse_action

_ACTION_SPLIT = re.compile(r"\n?\s*Action\s*\d*\s*:", re.IGNORECASE)
# Chat models often repeat the label they were prompted with ("Thought 2: ...").
_THOUGHT_LABEL = re.compile(r"^\s*(?:Thought\s*\d*\s*:\s*)+", re.IGNORECASE)


class ReActState(TypedDict, total=False):
    question: str
    rec: EpisodeRecord
    header: str  # instructions, tools, example and question; fixed for the episode
    scratchpad: str  # the Thought / Action / Observation lines so far
    n: int
    parse_errors: int


def one_line(text: str) -> str:
    """Observations and thoughts are kept on one line, as ReAct's ``format_step`` does."""
    return " ".join(text.split())


def render_tool_list(env: Environment) -> str:
    return render_tool_lines(env, numbered=True)


def invalid_action_message(env: Environment) -> str:
    return _invalid_action_message(tuple(env.tools))


@functools.lru_cache(maxsize=256)
def _invalid_action_message(tools: tuple[Any, ...]) -> str:
    valid = " ".join(t.react_signature() for t in tools)
    return f"Invalid Action. Valid Actions are {valid} and Finish[<answer>]."


class ReActConfig(WorkflowConfig):
    """ReAct's budgets and how its text reaches a chat model."""

    max_steps: int = Field(10, ge=1)  # Thought/Action/Observation rounds
    max_parse_errors: int = Field(3, ge=1)  # unparseable actions in a row before giving up
    # "single": one call writes Thought and Action (ReAct's notebook; a second call asks for
    # the Action if it is missing); "two_call": R-Eval's separate Thought and Action calls.
    react_style: str = Field("single", pattern="^(single|two_call)$")
    # How the ReAct text reaches a chat model: "user" puts everything in one user message
    # (any API); "prefill" sends instructions + question as the user turn and the scratchpad as
    # an assistant turn the model continues (llama.cpp, vLLM); "auto" picks prefill when the
    # model declares it (Capabilities.prefill). Chat models given "user" tend to restart at
    # Thought 1.
    react_layout: str = Field("auto", pattern="^(auto|user|prefill)$")


def build_react_graph(model: Model, env: Environment, config: ReActConfig | None = None) -> Any:
    """Compile the ReAct graph for ``model`` on ``env``'s tools."""
    cfg = config or ReActConfig()
    template = load_prompt("react", env, cfg.prompt_file)
    context_limit = (
        cfg.max_context_tokens or model.capabilities.context_window or DEFAULT_CONTEXT_TOKENS
    )

    def header(question: str, tools_env: Environment, runtime: Any) -> str:
        # the episode's tools: an environment may offer a question only some (CRAG's domain)
        return template.substitute(
            tools=render_tool_list(tools_env),
            finish_index=len(tools_env.tools) + 1,
            question=question,
            examples=examples_text(cfg, runtime),
        ).rstrip()

    prefill = cfg.react_layout == "prefill" or (
        cfg.react_layout == "auto" and model.capabilities.prefill
    )

    def messages_for(head: str, pad: str) -> tuple[Message, ...]:
        if prefill:
            return (Message("user", head), Message("assistant", pad.lstrip("\n")))
        return (Message("user", head + pad),)

    async def reason(
        state: ReActState, config: RunnableConfig, rec: EpisodeRecord, head: str
    ) -> tuple[str, str] | None:
        """The step's thought and action text; None when the episode ended (recorded)."""
        ep_model = episode_model(config, model)
        n = state.get("n", 1)
        if n > cfg.max_steps:
            rec.finish(Termination.step_limit)
            return None
        pad = f"{state.get('scratchpad', '')}\nThought {n}:"
        if ended_at_context(rec, ep_model, cfg, context_limit, head + pad):
            return None
        stop: tuple[str, ...] = ("\nObservation",) if cfg.react_style == "single" else ("\n",)
        gen = await rec.generate(ep_model, head + pad, messages_for(head, pad), cfg, stop)
        if gen is None:
            return None
        parts = _ACTION_SPLIT.split(gen.text, maxsplit=1)
        thought = one_line(_THOUGHT_LABEL.sub("", parts[0]))
        action = parts[1].strip() if len(parts) > 1 and cfg.react_style == "single" else None
        if not action:
            # Ask for the Action on its own, as ReAct does when the model stops early.
            pad2 = f"{pad} {thought}\nAction {n}:"
            gen2 = await rec.generate(ep_model, head + pad2, messages_for(head, pad2), cfg, ("\n",))
            if gen2 is None:
                return None
            action = gen2.text.strip()
        return thought, action

    async def act(
        state: ReActState,
        config: RunnableConfig,
        rec: EpisodeRecord,
        head: str,
        thought: str,
        action_text: str,
    ) -> ReActState:
        """Run the step's action; the state's update (nothing once the episode finished)."""
        ep_env, ep_model = episode_env(config, env), episode_model(config, model)
        n, scratchpad = state.get("n", 1), state.get("scratchpad", "")
        action_line = one_line(action_text.splitlines()[0] if action_text.strip() else "")
        try:
            parsed = parse_action(action_text, ep_env.tools)
        except ActionParseError:
            invalid_msg = invalid_action_message(ep_env)
            rec.add_step(
                thought=thought,
                raw_action=action_text,
                observation=invalid_msg,
                kind=OutcomeKind.parse_error,
                cause="invalid_format",
            )
            errors = state.get("parse_errors", 0) + 1
            if errors >= cfg.max_parse_errors:
                rec.finish(Termination.invalid_format, f"{errors}_consecutive_parse_errors")
            pad = (
                f"{scratchpad}\nThought {n}: {thought}\nAction {n}: {action_line}"
                f"\nObservation {n}: {invalid_msg}"
            )
            return {"scratchpad": pad, "n": n + 1, "parse_errors": errors}
        if parsed.is_finish:
            rec.answer = parsed.answer
            rec.add_step(
                thought=thought, tool="Finish", arguments=parsed.arguments, raw_action=parsed.raw
            )
            rec.finish(Termination.finished)
            return {}
        result = await ep_env.call(parsed.tool, parsed.arguments)
        pad = scratchpad + step_head(n, thought, parsed.raw)
        observation = observation_in(ep_model, head + pad, n, result.observation, rec)
        rec.add_step(
            result,
            thought=thought,
            tool=parsed.tool,
            arguments=parsed.arguments,
            raw_action=parsed.raw,
            observation=observation,
        )
        return {"scratchpad": pad + observation, "n": n + 1, "parse_errors": 0}

    def observation_in(ep_model: Model, prompt: str, n: int, text: str, rec: EpisodeRecord) -> str:
        """Step ``n``'s observation as the scratchpad shows it after ``prompt`` (which ends in
        the step's own ``Observation n:`` label), cut to the room the context leaves. The room
        leaves the next step's label too: an observation that filled the context to the last
        token ended the episode at the next "Thought" (a context_limit stop). A live step and a
        replay's given step are both sized here (docs/diagnosis.md)."""
        room = observation_room(ep_model, cfg, context_limit, prompt + f"\nThought {n + 1}:", rec)
        return fit_observation(ep_model, one_line(text), room)

    def step_text(n: int, step: Step, tools_env: Environment) -> str:
        """A recorded step as the scratchpad shows it (as ``act`` wrote it)."""
        if step.kind is OutcomeKind.parse_error or step.tool is None:
            raw = step.raw_action or ""
            action = one_line(raw.splitlines()[0] if raw.strip() else "")
        else:
            spec = tools_env.tool(step.tool)
            args = step.arguments or {}
            action = step.raw_action or (spec.react_call(args) if spec else f"{step.tool}({args})")
        return step_head(n, step.thought or "", action) + (step.observation or "")

    async def start_from(
        prefix: list[Step], config: RunnableConfig, rec: EpisodeRecord, head: str
    ) -> ReActState:
        """The state after the given steps, each recorded and in the scratchpad."""
        ep_env, ep_model = episode_env(config, env), episode_model(config, model)
        pad = ""
        errors = 0
        for given in prefix:
            if given.raw_action is None and given.tool is not None:
                spec = ep_env.tool(given.tool)
                if spec is not None:  # the action line as the model would have written it
                    given = given.model_copy(
                        update={"raw_action": spec.react_call(given.arguments or {})}
                    )
            if given.thought is None and given.tool is not None:
                # a call the model did not write (a gold call put in): its thought as
                # ReAct's own oracle and examples write one
                given = given.model_copy(update={"thought": call_thought(given.tool)})
            n = len(rec.steps) + 1
            # sized as ``act`` sizes a live step: after the step's own thought and action
            head_n = head + pad + step_head(n, given.thought or "", given.raw_action or "")

            def fit(text: str, prompt: str = head_n, n: int = n) -> str:
                return observation_in(ep_model, prompt, n, text, rec)

            recorded = await given_steps(rec, ep_env, [given], fit)
            if not recorded:
                break
            got = recorded[0]
            pad += step_text(len(rec.steps), got, ep_env)
            errors = errors + 1 if got.kind is OutcomeKind.parse_error else 0
        rec.extra["prefix_steps"] = len(rec.steps)
        return {"scratchpad": pad, "n": len(rec.steps) + 1, "parse_errors": errors}

    async def step(state: ReActState, config: RunnableConfig) -> Command:
        """One Thought / Action / Observation round, then this node again or the end. One
        node, not a reason node and an act node: LangGraph charges each node run about as
        much as the rest of a one-call episode's harness work (a one-node graph 0.81-0.96 ms per
        ``ainvoke`` at 64 at once, two nodes 1.07-1.21 ms)."""
        rec = state.get("rec") or EpisodeRecord()
        head = state.get("header") or header(state["question"], episode_env(config, env), config)
        update: ReActState = {"rec": rec, "header": head}
        if "header" not in state and (prefix := episode_prefix(config)):
            update.update(await start_from(prefix, config, rec, head))
            state = {**state, **update}
            if rec.done:
                return Command(update=update, goto=END)
        said = await reason(state, config, rec, head)
        if said is not None:
            update.update(await act(state, config, rec, head, *said))
        return Command(update=update, goto=END if rec.done else "step")

    graph = StateGraph(ReActState)
    graph.add_node("step", step, destinations=("step", END))
    graph.add_edge(START, "step")
    return graph.compile()


def call_thought(tool: str) -> str:
    """The thought before a call in ReAct's own solved traces: its scripted oracle's, its
    k-shot examples' and a replay's given call the model did not write."""
    return f"I need to call {tool}."


def step_head(n: int, thought: str, action: str) -> str:
    """Step ``n``'s lines in the scratchpad up to its observation."""
    return f"\nThought {n}: {thought}\nAction {n}: {action}\nObservation {n}: "


def render_react_example(example: SolvedExample, env: Environment) -> str:
    """A solved task in ReAct's trace format (k-shot examples)."""
    lines = [f"Question: {example.question}"]
    for i, (call, observation) in enumerate(example.calls, 1):
        spec = env.tool(call.tool)
        action = spec.react_call(call.arguments) if spec else f"{call.tool}({call.arguments})"
        lines += [
            f"Thought {i}: {call_thought(call.tool)}",
            f"Action {i}: {action}",
            f"Observation {i}: {one_line(observation)}",
        ]
    n = len(example.calls) + 1
    lines += [f"Thought {n}: I have the answer.", f"Action {n}: Finish[{example.answer}]"]
    return "\n".join(lines)


_STEP_TAIL = re.compile(r"(Thought|Action)\s+(\d+):\s*$")


_EPISODE_START = re.compile(r"(?:^|\n)Thought 1:")
_OBSERVATION = re.compile(r"\nObservation \d+: (.*?)(?=\nThought \d+:|\Z)", re.DOTALL)


def prompt_slot(prompt: str) -> tuple[str, int]:
    """Which slot a ReAct prompt asks the model to fill (``Thought`` or ``Action``) and its
    step number."""
    m = _STEP_TAIL.search(prompt[-40:])
    if m is None:
        return "Thought", 1
    return m.group(1), int(m.group(2))


@register_workflow("react")
class ReAct(Workflow):
    """Thought / Action / Observation text loop (ReAct, R-Eval)."""

    name = "react"
    Config = ReActConfig
    config: ReActConfig
    accepts_prefix = True

    def build(self, model: Model, env: Environment) -> Any:
        return build_react_graph(model, env, self.config)

    def decoding(self, capabilities: Capabilities) -> str:
        if self.config.react_style == "two_call":
            return "one line a call (Thought, then Action): stopped at the newline"
        return 'one Thought and Action a call: stopped at "\\nObservation"'

    def recursion_limit(self) -> int:
        # one node run per step, the step past the budget included (it ends the episode)
        return self.config.max_steps + 5

    def render_example(self, example: SolvedExample, env: Environment) -> str:
        return render_react_example(example, env)

    def shown_observations(self, request: GenerateRequest) -> list[str] | None:
        """The episode's ``Observation n:`` texts, from its scratchpad (after the last
        ``Thought 1:``: demonstrations before the question have observations of their own)."""
        text = "\n".join(m.content for m in request.messages)
        starts = list(_EPISODE_START.finditer(text))
        pad = text[starts[-1].start() :] if starts else ""
        return _OBSERVATION.findall(pad)

    def gold_reply(
        self, request: GenerateRequest, plan: GoldPlan, env: Environment
    ) -> tuple[str, list[ToolCall]]:
        prompt = request.messages[-1].content if request.messages else ""
        slot, n = prompt_slot(prompt)
        if n - 1 < len(plan.calls):
            call = plan.calls[n - 1]
            spec = env.tool(call.tool)
            action = spec.react_call(call.arguments) if spec else f"{call.tool}({call.arguments})"
            thought = call_thought(call.tool)
        else:
            thought, action = "I have the answer.", f"Finish[{plan.answer}]"
        if slot == "Action":
            return f" {action}", []
        return f" {thought}\nAction {n}: {action}\nObservation {n}:", []
