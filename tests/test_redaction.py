"""What a run header keeps: every option a replay needs, no credential (raleval.redaction)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from raleval.app.cli import app
from raleval.redaction import REDACTED, is_secret_key, redact

KEPT = ["max_tokens", "max_context_tokens", "max_obs_tokens", "tokenize_url", "key_points",
        "max_token", "n_tokens", "keyword", "token_budget", "monkey", "tokens"]  # fmt: skip
SECRET_KEYS = ["api_key", "apiKey", "OPENAI_API_KEY", "hf_token", "HF-TOKEN", "access_token",
               "token", "authorization", "Authorization", "password", "db_password",
               "client_secret", "secret", "auth", "x-api-key"]  # fmt: skip


@pytest.mark.parametrize("key", KEPT)
def test_settings_whose_names_mention_tokens_or_keys_are_kept(key: str) -> None:
    assert not is_secret_key(key)
    assert redact({key: 2000}) == {key: 2000}


@pytest.mark.parametrize("key", SECRET_KEYS)
def test_credential_keys_are_redacted_at_any_depth(key: str) -> None:
    assert is_secret_key(key)
    assert redact({"model_options": {"extra": [{key: "value-1"}]}}) == {
        "model_options": {"extra": [{key: REDACTED}]}
    }


@pytest.mark.parametrize(
    "value",
    [
        "sk-proj-" + "a1B2" * 10,
        "sk-ant-api03-" + "x" * 30,
        "hf_" + "AbCd" * 9,
        "ghp_" + "Z" * 36,
        "github_pat_" + "1" * 40,
        "Bearer abc.def.ghi-123",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sig",
        "AKIAIOSFODNN7EXAMPLE",
    ],
)
def test_credential_shaped_values_are_redacted_under_any_key(value: str) -> None:
    assert redact({"extra_body": {"x": value}, "note": [value]}) == {
        "extra_body": {"x": REDACTED},
        "note": [REDACTED],
    }


def test_ordinary_values_and_url_passwords() -> None:
    plain = {"base": "http://127.0.0.1:8080/v1", "prompt": "sk", "model": "gpt-4o-mini",
             "stop": ["Observation:"], "skill": "sk-short"}  # fmt: skip
    assert redact(plain) == plain
    assert redact({"url": "https://bob:hunter2@proxy.example/v1"}) == {
        "url": f"https://bob:{REDACTED}@proxy.example/v1"
    }
    # an empty credential is no credential: nothing to hide, nothing that blocks a retry
    assert redact({"api_key": None, "token": ""}) == {"api_key": None, "token": ""}


def test_a_run_with_token_budgets_can_be_diagnosed(tmp_path: Path) -> None:
    """``-W max_obs_tokens`` / ``max_context_tokens`` / ``max_tokens`` are recorded as given
    and ``raleval diagnose`` replays the run with them (they were once redacted as
    credentials, and diagnose refused the run)."""
    runner = CliRunner()
    args = ["run", "-m", "scripted/wrong-tool", "-w", "react", "--env", "scholar",
            "-E", "size=tiny", "--limit", "3", "-W", "max_obs_tokens=2000",
            "-W", "max_context_tokens=12000", "-W", "max_tokens=200",
            "--log-dir", str(tmp_path), "--run-name", "r", "--display", "none"]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    header = json.loads((tmp_path / "r" / "header.json").read_text())
    assert header["config"]["workflow_options"] == {
        "max_obs_tokens": 2000,
        "max_context_tokens": 12000,
        "max_tokens": 200,
    }
    assert REDACTED not in json.dumps(header)
    result = runner.invoke(app, ["diagnose", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    diagnoses = (tmp_path / "r" / "diagnosis.jsonl").read_text().splitlines()
    assert len(diagnoses) == 3  # the wrong-tool model fails every episode


def test_diagnose_refuses_a_run_whose_credentials_were_hidden(tmp_path: Path) -> None:
    """A replay cannot use a credential the header never held: said plainly, naming it."""
    from raleval.app.diagnose import run_config
    from raleval.config import ConfigError

    run = tmp_path / "r"
    args = ["run", "-m", "scripted/wrong-tool", "--env", "scholar", "-E", "size=tiny",
            "--limit", "1", "--log-dir", str(tmp_path), "--run-name", "r",
            "--display", "none"]  # fmt: skip
    assert CliRunner().invoke(app, args).exit_code == 0
    header = json.loads((run / "header.json").read_text())
    header["config"]["model_options"] = {"api_key": REDACTED}  # as a keyed run's header holds
    (run / "header.json").write_text(json.dumps(header))
    with pytest.raises(ConfigError, match=r"hides model_options\.api_key"):
        run_config(run, None)
    assert run_config(run, "scripted/oracle").model_options == {}  # another model: no key needed
