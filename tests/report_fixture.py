"""The benchmarks' run replicator, for tests that need a large run directory."""

import importlib.util

from .conftest import REPO

_spec = importlib.util.spec_from_file_location("bench_common", REPO / "benchmarks" / "_common.py")
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)
replicate_run = _module.replicate_run
