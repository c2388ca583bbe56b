"""Task generation: seconds to generate N verified tasks per family (gold calls executed).

Worlds are built (or loaded from the cache) first and not timed; each family then generates
``--n`` tasks ``--repeats`` times with different seeds, and the median is reported.

    python benchmarks/task_generation.py [--size small] [--n 100] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import time

from _common import write_json

from raleval import registry


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default="small")
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    envs: dict[str, object] = {}
    rows = {}
    for fid in registry.task_families.names():
        fam = registry.task_families.get(fid)
        if fam.env not in envs:
            started = time.perf_counter()
            envs[fam.env] = registry.envs.get(fam.env)(size=args.size)
            print(f"env {fam.env} ({args.size}) ready in {time.perf_counter() - started:.2f} s")
        times, counts = [], []
        for seed in range(args.repeats):
            started = time.perf_counter()
            tasks = fam.generate(envs[fam.env], args.n, 100 + seed)
            times.append(time.perf_counter() - started)
            counts.append(len(tasks))
        rows[fid] = {
            "env": fam.env,
            "median_s": round(statistics.median(times), 4),
            "max_s": round(max(times), 4),
            "tasks": min(counts),
            "tasks_per_s": round(args.n / statistics.median(times), 1),
        }
        print(
            f"{fid:20s} {fam.env:8s} {min(counts):4d} tasks  median {rows[fid]['median_s']:.3f} s"
            f"  ({rows[fid]['tasks_per_s']} tasks/s)"
        )
    slowest = max(rows, key=lambda f: rows[f]["median_s"])
    print(f"slowest family: {slowest} {rows[slowest]['median_s']:.3f} s (target < 30 s)")
    write_json("task_generation", {"size": args.size, "n": args.n, "families": rows})


if __name__ == "__main__":
    main()
