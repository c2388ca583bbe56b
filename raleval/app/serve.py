"""Serve an environment over HTTP (FastAPI): CRAG's mock-API routes and a generic tool route.

- ``POST /tools/{name}`` with the arguments as a JSON object: ``{"result", "observation",
  "kind", "cause"}`` for any environment. Stateful environments (Wikipedia's current page)
  keep one session per ``X-Raleval-Session`` header value.
- ``GET /tools``: every tool's name, description and JSON-schema parameters.
- CRAG's own routes, so CRAG's client works unchanged: ``finance_get_price_history`` is
  ``POST /finance/get_price_history`` with ``{"query": ...}`` (tools with several parameters
  take them by name), answering ``{"result": ...}``.

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
from pydantic import AliasChoices, Field, create_model

from raleval.environment import Environment, ToolResult, ToolSpec

LOOPBACK = ("127.0.0.1", "localhost", "::1")
MAX_SESSIONS = 10_000
_SUBGROUPS = ("nba", "soccer")  # CRAG nests these; grammy_* stays one segment


def is_loopback(host: str) -> bool:
    if host in LOOPBACK:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def crag_route(tool_name: str) -> str:
    """The path CRAG's client posts to: ``music_grammy_get_best_artist_by_year`` ->
    ``/music/grammy_get_best_artist_by_year``, ``sports_nba_get_games_on_date`` ->
    ``/sports/nba/get_games_on_date``."""
    domain, _, rest = tool_name.partition("_")
    sub, _, tail = rest.partition("_")
    if sub in _SUBGROUPS:
        return f"/{domain}/{sub}/{tail}"
    return f"/{domain}/{rest}"


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
        description=getattr(env, "description", ""),
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

    def respond(result: ToolResult, crag: bool = False) -> Any:
        if result.kind.value == "misuse":
            status = 404 if result.cause == "unknown_tool" else 400
            return JSONResponse({"detail": result.observation, "cause": result.cause}, status)
        if result.kind.value == "tool_fault":
            return JSONResponse({"detail": result.observation, "cause": result.cause}, 503)
        if crag:
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

    if env.name == "crag":
        for spec in env.tools:
            _add_crag_route(app, env, spec, respond)
    return app


def _add_crag_route(app: Any, env: Environment, spec: ToolSpec, respond: Any) -> None:
    fields = spec.params.model_fields
    single = len(fields) == 1
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
        return respond(await env.call(spec.name, arguments), crag=True)

    async def no_arguments() -> Any:  # CRAG's client posts these without a body
        return respond(await env.call(spec.name, {}), crag=True)

    if not fields:
        endpoint = no_arguments
    endpoint.__name__ = spec.name
    # the body model is built at run time: give FastAPI the class, not the string annotation
    endpoint.__annotations__ = (
        {"return": Any} if not fields else {"body": body_model, "return": Any}
    )
    app.post(crag_route(spec.name), summary=spec.description, tags=[spec.name.split("_")[0]])(
        endpoint
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
    uvicorn.run(create_app(env, token), host=host, port=port, log_level="warning")
