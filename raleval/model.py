"""The model protocol every provider implements: one async ``generate``.

Workflows depend only on this module, never on a concrete provider.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from raleval.records import ToolCall


@dataclass(frozen=True)
class Message:
    """A chat message. ``tool_calls`` is set on assistant messages of native tool calling."""

    role: str  # system | user | assistant | tool
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None


@dataclass(frozen=True)
class GenerateRequest:
    messages: tuple[Message, ...]
    stop: tuple[str, ...] = ()
    max_tokens: int = 128
    temperature: float = 0.0
    tools: tuple[dict[str, Any], ...] = ()  # JSON schemas, for native function calling


@dataclass
class Generation:
    text: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    cache_hit: bool = False
    server_time_s: float | None = None  # compute time the server reports (llama.cpp timings)


class ModelError(Exception):
    """The model backend failed after retries; ``cause`` is a short machine-readable tag."""

    def __init__(self, message: str, cause: str = "backend_error") -> None:
        super().__init__(message)
        self.cause = cause


@runtime_checkable
class Model(Protocol):
    """Anything with a name and one async ``generate``."""

    name: str

    async def generate(self, request: GenerateRequest) -> Generation: ...


class ModelWrapper:
    """Base of models that wrap another (caching, concurrency limits): attributes the wrapper
    does not define come from the wrapped model, and a model bound to one episode
    (``for_episode``, as scripted models are) is wrapped the same way."""

    def __init__(self, model: Any) -> None:
        self._model = model
        self.name = model.name

    def __getattr__(self, item: str) -> Any:
        return getattr(self._model, item)

    def rewrap(self, inner: Any) -> ModelWrapper:
        """A wrapper like this one around ``inner``, sharing this one's state."""
        clone = type(self).__new__(type(self))
        clone.__dict__.update(self.__dict__)
        clone._model, clone.name = inner, inner.name
        return clone

    def for_episode(self, task: Any, env: Any, workflow: str) -> Any:
        if not hasattr(self._model, "for_episode"):
            return self
        return self.rewrap(self._model.for_episode(task, env, workflow))

    async def generate(self, request: GenerateRequest) -> Generation:
        return await self._model.generate(request)


def apply_stop(text: str, stop: tuple[str, ...] | list[str]) -> str:
    """Cut ``text`` at the earliest stop sequence, as servers do."""
    cut = len(text)
    for s in stop:
        if s:
            i = text.find(s)
            if i != -1 and i < cut:
                cut = i
    return text[:cut]
