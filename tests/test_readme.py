"""The README's commands are the ones CI runs and the ones that work."""

import re

from .conftest import REPO


def _blocks() -> list[str]:
    return re.findall(r"```bash\n(.*?)```", (REPO / "README.md").read_text(), re.S)


def test_ci_runs_exactly_the_readme_test_command():
    test_cmd = next(b.strip() for b in _blocks() if "pytest" in b)
    ci = (REPO / ".ci" / "run").read_text().splitlines()
    assert test_cmd in ci, f"{test_cmd!r} must be a line of .ci/run"


def test_readme_main_job_command_runs(tmp_path):
    from typer.testing import CliRunner

    from raleval.cli import app

    main_job = next(b for b in _blocks() if "raleval run" in b and "pip install -e ." in b)
    argv = main_job.split("raleval run", 1)[1].split()
    res = CliRunner().invoke(
        app,
        [
            "run",
            *argv,
            "-E",
            "size=tiny",
            "--tasks-per-family",
            "20",
            "--log-dir",
            str(tmp_path),
            "--display",
            "none",
        ],
    )
    assert res.exit_code == 0, res.output
    assert "20 episodes run" in res.output
