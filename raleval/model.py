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
    # the id of each of ``tool_calls`` (the provider's, or derived from the call's position;
    # raleval.workflows.call_ids), answered by the tool messages' ``tool_call_id``
    tool_call_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class GenerateRequest:
    messages: tuple[Message, ...]
    stop: tuple[str, ...] = ()
    max_tokens: int = 128
    temperature: float = 0.0
    tools: tuple[dict[str, Any], ...] = ()  # JSON schemas, for native function calling
    # With ``tools``: "auto", "required" or "none", as OpenAI's API takes it (None: not sent).
    # A workflow whose every turn must be a call (Finish is a tool) asks for "required".
    tool_choice: str | None = None
    # With ``tools``: whether one reply may hold several calls (None: the server's default).
    # The workflows send False unless parallel calls are their explicit option.
    parallel_tool_calls: bool | None = None
    # A JSON schema the whole reply must match (a plan as a list of calls), sent where the
    # model declares constrained decoding (``Capabilities.json_schema``), else ignored.
    json_schema: dict[str, Any] | None = None


@dataclass
class Generation:
    text: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    cache_hit: bool = False
    server_time_s: float | None = None  # compute time the server reports (llama.cpp timings)
    # CPU seconds the model's own process on this machine spent on this call (the embedded
    # llama.cpp server, shared equally among the calls it served at once), where measured
    cpu_s: float | None = None
    truncated: bool = False  # the reply was longer than reply_char_limit and was cut
    # the id the provider gave each of ``tool_calls`` ("" where it gave none)
    tool_call_ids: list[str] = field(default_factory=list)
    # why the server stopped generating, in OpenAI's words: "stop" (an end or a stop
    # string), "length" (cut at max_tokens), "tool_calls"; None where the server did not say
    finish_reason: str | None = None


# A token is a few characters; a reply far longer than its token budget is a broken or hostile
# server, and is cut before anything parses it.
CHARS_PER_TOKEN_BOUND = 32
MIN_REPLY_CHARS = 16_384


def reply_char_limit(max_tokens: int) -> int:
    """The most characters a reply of ``max_tokens`` tokens may keep."""
    return max(MIN_REPLY_CHARS, CHARS_PER_TOKEN_BOUND * max(0, max_tokens))


def bound_reply(gen: Generation, max_tokens: int) -> Generation:
    """``gen`` with its text cut to :func:`reply_char_limit` (and flagged) if longer."""
    limit = reply_char_limit(max_tokens)
    if len(gen.text) > limit:
        gen.text, gen.truncated = gen.text[:limit], True
    return gen


# ModelError's cause when the server refused a request longer than the model's context window:
# the episode ends at its context limit (a harness limit), as when a workflow sees it coming.
CONTEXT_WINDOW = "context_window"


class ModelError(Exception):
    """The model backend failed after retries; ``cause`` is a short machine-readable tag."""

    def __init__(self, message: str, cause: str = "backend_error") -> None:
        super().__init__(message)
        self.cause = cause


@dataclass(frozen=True)
class Price:
    """What a model's tokens cost, in US dollars per million tokens. ``source`` says where the
    figures came from (the built-in table and its date, ``-M price_in/price_out``, or
    ``local``: a model on this machine, priced at 0, whose compute seconds are recorded)."""

    input_per_mtok: float
    output_per_mtok: float
    source: str = ""

    @property
    def free(self) -> bool:
        return self.input_per_mtok == 0 and self.output_per_mtok == 0

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        """US dollars for ``prompt_tokens`` in and ``completion_tokens`` out."""
        return (
            prompt_tokens * self.input_per_mtok + completion_tokens * self.output_per_mtok
        ) / 1_000_000


LOCAL_PRICE = Price(0.0, 0.0, "local")


@dataclass(frozen=True)
class Capabilities:
    """What a model declares about itself; workflows and the runner read these fields and
    never probe a model for attributes."""

    # The server continues a final assistant message instead of starting a new turn
    # (llama.cpp; vLLM with continue_final_message): ReAct's "auto" layout uses it.
    prefill: bool = False
    # Tokens one request may hold (prompt and reply); None: the workflow's default budget.
    context_window: int | None = None
    # Episodes it serves well at once (llama.cpp slots); None: no limit of its own.
    max_concurrency: int | None = None
    # Replies may be kept in the response cache (scripted models cost nothing to ask again
    # and are the cache's own test subjects).
    cacheable: bool = True
    # What its tokens cost (set where the model is resolved, raleval.agents.pricing); None:
    # unknown, and the episode's cost is left unrecorded.
    price: Price | None = None
    # How the model returns the calls of a request with ``tools`` (TOOL_CALL_MODES): "native"
    # (the server's structured ``tool_calls``), "schema" (the server constrains decoding to the
    # tools' JSON schemas and the calls are read from that JSON), "auto" (native, and schema
    # from the first reply found to hold its calls as text) or "text" (read from free text).
    tool_calls: str = "native"
    # The server constrains a reply to a JSON schema (``GenerateRequest.json_schema``).
    json_schema: bool = False


# How a model returns tool calls, and what each means for a request with tools (the run header
# and ``raleval run`` say which one a workflow gets).
TOOL_CALL_MODES = {
    "native": "the server's own tool calls (tools, tool_choice, parallel_tool_calls)",
    "schema": "decoding constrained to the tools' JSON schemas (response_format json_schema); "
    "the model has no native tool-call format here",
    "auto": "the server's own tool calls; decoding constrained to the tools' JSON schemas from "
    "the first reply that holds its calls as text",
    "text": "calls read from free text (no native format, no constrained decoding)",
    "none": "no tool calls: the model replies in text only",
}


def tool_call_schema(
    tools: tuple[dict[str, Any], ...] | list[dict[str, Any]],
    many: bool,
    name_key: str = "name",
    max_calls: int | None = None,
) -> dict[str, Any]:
    """The JSON schema of one call of ``tools`` (OpenAI tool declarations): one of
    ``{"name": <a tool's name>, "arguments": <its parameters>}`` (the name under
    ``name_key``); with ``many``, a non-empty list of them (at most ``max_calls``). A server
    that constrains decoding to it can return nothing but calls."""
    options = []
    for tool in tools:
        fn = tool.get("function", tool)
        params = fn.get("parameters") or {"type": "object", "properties": {}}
        options.append(
            {
                "type": "object",
                "properties": {name_key: {"const": fn["name"]}, "arguments": params},
                "required": [name_key, "arguments"],
                "additionalProperties": False,
            }
        )
    one = options[0] if len(options) == 1 else {"anyOf": options}
    if not many:
        return one
    listed: dict[str, Any] = {"type": "array", "items": one, "minItems": 1}
    if max_calls is not None:
        listed["maxItems"] = max_calls
    return listed


@runtime_checkable
class Model(Protocol):
    """A model: a name, its capabilities, and one async ``generate``; the per-episode and
    lifecycle hooks have defaults in :class:`ModelBase`."""

    name: str
    capabilities: Capabilities

    async def generate(self, request: GenerateRequest) -> Generation: ...

    def count_tokens(self, text: str) -> int: ...

    def for_episode(self, task: Any, env: Any, workflow: Any) -> Model: ...

    def with_epoch(self, epoch: int) -> Model: ...

    async def aclose(self) -> None: ...


class ModelBase:
    """Defaults for everything but ``generate``: providers subclass it."""

    name: str = "model"
    capabilities: Capabilities = Capabilities()

    async def generate(self, request: GenerateRequest) -> Generation:
        raise NotImplementedError

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text``: the model's own tokenizer where it has one, else ~4 chars each."""
        return (len(text) + 3) // 4

    @property
    def cache_identity(self) -> str:
        """What the response cache keys this model's replies by: its name, and where a
        provider knows more (what a server says it serves), that too, so that another model
        served later under the same name never gets this one's replies."""
        return self.name

    def for_episode(self, task: Any, env: Any, workflow: Any) -> Model:
        """The model one episode talks to (scripted models bind to their task here)."""
        return self

    def with_epoch(self, epoch: int) -> Model:
        """The model for repeat ``epoch`` of a task (an uncached model is the same model)."""
        return self

    def use_adaptive_limit(self, limit: Any) -> bool:
        """Take each request's slot from ``limit`` (a :class:`raleval.concurrency.AdaptiveLimit`)
        and tell it which requests the endpoint refused for load; False: this model sends no
        requests anywhere that could refuse them (the limit then stays where it starts)."""
        return False

    async def aclose(self) -> None:
        """Release connections inside the event loop that opened them."""


class ModelWrapper(ModelBase):
    """Base of models that wrap another (caching, concurrency limits): attributes the wrapper
    does not define come from the wrapped model, and a model bound to one episode
    (``for_episode``, as scripted models are) is wrapped the same way."""

    def __init__(self, model: Any) -> None:
        self._model = model
        self.name = model.name
        self.capabilities = model.capabilities

    def __getattr__(self, item: str) -> Any:
        return getattr(self._model, item)

    def rewrap(self, inner: Any) -> ModelWrapper:
        """A wrapper like this one around ``inner``, sharing this one's state."""
        clone = type(self).__new__(type(self))
        clone.__dict__.update(self.__dict__)
        clone._model, clone.name = inner, inner.name
        return clone

    def count_tokens(self, text: str) -> int:
        return self._model.count_tokens(text)

    @property
    def cache_identity(self) -> str:
        # a model written to the Model protocol alone has only its name
        return str(getattr(self._model, "cache_identity", self._model.name))

    def for_episode(self, task: Any, env: Any, workflow: Any) -> Model:
        inner = self._model.for_episode(task, env, workflow)
        return self if inner is self._model else self.rewrap(inner)

    def with_epoch(self, epoch: int) -> Model:
        inner = self._model.with_epoch(epoch)
        return self if inner is self._model else self.rewrap(inner)

    def use_adaptive_limit(self, limit: Any) -> bool:
        return bool(self._model.use_adaptive_limit(limit))

    async def aclose(self) -> None:
        await self._model.aclose()

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
