"""A dead model endpoint is found before the first episode (issue 61, item 6): one request to
a real HTTP server on 127.0.0.1 (or a closed port); unreachable, a refused key or a model the
server does not list ends ``raleval run`` with exit 2, one line saying which, and no run
directory."""

from __future__ import annotations

import json
import socket

import pytest
from typer.testing import CliRunner

from raleval.app.cli import app
from tests.stub_openai import StubServer

runner = CliRunner()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(tmp_path, model: str, *extra: str):
    return runner.invoke(
        app,
        [
            "run", "--model", model, "--workflow", "direct", "-E", "size=tiny",
            "--tasks", "scholar-ks", "--limit", "2", "--display", "none", "--no-cache",
            "--log-dir", str(tmp_path / "runs"), "-M", "max_retries=0", *extra,
        ],
    )  # fmt: skip


@pytest.fixture(autouse=True)
def _no_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def _error_line(res) -> str:
    lines = [x for x in res.output.splitlines() if x.strip()]
    assert len(lines) == 1, res.output  # one line says which
    return lines[0]


def test_a_closed_port_exits_2_naming_it_unreachable_and_leaves_no_run(tmp_path):
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    res = _run(tmp_path, f"openai-compatible/ok@{url}")
    assert res.exit_code == 2, res.output
    line = _error_line(res)
    assert "model endpoint unreachable" in line and f"{url}/models" in line
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize(("key", "status"), [(None, "401"), ("wrong", "403")])
def test_a_refused_key_exits_2_and_the_right_one_runs(tmp_path, key, status):
    with StubServer() as stub:
        stub.api_key = "right"
        model = f"openai-compatible/ok@{stub.base_url}"
        res = _run(tmp_path, model, *(["-M", f"api_key={key}"] if key else []))
        assert res.exit_code == 2, res.output
        line = _error_line(res)
        assert "refused the API key" in line and f"HTTP {status}" in line
        assert "wrong" not in line  # the key itself is never shown
        assert not (tmp_path / "runs").exists() and stub.requests == []
        res = _run(tmp_path, model, "-M", "api_key=right")
        assert res.exit_code == 0, res.output
        assert len(stub.requests) == 2


def test_a_model_the_server_does_not_list_exits_2(tmp_path):
    with StubServer() as stub:
        stub.models = json.dumps({"data": [{"id": "ok"}, {"id": "tool"}]}).encode()
        res = _run(tmp_path, f"openai-compatible/gpt-9@{stub.base_url}")
        assert res.exit_code == 2, res.output
        assert "unknown model: 'gpt-9' is not among the 2 models" in _error_line(res)
        assert not (tmp_path / "runs").exists() and stub.requests == []
        assert _run(tmp_path, f"openai-compatible/ok@{stub.base_url}").exit_code == 0


def test_a_server_without_the_models_route_still_runs(tmp_path):
    """404 on /models is a server that does not list its models (the stub by default), not
    an unknown model: the run goes ahead."""
    with StubServer() as stub:
        res = _run(tmp_path, f"openai-compatible/ok@{stub.base_url}")
        assert res.exit_code == 0, res.output
        assert len(stub.requests) == 2


def test_no_preflight_records_the_failures_instead(tmp_path):
    res = _run(
        tmp_path, f"openai-compatible/ok@http://127.0.0.1:{_closed_port()}/v1", "--no-preflight"
    )
    assert res.exit_code == 1 and "connection_error 2" in res.output
    assert any((tmp_path / "runs").iterdir())
