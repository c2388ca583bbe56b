"""Harness overhead per workflow with a zero-latency model (the scripted oracle).

For each workflow, runs the oracle on generated scholar tasks one episode at a time and reports
steps per second and the median per-step overhead: episode wall time minus model time minus
tool time, divided by the episode's steps. This is what raleval itself costs per step
(LangGraph, prompt building, parsing, recording; for PAL also the sandbox process).
Target: under 2 ms per ReAct step.

    python benchmarks/workflow_overhead.py [--episodes 200]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from _common import quantile, write_json

from raleval.app.runner import run_sync
from raleval.config import RunConfig
from raleval.store import RESULTS, ResultsFile
from raleval.workflows.sandbox import check_isolation

WORKFLOWS = ["react", "function_calling", "dfsdt", "pal", "direct", "planned"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for wf in WORKFLOWS:
            if wf == "pal" and check_isolation() is not None:
                print(f"skip pal: {check_isolation()}")
                continue
            cfg = RunConfig(
                env="scholar",
                env_options={"size": "small"},
                workflow=wf,
                model="scripted/oracle",
                tasks="scholar-ks",
                tasks_per_family=args.episodes,
                limit=args.episodes,
                max_connections=1,
                log_dir=Path(tmp),
            )
            start = time.perf_counter()
            summary = run_sync(cfg)
            wall = time.perf_counter() - start
            results = list(ResultsFile(summary.run_dir / RESULTS))
            per_step = [
                (r.wall_time_s - r.model_time_s - r.tool_time_s) / max(1, len(r.steps))
                for r in results
            ]
            steps = sum(len(r.steps) for r in results)
            rows[wf] = {
                "episodes": len(results),
                "steps": steps,
                "mean_f1": summary.mean_f1,
                "steps_per_s": steps / sum(r.wall_time_s for r in results),
                "median_overhead_ms_per_step": 1000 * statistics.median(per_step),
                "p99_overhead_ms_per_step": 1000 * quantile(per_step, 0.99),
                "run_wall_s": wall,
            }
            r = rows[wf]
            print(
                f"{wf:17s} {r['steps_per_s']:8.0f} steps/s   overhead per step: median "
                f"{r['median_overhead_ms_per_step']:.3f} ms, p99 "
                f"{r['p99_overhead_ms_per_step']:.3f} ms   (F1 {r['mean_f1']:.2f})"
            )
    print(f"wrote {write_json('workflow_overhead', {'workflows': rows}, args.out)}")


if __name__ == "__main__":
    main()
