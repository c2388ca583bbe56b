"""Where ``--max-connections auto`` settles against a server that holds four requests at once.

The server is the test suite's stub (``tests/stub_openai.py``, model ``capacity``): it answers
429 with ``Retry-After: 0`` to a request that would make a fifth in flight and serves the
others in ``--hold`` seconds. Each run is ``raleval run`` of 40 one-call episodes with
``--max-connections auto``, as ``tests/test_concurrency.py`` runs it. For each run the benchmark
reads ``concurrency.jsonl`` and counts: the level it settled at, whether it ever cut below the
server's capacity (a halving to 2 or less after the first cut), the refusals the server sent,
and episodes lost. ``--busy N`` runs N busy loops beside it, as CI's other test worker does.

``--baseline REV`` runs the same number on a commit (its tree from ``git archive``, imported
ahead of the installed package; the server and this script stay the working tree's), the
two alternating run by run, and prints the working tree's figures over the baseline's.

    python benchmarks/aimd_settle.py --runs 100 --busy 1
    python benchmarks/aimd_settle.py --runs 100 --busy 1 --baseline 04bb6ed
"""

from __future__ import annotations

import argparse
import collections
import functools
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
from _common import write_json  # noqa: E402

CAPACITY = 4  # the stub's
EPISODES = 40  # a run's, as the test's


@functools.cache
def _stub() -> Any:
    """The test suite's stub server module, from the working tree whichever tree is measured."""
    spec = importlib.util.spec_from_file_location("stub_openai", REPO / "tests" / "stub_openai.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def one_run(hold: float) -> dict[str, Any]:
    """One run at ``auto``; what its record and results say."""
    from typer.testing import CliRunner

    from raleval.app.cli import app
    from raleval.concurrency import LOG_NAME
    from raleval.store import RESULTS

    with tempfile.TemporaryDirectory() as tmp, _stub().StubServer() as stub:
        stub.hold_s = hold
        cmd = _stub().capacity_run_args(stub.base_url, tmp, "auto", "auto", EPISODES)
        start = time.perf_counter()
        res = CliRunner().invoke(app, cmd)
        wall = time.perf_counter() - start
        run = Path(tmp) / "auto"
        record = [json.loads(x) for x in (run / LOG_NAME).read_text().splitlines()]
        results = [json.loads(x) for x in (run / RESULTS).read_text().splitlines()]
    cuts = [e for e in record[2:] if e["why"].startswith("HTTP")]
    return {
        "exit": res.exit_code,
        "settled": record[-1]["settled"],
        "cut_below_capacity": any(e["limit"] <= CAPACITY // 2 for e in cuts),
        "refused": stub.refused,
        "lost": sum(1 for r in results if r["failure"]) + EPISODES - len(results),
        "wall_s": wall,
        "raleval": str(Path(sys.modules["raleval"].__file__ or "").parent),
        "shape": " ".join(f"{e['why']}:{e['limit']}/{e['settled']}" for e in record),
    }


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(rows)
    settled = collections.Counter(r["settled"] for r in rows)
    return {
        "runs": n,
        "settled": dict(sorted(settled.items())),
        "settled_above_capacity": sum(r["settled"] > CAPACITY for r in rows),
        "cut_below_capacity": sum(r["cut_below_capacity"] for r in rows),
        "runs_with_lost_episodes": sum(r["lost"] > 0 or r["exit"] != 0 for r in rows),
        "refused_mean": sum(r["refused"] for r in rows) / n,
        "wall_s_median": sorted(r["wall_s"] for r in rows)[n // 2],
        "shapes": dict(collections.Counter(r["shape"] for r in rows).most_common(6)),
    }


def _child(hold: float, runs: int) -> None:
    """Runs in a subprocess whose sys.path puts the measured tree first; prints JSON lines."""
    for _ in range(runs):
        print(json.dumps(one_run(hold)), flush=True)


def _measure(tree: Path | None, hold: float, runs: int) -> list[dict[str, Any]]:
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(tree), env.get("PYTHONPATH", "")])
    out = subprocess.run(
        [sys.executable, __file__, "--child", "--hold", str(hold), "--runs", str(runs)],
        env=env, cwd=tempfile.gettempdir(), capture_output=True, text=True, check=True,
    )  # fmt: skip
    rows = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    wrong = {r["raleval"] for r in rows} - {str(Path(tree or REPO) / "raleval")}
    if wrong:
        raise SystemExit(f"measured raleval from {wrong}, not {tree}")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--hold", type=float, default=0.1, help="server seconds per request")
    parser.add_argument("--busy", type=int, default=1, help="busy loops beside the runs")
    parser.add_argument("--baseline", help="a commit to measure against, alternating")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if args.child:
        _child(args.hold, args.runs)
        return
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.busy)]
    loads: list[float] = []
    rows: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            trees: dict[str, Path | None] = {"working tree": REPO}
            if args.baseline:
                base = Path(tmp) / "baseline"
                base.mkdir()
                archive = subprocess.run(
                    ["git", "archive", args.baseline], cwd=REPO, capture_output=True, check=True
                ).stdout
                subprocess.run(["tar", "-x", "-C", str(base)], input=archive, check=True)
                trees = {f"baseline {args.baseline}": base, **trees}
            batch = 10 if args.baseline else args.runs
            done = 0
            while done < args.runs:
                n = min(batch, args.runs - done)
                for name, tree in trees.items():
                    loads.append(os.getloadavg()[0])
                    rows[name] += _measure(tree, args.hold, n)
                done += n
    finally:
        for proc in busy:
            proc.kill()
    result = {name: summary(r) for name, r in rows.items()}
    for name, s in result.items():
        print(f"{name}: {s['runs']} runs, settled {s['settled']}")
        print(
            f"  settled above the server's {CAPACITY}: {s['settled_above_capacity']}; "
            f"cut below it: {s['cut_below_capacity']}; runs losing episodes: "
            f"{s['runs_with_lost_episodes']}; refusals per run {s['refused_mean']:.1f}; "
            f"median wall {s['wall_s_median']:.2f} s"
        )
    if args.baseline:
        new, old = result["working tree"], result[f"baseline {args.baseline}"]
        for key in ("settled_above_capacity", "cut_below_capacity", "refused_mean"):
            ratio = f"{new[key] / old[key]:.2f}" if old[key] else "none in the baseline"
            print(f"working tree / baseline, {key}: {ratio} ({new[key]:g} / {old[key]:g})")
        ratio = new["wall_s_median"] / old["wall_s_median"]
        print(f"working tree / baseline, median wall: {ratio:.2f}")
    print(f"load (1-minute) before each batch: {min(loads):.2f}-{max(loads):.2f}")
    payload = {"args": {k: v for k, v in vars(args).items() if k != "out"}, "result": result}
    print(f"wrote {write_json('aimd-settle', payload, args.out)}")


if __name__ == "__main__":
    main()
