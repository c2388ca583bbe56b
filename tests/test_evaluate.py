"""``raleval.evaluate(...)``: the Python entry point runs what ``raleval run`` runs (issue 61,
item 7) and returns the episodes as a DataFrame with the run directory."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import raleval
from raleval.app.cli import app
from raleval.config import ConfigError
from raleval.store import RESULTS

pytest.importorskip("pandas")


def test_the_issue_line_gives_three_episodes_of_f1_one(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = raleval.evaluate(
        env="scholar", model="scripted/oracle", tasks="scholar-ks", limit=3,
        env_options={"size": "tiny"}, log_dir="runs",
    )  # fmt: skip
    assert len(r.episodes) == 3 and list(r.episodes.score_f1) == [1.0, 1.0, 1.0]
    assert r.run_dir.parent == Path("runs")
    assert (tmp_path / r.run_dir / RESULTS).exists()
    assert (tmp_path / r.run_dir / "report.html").exists()
    assert (r.ran, r.skipped, r.failures) == (3, 0, {})
    again = raleval.evaluate(
        env="scholar", model="scripted/oracle", tasks="scholar-ks", limit=3,
        env_options={"size": "tiny"}, log_dir="runs",
    )  # fmt: skip
    assert (again.ran, again.skipped) == (0, 3)  # resumed, as the command resumes


def test_it_records_what_the_command_records(tmp_path):
    common = ["--model", "scripted/abstain", "-E", "size=tiny", "--tasks", "scholar-ks",
              "--limit", "4", "--display", "none"]  # fmt: skip
    res = CliRunner().invoke(app, ["run", *common, "--log-dir", str(tmp_path / "cli")])
    assert res.exit_code == 0, res.output
    r = raleval.evaluate(
        model="scripted/abstain", env_options={"size": "tiny"}, tasks="scholar-ks", limit=4,
        log_dir=tmp_path / "py",
    )  # fmt: skip
    cli_dir = next((tmp_path / "cli").iterdir())
    assert cli_dir.name == r.run_dir.name

    def episodes(run_dir):
        rows = [json.loads(x) for x in (run_dir / RESULTS).read_text().splitlines()]
        return [(x["task_id"], x["answer"], x["scores"], x["error_type"]) for x in rows]

    assert sorted(episodes(cli_dir)) == sorted(episodes(r.run_dir))
    assert set(r.episodes.error_type) == {e[3] for e in episodes(cli_dir)}


def test_a_bad_setting_is_a_config_error_and_nothing_is_written(tmp_path):
    with pytest.raises(ConfigError, match="unknown setting 'wrokflow'"):
        raleval.evaluate(wrokflow="react", log_dir=tmp_path / "runs")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ConfigError, match="model endpoint unreachable"):
        raleval.evaluate(
            model=f"openai-compatible/x@http://127.0.0.1:{port}/v1", log_dir=tmp_path / "r"
        )
    assert not (tmp_path / "runs").exists() and not (tmp_path / "r").exists()


def test_import_raleval_still_imports_no_subpackage():
    code = "import raleval, sys; print(sorted(m for m in sys.modules if m.startswith('raleval.')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    assert callable(raleval.evaluate)
