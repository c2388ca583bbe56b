"""The built wheel holds every package folder and its CLI runs from a fresh virtualenv."""

import os
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

from .conftest import REPO

FOLDERS = ("envs", "workflows", "agents", "grading", "tasks", "analysis")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(out),
            str(REPO),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    # setuptools' warnings are its notice of what a later release stops building (a licence
    # as a table, a prompts folder shipped as data but importable): the build stays quiet
    assert "Warning" not in built.stderr, built.stderr
    (whl,) = out.glob("raleval-*.whl")
    return whl


def _package_dirs() -> set[str]:
    expected = {"raleval/"}
    for folder in FOLDERS:
        for d in [REPO / folder, *(p for p in (REPO / folder).rglob("*") if p.is_dir())]:
            if (d / "__init__.py").exists():
                rel = d.relative_to(REPO).as_posix()
                expected.add(f"raleval/{rel}/")
    return expected


def test_wheel_contains_every_package_and_no_top_level_folders(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    dirs = {n.rsplit("/", 1)[0] + "/" for n in names if n.endswith("__init__.py")}
    assert _package_dirs() <= dirs
    tops = {n.split("/", 1)[0] for n in names}
    assert not tops & set(FOLDERS), "sub-packages must not install as top-level modules"
    assert "raleval/envs/scholar/prompts/react.txt" in names
    assert "raleval/workflows/prompts/react/default.txt" in names
    assert "raleval/grading/prompts/judge_crag3.txt" in names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert {"raleval/analysis/report/template.html", "raleval/analysis/report/episode.js"} <= set(
        names
    )


def test_cli_runs_from_fresh_venv_with_the_wheel(wheel, tmp_path):
    target = tmp_path / "venv"
    venv.create(target, with_pip=False)
    py = target / "bin" / "python"
    purelib = Path(
        subprocess.check_output(
            [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], text=True
        ).strip()
    )
    # Install the wheel's files for real, without downloading its dependencies again: the
    # dependencies come from this interpreter's site-packages through a .pth line, which
    # (unlike site.addsitedir) does not run the editable-install hooks found there.
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(purelib)
    (purelib / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run(
        [str(py), "-c", "import raleval, raleval.envs.scholar; print(raleval.__file__)"],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        cwd=tmp_path,
    )
    assert out.stdout.strip().startswith(str(purelib))
    res = subprocess.run(
        [
            str(py),
            "-m",
            "raleval",
            "run",
            "--model",
            "scripted/oracle",
            "-E",
            "size=tiny",
            "--limit",
            "3",
            "--tasks-per-family",
            "3",
            "--display",
            "none",
            "--log-dir",
            str(tmp_path / "runs"),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert res.returncode == 0, res.stderr + res.stdout
    assert "3 episodes run" in res.stdout
