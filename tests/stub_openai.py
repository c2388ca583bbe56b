"""A small OpenAI chat-completions server on 127.0.0.1 for provider tests.

The request's ``model`` field picks the behaviour, so one server serves every scenario:
``ok``, ``tool``, ``content-tool``, ``429-then-ok``, ``429-always``, ``500-then-ok``,
``500-always``, ``slow``, ``malformed``, ``no-choices``, ``empty``, ``react-oracle``,
``context-full`` (llama.cpp's refusal of a request over the window; ``-openai``: OpenAI's),
``bad-request``, and
``capacity``: a server that answers 429 (``Retry-After: 0``) to a request that would make more
than ``capacity`` in flight, and serves the others in ``hold_s`` seconds.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def completion(
    content: str | None, tool_calls: list[dict] | None = None, cached: int = 0
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": 0,
        "model": "stub",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {
            "prompt_tokens": 11,
            "completion_tokens": 3,
            "total_tokens": 14,
            "prompt_tokens_details": {"cached_tokens": cached},
        },
        "timings": {"prompt_ms": 1.5, "predicted_ms": 2.5},
    }


def capacity_run_args(
    base_url: str, log_dir: str, name: str, connections: str, episodes: int = 40
) -> list[str]:
    """``raleval run`` of ``episodes`` one-call episodes against the ``capacity`` model at
    ``base_url`` (tests/test_concurrency.py and benchmarks/aimd_settle.py run the same)."""
    return [
        "run", "--model", f"openai-compatible/capacity@{base_url}",
        "--workflow", "direct", "-E", "size=tiny", "--tasks", "scholar-ks",
        "--tasks-per-family", str(episodes), "--display", "none", "--no-cache",
        "--max-connections", connections, "--log-dir", log_dir, "--run-name", name,
        # a bounded run: a request that cannot get through fails fast instead of waiting
        "-W", "time_limit_s=60",
    ]  # fmt: skip


class _Server(ThreadingHTTPServer):
    # The listen backlog of a real server (the standard library's default is 5). With 5, eight
    # connections opened at once under CPU load overflowed it once a run: the kernel dropped a
    # SYN and that request reached the server a second late, after the burst it belonged to.
    request_queue_size = 128


class StubServer:
    def __init__(self, latency_s: float = 0.0, port: int = 0) -> None:
        self.requests: list[dict[str, Any]] = []
        self.counts: dict[str, int] = {}
        self.latency_s = latency_s
        self.lock = threading.Lock()
        self.capacity, self.hold_s = 4, 0.02
        self.in_flight = self.peak = self.refused = 0
        # what GET /v1/models answers (raw bytes); None: 404, as a server without the route
        self.models: bytes | None = None
        self.props: bytes | None = None  # GET /props (llama.cpp's), likewise
        # the API key every request must carry (401 without it, 403 with another); None: any
        self.api_key: str | None = None
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, code: int, body: bytes, headers: dict[str, str] | None = None):
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

            def _refused(self) -> bool:
                if stub.api_key is None:
                    return False
                got = self.headers.get("Authorization")
                if got == f"Bearer {stub.api_key}":
                    return False
                self._send(401 if got is None else 403, b'{"error": {"message": "bad key"}}')
                return True

            def do_GET(self) -> None:
                if self._refused():
                    return
                if self.path.rstrip("/").endswith("/models") and stub.models is not None:
                    self._send(200, stub.models)
                elif self.path == "/props" and stub.props is not None:  # llama.cpp's
                    self._send(200, stub.props)
                else:
                    self._send(404, b'{"error": {"message": "not found"}}')

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                req = json.loads(self.rfile.read(length))
                if self._refused():
                    return
                if self.path.rstrip("/").endswith("/tokenize"):  # llama.cpp's: a token a word
                    self._send(200, json.dumps({"tokens": req["content"].split()}).encode())
                    return
                with stub.lock:
                    stub.requests.append(req)
                    n = stub.counts.get(req["model"], 0) + 1
                    stub.counts[req["model"]] = n
                stub.respond(self, req, n)

        self.handler = Handler
        self.httpd = _Server(("127.0.0.1", port), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def respond(self, h: Any, req: dict[str, Any], n: int) -> None:
        model = req["model"]
        if self.latency_s:
            time.sleep(self.latency_s)
        ok = json.dumps(completion("Paris", cached=5)).encode()
        if model == "ok":
            h._send(200, ok)
        elif model == "capacity":
            with self.lock:
                admitted = self.in_flight < self.capacity
                if admitted:
                    self.in_flight += 1
                    self.peak = max(self.peak, self.in_flight)
                else:
                    self.refused += 1
            if not admitted:
                h._send(429, b'{"error": {"message": "too many requests"}}', {"Retry-After": "0"})
                return
            time.sleep(self.hold_s)
            with self.lock:  # answered: out of flight before the client can send again
                self.in_flight -= 1
            h._send(200, ok)
        elif model == "tool":
            call = {
                "id": "c1",
                "type": "function",
                "function": {"name": "searchPerson", "arguments": '{"name": "Ada"}'},
            }
            h._send(200, json.dumps(completion(None, [call])).encode())
        elif model == "content-tool":
            text = '```json\n{"name": "getCoauthors", "arguments": {"person_id": "p1"}}\n```'
            h._send(200, json.dumps(completion(text)).encode())
        elif model in ("429-then-ok", "500-then-ok"):
            if n == 1:
                code = 429 if model.startswith("429") else 500
                h._send(code, b'{"error": {"message": "try later"}}', {"Retry-After": "0.2"})
            else:
                h._send(200, ok)
        elif model == "429-always":
            h._send(429, b'{"error": {"message": "slow down"}}', {"Retry-After": "0"})
        elif model == "500-always":
            h._send(500, b'{"error": {"message": "boom"}}')
        elif model == "slow":
            time.sleep(2.0)
            h._send(200, ok)
        elif model == "malformed":
            h._send(200, b'{"choices": [{"message": {"content": "trunc')
        elif model == "no-choices":
            h._send(200, b'{"id": "x", "object": "chat.completion", "choices": []}')
        elif model == "prefill-echo":
            last = req["messages"][-1]["content"]
            h._send(200, json.dumps(completion(last + " Paris")).encode())
        elif model == "context-full":  # llama.cpp's refusal of a request over its window
            body = {
                "error": {
                    "code": 400,
                    "message": "request (8267 tokens) exceeds the available context size "
                    "(8192 tokens), try increasing it",
                    "type": "exceed_context_size_error",
                    "n_prompt_tokens": 8267,
                    "n_ctx": 8192,
                }
            }
            h._send(400, json.dumps(body).encode())
        elif model == "context-full-openai":
            body = {
                "error": {
                    "message": "This model's maximum context length is 8192 tokens. However, "
                    "your messages resulted in 8267 tokens.",
                    "type": "invalid_request_error",
                    "code": "context_length_exceeded",
                }
            }
            h._send(400, json.dumps(body).encode())
        elif model == "bad-request":
            h._send(400, b'{"error": {"message": "unknown field: stop_sequences"}}')
        elif model == "empty":
            h._send(200, json.dumps(completion("")).encode())
        else:
            h._send(404, b'{"error": {"message": "unknown model"}}')

    def __enter__(self) -> StubServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
