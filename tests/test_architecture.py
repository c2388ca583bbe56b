"""The layers of docs/architecture.md, checked by import-linter's contracts in pyproject.toml.

The repository keeps ``envs/``, ``tasks/``, ... beside ``raleval/`` and maps them into the
package at install time, so the check runs on the tree as it installs: a copy laid out like the
wheel, imported from a folder where the checkout cannot shadow it.
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("envs", "workflows", "agents", "grading", "tasks", "analysis")


def _installed_layout(dest: Path) -> Path:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "raleval", dest / "raleval", ignore=ignore)
    for folder in FOLDERS:
        shutil.copytree(ROOT / folder, dest / "raleval" / folder, ignore=ignore)
    return dest


def _lint(tree: Path) -> subprocess.CompletedProcess[str]:
    lint = Path(sys.executable).with_name("lint-imports")
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run(
        [str(lint), "--config", str(ROOT / "pyproject.toml"), "--no-cache"],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_import_contracts_hold(tmp_path):
    result = _lint(_installed_layout(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "BROKEN" not in result.stdout
    assert result.stdout.count("KEPT") >= 5


@pytest.mark.parametrize(
    ("module", "line"),
    [
        ("raleval/tasks/_probe.py", "from raleval.analysis import taxonomy\n"),
        ("raleval/grading/_probe.py", "def f():\n    from raleval.tasks import catalog\n"),
        ("raleval/envs/wiki/_probe.py", "def f():\n    from raleval.envs.crag import world\n"),
        ("raleval/records_probe.py", "def f():\n    import raleval.app.runner\n"),
        ("raleval/agents/_probe.py", "from raleval.envs import scholar\n"),
        ("raleval/analysis/_probe.py", "from raleval.workflows import common\n"),
        ("raleval/app/plan_probe.py", "def f():\n    from raleval.app import runner\n"),
    ],
)
def test_a_violation_breaks_the_contracts(tmp_path, module, line):
    """Each contract catches what it forbids, at module level and inside a function."""
    tree = _installed_layout(tmp_path)
    (tree / module).write_text(line, encoding="utf-8")
    extend = {"raleval/records_probe.py": "records.py", "raleval/app/plan_probe.py": "app/plan.py"}
    if module in extend:  # core modules are listed by name; a circle needs the runner's side
        target = tree / "raleval" / extend[module]
        target.write_text(target.read_text() + "\n" + line.replace("def f", "def _f"))
    result = _lint(tree)
    assert result.returncode != 0
    assert "BROKEN" in result.stdout


def test_every_core_module_is_under_the_core_contract():
    """A new module in raleval/ is core and must not escape the contract by being unlisted."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    core = next(c for c in contracts if c["name"].startswith("Core"))
    on_disk = {
        f"raleval.{p.stem}" for p in (ROOT / "raleval").glob("*.py") if not p.stem.startswith("__")
    }
    assert set(core["source_modules"]) == on_disk
    assert all(not c.get("ignore_imports") for c in contracts)


def test_no_module_imports_another_modules_private_names():
    """``from raleval.x import _name`` reaches past a module's interface; tests included."""
    import ast

    found = []
    for path in sorted(ROOT.rglob("*.py")):
        if {".venv", ".git", "build"} & set(path.relative_to(ROOT).parts):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("raleval"):
                private = [a.name for a in node.names if a.name.startswith("_")]
                private = [n for n in private if not n.startswith("__")]
                found += [f"{path.relative_to(ROOT)}:{node.lineno} {n}" for n in private]
    assert found == []


def test_one_runs_config_makes_few_trips(tmp_path):
    """Followed from ``run_sync`` through every call that passes the run's config, a value of
    its fields or a request built from them (tests/trace_config.py), one run (scripted oracle,
    tiny scholar world, four tasks) visits modules at most 40 times and returns to a higher
    layer at most 8 times: the plan asks for its task set once (docs/architecture.md)."""
    sys.path.insert(0, str(Path(__file__).parent))
    try:
        from trace_config import measure
    finally:
        sys.path.remove(str(Path(__file__).parent))

    numbers = measure(tmp_path)
    shown = {k: v for k, v in numbers.items() if k != "visits"}
    print("config trace:", shown)
    for module, function in numbers["visits"]:
        print("  ", module, function)
    modules = [m for m, _ in numbers["visits"]]
    # the trace follows the run: it reaches the task set, its demonstrations and the backend
    assert "raleval.app.taskset" in modules
    assert "raleval.tasks.catalog" in modules
    assert modules[-1] == "raleval.app.local_backend"
    # the task set is prepared in one trip: app/ enters the catalog once, to prepare the tasks
    # (loading, testbeds, the view filter, selection, subgoals, the foreign-world check)
    from_app = [
        (a, b)
        for a, b in itertools.pairwise(modules)
        if a.startswith("raleval.app.") and b == "raleval.tasks.catalog"
    ]
    assert len(from_app) == 1, from_app
    assert numbers["module_visits"] <= 40
    assert numbers["returns_to_higher_layer"] <= 8
