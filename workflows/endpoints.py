"""One episode served over HTTP on 127.0.0.1: an OpenAI-compatible chat endpoint that forwards
to the run's model and an MCP endpoint (streamable HTTP, JSON responses) over the episode's
tools, both recording every call into the episode through an
:class:`~raleval.workflows.external.EpisodeBridge`. The command workflow starts one per episode
for the program it runs; every request needs the episode's token (``Authorization: Bearer``).

The OpenAI side is as strict as the real API on what an agent could get wrong: a tool message
answering a call id no assistant turn issued, a role it does not know, a ``stream`` request
(not served) are 400s with OpenAI's error body. The MCP side answers ``initialize``,
``ping``, ``tools/list`` and ``tools/call`` (JSON-RPC 2.0; notifications get 202); a misused
or failing tool answers ``isError: true`` with the observation, as raleval's MCP server does.
A ``Finish`` tool (``answer``) ends the episode with that answer.
"""

from __future__ import annotations

import hmac
import json
import socket
import time
import uuid
from collections.abc import Callable
from typing import Any

from aiohttp import web

from raleval.model import GenerateRequest, Message
from raleval.records import OutcomeKind, Termination, ToolCall
from raleval.workflows.external import EpisodeBridge, EpisodeOver
from raleval.workflows.function_calling import FINISH_TOOL

MCP_PROTOCOL = "2025-06-18"
MAX_BODY = 1 << 20  # bytes: a chat request larger than this is refused (413)
ROLES = {"system", "user", "assistant", "tool", "developer"}


class BadRequest(ValueError):
    """A request the endpoint refuses (400), with OpenAI's error message."""


def _json_response(body: Any, status: int = 200) -> web.Response:
    # text as written (not \\u escapes): a client with no JSON parser (a shell script) reads
    # the names and answers as they are
    return web.json_response(body, status=status, dumps=_dumps)


def _dumps(body: Any) -> str:
    return json.dumps(body, ensure_ascii=False)


def _openai_error(status: int, message: str, kind: str) -> web.Response:
    body = {"error": {"message": message, "type": kind, "param": None, "code": None}}
    return _json_response(body, status=status)


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        parts = []
        for part in content:
            if not isinstance(part, dict) or part.get("type") != "text":
                raise BadRequest("only text content parts are served")
            parts.append(str(part.get("text", "")))
        return "".join(parts)
    raise BadRequest("content must be a string or a list of text parts")


def chat_request(body: Any, max_tokens: int, temperature: float) -> GenerateRequest:
    """The :class:`GenerateRequest` an OpenAI chat-completions body asks for; BadRequest if
    the real API would refuse it."""
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object")
    if body.get("stream"):
        raise BadRequest("stream is not served: ask without it")
    raw = body.get("messages")
    if not isinstance(raw, list) or not raw:
        raise BadRequest("messages must be a non-empty array")
    issued: set[str] = set()
    messages = []
    for i, m in enumerate(raw):
        if not isinstance(m, dict) or m.get("role") not in ROLES:
            raise BadRequest(f"messages[{i}]: a message needs a role of {sorted(ROLES)}")
        role = "system" if m["role"] == "developer" else m["role"]
        calls = []
        for c in m.get("tool_calls") or []:
            fn = c.get("function") if isinstance(c, dict) else None
            if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
                raise BadRequest(f"messages[{i}].tool_calls: each needs function.name")
            given = fn.get("arguments") or "{}"
            try:  # a JSON string, as the API writes it (some clients send the object)
                args = given if isinstance(given, dict) else json.loads(given)
            except (TypeError, ValueError):
                args = {"_unparsed": str(given)}
            issued.add(str(c.get("id")))
            calls.append(
                ToolCall(tool=fn["name"], arguments=args if isinstance(args, dict) else {})
            )
        call_id = m.get("tool_call_id")
        if role == "tool" and str(call_id) not in issued:
            raise BadRequest(
                f"messages[{i}]: a tool message must answer a tool_call_id an earlier "
                "assistant message issued"
            )
        messages.append(Message(role, _text(m.get("content")), tuple(calls), call_id))
    tools = body.get("tools") or []
    if not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools):
        raise BadRequest("tools must be an array of objects")
    stop = body.get("stop") or ()
    stop = (stop,) if isinstance(stop, str) else tuple(str(s) for s in stop)
    want = body.get("max_completion_tokens") or body.get("max_tokens") or max_tokens
    if not isinstance(want, int) or want < 1:
        raise BadRequest("max_tokens must be a positive integer")
    return GenerateRequest(
        messages=tuple(messages),
        stop=stop,
        max_tokens=min(want, max_tokens),  # the run's budget is the ceiling
        temperature=temperature,
        tools=tuple(tools),
    )


def chat_response(gen: Any, model_name: str) -> dict[str, Any]:
    """OpenAI's chat-completion body for one generation."""
    calls = [
        {
            "id": f"call_{uuid.uuid4().hex[:16]}",
            "type": "function",
            "function": {"name": c.tool, "arguments": json.dumps(c.arguments)},
        }
        for c in gen.tool_calls
    ]
    message: dict[str, Any] = {"role": "assistant", "content": gen.text or None}
    if calls:
        message["tool_calls"] = calls
    prompt, completion = gen.prompt_tokens or 0, gen.completion_tokens or 0
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:16]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model_name,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if calls else "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


def mcp_tools(env: Any) -> list[dict[str, Any]]:
    """The episode's tools (and Finish) as MCP tool declarations."""
    out = []
    for schema in [*(t.json_schema() for t in env.tools), FINISH_TOOL]:
        fn = schema["function"]
        params = dict(fn["parameters"])
        params.setdefault("type", "object")
        params.setdefault("properties", {})
        out.append({"name": fn["name"], "description": fn["description"], "inputSchema": params})
    return out


class EpisodeEndpoints:
    """The two endpoints of one episode, on an ephemeral 127.0.0.1 port."""

    def __init__(
        self, bridge: EpisodeBridge, token: str, model_name: str, on_over: Callable[[], None]
    ) -> None:
        self.bridge, self.token, self.model_name = bridge, token, model_name
        self.on_over = on_over  # the episode ended here (a budget, Finish): stop the program
        self.counts = {"chat": 0, "mcp": 0, "refused": 0}
        self._runner: web.AppRunner | None = None
        self.port = 0

    @property
    def openai_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def mcp_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    async def start(self) -> None:
        app = web.Application(client_max_size=MAX_BODY, middlewares=[self._auth])
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._models)
        app.router.add_post("/mcp", self._mcp)
        # no server-sent stream and no session to delete: the spec's answer is 405
        app.router.add_get("/mcp", _not_allowed)
        app.router.add_delete("/mcp", _not_allowed)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        await web.SockSite(self._runner, sock).start()

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    @web.middleware
    async def _auth(self, request: web.Request, handler: Any) -> web.StreamResponse:
        given = request.headers.get("Authorization", "")
        if not hmac.compare_digest(given.encode(), f"Bearer {self.token}".encode()):
            self.counts["refused"] += 1
            return _openai_error(401, "a Bearer token of this episode is required", "auth")
        return await handler(request)

    async def _json(self, request: web.Request) -> Any:
        try:
            return json.loads(await request.read())
        except (ValueError, UnicodeDecodeError) as exc:
            raise BadRequest(f"the body is not JSON: {exc}") from None

    async def _models(self, request: web.Request) -> web.Response:
        model = {"id": self.model_name, "object": "model", "owned_by": "raleval"}
        return _json_response({"object": "list", "data": [model]})

    async def _chat(self, request: web.Request) -> web.Response:
        cfg = self.bridge.cfg
        try:
            body = await self._json(request)
            req = chat_request(body, cfg.max_tokens, cfg.temperature)
        except BadRequest as exc:
            self.counts["refused"] += 1
            return _openai_error(400, str(exc), "invalid_request_error")
        except web.HTTPRequestEntityTooLarge:
            self.counts["refused"] += 1
            return _openai_error(413, "the request is too large", "invalid_request_error")
        self.counts["chat"] += 1
        try:
            gen = await self.bridge.generate(req)
        except EpisodeOver as over:
            self.on_over()
            return _openai_error(429, f"the episode is over: {over}", "episode_over")
        return _json_response(chat_response(gen, self.model_name))

    async def _mcp(self, request: web.Request) -> web.Response:
        try:
            body = await self._json(request)
        except BadRequest as exc:
            return _json_response(_rpc_error(None, -32700, str(exc)), status=400)
        except web.HTTPRequestEntityTooLarge:
            return _json_response(_rpc_error(None, -32600, "request too large"), status=413)
        if not isinstance(body, dict) or body.get("jsonrpc") != "2.0" or "method" not in body:
            return _json_response(_rpc_error(None, -32600, "not a JSON-RPC 2.0 request"))
        if "id" not in body:  # a notification
            return web.Response(status=202)
        rid, method, params = body["id"], body["method"], body.get("params") or {}
        if method == "initialize":
            version = params.get("protocolVersion") if isinstance(params, dict) else None
            result = {
                "protocolVersion": version if isinstance(version, str) else MCP_PROTOCOL,
                "capabilities": {"tools": {"listChanged": False}},
                "serverInfo": {"name": "raleval-episode", "version": "1"},
            }
        elif method == "ping":
            result = {}
        elif method == "tools/list":
            result = {"tools": mcp_tools(self.bridge.env)}
        elif method == "tools/call":
            if not isinstance(params, dict) or not isinstance(params.get("name"), str):
                return _json_response(_rpc_error(rid, -32602, "params.name is required"))
            self.counts["mcp"] += 1
            result = await self._call(params["name"], params.get("arguments") or {})
        else:
            return _json_response(_rpc_error(rid, -32601, f"method {method!r} not found"))
        return _json_response({"jsonrpc": "2.0", "id": rid, "result": result})

    async def _call(self, name: str, arguments: Any) -> dict[str, Any]:
        bridge = self.bridge
        if name == "Finish":
            answer = arguments.get("answer") if isinstance(arguments, dict) else None
            if bridge.rec.done:
                return _tool_result(f"the episode is over: {bridge.rec.termination_cause}", True)
            if not isinstance(answer, str):
                step = bridge.rec.add_step(
                    tool="Finish",
                    arguments=arguments if isinstance(arguments, dict) else {},
                    kind=OutcomeKind.misuse,
                    cause="bad_arguments",
                    observation="Finish needs answer (a string)",
                )
                return _tool_result(step.observation or "", True)
            bridge.rec.answer = answer.strip()
            bridge.rec.add_step(tool="Finish", arguments={"answer": bridge.rec.answer})
            bridge.rec.finish(Termination.finished)
            self.on_over()
            return _tool_result("answer recorded; the episode is over", False)
        if not isinstance(arguments, dict):
            arguments = {"input": arguments}
        try:
            observation = await bridge.tool(name, arguments)
        except EpisodeOver as over:
            self.on_over()
            return _tool_result(f"the episode is over: {over}", True)
        last = bridge.rec.steps[-1]
        return _tool_result(observation, last.kind is not OutcomeKind.ok)


def _tool_result(text: str, is_error: bool) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": is_error}


def _rpc_error(rid: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}


async def _not_allowed(request: web.Request) -> web.Response:
    return web.Response(status=405)
