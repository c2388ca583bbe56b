"""Serve an environment over HTTP (FastAPI): a generic tool route and the environment's own.

- ``POST /tools/{name}`` with the arguments as a JSON object: ``{"result", "observation",
  "kind", "cause"}`` for any environment. Stateful environments (Wikipedia's current page)
  keep one session per ``X-Raleval-Session`` header value.
- ``GET /tools``: every tool's name, description and JSON-schema parameters.
- The environment's own API routes (``Environment.http_routes``; CRAG's, so CRAG's client
  works unchanged: ``POST /finance/get_price_history`` with ``{"query": ...}``), answering
  ``{"result": ...}``.

Needs the ``serve`` extra (FastAPI, uvicorn). With a token set, every request needs
``Authorization: Bearer <token>``, the OpenAPI schema and its /docs and /redoc pages included.
Misuse answers 400, a tool fault 503, unknown tools 404; nothing answers 500 for bad input.

The server faces the network, so an ASGI guard in front of the app checks, before any route
runs: the token (compared as bytes, so a non-ASCII header is a 401, not a crash); the body size
(``Content-Length`` over the limit is a 413 before a byte of the body is read, and a streamed
body is counted and cut at the limit); JSON bodies are parsed once, and NaN/Infinity or nesting
deeper than ``MAX_JSON_DEPTH`` answer 400. :func:`serve` closes connections that have not sent
a complete request head within ``header_timeout_s`` (slowloris), caps concurrent connections,
raises the soft open-file limit to the hard one and rate-limits error logging.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import json
import logging
import resource
import time
from collections import OrderedDict
from typing import Any

from fastapi import FastAPI, Header, Request
from fastapi.responses import JSONResponse
from pydantic import AliasChoices, Field, create_model

from raleval.environment import Environment, HttpRoute, ToolResult, ToolSpec

LOOPBACK = ("127.0.0.1", "localhost", "::1")
MAX_SESSIONS = 10_000
MAX_BODY_BYTES = 1 << 20
MAX_JSON_DEPTH = 64


def is_loopback(host: str) -> bool:
    if host in LOOPBACK:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def create_app(
    env: Environment, token: str | None = None, max_body_bytes: int = MAX_BODY_BYTES
) -> Any:
    """The application serving ``env``: FastAPI behind :class:`RequestGuard`."""
    return RequestGuard(_create_fastapi(env), token, max_body_bytes)


def _create_fastapi(env: Environment) -> Any:

    app = FastAPI(
        title=f"raleval {env.name} environment",
        description=env.description,
    )
    sessions: OrderedDict[str, Environment] = OrderedDict()

    def session_for(key: str | None) -> Environment:
        if key is None:
            return env.session()
        if key not in sessions:
            sessions[key] = env.session()
            if len(sessions) > MAX_SESSIONS:
                sessions.popitem(last=False)
        sessions.move_to_end(key)
        return sessions[key]

    def respond(result: ToolResult, native: bool = False) -> Any:
        if result.kind.value == "misuse":
            status = 404 if result.cause == "unknown_tool" else 400
            return JSONResponse({"detail": result.observation, "cause": result.cause}, status)
        if result.kind.value == "tool_fault":
            return JSONResponse({"detail": result.observation, "cause": result.cause}, 503)
        if native:  # the environment's own API answers the result alone
            return {"result": result.data}
        return {
            "result": result.data,
            "observation": result.observation,
            "kind": result.kind.value,
            "cause": result.cause,
        }

    @app.get("/tools")
    def list_tools() -> list[dict[str, Any]]:
        return [
            {
                "name": t.name,
                "description": t.description,
                "parameters": t.json_schema()["function"]["parameters"],
                "text_style": t.text_style,
                "returns": t.returns,
            }
            for t in env.tools
        ]

    @app.post("/tools/{name}")
    async def call_tool(
        name: str,
        request: Request,
        x_raleval_session: str | None = Header(default=None),
    ) -> Any:
        try:
            arguments = await request.json()
        except (ValueError, RecursionError):
            return JSONResponse({"detail": "the body must be a JSON object of arguments"}, 400)
        if not isinstance(arguments, dict):
            return JSONResponse({"detail": "the body must be a JSON object of arguments"}, 400)
        result = await session_for(x_raleval_session).call(name, arguments)
        return respond(result)

    for route in env.http_routes():
        spec = env.tool(route.tool)
        if spec is None:
            raise ValueError(f"{env.name}: route {route.path} names no tool {route.tool!r}")
        _add_native_route(app, env, route, spec, respond)
    return app


def _add_native_route(
    app: Any, env: Environment, route: HttpRoute, spec: ToolSpec, respond: Any
) -> None:
    fields = spec.params.model_fields
    single = route.body == "query"
    if single:
        (pname, field) = next(iter(fields.items()))
        # CRAG's client sends {"query": ...}, except play-by-play: {"game_ids": [...]}
        body_model = create_model(
            f"{spec.name}_body",
            query=(field.annotation, Field(validation_alias=AliasChoices("query", pname))),
        )
    else:
        body_model = spec.params

    async def endpoint(body: body_model) -> Any:  # type: ignore[valid-type]
        values = body.model_dump()
        arguments = {pname: values["query"]} if single else values
        return respond(await env.call(spec.name, arguments), native=True)

    async def no_arguments() -> Any:  # CRAG's client posts these without a body
        return respond(await env.call(spec.name, {}), native=True)

    if route.body == "none":
        endpoint = no_arguments
    endpoint.__name__ = spec.name
    # the body model is built at run time: give FastAPI the class, not the string annotation
    endpoint.__annotations__ = (
        {"return": Any} if route.body == "none" else {"body": body_model, "return": Any}
    )
    app.post(route.path, summary=spec.description, tags=[spec.name.split("_")[0]])(endpoint)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def json_problem(body: bytes) -> str | None:
    """Why ``body`` may not reach the app (NaN/Infinity, nesting too deep), or ``None``.

    A body that is not JSON at all passes: the route answers it with its own 400/422."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return "the body is not UTF-8"
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except RecursionError:
        return f"the JSON body is nested deeper than {MAX_JSON_DEPTH} levels"
    except ValueError as exc:
        return str(exc) if "is not JSON" in str(exc) else None
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            return f"the JSON body is nested deeper than {MAX_JSON_DEPTH} levels"
        if isinstance(item, list):
            stack.extend((x, depth + 1) for x in item)
        elif isinstance(item, dict):
            stack.extend((x, depth + 1) for x in item.values())
    return None


class RequestGuard:
    """ASGI middleware run before routing: token, body size, JSON shape."""

    def __init__(self, app: Any, token: str | None, max_body_bytes: int = MAX_BODY_BYTES):
        self.app = app
        self.expected = f"Bearer {token}".encode() if token else None
        self.max_body_bytes = max_body_bytes

    @staticmethod
    async def _answer(send: Any, status: int, detail: str) -> None:
        body = json.dumps({"detail": detail}).encode()
        headers = [(b"content-type", b"application/json"), (b"connection", b"close")]
        headers.append((b"content-length", str(len(body)).encode()))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])  # lower-case bytes -> bytes
        if self.expected is not None:
            given = headers.get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                await self._answer(send, 401, "missing or wrong API token")
                return
        length = headers.get(b"content-length")
        if length is not None:
            if not length.isdigit():
                await self._answer(send, 400, "malformed Content-Length")
                return
            if int(length) > self.max_body_bytes:
                await self._answer(send, 413, f"the body is over {self.max_body_bytes} bytes")
                return
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                await self._answer(send, 413, f"the body is over {self.max_body_bytes} bytes")
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        if body:
            problem = json_problem(body)
            if problem:
                await self._answer(send, 400, problem)
                return
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


class RateLimitedLog(logging.Filter):
    """At most ``burst`` records per ``window_s`` seconds; the rest are counted and dropped,
    and the count is logged with the next record let through."""

    def __init__(self, burst: int = 20, window_s: float = 60.0) -> None:
        super().__init__()
        self.burst, self.window_s = burst, window_s
        self.window_start, self.passed, self.dropped = 0.0, 0, 0

    def filter(self, record: logging.LogRecord) -> bool:
        now = time.monotonic()
        if now - self.window_start >= self.window_s:
            if self.dropped:
                record.msg = f"{record.msg} ({self.dropped} similar log records dropped)"
            self.window_start, self.passed, self.dropped = now, 0, 0
        if self.passed >= self.burst:
            self.dropped += 1
            return False
        self.passed += 1
        return True


def _guarded_h11(header_timeout_s: float) -> Any:
    """uvicorn's h11 protocol, closing a connection that waits for a request head longer than
    ``header_timeout_s`` (uvicorn itself only times out idle keep-alive connections)."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class GuardedH11Protocol(H11Protocol):
        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._idle_mark: object = object()
            self._watch = self.loop.call_later(header_timeout_s, self._check_idle)

        def _check_idle(self) -> None:
            if self.transport.is_closing():
                return
            cycle = self.cycle
            waiting = cycle is None or cycle.response_complete
            mark = id(cycle) if waiting else None
            if waiting and mark == self._idle_mark:  # no request head for a whole period
                self.transport.close()
                return
            self._idle_mark = mark if waiting else object()
            self._watch = self.loop.call_later(header_timeout_s, self._check_idle)

        def connection_lost(self, exc: Exception | None) -> None:
            self._watch.cancel()
            super().connection_lost(exc)

    return GuardedH11Protocol


def raise_open_file_limit() -> int:
    """Raise this process's soft open-file limit to its hard limit; the new soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else max(soft, 65536)
    if target > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return max(target, soft)


def server_config(
    app: Any,
    host: str = "127.0.0.1",
    port: int = 8000,
    header_timeout_s: float = 10.0,
    max_connections: int | None = None,
    log_level: str = "warning",
) -> Any:
    """uvicorn's configuration with the limits a server facing the network needs."""
    import uvicorn

    fds = raise_open_file_limit()
    # leave descriptors for the environment's own files and the listening socket
    limit = max_connections or max(64, min(4096, fds - 128))
    for name in ("uvicorn.error", "uvicorn.access", "asyncio"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, RateLimitedLog) for f in logger.filters):
            logger.addFilter(RateLimitedLog())
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        http=_guarded_h11(header_timeout_s),
        limit_concurrency=limit,
        timeout_keep_alive=5,
        h11_max_incomplete_event_size=16 * 1024,  # request line and headers
        backlog=1024,
    )


def check_bind(host: str, token: str | None) -> None:
    """Refuse to expose an environment beyond this machine without an API token."""
    if not is_loopback(host) and not token:
        raise ValueError(
            f"binding {host} exposes the environment beyond this machine: set --token "
            "(or RALEVAL_API_TOKEN)"
        )


def serve(env: Environment, host: str = "127.0.0.1", port: int = 8000, token: str | None = None):
    """Run the server until interrupted; refuses a non-loopback bind without a token."""
    import uvicorn

    check_bind(host, token)
    uvicorn.Server(server_config(create_app(env, token), host, port)).run()
