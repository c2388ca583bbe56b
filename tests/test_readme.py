"""The README's commands are the ones CI runs and the ones that work."""

import re

import pytest

from .conftest import REPO


def _blocks() -> list[str]:
    return re.findall(r"```bash\n(.*?)```", (REPO / "README.md").read_text(), re.S)


def test_ci_runs_exactly_the_readme_test_command():
    test_cmd = next(b.strip() for b in _blocks() if "pytest" in b)
    ci = (REPO / ".ci" / "run").read_text().splitlines()
    assert test_cmd in ci, f"{test_cmd!r} must be a line of .ci/run"


def _main_job_argv() -> list[str]:
    main_job = next(b for b in _blocks() if "raleval run" in b and "pip install -e" in b)
    assert '".[local]"' in main_job, "the main job installs the embedded local model"
    return main_job.split("raleval run", 1)[1].split()


def test_readme_main_job_defaults_to_the_embedded_model():
    from raleval.config import build_config

    assert "--model" not in _main_job_argv()
    assert build_config({}).model == "local/qwen2.5-0.5b"


def test_readme_main_job_flags_run(tmp_path):
    """Every flag of the main job works; the model is swapped for the oracle to stay fast
    (the real local models are exercised by test_local_model.py)."""
    from typer.testing import CliRunner

    from raleval.app.cli import app

    res = CliRunner().invoke(
        app,
        [
            "run",
            *_main_job_argv(),
            "--model",
            "scripted/oracle",
            "-E",
            "size=tiny",
            "--tasks-per-family",
            "10",
            "--log-dir",
            str(tmp_path),
            "--display",
            "none",
        ],
    )
    assert res.exit_code == 0, res.output
    assert "10 episodes run" in res.output


def _tour() -> str:
    """The bash block under the README's "## Tour" heading, as written."""
    section = (REPO / "README.md").read_text().split("\n## Tour\n", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```bash\n(.*?)```", section, re.S)
    return block


def test_readme_tour_runs_as_written(tmp_path):
    """The tour, copied from the README into a script, runs to exit 0 in an empty working
    directory with an empty cache (issue 38: the old tour had placeholders and failed)."""
    import os
    import subprocess
    import sys

    tour = _tour()
    assert "..." not in tour.replace("# ", "#").split("#")[0]  # no placeholders
    assert "raleval report runs " in tour and "raleval export runs " in tour
    script = tmp_path / "tour.sh"
    script.write_text("set -euo pipefail\n" + tour)
    work = tmp_path / "work"
    work.mkdir()
    env = {
        **os.environ,
        # the raleval and python of this checkout's environment, as an activated venv gives
        "PATH": f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ['PATH']}",
        "RALEVAL_CACHE_DIR": str(tmp_path / "cache"),
    }
    res = subprocess.run(
        ["bash", str(script)], cwd=work, env=env, capture_output=True, text=True, timeout=600
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "0 episodes run, 20 already done" in res.stdout  # the repeated run resumed
    assert (work / "runs" / "tour-report.html").is_file()
    assert (work / "runs" / "episodes.csv").is_file()
    assert [p.name for p in work.iterdir()] == ["runs"]  # nothing left beside it (issue 61)
    assert "scripted/oracle" in res.stdout and "1.0" in res.stdout  # load_runs' F1 by model


@pytest.mark.slow
@pytest.mark.integration
def test_readme_tour_runs_after_exactly_the_readme_set_up(tmp_path):
    """Issue 50: the tour failed at `export` and `load_runs` for a user who installed only what
    the README says (`[local]` had no pandas). Here a new virtualenv gets exactly the README's
    set-up commands (the venv and the main job's install; its model run is left out: the tour
    needs no model, and the embedded model has tests of its own), then the tour runs in it."""
    import os
    import subprocess

    setup, main_job = _blocks()[0].strip(), _blocks()[1].strip()
    install = main_job.split(" && raleval run", 1)[0]
    assert setup == "python3 -m venv .venv && . .venv/bin/activate"
    assert install == 'pip install -e ".[local]"'
    venv = tmp_path / "venv"  # the README's .venv, kept out of this checkout's own .venv
    work = tmp_path / "work"
    work.mkdir()
    script = "\n".join([
        "set -euo pipefail",
        f"cd {REPO}",
        setup.replace(".venv", str(venv)),
        # --no-compile: the same files installed, without pip writing every package's
        # bytecode first (a third of the install's time here); Python compiles what it imports
        install + " --quiet --no-compile",
        f"cd {work}",
        _tour(),
    ])  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["RALEVAL_CACHE_DIR"] = str(tmp_path / "cache")
    res = subprocess.run(
        ["bash", "-c", script], env=env, capture_output=True, text=True, timeout=1500
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert (work / "runs" / "episodes.csv").is_file()
    assert "scripted/oracle" in res.stdout and "1.0" in res.stdout  # load_runs' F1 by model


def test_readme_main_job_numbers_are_the_stored_runs():
    """Issue 61: the main job's numbers in the README come from a stored run, re-scored here
    by the current code, with the commit it ran at."""
    from raleval.analysis.runs import load_run
    from raleval.records import Termination

    from .conftest import doc_block

    text = " ".join(doc_block((REPO / "README.md").read_text(), "main-job").split())
    (stored,) = re.findall(r"`(studies/readme-main-job/[^`]+)`", text)
    run = load_run(REPO / stored)
    run.rescore()
    episodes = run.results
    n = len(episodes)
    f1 = sum(t.scores["f1"] for t in episodes) / n
    right = sum(t.scores["correct"] == 1.0 for t in episodes)
    timeouts = sum(t.termination is Termination.timeout for t in episodes)
    answered = sum(bool((t.answer or "").strip()) for t in episodes)
    assert f"commit {run.header.git_revision[:7]}" in text
    assert f"F1 {f1:.2f}: {right} of {n} right" in text
    assert f"{answered} of {n} episodes answered and {timeouts} reached" in text
    assert run.header.config["model"] == "local/qwen2.5-0.5b" and n == 10


def test_readme_repeat_run_numbers_are_the_stored_runs():
    """Issue 61: what makes two runs at temperature 0 differ, measured on two stored runs of
    the main job: each model call both completed, compared reply by reply; a reply that
    differs must leave the episode's actions, answer and label as they were, as the README
    says."""
    from raleval.analysis.runs import load_run

    from .conftest import doc_block

    text = " ".join(doc_block((REPO / "README.md").read_text(), "main-job-repeat").split())
    (second,) = re.findall(r"`(studies/readme-main-job/[^`]+)`", text)
    a = {t.task_id: t for t in load_run(REPO / "studies/readme-main-job/main-a").results}
    b = {t.task_id: t for t in load_run(REPO / second).results}
    shared = [t for t in b if t in a]
    same = completed = cut = differ = 0
    for task_id in shared:
        x_run, y_run = a[task_id], b[task_id]
        for x, y in zip(x_run.llm_calls, y_run.llm_calls, strict=False):
            if x.error is None and y.error is None:
                completed += 1
                same += x.output == y.output
                differ += x.output != y.output
            else:
                assert "timeout" in (x.error, y.error)  # nothing but the time limit
                cut += 1
        actions = [[(s.tool, s.arguments) for s in r.steps] for r in (x_run, y_run)]
        assert actions[0] == actions[1], task_id
        assert x_run.answer == y_run.answer and x_run.error_type == y_run.error_type, task_id
        assert x_run.scores["f1"] == y_run.scores["f1"], task_id
    assert f"all {len(shared)} episodes" in text and len(shared) == len(a)
    assert f"same reply to {same} of the {completed} model calls" in text
    assert f"The {differ} reply that differs" in text or differ == 0
    assert ("no call was cut off by the time limit" in text) == (cut == 0)
