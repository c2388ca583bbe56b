"""Report generation at scale: a 10,000-episode run (plus a small one) to one HTML file.

Real trajectories (ReAct with the oracle and with a malformed model on generated scholar tasks)
are replicated under new task ids to 10,000 episodes; the report over both runs is written and
timed (median of --repeats). Target: under 30 s.

    pip install -e ".[plots]"; python benchmarks/report.py [--episodes 10000]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from _common import replicate_run, write_json

from raleval.analysis.report import write_report
from raleval.app.runner import run_sync
from raleval.config import RunConfig


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--episodes", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        runs = [
            run_sync(
                RunConfig(model=m, env_options={"size": "small"}, limit=50, log_dir=root)
            ).run_dir
            for m in ("scripted/oracle", "scripted/malformed")
        ]
        big = replicate_run(runs[1], root / "big", args.episodes)
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            path = write_report([runs[0], big], root / "report.html")
            times.append(time.perf_counter() - start)
        size_mb = path.stat().st_size / 1e6
    median = statistics.median(times)
    print(
        f"report over {args.episodes + 50:,} episodes: median {median:.2f} s "
        f"(runs: {', '.join(f'{t:.2f}' for t in times)}), {size_mb:.1f} MB"
    )
    payload = {
        "episodes": args.episodes + 50,
        "seconds": times,
        "median_s": median,
        "html_mb": size_mb,
    }
    print(f"wrote {write_json('report', payload, args.out)}")


if __name__ == "__main__":
    main()
