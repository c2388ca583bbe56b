"""The CLI reads well at 80 columns and in logs (issue 38): every ``run`` option shows a default
that agrees with RunConfig, output that is not a terminal is never wrapped, the results table
prints fractions with a legend for its labels and its time column."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import typer

from raleval.app.cli import app
from raleval.config import RunConfig

OPTION_LINE = re.compile(r"^│ +(--[a-z][a-z-]*|-[A-Za-z])\b")


def _help(command: str, columns: int = 80) -> str:
    env = {**os.environ, "COLUMNS": str(columns), "TERMINAL_WIDTH": str(columns)}
    env.pop("NO_COLOR", None)
    out = subprocess.run(
        [sys.executable, "-m", "raleval", command, "--help"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout


def _option_blocks(text: str) -> dict[str, str]:
    """Option name -> the help text under it, read from rich's boxes."""
    blocks: dict[str, str] = {}
    name = None
    for line in text.splitlines():
        m = OPTION_LINE.match(line)
        if m:
            name = m.group(1)
            blocks[name] = ""
        if line.startswith("╰"):
            name = None
        if name:
            blocks[name] += line + "\n"
    return blocks


def test_run_help_at_80_columns_shows_a_default_for_every_option():
    text = _help("run")
    assert max(len(line) for line in text.splitlines()) <= 80
    blocks = _option_blocks(text)
    command = typer.main.get_command(app).commands["run"]
    names = {next(o for o in p.opts if o.startswith("--")) for p in command.params}
    names.discard("--help")
    assert names <= set(blocks), names - set(blocks)
    for name in names:
        flat = " ".join(blocks[name].split())
        assert "default:" in flat or "required" in flat, f"{name}: {flat}"
        assert re.search(r"[a-z]{3}", flat.split("[default")[0].split(">", 1)[-1]), name
    for panel in ("Model and workflow", "Environment", "Tasks", "Budgets", "Output", "Distri"):
        assert f"─ {panel}" in text, panel


def test_run_help_defaults_agree_with_run_config():
    """A default shown in --help is RunConfig's own: the two cannot drift apart."""
    command = typer.main.get_command(app).commands["run"]
    shown = {p.name: p.show_default for p in command.params if isinstance(p.show_default, str)}
    fields = RunConfig.model_fields
    checked = 0
    for name, text in shown.items():
        default = fields[name].default if name in fields else None
        if isinstance(default, bool):  # a flag: "off", or the flag that is on
            assert text == ("off" if not default else f"--{name}"), name
            checked += 1
        elif isinstance(default, (str, int, float)):
            assert text == str(default), f"--{name}: help says {text!r}, RunConfig {default!r}"
            checked += 1
    assert checked >= 10
    assert str(fields["log_dir"].default) == shown["log_dir"]


def test_output_off_a_terminal_is_never_wrapped(tmp_path):
    """A run's closing lines, piped to a file, keep its long results path on one line."""
    log_dir = tmp_path / ("a-rather-long-folder-name-" * 4)
    argv = ["run", "--model", "scripted/oracle", "-E", "size=tiny", "--tasks", "scholar-ks"]
    argv += ["--limit", "1", "--tasks-per-family", "2", "--log-dir", str(log_dir)]
    out = subprocess.run(
        [sys.executable, "-m", "raleval", *argv, "--display", "plain"],
        env={**os.environ, "COLUMNS": "80"},
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    line = next(x for x in out.stdout.splitlines() if "episodes run" in x)
    assert str(log_dir) in line and line.endswith("results.jsonl"), out.stdout
    assert "s/ep: mean wall-clock seconds per episode" in out.stdout


def test_debug_reads_raleval_debug():
    command = typer.main.get_command(app)
    debug = next(p for p in command.params if p.name == "debug")
    assert debug.envvar == "RALEVAL_DEBUG"


def test_results_table_prints_fractions_a_legend_and_what_its_time_means():
    from rich.console import Console

    from raleval.analysis.summary import SummaryRow, render_table

    row = SummaryRow(family="1-3", level="KS", n=4, correct=0.5, f1=0.625, em=0.25, missing=0.0)
    row.labels.update({"EM": 2, "RE": 2})
    console = Console(width=200, record=True)
    console.print(render_table([row]))
    text = console.export_text()
    assert "0.625" in text and "62.5" not in text
    for label in ("EM", "AM", "GE", "RE", "TE", "ME"):
        assert re.search(rf"\b{label} [a-z]", text), label
    assert "s/ep: mean wall-clock seconds per episode" in text
