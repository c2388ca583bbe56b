"""`raleval serve` facing hostile clients: a real server process on 127.0.0.1.

Docs behind the token, malformed input answered 4xx (schemathesis finds no 5xx), a body limit
answered 413 before the body is read, and half-open connections that neither exhaust the
server's descriptors nor flood its log.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis import GenerationMode

from raleval.app.serve import MAX_BODY_BYTES, MAX_JSON_DEPTH, create_app, json_problem
from raleval.envs.crag import make_crag_env

TOKEN = "s3cret"
AUTH = {"Authorization": f"Bearer {TOKEN}"}

SERVER = """
import sys
from raleval.envs.crag import make_crag_env
from raleval.app.serve import serve
serve(make_crag_env("tiny"), port=int(sys.argv[1]), token=sys.argv[2] or None)
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerProcess:
    """``raleval.app.serve.serve`` in its own process, its log in a file."""

    def __init__(self, log: Path, token: str | None = TOKEN, nofile: int | None = None):
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        limit = None if nofile is None else (lambda: _set_nofile(nofile))
        with open(log, "wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", SERVER, str(self.port), token or ""],
                stdout=out,
                stderr=subprocess.STDOUT,
                preexec_fn=limit,
            )
        deadline = time.monotonic() + 60
        while True:
            assert self.proc.poll() is None, log.read_text()
            with contextlib.suppress(httpx.HTTPError):
                httpx.get(f"{self.url}/tools", headers=AUTH, timeout=2)
                break
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.1)

    def rss_mb(self) -> float:
        status = Path(f"/proc/{self.proc.pid}/status").read_text()
        line = next(ln for ln in status.splitlines() if ln.startswith("VmRSS:"))
        return int(line.split()[1]) / 1024

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _set_nofile(n: int) -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = ServerProcess(tmp_path_factory.mktemp("serve") / "server.log")
    yield s
    s.stop()


def _raw_request(port: int, head: bytes, body_chunks=(), read_first: bool = False) -> bytes:
    """Send ``head`` then ``body_chunks`` over a raw socket; the status line answered."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(head)
        answer = b""
        if read_first:  # the server must answer before it has the body
            answer = sock.recv(65536)
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            for chunk in body_chunks:
                sock.sendall(chunk)
        with contextlib.suppress(ConnectionResetError, TimeoutError):
            while b"\r\n" not in answer:
                more = sock.recv(65536)
                if not more:
                    break
                answer += more
    return answer.split(b"\r\n", 1)[0]


@pytest.mark.parametrize("path", ["/docs", "/openapi.json", "/redoc", "/tools", "/nope"])
def test_every_route_needs_the_token_docs_included(server, path):
    assert httpx.get(server.url + path).status_code == 401
    assert httpx.get(server.url + path, headers={"Authorization": "Bearer nope"}).status_code == 401
    expected = 404 if path == "/nope" else 200
    assert httpx.get(server.url + path, headers=AUTH).status_code == expected


def test_a_non_ascii_authorization_header_is_a_401(server):
    head = (
        "GET /tools HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer s3cr\u00e9t\u00ff\r\n"
        "Connection: close\r\n\r\n"
    ).encode("latin-1")
    assert _raw_request(server.port, head) == b"HTTP/1.1 401 Unauthorized"


@pytest.mark.parametrize(
    ("body", "status"),
    [
        (b'{"ticker": NaN}', 400),
        (b'{"ticker": Infinity}', 400),
        (b"[" * 10_000 + b"]" * 10_000, 400),
        (b'{"a":' * 10_000 + b"1" + b"}" * 10_000, 400),
        (b"[" * (MAX_JSON_DEPTH + 2) + b"]" * (MAX_JSON_DEPTH + 2), 400),
        (b'{"ticker": 12}', 400),  # wrong type: the tool's validation
        (b'{"ticker": ["a"]}', 400),
        (b"not json", 400),
        (b"\xff\xfe", 400),
    ],
)
def test_malformed_bodies_are_answered_4xx(server, body, status):
    r = httpx.post(f"{server.url}/tools/finance_get_eps", content=body, headers=AUTH)
    assert r.status_code == status, r.text
    crag = httpx.post(f"{server.url}/finance/get_eps", content=body, headers=AUTH)
    assert 400 <= crag.status_code < 500, crag.text


def test_json_problem_names_what_is_wrong():
    deep = f"the JSON body is nested deeper than {MAX_JSON_DEPTH} levels"
    assert json_problem(b'{"a": NaN}') == "NaN is not JSON"
    assert json_problem(b"not json") is None  # not JSON at all: the route answers it
    assert json_problem(b"[" * 10_000) == deep  # the parser gives up before the end
    assert json_problem(b"\xff\xfe") == "the body is not UTF-8"
    assert json_problem(b"[" * 10_000 + b"]" * 10_000) == deep
    assert json_problem(b'{"a": [1, {"b": 2}]}') is None


def test_a_50_mb_body_is_refused_before_it_is_read(server):
    before = server.rss_mb()
    size = 50 * 1024 * 1024
    head = (
        f"POST /tools/finance_get_eps HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {size}\r\n\r\n"
    ).encode()
    chunk = b" " * (1 << 20)
    status = _raw_request(server.port, head, [chunk] * 50, read_first=True)
    assert status == b"HTTP/1.1 413 Request Entity Too Large"
    assert server.rss_mb() - before < 100


def test_a_streamed_body_is_cut_at_the_limit(server):
    before = server.rss_mb()
    head = (
        f"POST /tools/finance_get_eps HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
        "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    ).encode()
    piece = b" " * 65536
    chunk = f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
    count = 50 * 1024 * 1024 // len(piece)
    status = _raw_request(server.port, head, [chunk] * count)
    assert status == b"HTTP/1.1 413 Request Entity Too Large"
    assert server.rss_mb() - before < 100
    under = httpx.post(
        f"{server.url}/tools/finance_get_eps",
        content=json.dumps({"ticker": "x" * (MAX_BODY_BYTES - 100)}),
        headers=AUTH,
    )
    assert under.status_code != 413


@pytest.mark.parametrize("mode", ["positive", "negative"])
def test_schemathesis_finds_no_5xx(mode):
    """Every operation of the schema, valid and invalid generated requests: nothing is 5xx.

    Driven through schemathesis's strategies (its pytest plugin does not run under pytest 9)."""
    from hypothesis import given
    from hypothesis.errors import Unsatisfiable

    schema = schemathesis.openapi.from_asgi("/openapi.json", create_app(make_crag_env("tiny")))
    failures: list[str] = []
    calls = 0
    for result in schema.get_all_operations():
        operation = result.ok()

        @given(case=operation.as_strategy(GenerationMode(mode)))
        @settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck))
        def check(case):
            nonlocal calls
            response = case.call()
            calls += 1
            if response.status_code >= 500:
                failures.append(f"{case.method} {case.path} {case.body!r}: {response.text}")

        try:
            check()
        except Unsatisfiable:  # no invalid request exists for an operation without inputs
            assert mode == "negative"
    assert calls >= 40 and failures == []


@pytest.mark.slow
def test_half_open_connections_neither_starve_honest_requests_nor_flood_the_log(tmp_path):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 2400:
        pytest.skip(f"this test process needs 2,400 descriptors (hard limit {hard})")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 2400), hard))
    # the server gets the common default of 1,024 descriptors, fewer than the attack holds
    s = ServerProcess(tmp_path / "server.log", nofile=1024)
    held: list[socket.socket] = []
    try:
        for _ in range(1100):
            conn = socket.socket()
            conn.setblocking(False)
            with contextlib.suppress(BlockingIOError):
                conn.connect(("127.0.0.1", s.port))
            held.append(conn)
        time.sleep(0.5)
        for conn in held:  # half a request head, never finished
            with contextlib.suppress(OSError):
                conn.send(b"GET /tools HTTP/1.1\r\nHost: x\r\n")
        start = time.monotonic()
        answered = None
        while time.monotonic() - start < 60:
            with contextlib.suppress(httpx.HTTPError):
                r = httpx.get(f"{s.url}/tools", headers=AUTH, timeout=10)
                if r.status_code == 200:
                    answered = time.monotonic() - start
                    break
            time.sleep(0.5)
        assert answered is not None, "no honest request was answered within 60 s"
        assert s.proc.poll() is None
    finally:
        for conn in held:
            conn.close()
        s.stop()
    assert os.path.getsize(tmp_path / "server.log") < 1 << 20
