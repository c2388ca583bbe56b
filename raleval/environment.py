"""Tool declarations shared by every environment, and how a call is executed and recorded.

One :class:`ToolSpec` per tool: name, description, typed parameters (a pydantic model), return
shape, matching mode and read-only flag. From it raleval renders the ReAct text signature, a
Python stub for PAL and a JSON schema for native function calling. :meth:`Environment.call`
validates arguments, runs the tool, times it and turns every failure into a classified outcome.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import sys
import time
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from raleval.records import OutcomeKind
from raleval.scheduling import outside_turn


class ToolFault(Exception):
    """Raised by a tool backend for a failure outside the agent's control."""

    def __init__(self, message: str, cause: str = "backend_error") -> None:
        super().__init__(message)
        self.cause = cause


class ToolMisuse(Exception):
    """Raised by a tool for arguments that validate by type but make no sense."""

    def __init__(self, message: str, cause: str = "bad_arguments") -> None:
        super().__init__(message)
        self.cause = cause


@dataclass(frozen=True)
class ToolSpec:
    """One declared tool."""

    name: str
    description: str
    params: type[BaseModel]
    returns: str
    func: Callable[..., Any]
    matching: Literal["fuzzy", "exact", "none"] = "exact"
    read_only: bool = True
    # "call": searchPerson(name=..., organization=...); "bracket": Search[entity]
    text_style: Literal["call", "bracket"] = "call"
    empty_message: str | None = None

    @property
    def param_names(self) -> list[str]:
        return list(self.params.model_fields)

    @property
    def references(self) -> tuple[str, ...]:
        """The arguments that name something an earlier result returned (an id, a ticker, a
        key), as the parameter model declares them (``references: ClassVar``): a value no
        earlier observation or the question held is made up (the taxonomy's TE)."""
        return tuple(getattr(self.params, "references", ()))

    def react_signature(self) -> str:
        """How the tool is written in a ReAct action line."""
        if self.text_style == "bracket":
            return f"{self.name}[{self.param_names[0]}]"
        return f"{self.name}({', '.join(f'{p}=...' for p in self.param_names)})"

    def react_call(self, arguments: dict[str, Any]) -> str:
        """Render a concrete call in ReAct text, e.g. ``searchPerson(name="Ada Lin")``."""
        if self.text_style == "bracket":
            return f"{self.name}[{arguments[self.param_names[0]]}]"
        inner = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in arguments.items())
        return f"{self.name}({inner})"

    def python_stub(self) -> str:
        """A typed Python function stub (PAL prompts)."""
        parts = []
        for pname, f in self.params.model_fields.items():
            ann = _annotation_text(f.annotation)
            parts.append(f"{pname}: {ann}" if f.is_required() else f"{pname}: {ann} = None")
        doc = self.description.replace('"""', "'''")
        return f'def {self.name}({", ".join(parts)}) -> {self.returns}:\n    """{doc}"""'

    def langchain_tool(self, env: Environment) -> Any:
        """A LangChain ``StructuredTool`` that calls this tool through ``env`` (so its failures
        come back as observations, as everywhere else)."""
        from langchain_core.tools import StructuredTool

        async def run(**kwargs: Any) -> str:
            return (await env.call(self.name, kwargs)).observation

        return StructuredTool.from_function(
            coroutine=run, name=self.name, description=self.description, args_schema=self.params
        )

    def json_schema(self) -> dict[str, Any]:
        """OpenAI-style function schema (native function calling)."""
        schema = json.loads(_parameters_schema(self.params))
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": schema},
        }


@functools.lru_cache(maxsize=4096)
def _parameters_schema(params: type[BaseModel]) -> str:
    # pydantic builds a schema in ~0.7 ms; function calling sends every tool's schema with every
    # turn, so it is built once per parameter model (as text, so no caller can mutate the cache)
    schema = params.model_json_schema()
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    return json.dumps(schema)


def _annotation_text(annotation: Any) -> str:
    if annotation is type(None):
        return "None"
    origin = get_origin(annotation)
    if origin is None:
        return getattr(annotation, "__name__", repr(annotation))
    args = get_args(annotation)
    if origin in (Union, types.UnionType):
        return " | ".join(_annotation_text(a) for a in args)
    name = getattr(origin, "__name__", repr(origin))
    return f"{name}[{', '.join(_annotation_text(a) for a in args)}]"


@dataclass
class ToolResult:
    """What one tool call produced, already classified."""

    observation: str
    kind: OutcomeKind
    cause: str | None = None
    data: Any = None
    latency_s: float = 0.0
    cached: bool = False


def render_observation(data: Any, empty_message: str | None = None) -> str:
    """Compact, deterministic JSON text for a tool result."""
    empty = data is None or (isinstance(data, (list, dict)) and not data)
    if empty and empty_message is not None:
        return empty_message
    if isinstance(data, str):
        return data
    return json.dumps(data, ensure_ascii=False, separators=(", ", ": "), default=str)


def _describe_validation_error(tool: ToolSpec, exc: ValidationError) -> str:
    problems = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "arguments"
        problems.append(f"{loc}: {err['msg']}")
    return (
        f"Invalid arguments for {tool.name}: {'; '.join(problems)}. Usage: {tool.react_signature()}"
    )


@dataclass(frozen=True)
class HttpRoute:
    """A native HTTP route of an environment's own API (CRAG's client posts to these): a
    ``POST path`` whose JSON body carries the tool's arguments, answered ``{"result": ...}``.
    ``body``: "query" puts a one-parameter tool's argument under ``{"query": ...}``; "fields"
    takes the parameters by name; "none" takes no body."""

    path: str
    tool: str
    body: Literal["query", "fields", "none"] = "fields"


class Environment:
    """A domain environment: a set of declared tools and one way to call them.

    Stateless environments use this class directly; stateful ones (Wikipedia's current page)
    override :meth:`session` to return a fresh per-episode environment.
    """

    name: str = "env"
    description: str = ""
    # The task set ``raleval run --env <name>`` runs when no --tasks is given.
    default_tasks: str | None = None
    # True for an environment that relays another one's tools (a served env over HTTP or
    # MCP): which environment and world answer is the server's, so tasks are not refused here.
    relays: bool = False

    def __init__(self, tools: Sequence[ToolSpec]) -> None:
        self.tools = list(tools)
        self._by_name = {t.name: t for t in self.tools}
        # What the world behind the tools is (size, seed, generator version, file): set by
        # the environment's factory; a task records it and runs nowhere else.
        self.world_options: dict[str, Any] = {}

    def fingerprint(self) -> str:
        """This environment and its world, as a task made for it records them
        (``scholar:generator=3,seed=0,size=small``): tasks run only where it matches."""
        world = ",".join(f"{k}={v}" for k, v in sorted(self.world_options.items()))
        return f"{self.name}:{world}" if world else self.name

    def session(self, task: Any = None) -> Environment:
        """The environment one episode talks to."""
        return self

    def http_routes(self) -> list[HttpRoute]:
        """Routes of the environment's own HTTP API that ``raleval serve`` adds beside the
        generic ``/tools/{name}`` (none by default)."""
        return []

    async def aclose(self) -> None:
        """Release what this environment or episode session holds (an MCP connection): the
        runner calls it on each session after its episode and on the environment at the end."""

    def prompt_template(self, workflow: str) -> str | None:
        """This environment's prompt for ``workflow``: ``prompts/<workflow>.txt`` in the
        package that defines the environment's class, or None (the workflow's default)."""
        package = sys.modules[type(self).__module__].__package__
        if not package:
            return None
        try:
            path = resources.files(package).joinpath("prompts", f"{workflow}.txt")
        except ModuleNotFoundError:
            return None
        return path.read_text(encoding="utf-8") if path.is_file() else None

    def tool(self, name: str) -> ToolSpec | None:
        return self._by_name.get(name)

    def example_calls(self) -> dict[str, dict[str, Any]]:
        """Tool name -> arguments of one call that finds data in this environment (tools
        without an entry have no example); ``raleval list tools`` shows them."""
        return {}

    def catalog(self) -> list[dict[str, Any]]:
        """Every tool: name, description, parameters (JSON schema), returns, and one example
        call (``{"arguments": ...}``, or None when the environment gives none)."""
        examples = self.example_calls()
        out = []
        for spec in self.tools:
            function = spec.json_schema()["function"]
            args = examples.get(spec.name)
            out.append(
                {
                    "name": spec.name,
                    "description": spec.description,
                    "parameters": function["parameters"],
                    "returns": spec.returns,
                    "example": None if args is None else {"arguments": args},
                }
            )
        return out

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        start = time.perf_counter()
        checked = self._check(name, arguments)
        if isinstance(checked, ToolResult):
            result = checked
        else:
            spec, kwargs = checked
            if inspect.iscoroutinefunction(spec.func):
                # it may wait on the network (MCP, a served environment): outside the turn
                result = await outside_turn(_run_async(spec, kwargs))
            else:
                result = _run(spec, kwargs)
        result.latency_s = time.perf_counter() - start
        return result

    def call_sync(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Call a tool from synchronous code (gold-solution execution, benchmarks)."""
        start = time.perf_counter()
        checked = self._check(name, arguments)
        if isinstance(checked, ToolResult):
            result = checked
        elif inspect.iscoroutinefunction(checked[0].func):
            result = asyncio.run(_run_async(*checked))
        else:
            result = _run(*checked)
        result.latency_s = time.perf_counter() - start
        return result

    def _check(
        self, name: str, arguments: dict[str, Any]
    ) -> ToolResult | tuple[ToolSpec, dict[str, Any]]:
        """The tool and its validated arguments, or the misuse result that stops the call."""
        spec = self._by_name.get(name)
        if spec is None:
            valid = ", ".join(t.react_signature() for t in self.tools)
            return ToolResult(
                f"Unknown tool {name!r}. Valid tools: {valid}.",
                OutcomeKind.misuse,
                "unknown_tool",
            )
        if not isinstance(arguments, dict):
            return ToolResult(
                f"Arguments for {name} must be named values. Usage: {spec.react_signature()}",
                OutcomeKind.misuse,
                "bad_arguments",
            )
        try:
            params = spec.params.model_validate(arguments)
        except ValidationError as exc:
            return ToolResult(
                _describe_validation_error(spec, exc), OutcomeKind.misuse, "bad_arguments"
            )
        return spec, params.model_dump()


def _failure(name: str, exc: Exception) -> ToolResult:
    if isinstance(exc, ToolMisuse):
        return ToolResult(f"{name}: {exc}", OutcomeKind.misuse, exc.cause)
    if isinstance(exc, ToolFault):
        return ToolResult(f"{name} failed: {exc}", OutcomeKind.tool_fault, exc.cause)
    # any other exception is a bug or outage of the tool's backend, not the agent's fault
    return ToolResult(
        f"{name} failed: {type(exc).__name__}: {exc}",
        OutcomeKind.tool_fault,
        f"backend_exception:{type(exc).__name__}",
    )


def _run(spec: ToolSpec, kwargs: dict[str, Any]) -> ToolResult:
    try:
        data = spec.func(**kwargs)
    except Exception as exc:
        return _failure(spec.name, exc)
    return _ok(spec, data)


async def _run_async(spec: ToolSpec, kwargs: dict[str, Any]) -> ToolResult:
    try:
        data = await spec.func(**kwargs)
    except Exception as exc:
        return _failure(spec.name, exc)
    return _ok(spec, data)


def _ok(spec: ToolSpec, data: Any) -> ToolResult:
    if isinstance(data, ToolResult):  # a tool that renders its own observation (Wikipedia's)
        return data
    return ToolResult(render_observation(data, spec.empty_message), OutcomeKind.ok, data=data)
