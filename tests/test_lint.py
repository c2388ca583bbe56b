"""ruff is configured in pyproject.toml and the tree is clean."""

import shutil
import subprocess
import sys

import pytest

from .conftest import REPO


@pytest.mark.skipif(
    shutil.which("ruff") is None and sys.prefix == sys.base_prefix,
    reason="ruff is installed with the dev extra",
)
def test_ruff_clean():
    res = subprocess.run(
        [sys.executable, "-m", "ruff", "check", str(REPO)], capture_output=True, text=True
    )
    assert res.returncode == 0, res.stdout + res.stderr
