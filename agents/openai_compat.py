"""``openai/<model>`` and ``openai-compatible/<model>@<base_url>`` (vLLM, SGLang, llama.cpp
server, Ollama, TGI).

Transient failures (429, 5xx, timeouts, dropped connections) are retried with tenacity,
exponential back-off with jitter, honouring ``Retry-After``; what is left is raised as
:class:`ModelError` with a cause tag, which the workflow records as an ME step. A failure is
never turned into an answer.

Requests go out through aiohttp as plain JSON. The protocol is one POST, and at hundreds of
episodes in flight the client's CPU per request decides throughput: measured at 64 in flight
against a local server, 0.29 ms per request with an aiohttp session, 1.2 ms through the
OpenAI SDK with its aiohttp transport and 1.6 ms with its default httpx client.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import re
import ssl
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, NamedTuple

import aiohttp
import httpx
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential_jitter,
)

from raleval.model import (
    CONTEXT_WINDOW,
    Capabilities,
    GenerateRequest,
    Generation,
    Message,
    ModelBase,
    ModelError,
    reply_char_limit,
    tool_call_schema,
)
from raleval.records import ToolCall
from raleval.registry import register_model_provider
from raleval.toolcalls import tool_calls_from_content

MAX_RETRY_AFTER_S = 60.0
# A completion body larger than this is refused unread past the limit (a 10 MB reply once kept
# an episode parsing for minutes); bodies of error statuses are read up to ERROR_BODY_BYTES.
MAX_REPLY_BYTES = 4 << 20
ERROR_BODY_BYTES = 64 << 10


def _finish_reason(choice: dict[str, Any]) -> str | None:
    """The server's ``finish_reason`` (a short tag; anything else is not one)."""
    reason = choice.get("finish_reason")
    return reason[:32] if isinstance(reason, str) and reason else None


class ReplyTooLarge(Exception):
    """The server's reply body is over the client's limit."""


@functools.cache
def _tls_context() -> ssl.SSLContext:
    return httpx.create_ssl_context()  # certifi's CA bundle, loaded once (~25 ms)


class HTTPStatusError(Exception):
    """The server answered with an error status."""

    def __init__(self, status: int, headers: Mapping[str, str], body: str) -> None:
        super().__init__(f"HTTP {status}: {body[:300]}")
        self.status_code = status
        self.headers = headers
        self.body = body


# How servers refuse a request longer than the model's window (HTTP 400): llama.cpp's error
# type, OpenAI's error code, vLLM's and OpenAI's message. Such a refusal is the context limit
# the workflows check for themselves (their count of a chat template's tokens is an estimate),
# so it ends the episode as a harness limit, not as a model failure.
CONTEXT_REFUSALS = re.compile(
    r"exceed_context_size_error|context_length_exceeded|maximum context length"
    r"|exceeds the available context size",
    re.IGNORECASE,
)


async def _close_with_loop(session: aiohttp.ClientSession) -> Any:
    # An async generator the loop knows about: asyncio.run() closes it on shutdown
    # (shutdown_asyncgens), which closes the session inside the loop that opened it.
    try:
        yield
    finally:
        await session.close()


class _PerLoop(NamedTuple):
    """What belongs to one event loop: its HTTP session (closed with the loop by ``closer``)
    and its concurrency limit."""

    loop: asyncio.AbstractEventLoop
    session: aiohttp.ClientSession
    closer: Any
    sem: asyncio.Semaphore | None


def env_proxy(url: str) -> str | None:
    """The proxy the environment (HTTP_PROXY, HTTPS_PROXY, NO_PROXY) names for ``url``."""
    parts = urllib.parse.urlsplit(url)
    if parts.hostname and urllib.request.proxy_bypass(parts.hostname):
        return None
    return urllib.request.getproxies().get(parts.scheme)


def _retry_after(exc: BaseException) -> float | None:
    headers = getattr(exc, "headers", None)
    if not headers:
        return None
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return min(max(float(value), 0.0), MAX_RETRY_AFTER_S)
    except ValueError:
        return None  # an HTTP date; fall back to exponential back-off


def _is_transient(exc: BaseException) -> bool:
    if isinstance(exc, (TimeoutError, aiohttp.ClientConnectionError, aiohttp.ClientPayloadError)):
        return True
    if isinstance(exc, HTTPStatusError):
        return exc.status_code == 429 or exc.status_code >= 500
    return False


def _cause(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):  # before connection errors: aiohttp's are both
        return "timeout"
    if isinstance(exc, (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError)):
        return "connection_error"
    if isinstance(exc, HTTPStatusError):
        if exc.status_code == 429:
            return "rate_limited"
        if exc.status_code in (401, 403):
            return "authentication"
        if exc.status_code == 400 and CONTEXT_REFUSALS.search(exc.body):
            return CONTEXT_WINDOW
        return f"http_{exc.status_code}"
    return f"provider_exception:{type(exc).__name__}"


def _issued_ids(messages: tuple[Message, ...], at: int) -> list[str]:
    """The ids of message ``at``'s tool calls: its own, else those the tool messages right
    after it answer (a message built without ids), else ``call_<at>_<i>``."""
    m = messages[at]
    if len(m.tool_call_ids) == len(m.tool_calls):
        return list(m.tool_call_ids)
    answers = []
    for later in messages[at + 1 :]:
        if later.role != "tool" or not later.tool_call_id:
            break
        answers.append(later.tool_call_id)
    return [answers[i] if i < len(answers) else f"call_{at}_{i}" for i in range(len(m.tool_calls))]


def to_openai_messages(messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    """Chat messages as OpenAI's API takes them: an assistant turn's calls with the ids its tool
    messages answer (a mismatch is refused with HTTP 400), arguments as a JSON string."""
    out: list[dict[str, Any]] = []
    for at, m in enumerate(messages):
        msg: dict[str, Any] = {"role": m.role, "content": m.content}
        if m.tool_calls:
            msg["tool_calls"] = [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": c.tool, "arguments": json.dumps(c.arguments)},
                }
                for c, call_id in zip(m.tool_calls, _issued_ids(messages, at), strict=True)
            ]
        if m.tool_call_id:
            msg["tool_call_id"] = m.tool_call_id
        out.append(msg)
    return out


class OpenAICompatibleModel(ModelBase):
    """A chat-completions endpoint. ``extra_body`` passes server-specific fields."""

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 120.0,
        max_retries: int = 4,
        max_connections: int | None = None,
        extra_body: dict[str, Any] | None = None,
        context_window: int | None = None,
        prefill: bool = False,
        max_concurrency: int | None = None,
        name: str | None = None,
        backoff_initial_s: float = 1.0,
        backoff_max_s: float = 30.0,
        max_reply_bytes: int = MAX_REPLY_BYTES,
        tokenize_url: str | None = None,
        tool_calls: str = "auto",
        json_schema: bool = False,
    ) -> None:
        self.model = model
        # llama.cpp's POST /tokenize: budgets counted with the model's own tokenizer (digits
        # are a token each in Qwen's, so ~4 characters a token undercounts JSON numbers 3x)
        self.tokenize_url = tokenize_url
        self.name = name or (f"openai-compatible/{model}@{base_url}" if base_url else model)
        self.endpoint = base_url or "https://api.openai.com/v1"
        self._url = self.endpoint.rstrip("/") + "/chat/completions"
        key = api_key or os.environ.get("OPENAI_API_KEY")
        self._headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if key:  # local servers need none; the key is never logged
            self._headers["Authorization"] = f"Bearer {key}"
        self._timeout = aiohttp.ClientTimeout(total=timeout_s)
        # HTTP(S)_PROXY / NO_PROXY, read once (aiohttp's trust_env reads ~/.netrc in a worker
        # thread on every request, which doubled the client's CPU per call)
        self._proxy = env_proxy(self._url)
        # a session and a semaphore per event loop (both belong to the loop that made them)
        self._per_loop: dict[int, _PerLoop] = {}
        self.max_retries = max_retries
        if tool_calls not in ("native", "schema", "auto"):
            raise ValueError(
                f"tool_calls={tool_calls!r}: choose native (the server's tool calls), schema "
                "(decoding constrained to the tools' JSON schemas) or auto"
            )
        self.capabilities = Capabilities(
            prefill=bool(prefill),
            context_window=int(context_window) if context_window else None,
            max_concurrency=int(max_concurrency) if max_concurrency else None,
            tool_calls=tool_calls,
            json_schema=bool(json_schema) or tool_calls == "schema",
        )
        # "auto": set once a reply to a request with tools held its calls as text only (the
        # server does not return tool calls for this model); later requests use the schema
        self.calls_as_text = False
        self.extra_body = dict(extra_body or {})
        self._limit = max_connections
        self._backoff = wait_exponential_jitter(initial=backoff_initial_s, max=backoff_max_s)
        self.retries_used = 0
        self.max_reply_bytes = max_reply_bytes
        self._adaptive: Any = None  # --max-connections auto (raleval.concurrency)
        # a server on this machine: what measures its CPU per call (raleval.agents.local)
        self.cpu_meter: Any = None
        # what a self-hosted server says it serves (set by the openai-compatible provider)
        self.served: str | None = None

    @property
    def cache_identity(self) -> str:
        return self.name if self.served is None else f"{self.name}#{self.served}"

    def use_adaptive_limit(self, limit: Any) -> bool:
        """Each request attempt takes a slot of ``limit`` and reports 429/503 to it."""
        self._adaptive = limit
        return True

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` by the server's own tokenizer where it has one (llama.cpp)."""
        if self.tokenize_url:
            try:
                r = httpx.post(self.tokenize_url, json={"content": text}, timeout=30.0)
                r.raise_for_status()
                return len(r.json()["tokens"])
            except (httpx.HTTPError, KeyError, ValueError):
                pass  # a server that cannot tokenize: the estimate, as for any model
        return super().count_tokens(text)

    def _wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        after = _retry_after(exc) if exc else None
        return after if after is not None else self._backoff(state)

    async def _loop_state(self) -> _PerLoop:
        loop = asyncio.get_running_loop()
        state = self._per_loop.get(id(loop))
        # Kept with the loop object itself: a new loop can reuse an ended loop's id.
        if state is None or state.loop is not loop or state.session.closed:
            # forget loops that have ended (each session was closed with its loop)
            for key in [k for k, old in self._per_loop.items() if old.loop.is_closed()]:
                del self._per_loop[key]
            session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self._limit or 0, ssl=_tls_context()),
                timeout=self._timeout,
                headers=self._headers,
            )
            closer = _close_with_loop(session)
            await closer.__anext__()
            sem = asyncio.Semaphore(self._limit) if self._limit else None
            self._per_loop[id(loop)] = state = _PerLoop(loop, session, closer, sem)
        return state

    async def _post(self, session: aiohttp.ClientSession, body: dict[str, Any]) -> bytes:
        async with session.post(self._url, data=json.dumps(body), proxy=self._proxy) as response:
            if response.status >= 400:
                content = await response.content.read(ERROR_BODY_BYTES)
                text = content.decode("utf-8", "replace")
                raise HTTPStatusError(response.status, response.headers.copy(), text)
            limit = self.max_reply_bytes
            declared = response.content_length
            if declared is not None and declared > limit:
                raise ReplyTooLarge(f"the reply declares {declared} bytes, over {limit}")
            chunks, size = [], 0
            async for chunk in response.content.iter_chunked(1 << 16):
                size += len(chunk)
                if size > limit:
                    raise ReplyTooLarge(f"the reply is over {limit} bytes")
                chunks.append(chunk)
            return b"".join(chunks)

    async def _limited_post(self, session: aiohttp.ClientSession, body: dict[str, Any]) -> bytes:
        """:meth:`_post` in a slot of the adaptive limit (one per attempt, so a retry's wait
        holds no slot), telling it whether the endpoint kept up."""
        if self._adaptive is None:
            return await self._post(session, body)
        async with self._adaptive.request() as slot:
            try:
                content = await self._post(session, body)
            except HTTPStatusError as exc:
                if exc.status_code in (429, 503):
                    slot.overloaded(exc.status_code, _retry_after(exc))
                raise
            slot.succeeded()
            return content

    async def _create(self, body: dict[str, Any]) -> dict[str, Any]:
        """The completion as JSON (with any extra fields, such as llama.cpp's ``timings``)."""
        state = await self._loop_state()
        if state.sem is None:
            content = await self._limited_post(state.session, body)
        else:
            async with state.sem:
                content = await self._limited_post(state.session, body)
        try:
            data = json.loads(content)
        except RecursionError as exc:
            raise ValueError("the reply is nested too deeply") from exc
        if not isinstance(data, dict):
            raise ValueError(f"a completion must be a JSON object, not {type(data).__name__}")
        return data

    async def _create_retrying(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """:meth:`_create`, retried with back-off on transient failures. The first attempt
        goes out on its own and tenacity takes over only when it failed transiently, replaying
        that failure as its first attempt (the same waits and stop as a loop of every
        attempt): most calls succeed at once, and tenacity's bookkeeping cost ~0.1 ms of CPU a
        call, a few percent of an episode's."""
        try:
            return await self._create(kwargs)
        except Exception as exc:
            if not _is_transient(exc):
                raise
            first = exc
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.max_retries + 1),
            wait=self._wait,
            retry=retry_if_exception(_is_transient),
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                if attempt.retry_state.attempt_number == 1:
                    raise first
                self.retries_used += 1
                return await self._create(kwargs)
        raise AssertionError("unreachable: tenacity returns or re-raises")

    async def generate(self, request: GenerateRequest) -> Generation:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": to_openai_messages(request.messages),
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
        }
        if request.stop:
            kwargs["stop"] = list(request.stop)[:4]  # OpenAI accepts at most four
        if request.tools:
            kwargs.update(self.tool_fields(request))
        elif request.json_schema is not None and self.capabilities.json_schema:
            kwargs["response_format"] = json_schema_format("reply", request.json_schema)
        if self.extra_body:
            kwargs.update(self.extra_body)
        if self.cpu_meter is None:
            return await self._generate(kwargs, request)
        call = self.cpu_meter.start()
        try:
            gen = await self._generate(kwargs, request)
        finally:
            cpu_s = self.cpu_meter.end(call)
        gen.cpu_s = cpu_s
        return gen

    @property
    def tool_decoding(self) -> str:
        """How this model's requests with tools are decoded now: native or schema."""
        mode = self.capabilities.tool_calls
        if mode == "auto":
            return "schema" if self.calls_as_text else "native"
        return mode

    def tool_fields(self, request: GenerateRequest) -> dict[str, Any]:
        """The request fields that carry ``request.tools``: the tools with ``tool_choice`` and
        ``parallel_tool_calls`` (native), or a ``response_format`` whose JSON schema admits only
        calls of those tools (schema). With schema decoding the tools still go out as tools
        and tool_choice "none": the chat template shows the model their descriptions while the
        server parses no calls of its own (llama.cpp's Qwen template returned none)."""
        fields: dict[str, Any] = {"tools": list(request.tools)}
        if self.tool_decoding == "schema":
            if request.tool_choice == "none":  # a reply in text is asked for: no constraint
                return {}
            many = bool(request.parallel_tool_calls)
            schema = tool_call_schema(request.tools, many)
            fields["tool_choice"] = "none"
            fields["response_format"] = json_schema_format("tool_call", schema)
            return fields
        if request.tool_choice is not None:
            fields["tool_choice"] = request.tool_choice
        if request.parallel_tool_calls is not None:
            fields["parallel_tool_calls"] = request.parallel_tool_calls
        return fields

    async def _generate(self, kwargs: dict[str, Any], request: GenerateRequest) -> Generation:
        try:
            body = await self._create_retrying(kwargs)
        except ReplyTooLarge as exc:
            raise ModelError(str(exc), "reply_too_large") from exc
        except (HTTPStatusError, aiohttp.ClientError, TimeoutError) as exc:
            raise ModelError(f"{type(exc).__name__}: {exc}", _cause(exc)) from exc
        except ValueError as exc:  # a body that is not JSON at all
            raise ModelError(f"malformed response: {exc}", "malformed_response") from exc
        try:
            return self._generation(body, request)
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise ModelError(
                f"malformed completion ({type(exc).__name__}: {exc}): {str(body)[:200]}",
                "malformed_response",
            ) from exc

    def _generation(self, body: dict[str, Any], request: GenerateRequest) -> Generation:
        choices = body.get("choices")
        if not choices or not isinstance(choices, list):
            raise ModelError(f"response without choices: {str(body)[:200]}", "malformed_response")
        message = choices[0].get("message") or {}
        text = message.get("content") or ""
        last = request.messages[-1] if request.messages else None
        echoed = last is not None and last.role == "assistant" and last.content
        if echoed and text.startswith(last.content):
            # llama.cpp echoes a prefilled assistant turn in front of the continuation.
            text = text[len(last.content) :]
        limit = reply_char_limit(request.max_tokens)
        truncated = len(text) > limit
        text = text[:limit]  # before any parser sees it
        calls: list[ToolCall] = []
        ids: list[str] = []
        for tc in message.get("tool_calls") or []:
            function = tc.get("function") or {}
            given_id = tc.get("id")
            ids.append(given_id if isinstance(given_id, str) else "")
            raw_args = function.get("arguments") or "{}"
            if isinstance(raw_args, str) and len(raw_args) > limit:
                truncated, raw_args = True, {"_raw": raw_args[:200]}
            try:
                args = json.loads(raw_args) if isinstance(raw_args, str) else raw_args
            except (ValueError, RecursionError):
                args = {"_raw": raw_args[:200]}
            calls.append(
                ToolCall(
                    tool=str(function.get("name")),
                    arguments=args if isinstance(args, dict) else {"_raw": args},
                )
            )
        if request.tools and not calls:
            # llama.cpp and many small models put the JSON call in the text instead (and
            # schema decoding returns it there by design)
            calls = tool_calls_from_content(text)
            ids = [""] * len(calls)
            if calls and self.tool_decoding == "native" and self.capabilities.tool_calls == "auto":
                self.calls_as_text = True
        usage = body.get("usage") or {}
        details = usage.get("prompt_tokens_details") or {}
        timings = body.get("timings") or {}
        server_ms = None
        if "prompt_ms" in timings or "predicted_ms" in timings:
            server_ms = float(timings.get("prompt_ms", 0)) + float(timings.get("predicted_ms", 0))
        return Generation(
            server_time_s=server_ms / 1000 if server_ms is not None else None,
            text=text,
            tool_calls=calls,
            tool_call_ids=ids,
            prompt_tokens=usage.get("prompt_tokens"),
            completion_tokens=usage.get("completion_tokens"),
            cached_tokens=details.get("cached_tokens"),
            truncated=truncated,
            finish_reason=_finish_reason(choices[0]),
        )

    async def aclose(self) -> None:
        """Close this loop's HTTP session (the runner calls it when a run ends)."""
        state = self._per_loop.pop(id(asyncio.get_running_loop()), None)
        if state is not None:
            await state.session.close()
            await state.closer.aclose()


def json_schema_format(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    """``response_format`` asking for a reply that matches ``schema`` (OpenAI's structured
    outputs; llama.cpp turns it into a grammar). Not ``strict``: OpenAI's strict mode refuses
    optional properties, which tool parameters have."""
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema}}


def server_root(base_url: str) -> str:
    """A server's own address under its OpenAI routes (``.../v1``): where llama.cpp answers
    ``/tokenize`` and ``/props``."""
    return base_url.rstrip("/").removesuffix("/v1")


# A window a server reports is believed between these bounds (a hostile or broken reply must
# not make every prompt "too long", nor lift the workflows' budgets without limit).
_WINDOW_BOUNDS = (256, 10_000_000)


def served_model(model: OpenAICompatibleModel, timeout_s: float = 5.0) -> dict[str, Any]:
    """What a self-hosted server reports at ``GET <base>/models`` about the model it serves:
    ``{"served": ...}`` (its model id and, for llama.cpp, its file's size and parameter count),
    ``{"context_window": N}`` from vLLM's ``max_model_len`` or llama.cpp's ``meta.n_ctx``, and
    ``{"llamacpp": True, "slots": K}`` for llama.cpp (which tokenizes at ``POST /tokenize``
    and serves K requests at once, ``GET /props``). Empty when it names no model it serves or
    cannot be asked now (the run then meets the server's own errors)."""
    try:
        reply = httpx.get(
            model.endpoint.rstrip("/") + "/models", headers=model._headers, timeout=timeout_s
        )
        reply.raise_for_status()
        entries = reply.json().get("data")
    except (httpx.HTTPError, ValueError, AttributeError):
        return {}
    if not isinstance(entries, list):
        return {}
    entries = [e for e in entries if isinstance(e, dict)]
    # the entry of the model asked for; a server of one model (llama.cpp) answers any name
    chosen = [e for e in entries if e.get("id") == model.model]
    if not chosen and len(entries) == 1:
        chosen = entries
    if not chosen:
        return {}
    entry, found = chosen[0], {}
    meta = entry.get("meta") if isinstance(entry.get("meta"), dict) else {}
    # what it serves: its model id, and for llama.cpp what its file holds (a GGUF swapped in
    # under the same path has another size or parameter count)
    weights = {k: meta.get(k) for k in ("n_params", "size", "ftype") if k in meta}
    found["served"] = json.dumps([entry.get("id"), weights], sort_keys=True, default=str)[:500]
    for value in (entry.get("max_model_len"), meta.get("n_ctx")):
        if isinstance(value, int) and _WINDOW_BOUNDS[0] <= value <= _WINDOW_BOUNDS[1]:
            found["context_window"] = value
            break
    if entry.get("owned_by") == "llamacpp":
        found["llamacpp"] = True
        # its slots: more requests in flight than slots evict each other's prompt cache
        try:
            props = httpx.get(
                server_root(model.endpoint) + "/props", headers=model._headers, timeout=timeout_s
            )
            props.raise_for_status()
            slots = props.json().get("total_slots")
        except (httpx.HTTPError, ValueError, AttributeError):
            slots = None
        if isinstance(slots, int) and 1 <= slots <= 1024:
            found["slots"] = slots
    return found


def check_model_options(
    spec: str,
    options: Mapping[str, Any],
    own: tuple[str, ...] = (),
    sets: tuple[str, ...] = (),
) -> None:
    """Refuse a ``-M`` option no model of ``spec``'s provider takes, before anything starts
    (an embedded model's server, a connection): name the valid ones, and the ``-W`` flag when
    the option is a workflow's (decoding such as ``temperature`` is set per workflow). ``own``:
    the provider's options beside :class:`OpenAICompatibleModel`'s; ``sets``: those of its
    parameters the provider sets itself (besides the model, address and name)."""
    import inspect

    from raleval.workflow import workflow_flags

    fixed = {"self", "model", "base_url", "name", *sets}
    valid = [p for p in inspect.signature(OpenAICompatibleModel).parameters if p not in fixed]
    valid = sorted({*valid, *own})
    unknown = sorted(set(options) - set(valid))
    if not unknown:
        return
    message = f"{spec} has no model option {', '.join(map(repr, unknown))} (-M); valid: "
    message += ", ".join(valid)
    workflow, flags = workflow_flags({k: options[k] for k in unknown})
    if workflow:
        message += f". {', '.join(workflow)}: a workflow option, set with {flags}"
    raise ValueError(message)


@register_model_provider("openai-compatible")
def make_openai_compatible(name: str, run_dir: Any = None, **options: Any) -> OpenAICompatibleModel:
    """``openai-compatible/<model>@<base_url>``: any server speaking chat completions."""
    model, sep, base_url = name.partition("@")
    if not sep or not base_url.startswith(("http://", "https://")):
        raise ValueError(
            f"openai-compatible spec needs <model>@<base_url>, e.g. "
            f"openai-compatible/qwen@http://127.0.0.1:8000/v1 (got {name!r})"
        )
    check_model_options(f"openai-compatible/{name}", options)
    served = OpenAICompatibleModel(
        model, base_url=base_url, name=f"openai-compatible/{name}", **options
    )
    # What the server says about itself, where -M did not say it: budgets fitted to the real
    # window (with the 16k default a 2,048-token llama.cpp server refused every first prompt
    # of CRAG's 38 tools), counted by its own tokenizer (the estimate undercounts JSON), and
    # no more episodes in flight than it has slots (8 on 2 slots: 5 min 22 s for a run that
    # takes 2 min 13 s at 2)
    info = served_model(served)
    caps = served.capabilities
    if caps.context_window is None and "context_window" in info:
        served.capabilities = caps = replace(caps, context_window=info["context_window"])
    if caps.max_concurrency is None and "slots" in info:
        served.capabilities = replace(caps, max_concurrency=info["slots"])
    if served.tokenize_url is None and info.get("llamacpp"):
        served.tokenize_url = server_root(base_url) + "/tokenize"
    served.served = info.get("served")
    return served


@register_model_provider("openai")
def make_openai(name: str, run_dir: Any = None, **options: Any) -> OpenAICompatibleModel:
    """``openai/<model>``: OpenAI's API; the key comes from OPENAI_API_KEY."""
    check_model_options(f"openai/{name}", options)
    if not (options.get("api_key") or os.environ.get("OPENAI_API_KEY")):
        raise ValueError("openai/<model> needs the OPENAI_API_KEY environment variable")
    options.setdefault("tool_calls", "native")  # OpenAI's models return structured calls
    return OpenAICompatibleModel(
        name, base_url=os.environ.get("OPENAI_BASE_URL"), name=f"openai/{name}", **options
    )
