"""A chat-completions server on 127.0.0.1 that refuses what OpenAI's API refuses.

llama.cpp and vLLM take almost any message list; OpenAI's API answers HTTP 400 to a tool
message whose ``tool_call_id`` the assistant turn before it did not issue ("Messages with role
'tool' must be a response to a preceding message with 'tool_calls'"), to an assistant turn with
``tool_calls`` not followed by a tool message for each id ("An assistant message with
'tool_calls' must be followed by tool messages responding to each 'tool_call_id'"), to unknown
roles and request fields, to a ``null`` content where one is required, to
``function.arguments`` that is not a string, to a tool name outside ``^[a-zA-Z0-9_-]{1,64}$``,
to more than four stop sequences. :func:`problems` checks a request against those rules, and a
little more strictly where raleval can afford it (the tool messages in the order of the calls
they answer, arguments that parse as a JSON object, ids unique in a request), so that a request
it passes is one OpenAI takes.

A request that passes is answered by a replying backend (any callable from the request body to
``(text, calls)``); :class:`OracleBackend` answers as raleval's scripted oracle would, from the
run directory's own tasks, so every workflow can be run through ``openai-compatible/...``
against this server. Tool calls go out with ids the server makes up (``ids="server"``), or with
none (``ids="none"``, as a server that leaves the ids to the client).
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
REQUEST_FIELDS = {
    "model", "messages", "temperature", "top_p", "n", "stream", "stream_options", "stop",
    "max_tokens", "max_completion_tokens", "presence_penalty", "frequency_penalty",
    "logit_bias", "logprobs", "top_logprobs", "user", "tools", "tool_choice",
    "parallel_tool_calls", "response_format", "seed", "service_tier", "store", "metadata",
    "reasoning_effort", "modalities", "prediction", "audio", "web_search_options",
}  # fmt: skip
MESSAGE_FIELDS = {
    "system": {"role", "content", "name"},
    "developer": {"role", "content", "name"},
    "user": {"role", "content", "name"},
    "assistant": {"role", "content", "name", "tool_calls", "refusal", "audio", "function_call"},
    "tool": {"role", "content", "tool_call_id"},
}


def _content_ok(content: Any, nullable: bool) -> bool:
    if content is None:
        return nullable
    if isinstance(content, str):
        return True
    return (
        isinstance(content, list)
        and bool(content)
        and all(isinstance(p, dict) and p.get("type") in ("text", "image_url") for p in content)
    )


def _tool_problems(tools: Any) -> list[str]:
    if not isinstance(tools, list) or not tools:
        return ["'tools': expected a non-empty array"]
    if len(tools) > 128:
        return [f"'tools': array too long, {len(tools)} > 128"]
    out, seen = [], set()
    for i, t in enumerate(tools):
        where = f"tools[{i}]"
        if not isinstance(t, dict) or t.get("type") != "function" or set(t) - {"type", "function"}:
            out.append(f"{where}: expected {{type: 'function', function: {{...}}}}")
            continue
        fn = t.get("function")
        if not isinstance(fn, dict) or set(fn) - {"name", "description", "parameters", "strict"}:
            out.append(f"{where}.function: unknown or missing fields")
            continue
        name = fn.get("name")
        if not isinstance(name, str) or not TOOL_NAME.match(name):
            out.append(f"{where}.function.name: {name!r} does not match ^[a-zA-Z0-9_-]{{1,64}}$")
        elif name in seen:
            out.append(f"{where}.function.name: duplicate function name {name!r}")
        seen.add(name)
        if "description" in fn and not isinstance(fn["description"], str):
            out.append(f"{where}.function.description: expected a string")
        params = fn.get("parameters")
        if params is not None and (not isinstance(params, dict) or params.get("type") != "object"):
            out.append(f"{where}.function.parameters: expected a JSON schema of type object")
    return out


def _choice_problems(body: dict[str, Any]) -> list[str]:
    """Problems of ``tool_choice`` and ``parallel_tool_calls`` beside valid ``tools``."""
    out = []
    choice = body.get("tool_choice")
    names = {
        t["function"].get("name")
        for t in body["tools"]
        if isinstance(t, dict) and isinstance(t.get("function"), dict)
    }
    if "tool_choice" in body and choice not in ("none", "auto", "required"):
        named = choice.get("function") if isinstance(choice, dict) else None
        if not (
            isinstance(choice, dict)
            and choice.get("type") == "function"
            and isinstance(named, dict)
            and named.get("name") in names
        ):
            out.append(
                f"Invalid value for 'tool_choice': {choice!r}; expected 'none', 'auto', "
                "'required' or a named function among the tools"
            )
    if "parallel_tool_calls" in body and not isinstance(body["parallel_tool_calls"], bool):
        out.append("'parallel_tool_calls': expected a boolean")
    return out


def _format_problems(fmt: Any) -> list[str]:
    """Problems of a ``response_format`` (OpenAI's structured outputs)."""
    if not isinstance(fmt, dict) or fmt.get("type") not in ("text", "json_object", "json_schema"):
        kind = fmt.get("type") if isinstance(fmt, dict) else fmt
        return [f"Invalid value for 'response_format.type': {kind!r}"]
    if fmt["type"] != "json_schema":
        return [] if set(fmt) == {"type"} else ["'response_format': unknown fields"]
    spec = fmt.get("json_schema")
    if set(fmt) != {"type", "json_schema"} or not isinstance(spec, dict):
        return ["'response_format.json_schema': required for type json_schema"]
    out = []
    if set(spec) - {"name", "description", "schema", "strict"}:
        out.append(f"'response_format.json_schema': unknown fields {sorted(set(spec))}")
    name = spec.get("name")
    if not isinstance(name, str) or not TOOL_NAME.match(name):
        out.append(f"'response_format.json_schema.name': {name!r} is required, ^[a-zA-Z0-9_-]+$")
    schema = spec.get("schema")
    if not isinstance(schema, dict):
        out.append("'response_format.json_schema.schema': expected a JSON schema object")
    elif spec.get("strict") and schema.get("type") != "object":
        out.append(
            "Invalid schema for response_format: a strict schema must be a JSON Schema of "
            f"'type: \"object\"', got 'type: \"{schema.get('type')}\"'"
        )
    return out


def _call_problems(calls: Any, where: str) -> tuple[list[str], list[str]]:
    """Problems of an assistant turn's ``tool_calls``, and the ids it issues."""
    if not isinstance(calls, list) or not calls:
        return [f"{where}.tool_calls: expected a non-empty array"], []
    out, ids = [], []
    for j, c in enumerate(calls):
        at = f"{where}.tool_calls[{j}]"
        if not isinstance(c, dict) or set(c) != {"id", "type", "function"}:
            out.append(f"{at}: expected exactly id, type and function")
            continue
        if not isinstance(c["id"], str) or not c["id"]:
            out.append(f"{at}.id: expected a non-empty string")
        elif c["id"] in ids:
            out.append(f"{at}.id: duplicate id {c['id']!r}")
        else:
            ids.append(c["id"])
        if c["type"] != "function":
            out.append(f"{at}.type: expected 'function'")
        fn = c["function"]
        if not isinstance(fn, dict) or set(fn) != {"name", "arguments"}:
            out.append(f"{at}.function: expected exactly name and arguments")
            continue
        if not isinstance(fn["name"], str) or not TOOL_NAME.match(fn["name"]):
            out.append(f"{at}.function.name: {fn['name']!r} is not a valid function name")
        if not isinstance(fn["arguments"], str):
            out.append(f"{at}.function.arguments: expected a string, got {type(fn['arguments'])}")
            continue
        try:
            parsed = json.loads(fn["arguments"])
        except ValueError:
            parsed = None
        if not isinstance(parsed, dict):
            out.append(f"{at}.function.arguments: not a JSON object string")
    return out, ids


def problems(body: Any) -> list[str]:
    """Why OpenAI's chat completions API would refuse ``body`` (empty: it would take it)."""
    if not isinstance(body, dict):
        return ["the body must be a JSON object"]
    out = [f"Unrecognized request argument supplied: {k}" for k in set(body) - REQUEST_FIELDS]
    if not isinstance(body.get("model"), str) or not body["model"]:
        out.append("'model': a string is required")
    temperature = body.get("temperature", 1)
    if not isinstance(temperature, (int, float)) or not 0 <= temperature <= 2:
        out.append(f"'temperature': {temperature!r} is not a number in [0, 2]")
    for key in ("max_tokens", "max_completion_tokens"):
        value = body.get(key)
        if key in body and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
            out.append(f"'{key}': {value!r} is not an integer >= 1")
    stop = body.get("stop")
    if stop is not None and not isinstance(stop, str):
        if not isinstance(stop, list) or not all(isinstance(s, str) for s in stop):
            out.append("'stop': expected a string or an array of strings")
        elif len(stop) > 4:
            out.append(f"'stop': array too long, {len(stop)} > 4")
    if "tools" in body:
        out += _tool_problems(body["tools"])
        out += _choice_problems(body)
    else:
        for key in ("tool_choice", "parallel_tool_calls"):
            if key in body:
                out.append(f"'{key}' is only allowed when 'tools' are specified")
    if "response_format" in body:
        out += _format_problems(body["response_format"])
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return [*out, "'messages': expected a non-empty array"]
    pending: list[str] = []  # ids the last assistant turn issued, not answered yet
    for i, m in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(m, dict) or m.get("role") not in MESSAGE_FIELDS:
            role = m.get("role") if isinstance(m, dict) else None
            out.append(f"{where}.role: {role!r} is not one of {sorted(MESSAGE_FIELDS)}")
            continue
        role = m["role"]
        extra = set(m) - MESSAGE_FIELDS[role]
        if extra:
            out.append(f"{where}: unknown fields {sorted(extra)} for role {role!r}")
        if role != "tool" and pending:
            out.append(
                "An assistant message with 'tool_calls' must be followed by tool messages "
                f"responding to each 'tool_call_id'. The following tool_call_ids did not have "
                f"response messages: {', '.join(pending)} (before {where})"
            )
            pending = []
        if role == "tool":
            call_id = m.get("tool_call_id")
            if not isinstance(call_id, str):
                out.append(f"{where}.tool_call_id: a string is required")
            elif call_id not in pending:
                out.append(
                    "Invalid parameter: messages with role 'tool' must be a response to a "
                    f"preceding message with 'tool_calls' ({where} answers {call_id!r})"
                )
            elif call_id != pending[0]:
                out.append(f"{where}: answers {call_id!r} before {pending[0]!r} (out of order)")
                pending.remove(call_id)
            else:
                pending.pop(0)
            if not _content_ok(m.get("content"), nullable=False):
                out.append(f"{where}.content: expected a string or text parts, got null/other")
        elif role == "assistant":
            has_calls = "tool_calls" in m
            if not _content_ok(m.get("content"), nullable=has_calls or "function_call" in m):
                out.append(f"{where}.content: required unless tool_calls is specified")
            if has_calls:
                found, pending = _call_problems(m["tool_calls"], where)
                out += found
        elif not _content_ok(m.get("content"), nullable=False):
            out.append(f"{where}.content: expected a string or an array of parts, got null/other")
    if pending:
        out.append(
            "An assistant message with 'tool_calls' must be followed by tool messages "
            f"responding to each 'tool_call_id'. The following tool_call_ids did not have "
            f"response messages: {', '.join(pending)}"
        )
    return out


def _completion(text: str, calls: list[dict[str, Any]]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = calls
    return {
        "id": "chatcmpl-conformance",
        "object": "chat.completion",
        "created": 0,
        "model": "conformance",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


Reply = Callable[[dict[str, Any]], tuple[str, list[tuple[str, dict[str, Any]]]]]


class ConformanceServer:
    """The strict server: ``requests`` every body received, ``refused`` (body, problems) of
    those answered 400, ``issued`` the tool-call ids it gave out."""

    def __init__(self, reply: Reply, ids: str = "server", calls_as: str = "native") -> None:
        # calls_as "text": the server returns no structured tool calls, only the calls written
        # as JSON in the reply's text (llama.cpp with Qwen's chat template); a reply asked for
        # with a JSON schema is checked against it (what a constraining server guarantees)
        self.reply, self.ids, self.calls_as = reply, ids, calls_as
        self.schema_violations: list[str] = []
        self.requests: list[dict[str, Any]] = []
        self.refused: list[tuple[dict[str, Any], list[str]]] = []
        self.issued: list[str] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, code: int, payload: Any) -> None:
                body = json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                self._send(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = None
                self._send(*server.answer(body))

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def answer(self, body: Any) -> tuple[int, dict[str, Any]]:
        found = problems(body)
        with self.lock:
            self.requests.append(body)
            if found:
                self.refused.append((body, found))
        if found:
            error = {"message": "; ".join(found), "type": "invalid_request_error", "code": None}
            return 400, {"error": error}
        text, calls = self.reply(body)
        if self.calls_as == "text" and calls:
            many = len(calls) > 1 and body.get("parallel_tool_calls")
            written = [{"name": name, "arguments": arguments} for name, arguments in calls]
            text, calls = json.dumps(written if many else written[0]), []
        fmt = body.get("response_format") or {}
        if fmt.get("type") == "json_schema":
            self._check_schema(text, fmt["json_schema"]["schema"])
        out = []
        for name, arguments in calls:
            call: dict[str, Any] = {
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
            if self.ids == "server":
                with self.lock:
                    call["id"] = f"call_srv{len(self.issued):04d}x"
                    self.issued.append(call["id"])
            out.append(call)
        return 200, _completion(text, out)

    def _check_schema(self, text: str, schema: dict[str, Any]) -> None:
        import jsonschema

        try:
            jsonschema.validate(json.loads(text), schema)
        except (ValueError, jsonschema.ValidationError) as exc:
            with self.lock:
                self.schema_violations.append(f"{text[:80]!r}: {str(exc)[:200]}")

    def __enter__(self) -> ConformanceServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def to_request(body: dict[str, Any]) -> Any:
    """The raleval request a chat-completions body says (what a model behind it is asked)."""
    from raleval.model import GenerateRequest, Message
    from raleval.records import ToolCall

    messages = []
    for m in body["messages"]:
        calls = [
            ToolCall(tool=c["function"]["name"], arguments=json.loads(c["function"]["arguments"]))
            for c in m.get("tool_calls") or []
        ]
        ids = tuple(c["id"] for c in m.get("tool_calls") or [])
        content = m.get("content") or ""
        kept = (
            {"tool_call_ids": ids}
            if ids and "tool_call_ids" in Message.__dataclass_fields__
            else {}
        )
        messages.append(Message(m["role"], content, tuple(calls), m.get("tool_call_id"), **kept))
    stop = body.get("stop") or ()
    return GenerateRequest(
        messages=tuple(messages),
        stop=(stop,) if isinstance(stop, str) else tuple(stop),
        max_tokens=body.get("max_tokens", 128),
        temperature=body.get("temperature", 0.0),
        tools=tuple(body.get("tools") or ()),
    )


class OracleBackend:
    """Answers as ``scripted/oracle`` (or ``scripted/<variant>``) would for the task whose
    question the request asks (the one of the run directory's tasks.jsonl that its text names
    last), bound to an episode
    session of ``env`` as the runner binds it. ``parallel``: in native tool calling, the first
    reply makes all the gold calls at once (one assistant turn of several calls)."""

    def __init__(
        self,
        run_dir: Path,
        env: Any,
        workflow: Any,
        parallel: bool = False,
        variant: str = "oracle",
    ) -> None:
        self.run_dir, self.env, self.workflow, self.parallel = run_dir, env, workflow, parallel
        self.variant = variant  # another scripted model of the oracle's kind (wrong-tool, ...)
        self._bound: dict[str, Any] = {}
        self._lock = threading.Lock()

    def _model(self, body: dict[str, Any]) -> Any:
        from raleval.agents.scripted import make_scripted_model
        from raleval.store import TASKS, read_tasks
        from raleval.tasks.testbeds import wrap_session

        text = "\n".join(
            m.get("content") or "" for m in body["messages"] if m.get("role") in ("system", "user")
        )
        tasks = read_tasks(self.run_dir / TASKS)
        asked = [(text.rfind(t.question), len(t.question), t) for t in tasks if t.question in text]
        if not asked:
            raise AssertionError("a request that asks none of the run's questions")
        task = max(asked, key=lambda a: (a[0], a[1]))[2]
        with self._lock:
            if task.id not in self._bound:
                session = wrap_session(self.env.session(task), task, self.env)
                unbound = make_scripted_model(self.variant)
                self._bound[task.id] = unbound.for_episode(task, session, self.workflow)
            return self._bound[task.id]

    def __call__(self, body: dict[str, Any]) -> tuple[str, list[tuple[str, dict[str, Any]]]]:
        model = self._model(body)
        request = to_request(body)
        gen = asyncio.run(model.generate(request))
        calls = [(c.tool, c.arguments) for c in gen.tool_calls]
        if self.parallel and request.tools and calls and calls[0][0] != "Finish":
            done = sum(1 for m in request.messages if m.role == "tool")
            if done == 0:
                calls = [(c.tool, c.arguments) for c in model.plan().calls] or calls
        return gen.text, calls
