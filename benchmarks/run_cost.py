"""What a large run costs the driver: time and memory per episode, measured, then scaled.

Runs ``--episodes`` ReAct episodes of the scripted oracle (zero model latency, so the time is
raleval's own work) on generated scholar tasks, in one process, in worker processes or on a
local Ray cluster (``--backend processes|ray --workers N``), and then resumes the finished run
(every episode skipped).
Reports wall time, episodes per second, the driver's peak RSS, the bytes per result line, and
the time and memory of reading the results back on resume; and the same scaled linearly to
``--scale`` episodes (100,000 by default). The scaled figures are an extrapolation, printed as
such; a real model adds its latency divided by the episodes in flight.

    python benchmarks/run_cost.py [--episodes 2000] [--backend processes|ray --workers 2]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path

from _common import write_json


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--episodes", type=int, default=2000)
    parser.add_argument("--backend", default="local", choices=["local", "processes", "ray"])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--max-connections", type=int, default=64)
    parser.add_argument("--scale", type=int, default=100_000)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    import psutil

    from raleval.app.rundir import latest_heads
    from raleval.app.runner import run_sync
    from raleval.config import RunConfig
    from raleval.store import RESULTS, TASKS, read_tasks

    proc = psutil.Process()
    peak = [proc.memory_info().rss]
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], proc.memory_info().rss)
            time.sleep(0.05)

    threading.Thread(target=sample, daemon=True).start()
    with tempfile.TemporaryDirectory() as tmp:
        cfg = RunConfig(
            env="scholar",
            env_options={"size": "small"},
            workflow="react",
            model="scripted/oracle",
            tasks="scholar-ks",
            tasks_per_family=args.episodes,
            limit=args.episodes,
            max_connections=args.max_connections,
            backend=args.backend,
            workers=args.workers,
            log_dir=Path(tmp),
            cache=False,
        )
        load = os.getloadavg()[0]
        t0 = time.monotonic()
        summary = run_sync(cfg)
        wall = time.monotonic() - t0
        stop.set()
        assert summary.ran == args.episodes, summary
        path = summary.run_dir / RESULTS
        line_bytes = path.stat().st_size / args.episodes
        tracemalloc.start()
        t0 = time.monotonic()
        held = latest_heads(summary.run_dir)  # what a resume reads before its first episode
        read_s = time.monotonic() - t0
        read_mb = tracemalloc.get_traced_memory()[0] / 1e6
        tracemalloc.stop()
        del held
        tracemalloc.start()
        tasks = read_tasks(summary.run_dir / TASKS)  # the driver holds the run's tasks
        tasks_mb = tracemalloc.get_traced_memory()[0] / 1e6
        tracemalloc.stop()
        del tasks
        t0 = time.monotonic()
        again = run_sync(cfg)
        resume_s = time.monotonic() - t0
        assert again.ran == 0 and again.skipped == args.episodes
    n, k = args.episodes, args.scale / args.episodes
    row = {
        "episodes": n,
        "backend": args.backend,
        "workers": args.workers if args.backend != "local" else 1,
        "max_connections": args.max_connections,
        "wall_s": wall,
        "episodes_per_s": n / wall,
        "driver_peak_rss_gb": peak[0] / 1e9,
        "result_line_bytes": line_bytes,
        "resume_read_s": read_s,
        "resume_read_mb": read_mb,
        "resume_run_s": resume_s,
        "tasks_mb": tasks_mb,
        "load_average": load,
        "scaled_to": args.scale,
        "scaled": {
            "wall_h_at_this_rate": wall * k / 3600,
            "results_gb": line_bytes * args.scale / 1e9,
            "resume_read_s": read_s * k,
            "resume_read_gb": read_mb * k / 1e3,
            "tasks_gb": tasks_mb * k / 1e3,
        },
    }
    print(
        f"{n} episodes ({args.backend}, load {load:.1f}): {wall:.1f} s, {n / wall:.0f} episodes/s; "
        f"driver peak RSS {row['driver_peak_rss_gb']:.2f} GB; {line_bytes:.0f} bytes per result; "
        f"resume reads the results in {read_s:.2f} s holding {read_mb:.0f} MB, a resumed run "
        f"takes {resume_s:.1f} s; the tasks take {tasks_mb:.0f} MB"
    )
    sc = row["scaled"]
    print(
        f"scaled linearly to {args.scale} episodes (an extrapolation): "
        f"{sc['wall_h_at_this_rate']:.2f} h at this rate, results.jsonl "
        f"{sc['results_gb']:.2f} GB, resume reads it in {sc['resume_read_s']:.0f} s holding "
        f"{sc['resume_read_gb']:.2f} GB; the tasks {sc['tasks_gb']:.2f} GB"
    )
    print(f"wrote {write_json('run_cost', row, args.out)}")


if __name__ == "__main__":
    main()
