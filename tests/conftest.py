"""Shared fixtures: the tiny scholar world and a helper to run configurations."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest

from raleval.app.runner import RunSummary, run_sync
from raleval.config import RunConfig
from raleval.store import RESULTS, ResultsFile

REPO = Path(__file__).resolve().parents[1]
# The reference material beside the clone (the project's, not a user's). RALEVAL_TEST_SHARED
# points it elsewhere: .ci/run points it at an empty folder to show a clone with nothing beside
# it passes.
SHARED = Path(os.environ.get("RALEVAL_TEST_SHARED") or REPO.parent / "shared")


def needs_shared(path: Path) -> pytest.MarkDecorator:
    """Skip, saying why, when ``path`` (under ``SHARED``) is absent. CI has ``../shared``
    beside the repository, so there a missing file fails the test instead, unless CI hid the
    folder on purpose through ``RALEVAL_TEST_SHARED``."""
    required = bool(os.environ.get("CI")) and not os.environ.get("RALEVAL_TEST_SHARED")
    return pytest.mark.skipif(
        not path.exists() and not required,
        reason=f"needs {path.name} from the reference folder beside the clone ({path.parent})",
    )


def doc_block(text: str, name: str) -> str:
    """The lines between ``<!-- NAME:start -->`` and ``<!-- NAME:end -->`` in a page (what
    ``raleval study ... --into FILE --block NAME`` writes)."""
    return text.split(f"<!-- {name}:start -->\n", 1)[1].split(f"<!-- {name}:end -->", 1)[0]


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config.option, "loadscopereorder"):  # xdist: keep the order chosen below
        config.option.loadscopereorder = False
    # Hermetic: no test may see responses or weights cached by an earlier run or by the user.
    import os
    import tempfile

    os.environ["RALEVAL_CACHE_DIR"] = tempfile.mkdtemp(prefix="raleval-test-cache-")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under the README's ``-n 2 --dist loadfile`` each file goes whole to one worker, in the
    order of this list (``pytest_configure`` turns off xdist's own reordering, which hands out
    the files with the most tests first): the files holding a test marked ``slow`` first, then
    the rest by their number of tests, most first. By xdist's order test_readme.py and
    test_local_model.py, a few tests taking minutes, came among the last, where one worker
    could run them after the other had no file left. The sort is stable: each file's own
    order stays."""
    slow = {item.path for item in items if item.get_closest_marker("slow")}
    count = Counter(item.path for item in items)
    items.sort(key=lambda item: (item.path not in slow, -count[item.path]))


@pytest.fixture(scope="session")
def scholar_env():
    from raleval.envs.scholar import make_scholar_env

    return make_scholar_env(size="tiny", seed=0)


def run_config(tmp_path: Path, **overrides) -> tuple[RunSummary, list]:
    data = {
        "env": "scholar",
        "env_options": {"size": "tiny"},
        "workflow": "react",
        "model": "scripted/oracle",
        "tasks": "scholar-ks",
        "tasks_per_family": 12,
        "log_dir": tmp_path,
    }
    data.update(overrides)
    summary = run_sync(RunConfig(**data))
    return summary, list(ResultsFile(summary.run_dir / RESULTS))


def finished_and_half_cells(log_dir: Path, scratch: Path) -> tuple[RunSummary, RunSummary]:
    """In ``log_dir``, a finished ReAct cell and a ``direct`` cell with 2 episodes on disk whose
    tasks file holds 3 (one run in ``scratch`` in full gives it): an unfinished cell, as a
    chunk stopped by its time limit leaves one."""
    from raleval.store import TASKS

    done, _ = run_config(log_dir, tasks_per_family=3)
    half, _ = run_config(log_dir, tasks_per_family=3, workflow="direct", limit=2)
    more, _ = run_config(scratch, tasks_per_family=3, workflow="direct")
    (half.run_dir / TASKS).write_bytes((more.run_dir / TASKS).read_bytes())
    return done, half


def script_env(**extra: str) -> dict[str, str]:
    """The environment for a repository script run in a subprocess: this interpreter's
    ``raleval`` first on PATH, plus ``extra``."""
    import sys

    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    return {**os.environ, "PATH": path, **extra}


def options_for(workflow: str, **options):
    """Those of ``options`` that ``workflow``'s own config has (a test that runs several
    workflows with one set of budgets; each workflow refuses options it does not have)."""
    from raleval import registry

    fields = registry.workflows.get(workflow).Config.model_fields
    return {k: v for k, v in options.items() if k in fields}


def standalone_workflows() -> list[str]:
    """The registered workflows that run with no argument: ``agent:MODULE:FACTORY`` and
    ``command:CMD`` need the agent or program they evaluate (their own tests give them one)."""
    from raleval import registry

    return sorted(
        n for n in registry.workflows.names()
        if getattr(registry.workflows.get(n), "parametrized", None) is None
    )  # fmt: skip
