"""Serve an environment as an MCP server (the official ``mcp`` SDK), over stdio or streamable
HTTP: ``raleval serve --mcp --env scholar -E size=tiny``.

Every tool is declared with its JSON schema and description; a call answers its observation as
text, the tool's data as structured content ``{"result": ...}`` and, for misuse and tool faults,
``isError`` with raleval's outcome in ``_meta`` (``raleval/kind``, ``raleval/cause``), so a
raleval client (``--env mcp``) records exactly what the in-process environment would.

Each client gets its own :meth:`Environment.session` (Wikipedia's Search then Lookup work): the
key is the client's ``raleval/session`` request ``_meta`` when given, else its MCP connection
(one per stdio process; one per ``Mcp-Session-Id`` over HTTP). The environment's own prompt
templates are offered as MCP prompts named after the workflow. Over HTTP a token set with
``--token`` is required as ``Authorization: Bearer <token>`` on every request.

Needs the ``mcp`` extra: ``pip install "raleval[mcp]"``.
"""

from __future__ import annotations

import hmac
import weakref
from collections import OrderedDict
from typing import Any

from raleval.environment import Environment, ToolResult, ToolSpec
from raleval.records import OutcomeKind

SESSION_META = "raleval/session"
KIND_META = "raleval/kind"
CAUSE_META = "raleval/cause"
# Declared per tool so a raleval client renders the tool as the in-process one does.
TOOL_META_KEYS = ("text_style", "returns", "empty_message", "matching")
WORKFLOWS = ("react", "function_calling", "pal", "dfsdt", "direct", "planned")
MAX_SESSIONS = 10_000


def _require_mcp() -> None:
    try:
        import mcp  # noqa: F401
    except ImportError as exc:
        raise ValueError('serving over MCP needs the mcp SDK: pip install "raleval[mcp]"') from exc


def tool_declaration(spec: ToolSpec, stateful: bool = False) -> Any:
    """The MCP ``Tool`` for one raleval tool; ``stateful`` says whether its calls depend on
    earlier calls of the session (a client may share one connection between episodes if not)."""
    import mcp_types as types

    schema = spec.json_schema()["function"]["parameters"]
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    meta = {f"raleval/{k}": getattr(spec, k) for k in TOOL_META_KEYS}
    meta["raleval/stateful"] = stateful
    return types.Tool(
        name=spec.name,
        description=spec.description,
        input_schema=schema,
        annotations=types.ToolAnnotations(read_only_hint=spec.read_only),
        _meta=meta,
    )


def call_result(result: ToolResult) -> Any:
    """The MCP ``CallToolResult`` for one raleval tool outcome."""
    import mcp_types as types

    failed = result.kind in (OutcomeKind.misuse, OutcomeKind.tool_fault)
    meta: dict[str, Any] = {KIND_META: result.kind.value}
    if result.cause is not None:
        meta[CAUSE_META] = result.cause
    return types.CallToolResult(
        content=[types.TextContent(text=result.observation)],
        structured_content=None if failed else {"result": _jsonable(result.data)},
        is_error=failed,
        _meta=meta,
    )


def _jsonable(data: Any) -> Any:
    import json

    try:
        json.dumps(data)
    except (TypeError, ValueError):
        return json.loads(json.dumps(data, default=str))
    return data


class SessionTable:
    """Per-client environment sessions, keyed by a client-given id or the connection."""

    def __init__(self, env: Environment) -> None:
        self.env = env
        self._by_connection: weakref.WeakKeyDictionary[Any, Environment] = (
            weakref.WeakKeyDictionary()
        )
        self._by_id: OrderedDict[str, Environment] = OrderedDict()

    def get(self, connection: Any, session_id: str | None) -> Environment:
        if session_id is not None:
            if session_id not in self._by_id:
                self._by_id[session_id] = self.env.session()
                if len(self._by_id) > MAX_SESSIONS:
                    self._by_id.popitem(last=False)
            self._by_id.move_to_end(session_id)
            return self._by_id[session_id]
        try:
            found = self._by_connection.get(connection)
        except TypeError:  # a connection object that cannot be weakly referenced
            return self.env.session()
        if found is None:
            found = self._by_connection[connection] = self.env.session()
        return found


def build_server(env: Environment, name: str | None = None) -> Any:
    """The low-level MCP ``Server`` exposing ``env``'s tools and prompts."""
    _require_mcp()
    import mcp_types as types
    from mcp.server import Server

    sessions = SessionTable(env)
    stateful = is_stateful(env)
    tools = [tool_declaration(t, stateful) for t in env.tools]
    prompts = {w: text for w in WORKFLOWS if (text := env.prompt_template(w)) is not None}

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: Any) -> Any:
        session_id = dict(params.meta or {}).get(SESSION_META)
        session = sessions.get(ctx.session, str(session_id) if session_id else None)
        return call_result(await session.call(params.name, dict(params.arguments or {})))

    async def list_prompts(ctx: Any, params: Any) -> Any:
        return types.ListPromptsResult(
            prompts=[
                types.Prompt(name=w, description=f"raleval's {w} prompt template for {env.name}")
                for w in prompts
            ]
        )

    async def get_prompt(ctx: Any, params: Any) -> Any:
        import mcp_types

        if params.name not in prompts:
            from mcp.shared.exceptions import MCPError

            raise MCPError(mcp_types.INVALID_PARAMS, f"no prompt {params.name!r}")
        return types.GetPromptResult(
            messages=[
                types.PromptMessage(
                    role="user", content=types.TextContent(text=prompts[params.name])
                )
            ]
        )

    return Server(
        name or f"raleval-{env.name}",
        description=getattr(env, "description", "") or None,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_prompts=list_prompts if prompts else None,
        on_get_prompt=get_prompt if prompts else None,
    )


def is_stateful(env: Environment) -> bool:
    """Whether ``env`` keeps per-episode state (it overrides :meth:`Environment.session`)."""
    return type(env).session is not Environment.session


async def serve_stdio(env: Environment) -> None:
    """Serve ``env`` over this process's stdin and stdout until the client closes it."""
    _require_mcp()
    from mcp.server.stdio import stdio_server

    server = build_server(env)
    options = server.create_initialization_options()
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, options)


def create_http_app(env: Environment, token: str | None = None, host: str = "127.0.0.1") -> Any:
    """The Starlette app serving ``env`` over streamable HTTP at ``/mcp``."""
    server = build_server(env)
    app = server.streamable_http_app(host=host)
    if token is None:
        return app
    expected = f"Bearer {token}".encode()

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, expected):
                body = b'{"detail": "missing or wrong API token"}'
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"www-authenticate", b"Bearer"),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await app(scope, receive, send)

    return guarded


def serve_http(
    env: Environment, host: str = "127.0.0.1", port: int = 8000, token: str | None = None
) -> None:
    """Serve ``env`` over streamable HTTP until interrupted; refuses a non-loopback bind
    without a token."""
    import uvicorn

    from raleval.app.serve import check_bind

    check_bind(host, token)
    uvicorn.run(create_http_app(env, token, host), host=host, port=port, log_level="warning")
