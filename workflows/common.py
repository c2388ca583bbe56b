"""What every workflow shares: its config, budgets, and the per-episode recorder.

The recorder turns each model call and each tool call into records, and keeps the clocks
(model time, tool time, wall time) that the deployment analysis reads.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from importlib import resources
from string import Template
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.types import Command

from raleval.environment import ToolResult
from raleval.formats import is_unparseable
from raleval.model import (
    CONTEXT_WINDOW,
    GenerateRequest,
    Generation,
    Message,
    Model,
    ModelError,
    Price,
    bound_reply,
)
from raleval.records import LLMCall, OutcomeKind, Step, Termination, ToolCall
from raleval.scheduling import within
from raleval.workflow import DEFAULT_CONTEXT_TOKENS, SolvedExample, WorkflowConfig

__all__ = [
    "DEFAULT_CONTEXT_TOKENS",
    "ONE_CALL",
    "Decoding",
    "EpisodeRecord",
    "SolvedExample",
    "WorkflowConfig",
    "count_tokens",
    "ended_at_context",
    "episode_env",
    "episode_model",
    "examples_text",
    "fit_observation",
    "fit_series",
    "given_steps",
    "load_prompt",
    "observation_room",
    "render_tool_lines",
    "routed",
    "tool_line",
]

TRUNCATION_MARKER = "[... truncated: {dropped} more characters]"


# A graph is compiled once per run (compiling costs milliseconds); what differs per episode (a
# scripted model bound to its task, a stateful environment session) arrives in LangGraph's
# runtime ``configurable``, and the builder's arguments are the defaults.


def configurable(config: Any) -> dict[str, Any]:
    """What this episode's runtime config carries (``configurable``; {} without one)."""
    return (config or {}).get("configurable") or {}


def episode_model(config: Any, default: Any) -> Any:
    """The model of this episode."""
    return configurable(config).get("model", default)


def episode_env(config: Any, default: Any) -> Any:
    """The environment session of this episode."""
    return configurable(config).get("env", default)


def episode_prefix(config: Any) -> list[Any]:
    """The steps this episode starts from (a counterfactual replay, docs/diagnosis.md), or [].
    They travel in the run's config, not the graph's state: a state key is a channel LangGraph
    reads and writes on every step of every episode (measured: 0.02-0.06 ms an episode for
    one more key on a one-node graph), and only replays carry a prefix."""
    return configurable(config).get("prefix") or []


Node = Callable[[Any, RunnableConfig], Awaitable[dict[str, Any]]]


def routed(node: Node, after: Callable[[Any], Awaitable[str]]) -> Node:
    """``node`` and the routing function that follows it as one LangGraph node, which says
    where the episode goes next (a ``Command``). A conditional edge is a runnable of its own,
    costing LangGraph about as much per step as a node does (a two-node graph: 0.82 ms per
    episode with conditional edges, 0.65-0.77 ms with commands). ``after`` sees the state with
    the node's update applied; every channel a routing function reads holds its last value.
    Add the node with its ``destinations`` so that the graph still draws its edges."""

    async def step(state: Any, config: RunnableConfig) -> Command:
        update = await node(state, config)
        return Command(update=update, goto=await after({**state, **update}))

    step.__name__ = step.__qualname__ = node.__name__
    return step


def count_tokens(model: Model, text: str) -> int:
    """Tokens of ``text`` with the model's own tokenizer where it has one, else ~4 chars/token."""
    return int(model.count_tokens(text))


def tool_schemas(tools: Any, finish: dict[str, Any]) -> tuple[tuple[dict[str, Any], ...], str]:
    """The JSON schemas of ``tools`` plus the ``finish`` schema, and their compact text (what
    travels with every request and so counts in the token budget). Built once per tool set:
    a workflow asks every turn, and pydantic's schema generation costs ~1 ms a tool."""
    return _tool_schemas(tuple(tools), json.dumps(finish, sort_keys=True))


@functools.lru_cache(maxsize=256)
def _tool_schemas(tools: tuple[Any, ...], finish: str) -> tuple[tuple[dict[str, Any], ...], str]:
    schemas = (*(t.json_schema() for t in tools), json.loads(finish))
    return schemas, json.dumps(schemas, separators=(",", ":"))


def tool_line(tool: Any) -> str:
    """A tool as a prompt shows it: its call signature, then a one-line description (no
    heading a small model could copy as an action)."""
    description = " ".join(tool.description.split())
    return f"{tool.react_signature()} - {description}"


def render_tool_lines(env: Any, numbered: bool = False) -> str:
    """The environment's tools, one :func:`tool_line` each (rendered once per tool set: every
    episode's prompt shows them)."""
    return _tool_lines(tuple(env.tools), numbered)


@functools.lru_cache(maxsize=256)
def _tool_lines(tools: tuple[Any, ...], numbered: bool) -> str:
    return "\n".join(
        f"({i}) {tool_line(t)}" if numbered else f"- {tool_line(t)}" for i, t in enumerate(tools, 1)
    )


# A key that starts with a calendar date: "2024-07-26", "2024-07-26 00:00:00 EST",
# "2024-07-26T00:00:00.000".
_DATED = re.compile(r"^\d{4}-\d{2}-\d{2}(?:$|[ T])")
SERIES_MARKER = "truncated"  # the key that says how many older entries a series lost


def _series_order(data: Any) -> list[str] | None:
    """The keys of a date-keyed series (a JSON object whose keys are all dates: a price
    history, dividends), newest first; else None. Lists, even of dated records, are not
    series: their order is the tool's (search rank, a league's order) and their head stays."""
    if isinstance(data, dict) and len(data) > 1:
        keys = list(data)
        if all(isinstance(k, str) and _DATED.match(k) for k in keys):
            return sorted(keys, reverse=True)
    return None


def _render_series(data: dict[str, Any], order: list[str], keep: int) -> str:
    """The ``keep`` newest entries of a series, newest first, and (if any were cut) a last
    key that says how many older ones were: valid JSON either way."""
    kept: dict[str, Any] = {k: data[k] for k in order[:keep]}
    if keep < len(order):
        kept[SERIES_MARKER] = f"{len(order) - keep} older entries cut"
    return json.dumps(kept, ensure_ascii=False, separators=(", ", ": "), default=str)


def fit_series(text: str, fits: Callable[[str], bool]) -> str | None:
    """A long date-keyed series (``text`` as JSON) cut to what ``fits``: the entries nearest
    the query time, i.e. the newest (an environment answers as of the task's query time, so
    nothing newer exists), newest first, then ``{"truncated": "N older entries cut"}``; still
    valid JSON. None when ``text`` is no such series or not even one entry fits (the caller
    then cuts characters). The rule is written down in docs/observations.md."""
    if text[:1] != "{":
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    order = _series_order(data)
    if order is None:
        return None
    lo, hi = 0, len(order)  # the largest keep that fits: fits(lo) holds, beyond hi it fails
    if fits(_render_series(data, order, hi)):
        return _render_series(data, order, hi)
    hi -= 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(_render_series(data, order, mid)):
            lo = mid
        else:
            hi = mid - 1
    return _render_series(data, order, lo) if lo else None


def fit_observation(model: Model, text: str, budget: int | None) -> str:
    """``text`` cut to ``budget`` tokens; unchanged when it fits. A date-keyed series keeps its
    newest entries and stays JSON (:func:`fit_series`); anything else keeps its head and ends in
    a visible marker that says how much was dropped (as ReAct's wiki truncates a long page).
    The rule: docs/observations.md."""
    if budget is None:
        return text
    total = count_tokens(model, text)
    if total <= budget:
        return text
    series = fit_series(text, lambda cut: count_tokens(model, cut) <= budget)
    if series is not None:
        return series
    keep = max(0, int(len(text) * budget / max(total, 1)))
    while True:
        marker = TRUNCATION_MARKER.format(dropped=len(text) - keep)
        cut = f"{text[:keep].rstrip()} {marker}" if keep else marker
        if keep == 0 or count_tokens(model, cut) <= budget:
            return cut
        keep = int(keep * 0.9)


CHAT_TEMPLATE_TOKENS = 64  # what a chat template adds around the messages (roles, markers)
MESSAGE_TOKENS = 8  # and around each message (a role, its markers; a counter's rounding)


def call_text(call: ToolCall) -> str:
    """A call sent back in an assistant message as chat templates write it into the prompt:
    the JSON object of its name and arguments (Qwen's and Hermes' templates put it between
    ``<tool_call>`` lines; Mistral's in a list), which the counts below tokenize. Written as
    the bare tool name and arguments, the count of a call sent back ran 7 tokens below what
    llama.cpp computed, on every one of 248 function-calling calls of the third study."""
    return json.dumps({"name": call.tool, "arguments": call.arguments}, ensure_ascii=False)


def request_tokens(
    model: Model, messages: tuple[Message, ...], tools: tuple[dict[str, Any], ...] = ()
) -> int:
    """The prompt tokens a request will count, reckoned before it is sent: its messages (and
    the native calls they hold) and tool schemas by the model's own tokenizer in one count,
    plus the chat template's tokens. What ``max_episode_tokens`` checks a call against."""
    parts = [m.content for m in messages]
    parts += [call_text(c) for m in messages for c in m.tool_calls]
    if tools:
        parts.append(json.dumps(tools, separators=(",", ":")))
    text = "\n".join(parts)
    return count_tokens(model, text) + CHAT_TEMPLATE_TOKENS + MESSAGE_TOKENS * len(messages)


def request_layout(
    messages: tuple[Message, ...], tools: tuple[dict[str, Any], ...] = ()
) -> tuple[str, tuple[int, ...]]:
    """A request in the order a chat template lays it out (tool schemas first, then each
    message with the calls it holds), and where in it each message starts: two requests'
    common prefix is what a server's prefix cache can serve the second from."""
    text = json.dumps(tools, separators=(",", ":")) if tools else ""
    starts = []
    for m in messages:
        text += "\n" if text else ""
        starts.append(len(text))
        text += f"<{m.role}>{m.content}"
        text += "".join(f"\n{call_text(c)}" for c in m.tool_calls)
    return text, tuple(starts)


def new_prompt_tokens(
    model: Model,
    full: int,
    layout: tuple[str, tuple[int, ...]],
    previous: str | None,
    fixed: int,
    reply: str = "",
) -> int:
    """The tokens of a request (laid out as ``layout``: its text and where each message
    starts, :func:`request_layout`; ``full`` of them, read only for a first request, where
    ``previous`` is None) that a prefix cache could not serve: those
    past its common prefix with the episode's previous request followed by that request's
    ``reply`` text (which a server's cache holds too where the request continues it, as
    ReAct's scratchpad does; a reply sent back as an assistant message's calls is laid out
    anew by the chat template, and counts again), and the template's tokens around each
    message starting there; for an episode's first request, those past the workflow's fixed
    first request (``fixed`` tokens: instructions, tool schemas, demonstrations, the
    question's template)."""
    if previous is None:
        return max(0, full - fixed)
    text, starts = layout
    # the prefix in characters, not a path's components
    shared = len(os.path.commonprefix([text, previous + reply]))  # noqa: RUF071
    if shared == len(text):
        return 0
    begun = sum(1 for start in starts if start >= shared)
    return count_tokens(model, text[shared:]) + MESSAGE_TOKENS * begun


def _tokens_left(config: WorkflowConfig, context_limit: int, counted: int, template: int) -> int:
    """What ``context_limit`` leaves after a prompt of ``counted`` tokens, the model's reply
    (``max_tokens``) and the chat template's own ``template`` tokens around the messages."""
    return context_limit - counted - config.max_tokens - template


def ended_at_context(
    rec: EpisodeRecord, model: Model, config: WorkflowConfig, context_limit: int, prompt: str
) -> bool:
    """End the episode in ``context_limit`` (a configured budget, or the model's own window:
    a harness limit) when a request for ``prompt`` would not fit with the reply and the chat
    template's tokens; such a request is never sent. Counting the prompt alone let a ReAct
    episode creep past llama.cpp's window by the template's tokens (HTTP 400 at 8,218 of
    8,192)."""
    counted = count_tokens(model, prompt)
    template = _template_tokens(rec)
    rec._context_checked = (len(rec.llm_calls), counted)
    if _tokens_left(config, context_limit, counted, template) >= 0:
        return False
    rec.finish(
        Termination.context_limit,
        "token_budget" if config.max_context_tokens else CONTEXT_WINDOW,
    )
    return True


def _template_tokens(rec: EpisodeRecord) -> int:
    """The tokens a request costs the server beyond the harness's count of its messages and
    schemas: at least CHAT_TEMPLATE_TOKENS, and the most the server has counted above the
    harness on a request the context check let through (the first call after that check)."""
    if rec._context_checked is not None:
        # CRAG's tools, laid out by llama.cpp's chat template for function calling, ran over
        # 300 tokens above: a request at 8,184 of 8,192 tokens got an 8-token reply, a call
        # cut mid-name taken as the answer
        index, before = rec._context_checked
        sent = rec.llm_calls[index].prompt_tokens if index < len(rec.llm_calls) else None
        if sent:
            rec._context_undercount = max(rec._context_undercount, sent - before)
    return max(CHAT_TEMPLATE_TOKENS, rec._context_undercount)


def observation_room(
    model: Model,
    config: WorkflowConfig,
    context_limit: int,
    prompt_so_far: str,
    rec: EpisodeRecord,
) -> int:
    """Tokens an observation may take: the configured budget, and never more than the context
    leaves after the prompt so far, the model's next reply and the chat template's tokens, as
    the episode's context check (``rec``) has measured them. Sized with the fixed template
    allowance alone, a large CRAG result filled the window that the check then found full: the
    episode ended at its window right after the call, the model never reading the result."""
    counted = count_tokens(model, prompt_so_far)
    room = max(_tokens_left(config, context_limit, counted, _template_tokens(rec)), 16)
    return min(room, config.max_obs_tokens) if config.max_obs_tokens else room


def load_prompt(workflow: str, env: Any, override: str | None = None) -> Template:
    """The prompt template for ``workflow`` on ``env``: a file given with ``-W prompt_file``,
    else the environment's own (``envs/<name>/prompts/<workflow>.txt``), else the workflow's
    ``prompts/<workflow>/default.txt``."""
    if override:
        with open(override, encoding="utf-8") as fh:
            return Template(fh.read())
    own = env.prompt_template(workflow)
    if own is not None:
        return Template(own)
    path = resources.files("raleval.workflows").joinpath("prompts", workflow, "default.txt")
    if path.is_file():
        return Template(path.read_text(encoding="utf-8"))
    raise FileNotFoundError(f"no prompt template for workflow {workflow!r} in {path}")


def examples_text(config: WorkflowConfig, runtime: Any = None) -> str:
    """The demonstrations block for a prompt template's ``$examples``: those of the episode's
    task family (LangGraph's ``configurable["family"]``), else ``config.examples``."""
    family = configurable(runtime).get("family")
    examples = config.demonstrations.get(family, config.examples) if family else config.examples
    return "".join(f"Here is an example.\n{example}\n(End of example)\n" for example in examples)


async def given_steps(
    rec: EpisodeRecord, env: Any, prefix: list[Step], fit: Callable[[str], str]
) -> list[Step]:
    """Record the steps an episode starts from (the graph's input ``prefix``) as its first
    steps. A step with an observation is taken as recorded; one without is a call made now
    through the episode's environment, recorded like any call, its observation cut by ``fit``
    as the workflow cuts its own. ``extra["prefix_steps"]`` says how many steps were given.
    Stops early if a given call ends the episode (a tool fault).

    A recorded call is made again too, its result unused: an episode's environment may keep
    state its calls set (wiki's ``Lookup`` reads the page the last ``Search`` opened), and a
    replay's own calls after the prefix must find it as the episode left it."""
    out: list[Step] = []
    for step in prefix:
        if rec.done:
            break
        if step.observation is None and step.tool is not None:
            result = await env.call(step.tool, dict(step.arguments or {}))
            result.observation = fit(result.observation)
            drop = {"index", "observation", "kind", "cause", "latency_s", "cached"}
            fields = step.model_dump(exclude=drop)
            out.append(rec.add_step(result, **fields))
        else:
            if step.tool is not None and step.kind is not OutcomeKind.parse_error:
                await env.call(step.tool, dict(step.arguments or {}))
            out.append(rec.add_step(**step.model_dump(exclude={"index"})))
    rec.extra["prefix_steps"] = len(out)
    return out


@dataclass(frozen=True)
class Decoding:
    """What a workflow asks of a request's decoding beyond stops: with tools, ``tool_choice``
    and ``parallel_tool_calls``; without, a JSON schema the reply must match."""

    tool_choice: str | None = None
    parallel_tool_calls: bool | None = None
    json_schema: dict[str, Any] | None = None

    def fields(self) -> dict[str, Any]:
        return {
            "tool_choice": self.tool_choice,
            "parallel_tool_calls": self.parallel_tool_calls,
            "json_schema": self.json_schema,
        }


# Every turn of a tool-calling workflow is a call (Finish is a tool), one call a turn.
ONE_CALL = Decoding(tool_choice="required", parallel_tool_calls=False)


@dataclass
class EpisodeRecord:
    """Mutable per-episode log; the runner turns it into a :class:`Trajectory`."""

    steps: list[Step] = field(default_factory=list)
    llm_calls: list[LLMCall] = field(default_factory=list)
    answer: str | None = None
    termination: Termination | None = None
    termination_cause: str | None = None
    model_time_s: float = 0.0
    tool_time_s: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # The model's declared price (raleval.agents.pricing), read at the first call; a model on
    # this machine is priced at 0 and its compute seconds are kept instead.
    price: Price | None = None
    compute_s: float = 0.0
    started: float = field(default_factory=time.monotonic)
    extra: dict[str, Any] = field(default_factory=dict)  # workflow-specific records
    uncached_prompt_tokens: int = 0
    _last_prompt: str = ""
    _last_output: str = ""
    # the tool calls made so far (tool, arguments as JSON): a call made again is flagged
    _made: set[tuple[str, str]] = field(default_factory=set)
    # max_episode_tokens: what the calls so far count (the server's figures, or the request's
    # own count and max_tokens where it gave none), and how far the server's prompt counts
    # ran above the harness's own before sending (added to the next requests' counts)
    _budget_spent: int = 0
    _undercount: int = 0
    # ended_at_context: its count of the last request it let through, and how far the
    # server's count of such a request has run above it (the chat template's, measured)
    _context_checked: tuple[int, int] | None = None  # (the next call's index, the count)
    _context_undercount: int = 0
    # episode_tokens_count "new": the fixed first request's tokens (its family's) and the
    # previous request's layout (request_layout), against which a request's new tokens count
    fixed_prompt_tokens: int = 0
    _previous_request: str | None = None

    @property
    def budget_tokens(self) -> int:
        """What ``max_episode_tokens`` has counted so far (its ``episode_tokens_count``)."""
        return self._budget_spent

    def finish(self, termination: Termination, cause: str | None = None) -> None:
        if self.termination is None:
            self.termination, self.termination_cause = termination, cause

    @property
    def done(self) -> bool:
        return self.termination is not None

    @property
    def cost_usd(self) -> float | None:
        """What the episode's tokens cost so far (None: the model's price is unknown)."""
        if self.price is None:
            return None
        return self.price.cost(self.prompt_tokens, self.completion_tokens)

    @property
    def compute_seconds(self) -> float | None:
        """Compute seconds of a model on this machine (None for a priced or unknown one)."""
        return self.compute_s if self.price is not None and self.price.free else None

    def _over_cost_budget(self, model: Model, config: WorkflowConfig) -> bool:
        """End the episode before a model call once it has spent ``max_cost_usd`` (the call
        that crosses the budget is kept: its tokens are known only when it returns)."""
        if config.max_cost_usd is None:
            return False
        if self.price is None:
            self.finish(
                Termination.harness_error,
                f"max_cost_usd set but {model.name} has no price (-M price_in= -M price_out=)",
            )
            return True
        spent = self.cost_usd or 0.0
        if spent < config.max_cost_usd:
            return False
        self.finish(Termination.cost_limit, "cost_budget")
        return True

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def add_step(self, result: ToolResult | None = None, **fields: Any) -> Step:
        if result is not None:
            fields.setdefault("observation", result.observation)
            fields.setdefault("kind", result.kind)
            fields.setdefault("cause", result.cause)
            fields.setdefault("latency_s", result.latency_s)
            fields.setdefault("cached", result.cached)
            self.tool_time_s += result.latency_s
            if result.kind is OutcomeKind.tool_fault:
                # The backend failed even after retries: the episode cannot go on fairly.
                self.finish(Termination.tool_fault, result.cause)
        step = Step(index=len(self.steps), **fields)
        self.steps.append(step)
        self._flag_call(step)
        return step

    def _flag_call(self, step: Step) -> None:
        """Flag the model call that wrote ``step`` (the episode's latest) as unparseable or
        as repeating a tool call already made; a replay's given steps, recorded before any
        call, only count as made."""
        call = self.llm_calls[-1] if self.llm_calls else None
        if is_unparseable(step.kind, step.cause):
            if call is not None:
                call.unparseable = True
            return
        if step.tool is None or step.tool == "Finish":
            return
        made = (step.tool, json.dumps(step.arguments or {}, sort_keys=True, default=str))
        if made in self._made:
            if call is not None:
                call.repeated = True
        else:
            self._made.add(made)

    def _over_token_budget(
        self, model: Model, config: WorkflowConfig, request: GenerateRequest
    ) -> int | None:
        """With ``max_episode_tokens``: the tokens ``request``'s prompt counts, or None (and
        the episode ends at its budget) when those and ``max_tokens`` could pass the budget
        with what the episode has spent: such a call is never sent, so no server's answer,
        however its cache served the prompt, takes the episode past it."""
        budget = config.max_episode_tokens
        if budget is None:
            return 0
        if config.episode_tokens_count == "new":
            layout = request_layout(request.messages, request.tools)
            reply = self.llm_calls[-1].output if self.llm_calls else ""
            # the whole prompt's count only for a first request: later ones count their new part
            full = 0
            if self._previous_request is None:
                full = request_tokens(model, request.messages, request.tools)
            prompt = new_prompt_tokens(
                model, full, layout, self._previous_request, self.fixed_prompt_tokens, reply
            )
            self._previous_request = layout[0]
        else:
            prompt = request_tokens(model, request.messages, request.tools) + self._undercount
        if self._budget_spent + prompt + request.max_tokens <= budget:
            return prompt
        self.finish(Termination.cost_limit, "episode_tokens")
        return None

    async def generate(
        self,
        model: Model,
        prompt_text: str,
        messages: tuple[Message, ...],
        config: WorkflowConfig,
        stop: tuple[str, ...],
        tools: tuple[dict[str, Any], ...] = (),
        decoding: Decoding | None = None,
    ) -> Generation | None:
        """Call the model within the remaining wall-clock budget and record the call.
        ``decoding``: the request's tool-call fields and reply schema (default: none).

        Returns ``None`` (and ends the episode) on a model failure or an empty response.
        """
        remaining = config.time_limit_s - self.elapsed()
        if remaining <= 0:
            self.finish(Termination.timeout, "wall_clock")
            return None
        if not self.llm_calls:
            self.price = model.capabilities.price
        if self._over_cost_budget(model, config):
            return None
        request = GenerateRequest(
            messages=messages,
            stop=stop,
            max_tokens=config.max_tokens,
            temperature=config.temperature,
            tools=tools,
            **(decoding or Decoding()).fields(),
        )
        counted = self._over_token_budget(model, config, request)
        if counted is None:
            return None
        delta, is_delta = prompt_text, False
        # Store only what was added since the last call (with or without its output).
        for prefix in (self._last_prompt + self._last_output, self._last_prompt):
            if prefix and prompt_text.startswith(prefix):
                delta, is_delta = prompt_text[len(prefix) :], True
                break
        start = time.perf_counter()
        error: str | None = None
        gen: Generation | None = None
        try:
            gen = await within(model.generate(request), timeout=remaining)
        except asyncio.TimeoutError:
            error = "timeout"
            self.finish(Termination.timeout, "model_call")
        except ModelError as exc:
            error = f"{exc.cause}: {exc}"
            if exc.cause == CONTEXT_WINDOW:  # the server counted the window full: no ME
                self.finish(Termination.context_limit, CONTEXT_WINDOW)
            else:
                self.finish(Termination.llm_error, exc.cause)
        except Exception as exc:  # a provider bug is still a model failure, and recorded
            error = f"provider_exception: {type(exc).__name__}: {exc}"
            self.finish(Termination.llm_error, f"provider_exception:{type(exc).__name__}")
        latency = time.perf_counter() - start
        self.model_time_s += latency
        # a model on this machine: its process's CPU seconds where measured (the embedded
        # llama.cpp server), else the compute time its server reports, else the wall time
        if gen is not None and gen.cpu_s is not None:
            self.compute_s += gen.cpu_s
        elif gen is not None and gen.server_time_s is not None:
            self.compute_s += gen.server_time_s
        else:
            self.compute_s += latency
        call = LLMCall(
            prompt=delta,
            prompt_is_delta=is_delta,
            latency_s=latency,
            error=error,
            cut=False,
            unparseable=False,
            repeated=False,
            budget_prompt_tokens=counted if config.max_episode_tokens is not None else None,
        )
        self.llm_calls.append(call)
        if config.max_episode_tokens is not None:
            # a failed call's tokens are unknown: count what it could have spent
            reported = (gen.prompt_tokens, gen.completion_tokens) if gen else (None, None)
            if config.episode_tokens_count == "new":  # the server counts every prompt token
                reported = (None, reported[1])
            if reported[0] is not None:
                self._undercount = max(self._undercount, reported[0] - counted)
            self._budget_spent += reported[0] if reported[0] is not None else counted
            self._budget_spent += reported[1] if reported[1] is not None else config.max_tokens
        if gen is None:
            if self.termination is not Termination.context_limit:  # the call records it
                self.add_step(
                    kind=OutcomeKind.llm_error, cause=self.termination_cause, observation=error
                )
            return None
        full = len(gen.text)
        gen = bound_reply(gen, config.max_tokens)  # before any parser sees it
        if gen.truncated:
            of = f" of {full}" if full > len(gen.text) else ""
            call.error = f"reply_truncated: kept {len(gen.text)}{of} characters"
        call.output = gen.text
        call.tool_calls = list(gen.tool_calls)
        call.prompt_tokens, call.completion_tokens = gen.prompt_tokens, gen.completion_tokens
        call.cached_tokens, call.cache_hit = gen.cached_tokens, gen.cache_hit
        call.server_time_s = gen.server_time_s
        call.finish_reason = gen.finish_reason
        call.cut = gen.truncated or (
            gen.finish_reason == "length"
            if gen.finish_reason is not None
            # a server that does not say why it stopped: a reply of max_tokens was cut there
            else gen.completion_tokens is not None and gen.completion_tokens >= config.max_tokens
        )
        self.prompt_tokens += gen.prompt_tokens or 0
        self.completion_tokens += gen.completion_tokens or 0
        self.uncached_prompt_tokens += (gen.prompt_tokens or 0) - (gen.cached_tokens or 0)
        self._last_prompt, self._last_output = prompt_text, gen.text
        if not gen.text.strip() and not gen.tool_calls:
            call.error = "empty_response"
            self.finish(Termination.llm_error, "empty_response")
            self.add_step(kind=OutcomeKind.llm_error, cause="empty_response")
            return None
        return gen
