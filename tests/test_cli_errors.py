"""Every CLI error is one or two lines naming the bad value and the valid choices (or the
install command); user text is never read as Rich markup; tracebacks only with --debug."""

from __future__ import annotations

import subprocess
import sys

import pytest
from typer.testing import CliRunner

from raleval.app.cli import app

runner = CliRunner()
RUN = ["run", "--model", "scripted/oracle", "--display", "none"]


def lines(text: str) -> list[str]:
    return [x for x in text.splitlines() if x.strip()]


def test_unknown_env_option_names_it_and_the_valid_ones(tmp_path):
    res = runner.invoke(app, [*RUN, "-E", "sise=tiny", "--log-dir", str(tmp_path)])
    assert res.exit_code == 2
    assert lines(res.output) == [
        "error: env 'scholar' has no option 'sise' (-E); valid: size, seed, path"
    ]
    assert not any(tmp_path.iterdir())  # refused before anything was written


def test_unknown_workflow_option_in_at_most_four_lines(tmp_path):
    res = runner.invoke(
        app, [*RUN, "-E", "size=tiny", "-W", "max_stepz=3", "--log-dir", str(tmp_path)]
    )
    assert res.exit_code == 2
    out = lines(res.output)
    assert len(out) <= 4
    assert "react has no option 'max_stepz'" in out[0] and "max_steps" in out[0]
    assert "Traceback" not in res.output


def test_hf_without_torch_is_one_line_with_the_install_command(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch now raises ImportError
    res = runner.invoke(app, ["run", "--model", "hf/some/dir", "--log-dir", str(tmp_path)])
    assert res.exit_code == 2
    # the model loads once the run is planned (a finished run loads none): the world's build
    # may say how long it took first
    out = lines(res.output)
    assert out[-1:] == ['error: hf/<path> needs PyTorch: pip install "raleval[torch]"'], out
    assert all("error" not in line for line in out[:-1]) and "Traceback" not in res.output


def test_markup_in_user_strings_is_printed_verbatim(tmp_path):
    bad = tmp_path / "a[/bold]b [red]x"  # a directory "a[" holding "bold]b [red]x"
    bad.mkdir(parents=True)
    config = bad / "c.yaml"
    config.write_text("models: [a, b\nlimit: 100 :100:\n")
    res = runner.invoke(app, ["run", "--config", str(config)])
    assert res.exit_code == 2
    assert lines(res.output) == [
        f"error: {config}:2:6: expected ',' or ']', but got ':' (while parsing a flow sequence)"
    ]


def test_invalid_utf8_in_a_task_file_names_its_line(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"id": "x"}\n{"id": "y\xff"}\n')
    res = runner.invoke(app, [*RUN, "-E", "size=tiny", "--tasks", str(path)])
    assert res.exit_code == 2
    assert lines(res.output) == [
        f"error: {path}:2:10: not UTF-8 (byte 0xff); save the file as UTF-8"
    ]


def test_json_syntax_error_has_line_and_column(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text('{"id": "x",\n')
    res = runner.invoke(app, [*RUN, "-E", "size=tiny", "--tasks", str(path)])
    assert res.exit_code == 2
    assert lines(res.output)[0].startswith(f"error: {path}:1:11: invalid task")


def test_unknown_setting_in_a_config_file_lists_the_valid_ones(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("limt: 3\n")
    res = runner.invoke(app, ["run", "--config", str(config)])
    assert res.exit_code == 2
    (line,) = lines(res.output)
    assert "unknown setting 'limt'" in line and "limit" in line


def test_version():
    res = runner.invoke(app, ["--version"])
    from raleval import __version__

    assert res.exit_code == 0 and res.output == f"raleval {__version__}\n"


def test_list_envs_is_full_plain_text():
    res = runner.invoke(app, ["list", "envs"], env={"COLUMNS": "80"})
    assert res.exit_code == 0
    text = " ".join(res.output.split())
    assert "``" not in res.output and "┃" not in res.output
    assert "or -E path=world.sqlite for a world imported from an OAG/AMiner dump." in text
    assert "or -E backend=live (MediaWiki API, responses cached in http_cache)." in text


def test_a_log_dir_that_is_a_file_is_a_clear_error(tmp_path):
    (tmp_path / "logs").write_text("")
    cmd = [*RUN, "-E", "size=tiny", "--limit", "1", "--log-dir", str(tmp_path / "logs")]
    res = runner.invoke(app, [*cmd, "--tasks", "scholar-ks", "--tasks-per-family", "2"])
    assert res.exit_code == 2
    assert "cannot use run directory" in res.output and "Not a directory" in res.output


@pytest.mark.parametrize("debug", [False, True])
def test_unexpected_errors_are_one_line_unless_debug(tmp_path, debug):
    # a prompt file that is a folder: an error no check anticipates
    (tmp_path / "prompt").mkdir()
    cmd = [sys.executable, "-m", "raleval", *(["--debug"] if debug else [])]
    cmd += [*RUN, "-E", "size=tiny", "--limit", "1", "--log-dir", str(tmp_path / "logs")]
    cmd += ["--tasks", "scholar-ks", "--tasks-per-family", "2"]
    cmd += ["-W", f"prompt_file={tmp_path / 'prompt'}"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    if debug:
        assert "Traceback" in proc.stderr
    else:
        assert "Traceback" not in proc.stderr
        assert len(lines(proc.stderr)) <= 2 and "--debug" in proc.stderr


@pytest.mark.parametrize("spec", ["local/qwen2.5-1.5b", "local/no-such-file.gguf"])
def test_a_model_that_cannot_load_exits_2_and_leaves_no_run_directory(tmp_path, spec, monkeypatch):
    """Issue 50: missing weights of a known local model exited 1 where every other bad model
    spec exits 2, and a failed start left its run directory (header, tasks, a stale lock)."""
    from raleval.agents import local

    monkeypatch.setattr(local, "_module_dir", lambda module: None)  # no weight package here
    monkeypatch.chdir(tmp_path)
    log_dir = tmp_path / "runs"
    res = runner.invoke(
        app, ["run", "--model", spec, "-E", "size=tiny", "--tasks", "scholar-ks", "--limit",
              "2", "--display", "none", "--log-dir", str(log_dir)],
    )  # fmt: skip
    assert res.exit_code == 2, res.output
    assert lines(res.output)[-1].startswith(f"error: {spec}")
    assert "Traceback" not in res.output
    assert not log_dir.exists()


def test_rich_progress_becomes_plain_lines_when_stderr_is_not_a_terminal(tmp_path):
    """Issue 50: `--display rich` with output redirected logged nothing until the run ended."""
    res = subprocess.run(
        [sys.executable, "-m", "raleval", "run", "--model", "scripted/oracle", "-E", "size=tiny",
         "--tasks", "scholar-ks", "--limit", "2", "--display", "rich", "--log-dir",
         str(tmp_path)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "2 episodes to run" in res.stderr
    assert "[1/2]" in res.stderr and "[2/2]" in res.stderr
