"""``openai/<model>`` and ``openai-compatible/<model>@<base_url>`` (vLLM, SGLang, llama.cpp
server, Ollama, TGI).

Transient failures (429, 5xx, timeouts, dropped connections) are retried with tenacity,
exponential back-off with jitter, honouring ``Retry-After``; what is left is raised as
:class:`ModelError` with a cause tag, which the workflow records as an ME step. A failure is
never turned into an answer.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import ssl
from typing import Any

import httpx
import openai
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential_jitter,
)

from raleval.model import GenerateRequest, Generation, Message, ModelError
from raleval.records import ToolCall
from raleval.registry import register_model_provider
from raleval.toolcalls import tool_calls_from_content

MAX_RETRY_AFTER_S = 60.0
POOLS = 8  # HTTP connection pools per model


@functools.cache
def _tls_context() -> ssl.SSLContext:
    return httpx.create_ssl_context()


def _retry_after(exc: BaseException) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
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
    if isinstance(exc, (openai.APITimeoutError, openai.APIConnectionError)):
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code == 429 or exc.status_code >= 500
    return False


def _cause(exc: BaseException) -> str:
    if isinstance(exc, openai.APITimeoutError):
        return "timeout"
    if isinstance(exc, openai.APIConnectionError):
        return "connection_error"
    if isinstance(exc, openai.RateLimitError):
        return "rate_limited"
    if isinstance(exc, openai.AuthenticationError):
        return "authentication"
    if isinstance(exc, openai.APIStatusError):
        return f"http_{exc.status_code}"
    if isinstance(exc, openai.APIResponseValidationError):
        return "malformed_response"
    return f"provider_exception:{type(exc).__name__}"


def to_openai_messages(messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in messages:
        msg: dict[str, Any] = {"role": m.role, "content": m.content}
        if m.tool_calls:
            msg["tool_calls"] = [
                {
                    "id": f"call_{i}",
                    "type": "function",
                    "function": {"name": c.tool, "arguments": json.dumps(c.arguments)},
                }
                for i, c in enumerate(m.tool_calls)
            ]
        if m.tool_call_id:
            msg["tool_call_id"] = m.tool_call_id
        out.append(msg)
    return out


class OpenAICompatibleModel:
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
        name: str | None = None,
        backoff_initial_s: float = 1.0,
        backoff_max_s: float = 30.0,
    ) -> None:
        self.model = model
        self.name = name or (f"openai-compatible/{model}@{base_url}" if base_url else model)
        self.endpoint = base_url or "https://api.openai.com/v1"
        # Several clients, each with its own connection pool: httpcore scans every pooled
        # connection on each request, which at hundreds in flight costs more CPU than the
        # request itself; calls take the clients in turn.
        tls = _tls_context()  # loading the CA bundle costs ~25 ms: once, not per pool
        self._clients = [
            openai.AsyncOpenAI(
                base_url=base_url,
                # Local servers ignore the key; the SDK insists on one.
                api_key=api_key or os.environ.get("OPENAI_API_KEY") or "not-needed",
                max_retries=0,  # tenacity below does the retrying, with our own accounting
                timeout=timeout_s,
                http_client=openai.DefaultAsyncHttpxClient(verify=tls),
            )
            for _ in range(POOLS)
        ]
        self._turn = 0
        self.max_retries = max_retries
        # The server continues a final assistant message instead of starting a new turn.
        self.supports_prefill = prefill
        self.extra_body = dict(extra_body or {})
        if context_window:
            self.context_window = context_window
        self._limit = max_connections
        self._sems: dict[int, asyncio.Semaphore] = {}
        self._backoff = wait_exponential_jitter(initial=backoff_initial_s, max=backoff_max_s)
        self.retries_used = 0

    def _wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        after = _retry_after(exc) if exc else None
        return after if after is not None else self._backoff(state)

    def _semaphore(self) -> asyncio.Semaphore | None:
        if not self._limit:
            return None
        loop_id = id(asyncio.get_running_loop())
        if loop_id not in self._sems:
            self._sems[loop_id] = asyncio.Semaphore(self._limit)
        return self._sems[loop_id]

    async def _post(self, body: dict[str, Any]) -> httpx.Response:
        # The SDK's own request path (auth, base URL, status errors as openai exceptions), but
        # without its per-request TypedDict transform and pydantic response model: the body is
        # plain JSON built here and read below, which halves the client CPU per call.
        self._turn = (self._turn + 1) % POOLS
        client = self._clients[self._turn]
        return await client.post("/chat/completions", body=body, cast_to=httpx.Response)

    async def _create(self, body: dict[str, Any]) -> dict[str, Any]:
        """The completion as JSON (with any extra fields, such as llama.cpp's ``timings``)."""
        sem = self._semaphore()
        if sem is None:
            response = await self._post(body)
        else:
            async with sem:
                response = await self._post(body)
        data = response.json()
        if not isinstance(data, dict):
            raise ValueError(f"a completion must be a JSON object, not {type(data).__name__}")
        return data

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
            kwargs["tools"] = list(request.tools)
        if self.extra_body:
            kwargs.update(self.extra_body)
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.max_retries + 1),
            wait=self._wait,
            retry=retry_if_exception(_is_transient),
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    if attempt.retry_state.attempt_number > 1:
                        self.retries_used += 1
                    body = await self._create(kwargs)
        except openai.OpenAIError as exc:
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
        calls: list[ToolCall] = []
        for tc in message.get("tool_calls") or []:
            function = tc.get("function") or {}
            raw_args = function.get("arguments") or "{}"
            try:
                args = json.loads(raw_args) if isinstance(raw_args, str) else raw_args
            except ValueError:
                args = {"_raw": raw_args}
            calls.append(
                ToolCall(
                    tool=str(function.get("name")),
                    arguments=args if isinstance(args, dict) else {"_raw": args},
                )
            )
        if request.tools and not calls:
            # llama.cpp and many small models put the JSON call in the text instead.
            calls = tool_calls_from_content(text)
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
            prompt_tokens=usage.get("prompt_tokens"),
            completion_tokens=usage.get("completion_tokens"),
            cached_tokens=details.get("cached_tokens"),
        )

    async def aclose(self) -> None:
        for client in self._clients:
            await client.close()


@register_model_provider("openai-compatible")
def make_openai_compatible(name: str, **options: Any) -> OpenAICompatibleModel:
    """``openai-compatible/<model>@<base_url>``: any server speaking chat completions."""
    model, sep, base_url = name.partition("@")
    if not sep or not base_url.startswith(("http://", "https://")):
        raise ValueError(
            f"openai-compatible spec needs <model>@<base_url>, e.g. "
            f"openai-compatible/qwen@http://127.0.0.1:8000/v1 (got {name!r})"
        )
    return OpenAICompatibleModel(
        model, base_url=base_url, name=f"openai-compatible/{name}", **options
    )


@register_model_provider("openai")
def make_openai(name: str, **options: Any) -> OpenAICompatibleModel:
    """``openai/<model>``: OpenAI's API; the key comes from OPENAI_API_KEY."""
    if not (options.get("api_key") or os.environ.get("OPENAI_API_KEY")):
        raise ValueError("openai/<model> needs the OPENAI_API_KEY environment variable")
    return OpenAICompatibleModel(
        name, base_url=os.environ.get("OPENAI_BASE_URL"), name=f"openai/{name}", **options
    )
