import subprocess
import sys
import textwrap

import pytest

from raleval import registry
from raleval.registry import Registry, UnknownNameError


def test_import_raleval_loads_no_plugin():
    code = textwrap.dedent("""
        import sys, raleval, raleval.registry, raleval.records
        heavy = [m for m in sys.modules if m.startswith(("raleval.envs", "raleval.workflows",
                 "raleval.agents", "raleval.tasks", "raleval.grading", "raleval.analysis",
                 "langgraph", "transformers", "openai"))]
        print(heavy)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_importing_an_env_loads_no_workflow_or_provider():
    code = (
        "import sys, raleval.envs.scholar; print(sorted(m for m in sys.modules if "
        "m.startswith(('raleval.workflows', 'raleval.agents', 'langgraph', 'matplotlib'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_unknown_name_suggests_close_matches():
    with pytest.raises(UnknownNameError) as err:
        registry.envs.get("scholr")
    assert "Did you mean 'scholar'" in str(err.value)


def test_decorator_registration_and_duplicates():
    reg: Registry = Registry("widget", "raleval.test_widgets", {})

    @reg.register("a")
    def a():
        return 1

    assert reg.get("a") is a
    assert "a" in reg.names()
    with pytest.raises(ValueError, match="already registered"):
        reg.register("a")(lambda: 2)


def test_entry_point_group_adds_an_environment(tmp_path, monkeypatch):
    # A separately installed package adds an environment just by declaring an entry point.
    pkg = tmp_path / "thirdparty_env.py"
    pkg.write_text(
        textwrap.dedent("""
        from raleval.environment import Environment
        def make_env():
            return Environment([])
    """)
    )
    dist = tmp_path / "thirdparty_env-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: thirdparty-env\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[raleval.envs]\nthirdparty = thirdparty_env:make_env\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "thirdparty" in registry.envs.names()
    factory = registry.envs.get("thirdparty")
    assert factory().tools == []
