"""The out-of-tree example (examples/bookshop) installs as its own package and runs with every
workflow, registered by its entry point alone: the "add your own environment" tutorial works."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = ["react", "function_calling", "pal", "dfsdt", "planned", "direct"]


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    target = tmp_path_factory.mktemp("site")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(target),
            str(ROOT / "examples" / "bookshop"),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return {**os.environ, "PYTHONPATH": str(target)}


def _raleval(env, *args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "raleval", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_listed_without_any_edit_to_raleval(installed, tmp_path):
    out = _raleval(installed, "list", "envs", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "bookshop" in out.stdout
    # and absent when the package is not on the path: nothing in raleval names it
    plain = {k: v for k, v in installed.items() if k != "PYTHONPATH"}
    assert "bookshop" not in _raleval(plain, "list", "envs", cwd=tmp_path).stdout


@pytest.mark.parametrize("workflow", WORKFLOWS)
def test_oracle_scores_one_with_every_workflow(installed, tmp_path, workflow):
    from raleval.workflows.sandbox import check_isolation

    if workflow == "pal" and check_isolation() is not None:
        pytest.skip(check_isolation())
    out = _raleval(
        installed,
        "run",
        "--env",
        "bookshop",
        "--model",
        "scripted/oracle",
        "--limit",
        "5",
        "--workflow",
        workflow,
        "--log-dir",
        str(tmp_path),
        "--display",
        "none",
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    run_dir = tmp_path / f"bookshop__{workflow}__scripted_oracle__bookshop"
    results = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    assert len(results) == 5
    assert [r["scores"]["f1"] for r in results] == [1.0] * 5
    assert {r["error_type"] for r in results} == {"AM" if workflow == "direct" else "EM"}
