"""Deterministic test models (``scripted/<name>``). Never chosen for a real run by default.

- ``oracle``: replays each task's gold solution in the workflow's own format, then answers.
- ``malformed``: writes actions no parser accepts (exercises ``parse_error`` / ``invalid_format``).
- ``unknown-tool``: calls a tool that does not exist (exercises ``misuse``).
- ``abstain``: answers "I don't know" at once.
- ``error``: the backend fails on every call (exercises ``llm_error``).
- ``empty``: the backend returns empty text.
"""

from __future__ import annotations

import re
from typing import Any

from raleval.model import GenerateRequest, Generation, ModelError, apply_stop
from raleval.records import Task
from raleval.registry import register_model_provider

_STEP_TAIL = re.compile(r"(Thought|Action)\s+(\d+):\s*$")


def _estimate_tokens(text: str) -> int:
    return (len(text) + 3) // 4


class ScriptedModel:
    """Base: subclasses produce the raw text for a prompt; stop sequences apply as on a server."""

    endpoint = "scripted"

    def __init__(self, name: str) -> None:
        self.name = f"scripted/{name}"

    def respond(self, prompt: str) -> str:
        raise NotImplementedError

    async def generate(self, request: GenerateRequest) -> Generation:
        prompt = request.messages[-1].content if request.messages else ""
        text = apply_stop(self.respond(prompt), request.stop)
        return Generation(
            text=text,
            prompt_tokens=sum(_estimate_tokens(m.content) for m in request.messages),
            completion_tokens=_estimate_tokens(text),
        )


def _tail(prompt: str) -> tuple[str, int]:
    """Which ReAct slot the prompt asks for (``Thought`` or ``Action``) and its step number."""
    m = _STEP_TAIL.search(prompt[-40:])
    if m is None:
        return "Thought", 1
    return m.group(1), int(m.group(2))


class OracleModel(ScriptedModel):
    """Replays a task's gold solution as ReAct text, then finishes with the gold answer."""

    def __init__(self, task: Task | None = None, env: Any = None) -> None:
        super().__init__("oracle")
        self.task, self.env = task, env

    def for_episode(self, task: Task, env: Any, workflow: str) -> OracleModel:
        return OracleModel(task, env)

    def _action(self, n: int) -> tuple[str, str]:
        if self.task is None:
            raise ModelError("the oracle needs a task: use it through the runner", "no_task")
        solution = self.task.solution or []
        i = n - 1
        if i < len(solution):
            call = solution[i]
            spec = self.env.tool(call.tool) if self.env is not None else None
            rendered = spec.react_call(call.arguments) if spec else f"{call.tool}({call.arguments})"
            return f"I need to call {call.tool}.", rendered
        return "I have the answer.", f"Finish[{self.task.answers[0]}]"

    def respond(self, prompt: str) -> str:
        slot, n = _tail(prompt)
        thought, action = self._action(n)
        if slot == "Action":
            return f" {action}"
        return f" {thought}\nAction {n}: {action}\nObservation {n}:"


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


_BUILDERS = {
    "oracle": lambda: OracleModel(),
    "malformed": lambda: _Fixed("malformed", "Let me look this up.", "I will search the person"),
    "unknown-tool": lambda: _Fixed("unknown-tool", "Let me browse.", "browse(query=answer)"),
    "abstain": lambda: _Fixed("abstain", "I cannot know this.", "Finish[I don't know]"),
    "error": lambda: FailingModel("error", empty=False),
    "empty": lambda: FailingModel("empty", empty=True),
}


@register_model_provider("scripted")
def make_scripted_model(name: str, **options: Any) -> ScriptedModel:
    """``scripted/<name>``; see the module docstring for the names."""
    if options:
        raise ValueError(f"scripted models take no options (got {sorted(options)})")
    if name not in _BUILDERS:
        from raleval.registry import UnknownNameError

        raise UnknownNameError("scripted model", name, list(_BUILDERS))
    return _BUILDERS[name]()


SCRIPTED_NAMES = sorted(_BUILDERS)
