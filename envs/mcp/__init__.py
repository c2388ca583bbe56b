"""Any MCP server as an environment: ``--env mcp -E command="python server.py"`` (stdio) or
``-E url=http://127.0.0.1:8000/mcp`` (streamable HTTP, ``-E token=...`` for a bearer token).

The server's tools are discovered with the official ``mcp`` client and declared as
:class:`ToolSpec` s, so every workflow renders them (ReAct text, function-calling schemas, PAL
stubs). Each episode gets its own MCP session: a server served by ``raleval serve --mcp`` keeps
one per ``raleval/session`` request id over one shared connection; any other server gets a
connection of its own per episode (``-E sessions=shared`` shares one where tools hold no state).
A tool's ``isError`` result and protocol errors come back as misuse or tool-fault outcomes.

The SDK is async and scopes its connections to the task that opened them, while the
environment protocol is called from any event loop (and from sync code): one event loop in a
daemon thread owns every connection of the environment, each held open by a task of its own
until :meth:`MCPEnv.aclose` (the runner calls it; ``atexit`` is the safety net), which also
ends the stdio server processes.

Needs the ``mcp`` extra: ``pip install "raleval[mcp]"``.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import json
import shlex
import threading
import uuid
import weakref
from collections.abc import Coroutine
from typing import Any, Literal

from pydantic import ConfigDict, Field, create_model

from raleval.environment import Environment, ToolFault, ToolResult, ToolSpec, render_observation
from raleval.records import OutcomeKind
from raleval.registry import register_env

SESSION_META = "raleval/session"
KIND_META = "raleval/kind"
CAUSE_META = "raleval/cause"
WORKFLOWS = ("react", "function_calling", "pal", "dfsdt", "direct", "planned")
# JSON-RPC codes that mean the agent asked wrongly (unknown tool, bad arguments)
_MISUSE_CODES = {-32601: "unknown_tool", -32602: "bad_arguments"}

_JSON_TYPES: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "array": list,
    "object": dict,
}


def _annotation(schema: dict[str, Any]) -> Any:
    options = schema.get("anyOf") or schema.get("oneOf")
    if options:
        out = _annotation(options[0])
        for option in options[1:]:
            out = out | _annotation(option)
        return out
    kind = schema.get("type")
    if isinstance(kind, list):  # {"type": ["string", "null"]}
        return _annotation({"anyOf": [{"type": k} for k in kind]})
    if kind == "null":
        return type(None)
    if kind == "array" and isinstance(schema.get("items"), dict):
        return list[_annotation(schema["items"])]  # type: ignore[misc]
    return _JSON_TYPES.get(kind or "", Any)


def params_model(name: str, schema: dict[str, Any]) -> Any:
    """A pydantic model with the JSON schema's parameters, in order, for prompts and schemas;
    the server validates for real (unknown fields pass through to it)."""
    required = set(schema.get("required", []))
    fields = {}
    for pname, prop in (schema.get("properties") or {}).items():
        default = ... if pname in required else prop.get("default")
        fields[pname] = (_annotation(prop), Field(default, description=prop.get("description")))
    return create_model(f"{name}_params", __config__=ConfigDict(extra="allow"), **fields)


class _LoopThread:
    """An event loop in a daemon thread: the owner of every MCP connection."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(
            target=self.loop.run_forever, name="raleval-mcp", daemon=True
        )
        self.thread.start()

    def submit(self, coro: Coroutine[Any, Any, Any]) -> concurrent.futures.Future[Any]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def run(self, coro: Coroutine[Any, Any, Any], timeout: float | None = None) -> Any:
        return self.submit(coro).result(timeout)

    def stop(self) -> None:
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        if not self.thread.is_alive():
            self.loop.close()


class _Connection:
    """One MCP client connection, entered and exited by one task on the loop thread."""

    def __init__(self, client: Any, http_client: Any = None) -> None:
        self.client: Any = None
        self._factory, self._http = client, http_client
        self._closing: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None

    async def open(self) -> _Connection:
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._closing = asyncio.Event()
        self._task = asyncio.ensure_future(self._hold(ready))
        await ready
        return self

    async def _hold(self, ready: asyncio.Future[None]) -> None:
        assert self._closing is not None
        try:
            async with self._factory as client:
                self.client = client
                ready.set_result(None)
                await self._closing.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
            elif not isinstance(exc, Exception):
                raise
        finally:
            self.client = None
            if self._http is not None:
                await self._http.aclose()

    async def close(self) -> None:
        if self._closing is not None:
            self._closing.set()
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)


def _text(result: Any) -> str:
    parts = []
    for block in result.content or []:
        if getattr(block, "type", None) == "text":
            parts.append(block.text)
        else:
            mime = getattr(block, "mime_type", None) or getattr(block, "type", "content")
            parts.append(f"[{mime} content]")
    return "\n".join(parts)


def to_tool_result(result: Any) -> ToolResult:
    """A raleval outcome for an MCP ``CallToolResult``."""
    meta = dict(result.meta or {})
    text = _text(result)
    if result.is_error:
        try:
            kind = OutcomeKind(meta.get(KIND_META, "misuse"))
        except ValueError:
            kind = OutcomeKind.misuse
        if kind is OutcomeKind.ok:
            kind = OutcomeKind.misuse
        cause = meta.get(CAUSE_META) or "tool_error"
        return ToolResult(text or "the tool reported an error", kind, str(cause))
    structured = result.structured_content
    if KIND_META in meta and isinstance(structured, dict) and "result" in structured:
        data = structured["result"]  # a raleval server: the tool's own data
    elif structured is not None:
        data = structured
    else:
        try:
            data = json.loads(text)
        except ValueError:
            data = text
    return ToolResult(
        text if result.content else render_observation(data), OutcomeKind.ok, data=data
    )


class MCPEnv(Environment):
    """The tools of an MCP server; each :meth:`session` is an MCP session of its own."""

    name = "mcp"
    description = "Any MCP server's tools (stdio command or streamable HTTP url)."
    relays = True  # the served environment's tasks run here

    def __init__(
        self,
        command: str | list[str] | None = None,
        url: str | None = None,
        token: str | None = None,
        sessions: Literal["auto", "episode", "shared"] = "auto",
        timeout_s: float = 30.0,
        cwd: str | None = None,
    ) -> None:
        try:
            import mcp  # noqa: F401
        except ImportError as exc:
            raise ValueError('--env mcp needs the mcp SDK: pip install "raleval[mcp]"') from exc
        if (command is None) == (url is None):
            raise ValueError("--env mcp needs exactly one of -E command=... or -E url=...")
        if sessions not in ("auto", "episode", "shared"):
            raise ValueError(f"-E sessions must be auto, episode or shared, not {sessions!r}")
        self.command = shlex.split(command) if isinstance(command, str) else command
        if self.command is not None and not self.command:
            raise ValueError("-E command is empty")
        self.url, self.token, self.timeout_s, self.cwd = url, token, float(timeout_s), cwd
        self._loop = _LoopThread()
        self._open: set[_Connection] = set()
        self._lock = threading.Lock()
        self._closed = False
        # the safety net: no stdio server outlives the process, even if nobody closes us
        atexit.register(_close_at_exit, weakref.ref(self))
        try:
            self._root = self._loop.run(self._connect(), timeout=self.timeout_s + 30)
            self.declared, self.prompts = self._loop.run(self._discover(), self.timeout_s + 30)
        except BaseException as exc:
            self.close()
            where = url or shlex.join(self.command or [])
            raise ValueError(f"cannot open the MCP server {where}: {_describe(exc)}") from exc
        self.raleval_server = any("raleval/text_style" in (t.meta or {}) for t in self.declared)
        self.shared = sessions == "shared" or (sessions == "auto" and self.raleval_server)
        super().__init__(self._tools(self._root_connection, None))

    # --- connections (every coroutine below runs on the loop thread) ------------------------

    def _client(self) -> tuple[Any, Any]:
        from mcp import Client
        from mcp.client.stdio import StdioServerParameters

        if self.url is not None:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
            http = httpx2.AsyncClient(headers=headers, timeout=self.timeout_s)
            transport = streamable_http_client(self.url, http_client=http)
            return Client(transport, read_timeout_seconds=self.timeout_s, cache=None), http
        assert self.command is not None
        params = StdioServerParameters(command=self.command[0], args=self.command[1:], cwd=self.cwd)
        return Client(params, read_timeout_seconds=self.timeout_s, cache=None), None

    async def _connect(self) -> _Connection:
        client, http = self._client()
        conn = await _Connection(client, http).open()
        with self._lock:
            self._open.add(conn)
        return conn

    async def _discover(self) -> tuple[list[Any], dict[str, str]]:
        client = self._root.client
        tools: list[Any] = []
        cursor = None
        while True:
            page = await client.list_tools(cursor=cursor)
            tools += page.tools
            cursor = page.next_cursor
            if not cursor:
                break
        prompts: dict[str, str] = {}
        caps = client.server_capabilities
        if caps is not None and caps.prompts is not None:
            listed = await client.list_prompts()
            for p in listed.prompts:
                if p.name in WORKFLOWS and not p.arguments:
                    got = await client.get_prompt(p.name)
                    texts = [m.content.text for m in got.messages if m.content.type == "text"]
                    prompts[p.name] = "\n".join(texts)
        return tools, prompts

    async def _root_connection(self) -> _Connection:
        return self._root

    async def _release(self, conn: _Connection) -> None:
        with self._lock:
            self._open.discard(conn)
        await conn.close()

    # --- tools ------------------------------------------------------------------------------

    def _tools(self, connection: Any, session_id: str | None) -> list[ToolSpec]:
        specs = []
        for decl in self.declared:
            meta = decl.meta or {}
            style = meta.get("raleval/text_style", "call")
            specs.append(
                ToolSpec(
                    decl.name,
                    decl.description or decl.title or decl.name,
                    params_model(decl.name, decl.input_schema),
                    str(meta.get("raleval/returns", "Any")),
                    self._caller(decl.name, connection, session_id),
                    matching=meta.get("raleval/matching", "exact"),
                    read_only=bool(decl.annotations and decl.annotations.read_only_hint),
                    text_style=style if style in ("call", "bracket") else "call",
                    empty_message=meta.get("raleval/empty_message"),
                )
            )
        return specs

    def _caller(self, name: str, connection: Any, session_id: str | None) -> Any:
        async def call(**arguments: Any) -> ToolResult:
            body = {k: v for k, v in arguments.items() if v is not None}
            future = self._loop.submit(self._call(name, body, connection, session_id))
            return await asyncio.wrap_future(future)

        return call

    async def _call(
        self, name: str, body: dict[str, Any], connection: Any, session_id: str | None
    ) -> ToolResult:
        from mcp.shared.exceptions import MCPError

        try:
            conn = await connection()
            if conn.client is None:
                raise ToolFault("the MCP connection is closed", "connection_closed")
            meta = {SESSION_META: session_id} if session_id else None
            result = await conn.client.call_tool(name, body, meta=meta)
        except MCPError as exc:
            code = getattr(exc, "code", None)
            if code in _MISUSE_CODES:
                return ToolResult(f"{name}: {exc}", OutcomeKind.misuse, _MISUSE_CODES[code])
            return ToolResult(f"{name} failed: {exc}", OutcomeKind.tool_fault, f"mcp_error:{code}")
        except ToolFault as exc:
            return ToolResult(f"{name} failed: {exc}", OutcomeKind.tool_fault, exc.cause)
        except TimeoutError:
            return ToolResult(f"{name} failed: timed out", OutcomeKind.tool_fault, "timeout")
        except Exception as exc:  # the server died or the transport broke: not the agent's fault
            return ToolResult(
                f"{name} failed: {_describe(exc)}",
                OutcomeKind.tool_fault,
                f"connection_error:{type(exc).__name__}",
            )
        return to_tool_result(result)

    # --- the environment protocol -----------------------------------------------------------

    def prompt_template(self, workflow: str) -> str | None:
        """The server's own prompt for ``workflow`` (a raleval server offers its environment's),
        else the workflow's default."""
        return self.prompts.get(workflow)

    def session(self, task: Any = None) -> MCPSession:
        return MCPSession(self)

    async def aclose(self) -> None:
        """Close every connection and stop the loop thread (ends stdio server processes)."""
        await asyncio.to_thread(self.close)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with self._lock:
            open_now = list(self._open)
        if open_now and not self._loop.loop.is_closed():
            future = self._loop.submit(_close_all(open_now))
            # a server that will not stop must not stop the run's shutdown
            with contextlib.suppress(Exception):
                future.result(timeout=self.timeout_s + 10)
        self._open.clear()
        self._loop.stop()


class MCPSession(Environment):
    """One episode's tools: its own MCP session (see :class:`MCPEnv`)."""

    def __init__(self, env: MCPEnv) -> None:
        self.parent = env
        self.name = env.name
        self._conn: asyncio.Future[_Connection] | None = None
        if env.shared:
            super().__init__(env._tools(self._shared, uuid.uuid4().hex))
        else:
            super().__init__(env._tools(self._own, None))

    async def _shared(self) -> _Connection:
        return self.parent._root

    async def _own(self) -> _Connection:
        # runs on the loop thread: open this episode's connection on its first call
        if self._conn is None:
            self._conn = asyncio.ensure_future(self.parent._connect())
        return await asyncio.shield(self._conn)

    def prompt_template(self, workflow: str) -> str | None:
        return self.parent.prompt_template(workflow)

    async def aclose(self) -> None:
        conn = self._conn
        if conn is None or self.parent._closed:
            return
        self._conn = None

        async def release() -> None:
            try:
                opened = await conn
            except Exception:
                return
            await self.parent._release(opened)

        await asyncio.wrap_future(self.parent._loop.submit(release()))


async def _close_all(connections: list[_Connection]) -> None:
    await asyncio.gather(*(c.close() for c in connections), return_exceptions=True)


def _close_at_exit(ref: weakref.ref[MCPEnv]) -> None:
    env = ref()
    if env is not None:
        env.close()


def _describe(exc: BaseException) -> str:
    inner = getattr(exc, "exceptions", None)  # an exception group (anyio task groups)
    if inner:
        return _describe(inner[0])
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


@register_env("mcp")
def make_mcp_env(
    command: str | None = None,
    url: str | None = None,
    token: str | None = None,
    sessions: str = "auto",
    timeout_s: float = 30.0,
    cwd: str | None = None,
) -> MCPEnv:
    """Any MCP server: ``-E command="python server.py"`` (stdio) or ``-E url=http://.../mcp``
    (streamable HTTP, ``-E token=...``); ``-E sessions=auto|episode|shared``."""
    return MCPEnv(command, url, token, sessions, timeout_s, cwd)  # type: ignore[arg-type]


__all__ = ["MCPEnv", "MCPSession", "make_mcp_env", "params_model", "to_tool_result"]
