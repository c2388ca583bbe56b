"""Follow one run's configuration through the calls that pass it on (a test helper).

Adapted from the lead's measurement script (/work/prompts/trace_config.py). A call is *followed*
when its caller was followed (the root is :func:`raleval.app.runner.run_sync`) and one of its
arguments carries the configuration: the ``RunConfig`` itself, the value of one of its fields
(the same object, not an equal one), or a dataclass / pydantic value built from them (a request
such as ``raleval.app.taskset.TaskSetRequest``: one level of nesting, so the tasks layer's
``TaskRequest`` inside it counts too). Without the last rule a request built from the config
would hide every call it is passed to. An interned name held by a value is not evidence that
the value was built from the config (a task family's ``env`` is the same ``"scholar"`` object
as the config's), so a carrier needs a field holding the config's own object.

Followed calls give a sequence of modules; consecutive calls in one module are one *visit*, and
a visit to a module of a higher layer than the one before is a *return to a higher layer*.
``python tests/trace_config.py [-v]`` prints the numbers (and the visits).
"""

from __future__ import annotations

import dataclasses
import itertools
import sys
import tempfile
from pathlib import Path
from typing import Any

LAYERS = {
    "raleval.app": 6,
    "raleval.analysis": 5,
    "raleval.workflows": 4,
    "raleval.tasks": 3,
    "raleval.grading": 2,
    "raleval.envs": 1,
    "raleval.agents": 1,
}


def layer(module: str) -> int:
    for prefix, rank in LAYERS.items():
        if module == prefix or module.startswith(prefix + "."):
            return rank
    return 0


def _fields(value: Any) -> list[Any]:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [getattr(value, f.name, None) for f in dataclasses.fields(value)]
    fields = getattr(type(value), "model_fields", None)
    if isinstance(fields, dict) and type(value).__module__.startswith("raleval"):
        return [getattr(value, f, None) for f in fields]
    return []


def trace_run(config: Any) -> list[tuple[str, str]]:
    """(module, function) of every followed call of ``run_sync(config, "none")``."""
    from raleval.app.runner import run_sync
    from raleval.config import RunConfig

    seq: list[tuple[str, str]] = []
    traced: set[int] = set()
    values: dict[int, Any] = {}

    def remember(cfg: RunConfig) -> None:
        for name in type(cfg).model_fields:
            v = getattr(cfg, name)
            if v is None or isinstance(v, (bool, int, float)):
                continue
            values[id(v)] = v  # kept alive, so the id stays its own

    def known(v: Any) -> bool:
        return id(v) in values and values[id(v)] is v

    def derived(v: Any) -> bool:
        # an interned name ("scholar") is the same object wherever it is written: a family's
        # ``env`` field holding it does not make the family a value built from the config
        if type(v) is str and v.isidentifier() and sys.intern(v) is v:
            return False
        return known(v)

    def carries(v: Any, depth: int = 2) -> bool:
        if depth == 0 or v is None or isinstance(v, (str, bool, int, float)):
            return False
        return any(derived(f) or carries(f, depth - 1) for f in _fields(v))

    def prof(frame: Any, event: str, arg: Any) -> None:
        if event == "return":
            traced.discard(id(frame))
            return
        if event != "call":
            return
        module = frame.f_globals.get("__name__", "")
        if not module.startswith("raleval"):
            return
        code = frame.f_code
        root = code.co_name == "run_sync" and module == "raleval.app.runner"
        caller = frame.f_back
        if not root and (caller is None or id(caller) not in traced):
            return
        hit = False
        for name in code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]:
            v = frame.f_locals.get(name)
            if isinstance(v, RunConfig):
                remember(v)
                hit = True
            elif known(v) or carries(v):
                hit = True
        if hit:
            traced.add(id(frame))
            seq.append((module, code.co_name))

    sys.setprofile(prof)
    try:
        run_sync(config, "none")
    finally:
        sys.setprofile(None)
    return seq


def visits(seq: list[tuple[str, str]]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for module, function in seq:
        if not out or out[-1][0] != module:
            out.append((module, function))
    return out


def returns_up(mods: list[tuple[str, str]]) -> int:
    return sum(1 for a, b in itertools.pairwise(mods) if layer(b[0]) > layer(a[0]))


def measure(log_dir: Path) -> dict[str, Any]:
    """The numbers for the reference run: scripted oracle, tiny scholar world, four tasks."""
    from raleval.config import RunConfig

    config = RunConfig(
        env="scholar",
        env_options={"size": "tiny"},
        model="scripted/oracle",
        tasks="scholar-ks",
        tasks_per_family=4,
        limit=4,
        log_dir=log_dir,
    )
    seq = trace_run(config)
    mods = visits(seq)
    return {
        "calls": len(seq),
        "module_visits": len(mods),
        "returns_to_higher_layer": returns_up(mods),
        "modules": len({m for m, _ in mods}),
        "visits": mods,
    }


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        numbers = measure(Path(tmp))
    shown = {k: v for k, v in numbers.items() if k != "visits"}
    print(" ".join(f"{k} {v}" for k, v in shown.items()))
    if "-v" in sys.argv:
        for m in numbers["visits"]:
            print("  ", m)
