"""PAL: the model writes one Python program against the tools; it runs once, sandboxed.

The program must set ``final_result``. An exception ends the episode as a tool-using error
(``program_error``), which is PAL's defining weakness in R-Eval and is kept on purpose. Tool
calls made by the program are recorded as steps like any other workflow's. Optionally a last
model call phrases the result as an answer (``pal_phrase_answer``).
"""

from __future__ import annotations

import functools
import re
from typing import Any, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from pydantic import Field

from raleval.environment import Environment
from raleval.model import Capabilities, GenerateRequest, Message, Model
from raleval.records import OutcomeKind, Termination, ToolCall
from raleval.registry import register_workflow
from raleval.scheduling import outside_turn
from raleval.workflow import GoldPlan, Workflow
from raleval.workflows.common import (
    EpisodeRecord,
    SolvedExample,
    WorkflowConfig,
    episode_env,
    episode_model,
    examples_text,
    load_prompt,
    routed,
)
from raleval.workflows.sandbox import (
    SandboxLimits,
    SandboxUnavailable,
    ToolCallRefused,
    check_isolation,
    run_program,
)

_FENCE = re.compile(r"```(?:python|py)?\s*\n(.*?)(?:```|$)", re.S)


class PALState(TypedDict, total=False):
    question: str
    rec: EpisodeRecord
    program: str
    prompt: str


def extract_program(text: str) -> str:
    """The code of the first fenced block, or the whole reply if there is no fence."""
    m = _FENCE.search(text)
    return (m.group(1) if m else text).strip("\n")


def answer_text(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(answer_text(v) for v in value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


# The program is one fenced block: the reply opens it (prefilled where the model continues a
# final assistant turn) and stops where the model closes it, so nothing after the program
# (an explanation, a second program) spends tokens.
PROGRAM_OPEN = "```python\n"
PROGRAM_STOP = ("\n```",)


class PALConfig(WorkflowConfig):
    """PAL's answer phrasing and sandbox limits."""

    pal_phrase_answer: bool = False
    pal_unsafe: bool = False  # run without Landlock/seccomp where the machine has neither
    pal_cpu_s: int = Field(10, ge=1)
    pal_wall_s: float = Field(30.0, gt=0)
    pal_memory_mb: int = Field(512, ge=64)


def preflight(config: PALConfig) -> None:
    """Refuse to run model-written code where the machine cannot sandbox it."""
    if config.pal_unsafe:
        return
    reason = check_isolation()
    if reason:
        raise SandboxUnavailable(
            f"{reason}. PAL will not run model-written code unsandboxed; pass "
            "-W pal_unsafe=true to run it anyway in a plain subprocess with rlimits only."
        )


@functools.lru_cache(maxsize=256)
def _stubs(tools: tuple[Any, ...]) -> str:
    """The tools as typed Python stubs (rendered once per tool set)."""
    return "\n".join(t.python_stub() for t in tools)


def build_pal_graph(model: Model, env: Environment, config: PALConfig | None = None) -> Any:
    """Compile the PAL graph: write one program, run it once in the sandbox, answer."""
    cfg = config or PALConfig()
    template = load_prompt("pal", env, cfg.prompt_file)
    build_stubs = _stubs(tuple(env.tools))
    limits = SandboxLimits(cpu_s=cfg.pal_cpu_s, wall_s=cfg.pal_wall_s, memory_mb=cfg.pal_memory_mb)

    async def write(state: PALState, config: RunnableConfig) -> PALState:
        ep_model = episode_model(config, model)
        rec = state.get("rec") or EpisodeRecord()
        # the episode's tools: a testbed may present them renamed, bare or with look-alikes
        ep_env = episode_env(config, env)
        stubs = build_stubs if ep_env is env else _stubs(tuple(ep_env.tools))
        prompt = template.substitute(
            stubs=stubs, question=state["question"], examples=examples_text(cfg, config)
        ).rstrip()
        messages: tuple[Message, ...] = (Message("user", prompt),)
        opened = ep_model.capabilities.prefill
        if opened:
            messages += (Message("assistant", PROGRAM_OPEN),)
        gen = await rec.generate(ep_model, prompt, messages, cfg, PROGRAM_STOP)
        if gen is None:
            return {"rec": rec}
        text = PROGRAM_OPEN + gen.text if opened else gen.text
        return {"rec": rec, "program": extract_program(text), "prompt": prompt}

    async def execute(state: PALState, config: RunnableConfig) -> PALState:
        ep_env = episode_env(config, env)
        rec = state["rec"]
        program = state["program"]
        faults: list[str] = []

        async def call_tool(name: str, arguments: dict[str, Any]) -> Any:
            result = await ep_env.call(name, arguments)
            rec.add_step(result, tool=name, arguments=arguments, raw_action=None)
            if result.kind is OutcomeKind.tool_fault:
                faults.append(result.cause or "tool_fault")
            if result.kind is not OutcomeKind.ok:  # the program's call raises RuntimeError
                raise ToolCallRefused(result.observation or result.cause or "tool call failed")
            return result.data

        try:
            # the program runs in a subprocess: the episode waits for it outside its turn
            outcome = await outside_turn(
                run_program(
                    program,
                    [t.name for t in ep_env.tools],
                    call_tool,
                    limits,
                    enforce=not cfg.pal_unsafe,
                )
            )
        except SandboxUnavailable as exc:
            rec.add_step(
                thought=program,
                kind=OutcomeKind.misuse,
                cause="sandbox_unavailable",
                observation=str(exc),
            )
            rec.finish(Termination.harness_error, "sandbox_unavailable")
            return {}
        if outcome.ok:
            rec.answer = answer_text(outcome.result)
            rec.add_step(thought=program, tool="Finish", arguments={"answer": rec.answer})
            rec.finish(Termination.finished)
            return {}
        observation = f"{outcome.error}"
        if outcome.traceback:
            observation += f"\n{outcome.traceback}"
        if faults:  # the program died because a tool backend failed: not the agent's fault
            rec.add_step(
                thought=program,
                kind=OutcomeKind.tool_fault,
                cause=faults[-1],
                observation=observation,
            )
            rec.finish(Termination.tool_fault, faults[-1])
        else:
            detail = outcome.cause or "unknown"
            if detail == "program_error":  # name the exception: program_error:KeyError
                detail = (outcome.error or "Exception").split(":", 1)[0]
            rec.add_step(
                thought=program,
                kind=OutcomeKind.misuse,
                cause=f"program_error:{detail}",
                observation=observation,
            )
            rec.finish(Termination.program_error, detail)
        return {}

    async def phrase(state: PALState, config: RunnableConfig) -> PALState:
        ep_model = episode_model(config, model)
        rec = state["rec"]
        prompt = (
            f"{state['prompt']}\n```python\n{state['program']}\n```\n"
            f"The program computed: {rec.answer}\nAnswer the question briefly.\nAnswer:"
        )
        gen = await rec.generate(ep_model, prompt, (Message("user", prompt),), cfg, ("\n",))
        if gen is not None and gen.text.strip():
            rec.answer = gen.text.strip()
        return {}

    async def after_write(state: PALState) -> str:
        return END if state["rec"].done else "execute"

    async def after_execute(state: PALState) -> str:
        rec = state["rec"]
        return (
            "phrase" if cfg.pal_phrase_answer and rec.termination is Termination.finished else END
        )

    graph = StateGraph(PALState)
    graph.add_node("write", routed(write, after_write), destinations=("execute", END))
    graph.add_node("execute", routed(execute, after_execute), destinations=("phrase", END))
    graph.add_node("phrase", phrase)
    graph.add_edge(START, "write")
    graph.add_edge("phrase", END)
    return graph.compile()


def render_pal_example(example: SolvedExample, env: Environment) -> str:
    """A solved task as a PAL program; the answer is computed from the results when the task
    says how (``answer_expr``), so examples never teach hard-coding the answer."""
    lines = [f"Question: {example.question}", "```python"]
    for i, (call, _observation) in enumerate(example.calls):
        args = ", ".join(f"{k}={v!r}" for k, v in call.arguments.items())
        lines.append(f"r{i} = {call.tool}({args})")
    lines += [f"final_result = {example.answer_expr or repr(example.answer)}", "```"]
    return "\n".join(lines)


@register_workflow("pal")
class PAL(Workflow):
    """The model writes one program against the tools; it runs once in an OS sandbox."""

    name = "pal"
    Config = PALConfig
    config: PALConfig

    def build(self, model: Model, env: Environment) -> Any:
        return build_pal_graph(model, env, self.config)

    def preflight(self) -> None:
        preflight(self.config)

    def recursion_limit(self) -> int:
        return 10

    def decoding(self, capabilities: Capabilities) -> str:
        opened = "opened by prefill" if capabilities.prefill else "opened by the model"
        phrase = "; answer phrased in one line" if self.config.pal_phrase_answer else ""
        return f"one ```python block, {opened}, stopped at its closing fence{phrase}"

    def render_example(self, example: SolvedExample, env: Environment) -> str:
        return render_pal_example(example, env)

    def shown_observations(self, request: GenerateRequest) -> list[str] | None:
        return None  # the program reads the tools' whole results, never a rendered view

    def gold_reply(
        self, request: GenerateRequest, plan: GoldPlan, env: Environment
    ) -> tuple[str, list[ToolCall]]:
        lines = ["```python"]
        for i, call in enumerate(plan.calls):
            args = ", ".join(f"{k}={v!r}" for k, v in call.arguments.items())
            lines.append(f"r{i} = {call.tool}({args})")
        lines += [f"final_result = {plan.answer_expr or repr(plan.answer)}", "```"]
        return "\n".join(lines), []
