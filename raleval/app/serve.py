"""Serve an environment over HTTP (FastAPI): a generic tool route and the environment's own.

- ``POST /tools/{name}`` with the arguments as a JSON object: ``{"result", "observation",
  "kind", "cause"}`` for any environment. Stateful environments (Wikipedia's current page)
  keep one session per ``X-Raleval-Session`` header value.
- ``GET /tools``: every tool's name, description and JSON-schema parameters.
- The environment's own API routes (``Environment.http_routes``; CRAG's, so CRAG's client
  works unchanged: ``POST /finance/get_price_history`` with ``{"query": ...}``), answering
  ``{"result": ...}``.

Needs the ``serve`` extra (FastAPI, uvicorn). With a token set, every request needs
``Authorization: Bearer <token>``. Misuse answers 400, a tool fault 503, unknown tools 404;
nothing answers 500 for bad input.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections import OrderedDict
from typing import Any

from fastapi import Depends, FastAPI, Header, HTTPException, Request
from fastapi.responses import JSONResponse
from pydantic import create_model

from raleval.environment import Environment, HttpRoute, ToolResult, ToolSpec

LOOPBACK = ("127.0.0.1", "localhost", "::1")
MAX_SESSIONS = 10_000


def is_loopback(host: str) -> bool:
    if host in LOOPBACK:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def create_app(env: Environment, token: str | None = None) -> Any:
    """The FastAPI application serving ``env``."""

    def check_token(authorization: str | None = Header(default=None)) -> None:
        if token is None:
            return
        expected = f"Bearer {token}"
        if authorization is None or not hmac.compare_digest(authorization, expected):
            raise HTTPException(status_code=401, detail="missing or wrong API token")

    app = FastAPI(
        title=f"raleval {env.name} environment",
        description=env.description,
        dependencies=[Depends(check_token)],
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
        except ValueError:
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
        body_model = create_model(f"{spec.name}_body", query=(field.annotation, ...))
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
    uvicorn.run(create_app(env, token), host=host, port=port, log_level="warning")
