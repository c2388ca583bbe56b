"""Deterministic test models (``scripted/<name>``). Never chosen for a real run by default.

- ``oracle``: replays each task's gold solution in the workflow's own format, then answers.
- ``malformed``: writes actions no parser accepts (exercises ``parse_error`` / ``invalid_format``).
- ``unknown-tool``: calls a tool that does not exist (exercises ``misuse``).
- ``abstain``: answers "I don't know" at once.
- ``error``: the backend fails on every call (exercises ``llm_error``).
- ``empty``: the backend returns empty text.
- ``replay``: replays the model outputs recorded in a results file (``-M path=results.jsonl``),
  task by task, so a stored run can be re-executed against the tools without the model.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

from raleval.model import (
    Capabilities,
    GenerateRequest,
    Generation,
    ModelBase,
    ModelError,
    apply_stop,
)
from raleval.records import Task, ToolCall
from raleval.registry import register_model_provider
from raleval.workflow import GoldPlan

_STEP_TAIL = re.compile(r"(Thought|Action)\s+(\d+):\s*$")


def _estimate_tokens(text: str) -> int:
    return (len(text) + 3) // 4


class ScriptedModel(ModelBase):
    """Base: subclasses produce the raw text for a prompt; stop sequences apply as on a server."""

    endpoint = "scripted"
    capabilities = Capabilities(cacheable=False)

    def __init__(self, name: str) -> None:
        self.name = f"scripted/{name}"

    def respond(self, prompt: str) -> str:
        raise NotImplementedError

    def respond_with_tools(self, request: GenerateRequest) -> tuple[str, list[ToolCall]]:
        """Native function calling; by default the text reply and no structured call."""
        prompt = request.messages[-1].content if request.messages else ""
        return self.respond(prompt), []

    latency_s: float = 0.0  # simulated model latency (crash and throughput tests)

    def reply(self, request: GenerateRequest) -> tuple[str, list[ToolCall]]:
        """The raw reply text and native tool calls for ``request``."""
        if request.tools:
            return self.respond_with_tools(request)
        return self.respond(request.messages[-1].content if request.messages else ""), []

    async def generate(self, request: GenerateRequest) -> Generation:
        if self.latency_s:
            await asyncio.sleep(self.latency_s)
        text, calls = self.reply(request)
        text = apply_stop(text, request.stop)
        return Generation(
            text=text,
            tool_calls=calls,
            prompt_tokens=sum(_estimate_tokens(m.content) for m in request.messages),
            completion_tokens=_estimate_tokens(text) + 8 * len(calls),
        )


def _tail(prompt: str) -> tuple[str, int]:
    """Which ReAct slot the prompt asks for (``Thought`` or ``Action``) and its step number."""
    m = _STEP_TAIL.search(prompt[-40:])
    if m is None:
        return "Thought", 1
    return m.group(1), int(m.group(2))


WRONG_ANSWER = "an answer that is wrong"


class OracleModel(ScriptedModel):
    """Plays a task's gold solution back in the workflow's own format (the workflow's
    ``gold_reply``), then gives the gold answer.

    Variants, for exercising the taxonomy: ``memorizer`` gives the gold answer without calling
    any tool (AM) and, on a counterfactual testbed, the real world's answer rather than the
    tools'; ``oracle-wrong`` makes the gold calls and then answers wrongly (GE).
    """

    def __init__(
        self,
        task: Task | None = None,
        env: Any = None,
        workflow: Any = None,
        variant: str = "oracle",
    ) -> None:
        super().__init__(variant)
        self.task, self.env, self.workflow, self.variant = task, env, workflow, variant

    def for_episode(self, task: Task, env: Any, workflow: Any) -> OracleModel:
        bound = OracleModel(task, env, workflow, self.variant)
        bound.latency_s = self.latency_s
        return bound

    def plan(self) -> GoldPlan:
        """What this variant plays back for its task."""
        if self.task is None or self.workflow is None:
            raise ModelError("the oracle needs a task: use it through the runner", "no_task")
        task = self.task
        if self.variant == "memorizer":  # what it remembers of the real world, not the tools'
            return GoldPlan([], task.metadata.get("original_answers", task.answers)[0])
        calls = list(task.solution or [])
        if self.variant == "oracle-wrong":
            return GoldPlan(calls, WRONG_ANSWER)
        return GoldPlan(calls, task.answers[0], task.metadata.get("answer_expr"))

    def reply(self, request: GenerateRequest) -> tuple[str, list[ToolCall]]:
        plan = self.plan()
        return self.workflow.gold_reply(request, plan, self.env)


class AlternatingModel(OracleModel):
    """Right on a task's 1st, 3rd, ... episode and wrong on its 2nd, 4th, ...: with epochs,
    pass@k and pass^k differ (exercises repeated runs)."""

    def __init__(self) -> None:
        super().__init__(variant="alternating")
        self.visits: dict[str, int] = {}

    def for_episode(self, task: Task, env: Any, workflow: Any) -> OracleModel:
        n = self.visits.get(task.id, 0)
        self.visits[task.id] = n + 1
        bound = OracleModel(task, env, workflow, "oracle" if n % 2 == 0 else "oracle-wrong")
        bound.latency_s = self.latency_s
        return bound


class _Fixed(ScriptedModel):
    def __init__(self, name: str, thought: str, action: str) -> None:
        super().__init__(name)
        self.thought, self.action = thought, action

    def respond(self, prompt: str) -> str:
        slot, n = _tail(prompt)
        if slot == "Action":
            return f" {self.action}"
        return f" {self.thought}\nAction {n}: {self.action}"


class FailingModel(ScriptedModel):
    def __init__(self, name: str, empty: bool) -> None:
        super().__init__(name)
        self.empty = empty

    def respond(self, prompt: str) -> str:
        if self.empty:
            return ""
        raise ModelError("scripted backend failure", "backend_error")


class ReplayModel(ScriptedModel):
    """Replays recorded outputs of each task's trajectory, in order."""

    def __init__(self, path: str, outputs: list[str] | None = None) -> None:
        super().__init__("replay")
        self.path = path
        self._outputs = outputs
        self._by_task: dict[str, list[str]] | None = None

    def _load(self) -> dict[str, list[str]]:
        if self._by_task is None:
            from pathlib import Path

            from raleval.store import ResultsFile

            if not Path(self.path).exists():
                raise ValueError(f"scripted/replay: no results file at {self.path}")
            self._by_task = {
                t.task_id: [c.output for c in t.llm_calls] for t in ResultsFile(Path(self.path))
            }
        return self._by_task

    def for_episode(self, task: Task, env: Any, workflow: Any) -> ReplayModel:
        outputs = self._load().get(task.id)
        if outputs is None:
            raise ValueError(f"scripted/replay: task {task.id} is not in {self.path}")
        bound = ReplayModel(self.path, list(outputs))
        bound.latency_s = self.latency_s
        return bound

    def respond(self, prompt: str) -> str:
        if not self._outputs:
            raise ModelError("replay exhausted: the recording has no more outputs", "replay_end")
        return self._outputs.pop(0)


_BUILDERS = {
    "oracle": lambda: OracleModel(),
    "memorizer": lambda: OracleModel(variant="memorizer"),
    "oracle-wrong": lambda: OracleModel(variant="oracle-wrong"),
    "alternating": lambda: AlternatingModel(),
    "malformed": lambda: _Fixed("malformed", "Let me look this up.", "I will search the person"),
    "unknown-tool": lambda: _Fixed("unknown-tool", "Let me browse.", "browse(query=answer)"),
    "abstain": lambda: _Fixed("abstain", "I cannot know this.", "Finish[I don't know]"),
    "error": lambda: FailingModel("error", empty=False),
    "empty": lambda: FailingModel("empty", empty=True),
}


@register_model_provider("scripted")
def make_scripted_model(name: str, run_dir: Any = None, **options: Any) -> ScriptedModel:
    """``scripted/<name>``: deterministic test models (oracle, replay, failure kinds)."""
    latency = float(options.pop("latency_s", 0.0))
    if name == "replay":
        if set(options) != {"path"}:
            raise ValueError("scripted/replay needs one option: -M path=results.jsonl")
        model: ScriptedModel = ReplayModel(str(options["path"]))
    else:
        if options:
            raise ValueError(f"scripted models take only latency_s (got {sorted(options)})")
        if name not in _BUILDERS:
            from raleval.registry import UnknownNameError

            raise UnknownNameError("scripted model", name, list(_BUILDERS))
        model = _BUILDERS[name]()
    model.latency_s = latency
    return model


SCRIPTED_NAMES = sorted([*_BUILDERS, "replay"])
