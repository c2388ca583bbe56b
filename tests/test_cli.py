"""The CLI as a user meets it: exit codes, messages (never tracebacks), env-var twins, YAML."""

import json
import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from raleval.app.cli import app

runner = CliRunner()
BASE = [
    "run",
    "--model",
    "scripted/oracle",
    "-E",
    "size=tiny",
    "--tasks-per-family",
    "6",
    "--display",
    "none",
]


def test_run_then_score(tmp_path):
    res = runner.invoke(app, [*BASE, "--log-dir", str(tmp_path), "--limit", "4"])
    assert res.exit_code == 0, res.output
    assert "4 episodes run, 0 already done" in res.output
    run_dir = tmp_path / "scholar__react__scripted_oracle__scholar"
    res = runner.invoke(app, ["score", str(run_dir), "--threshold", "0.05"])
    assert res.exit_code == 0, res.output
    scores = [json.loads(x) for x in (run_dir / "scores.jsonl").read_text().splitlines()]
    assert len(scores) == 4 and {s["error_type"] for s in scores} == {"EM"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "--model", "scripted/oracel"], "Did you mean 'oracle'"),
        (["run", "--model", "scripted/oracle", "--env", "scholr"], "Did you mean 'scholar'"),
        (["run", "--model", "nosuch/x"], "unknown model provider 'nosuch'"),
        (["run", "--model", "oracle"], "must look like provider/name"),
        (["run", "--model", "scripted/oracle", "--tasks", "scholar-kz"], "Did you mean"),
        (["run", "--model", "scripted/oracle", "-W", "max_steps=0"], "max_steps"),
        (["run", "--model", "scripted/oracle", "-M", "noequals"], "-M expects key=value"),
        (["run", "--model", "local/qwen2.5-05b"], "Did you mean 'qwen2.5-0.5b'"),
        (["score", "/nonexistent/run"], "no run directory in /nonexistent/run"),
        (["list", "gizmos"], "unknown kind 'gizmos'"),
    ],
)
def test_user_errors_are_messages_not_tracebacks(tmp_path, args, message):
    res = runner.invoke(app, [*args, "--log-dir", str(tmp_path)] if args[0] == "run" else args)
    assert res.exit_code == 2, res.output
    assert message in res.output
    assert "Traceback" not in res.output


def test_broken_task_file_names_path_line_and_field(tmp_path):
    f = tmp_path / "tasks.jsonl"
    good = {
        "id": "a",
        "domain": "scholar",
        "level": "KS",
        "family": "x",
        "question": "q",
        "answers": ["1"],
    }
    f.write_text(json.dumps(good) + "\n" + json.dumps({**good, "level": "ZZ"}) + "\n")
    res = runner.invoke(app, [*BASE, "--tasks", str(f), "--log-dir", str(tmp_path)])
    assert res.exit_code == 2
    assert f"{f}:2: invalid task: field level" in res.output.replace("\n", "")


def test_environment_variable_twins(tmp_path):
    env = {
        "RALEVAL_MODEL": "scripted/abstain",
        "RALEVAL_LIMIT": "2",
        "RALEVAL_LOG_DIR": str(tmp_path),
        "RALEVAL_DISPLAY": "none",
    }
    res = runner.invoke(app, ["run", "-E", "size=tiny"], env=env)
    assert res.exit_code == 0, res.output
    assert (tmp_path / "scholar__react__scripted_abstain__scholar").is_dir()


def test_yaml_matrix_runs_every_combination(tmp_path):
    cfg = tmp_path / "matrix.yaml"
    cfg.write_text(
        "env: scholar\nenv_options: {size: tiny}\nworkflows: [react]\n"
        "models: [scripted/oracle, scripted/abstain]\ntasks: scholar-ks\nlimit: 2\n"
        "tasks_per_family: 4\n"
    )
    res = runner.invoke(
        app, ["run", "--config", str(cfg), "--log-dir", str(tmp_path), "--display", "none"]
    )
    assert res.exit_code == 0, res.output
    dirs = sorted(p.name for p in tmp_path.iterdir() if p.is_dir())
    assert dirs == [
        "scholar__react__scripted_abstain__scholar-ks",
        "scholar__react__scripted_oracle__scholar-ks",
    ]
    # the combined table: written three ways and printed
    import csv

    rows = list(csv.DictReader((tmp_path / "matrix.csv").open()))
    assert [(r["model"], r["n"], r["f1"]) for r in rows] == [
        ("scripted/oracle", "2", "1.0"),
        ("scripted/abstain", "2", "0.0"),
    ]
    assert json.loads((tmp_path / "matrix.json").read_text())[0]["correct"] == 1.0
    md = (tmp_path / "matrix.md").read_text()
    assert "| scholar | react | scripted/oracle | scholar-ks | 2 | 0 | 1.000 | 1.000 |" in md
    assert md in res.output and "matrix: " in res.output
    assert (tmp_path / "matrix-report.html").exists()  # one combined report


def test_explicit_default_option_is_the_same_run(tmp_path):
    """-W max_steps=10 (the default) resumes the run made without it."""
    base = [*BASE, "--tasks", "scholar-ks", "--limit", "2", "--log-dir", str(tmp_path)]
    assert runner.invoke(app, base).exit_code == 0
    res = runner.invoke(app, [*base, "-W", "max_steps=10", "-E", "seed=0"])
    assert res.exit_code == 0, res.output
    assert "0 episodes run, 2 already done" in res.output


def test_malformed_yaml_is_a_clear_error(tmp_path):
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("models: [scripted/oracle\n")
    res = runner.invoke(app, ["run", "--config", str(cfg)])
    assert res.exit_code == 2 and f"{cfg}:2:1: expected ',' or ']'" in res.output


@pytest.mark.parametrize("kind", ["envs", "workflows", "models", "tasks", "metrics"])
def test_list(kind):
    res = runner.invoke(app, ["list", kind])
    assert res.exit_code == 0, res.output
    expected = {
        "envs": "scholar",
        "workflows": "react",
        "models": "scripted",
        "tasks": "scholar-ks",
        "metrics": "f1",
    }[kind]
    assert expected in res.output


def test_help_is_fast_and_loads_no_plugins():
    code = (
        "import sys, time; t=time.perf_counter(); from raleval.app.cli import app; "
        "print(time.perf_counter()-t, any(m.startswith(('langgraph','transformers',"
        "'raleval.envs')) for m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env={**os.environ}
    )
    seconds, heavy = out.stdout.split()
    assert heavy == "False"
    assert float(seconds) < 1.0


def test_every_command_list_shows_whole_summaries_not_the_docstrings_line_breaks():
    """``raleval --help`` cut each command's summary at its docstring's line ends ("...
    infrastructure reasons (the earlier" / "attempts stay in ..."): on a wide terminal every
    summary is one line, in the top list and in each group's."""
    from raleval.app.cli.base import plain_text

    groups = [((), app)] + [((g.name,), g.typer_instance) for g in app.registered_groups]
    checked = 0
    for prefix, group in groups:
        result = runner.invoke(app, [*prefix, "--help"], env={"COLUMNS": "400"})
        assert result.exit_code == 0, result.output
        lines = [" ".join(line.strip(" │").split()) for line in result.output.splitlines()]
        for info in group.registered_commands:
            name = info.name or info.callback.__name__.replace("_", "-")
            summary = plain_text(info.help or info.callback.__doc__ or "")
            assert f"{name} {summary}" in lines, (prefix, name, summary)
            checked += 1
    assert checked >= 25


def test_list_envs_states_each_default_world_and_task_set():
    res = runner.invoke(app, ["list", "envs"], env={"COLUMNS": "200"})
    text = " ".join(res.output.split())
    assert "Default world: size=tiny, seed=0. Default task set: crag-kg." in text
    assert "Default world: size=small, seed=0. Default task set: scholar." in text
    assert "Default world: backend=generated, size=small, seed=0. Default task set: wiki." in text


def test_a_model_named_by_a_long_path_gets_a_short_run_directory_name():
    from raleval.config import RunConfig

    path = "/" + "/".join(["deep"] * 20) + "/SmolLM2-135M-Instruct.Q4_1.gguf"
    slug = RunConfig(model=f"local/{path}").slug()
    other = RunConfig(model="local//elsewhere/SmolLM2-135M-Instruct.Q4_1.gguf").slug()
    assert "local_SmolLM2-135M-Instruct.Q4_1.gguf-" in slug and "deep" not in slug
    assert slug != other  # same file name, other file: its own run directory


def test_list_metrics_names_a_metric_of_two_names_once():
    """Issue 50: `relaxed` and `relaxed_f1` were listed twice with one text."""
    res = CliRunner().invoke(app, ["list", "metrics"], env={"COLUMNS": "120"})
    assert res.exit_code == 0, res.output
    heads = [line.split("  ")[0] for line in res.output.splitlines() if line[:1].strip()]
    assert "relaxed, relaxed_f1" in heads
    assert len(heads) == len(set(heads))


def test_a_matrix_refuses_a_later_cell_s_wrong_option_before_the_first_cell_runs(tmp_path):
    """A study's third block asked for ``model_options: {temperature: 0.7}``; the run stopped
    when that cell's model loaded, after the blocks before it had run for hours. Every cell
    is checked first: nothing runs, exit 2, and the message says where the option goes."""
    cfg = tmp_path / "matrix.yaml"
    cfg.write_text(
        "env: scholar\nenv_options: {size: tiny}\nworkflows: [react]\nmodels: [scripted/oracle]\n"
        "tasks: scholar-ks\nlimit: 2\n---\n"
        "env: scholar\nenv_options: {size: tiny}\nworkflows: [react]\n"
        "models: [scripted/abstain]\ntasks: scholar-ks\nlimit: 2\nepochs: 3\n"
        "model_options: {temperature: 0.7}\n"
    )
    res = runner.invoke(
        app, ["run", "--config", str(cfg), "--log-dir", str(tmp_path), "--display", "none"]
    )
    assert res.exit_code == 2, res.output
    assert "'temperature' is a workflow option" in res.output
    assert "-W temperature=0.7" in res.output
    assert not [p for p in tmp_path.iterdir() if p.is_dir()]  # no cell ran
