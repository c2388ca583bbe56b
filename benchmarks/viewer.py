"""`raleval view` on a 100,000-episode log directory, and the static report of the same.

Two scripted runs (the oracle and the abstainer on the tiny scholar world) are replicated to
``--episodes`` episodes in all (real trajectories under new task ids), then the viewer is
started as a user starts it (``raleval view DIR --port 0``, its own process) and measured from
the moment it is launched: until its first page is served (the page and the first 50 rows),
until the whole log is indexed, an episode opened (median and worst of 20, random rows), and
the server's peak memory (RSS, sampled). Last, ``raleval report DIR`` writes the static report
and its size is measured. Targets (issue 49): first page < 5 s, an episode < 1 s, memory
< 1 GB, report < 20 MB; each is printed as a ratio to its target.

    python benchmarks/viewer.py [--episodes 100000]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

from _common import replicate_run, write_json

TARGETS = {"first_page_s": 5.0, "episode_median_s": 1.0, "rss_peak_gb": 1.0, "report_mb": 20.0}


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=120) as r:
        return r.read()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--episodes", type=int, default=100_000)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    import psutil

    from raleval.analysis.report import write_report
    from raleval.app.runner import run_sync
    from raleval.config import RunConfig

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        sources = []
        for model in ("scripted/oracle", "scripted/abstain"):
            summary = run_sync(
                RunConfig(env="scholar", env_options={"size": "tiny"}, model=model,
                          tasks="scholar", tasks_per_family=10, log_dir=root / "src"),
                "none",
            )  # fmt: skip
            sources.append(summary.run_dir)
        log = root / "log"
        start = time.perf_counter()
        for k, src in enumerate(sources):
            replicate_run(src, log / f"{k}-{src.name}", args.episodes // len(sources))
        made_s = time.perf_counter() - start
        size_mb = sum(p.stat().st_size for p in log.rglob("*") if p.is_file()) / 1e6
        print(f"log directory: {args.episodes} episodes, {size_mb:.0f} MB, made in {made_s:.0f} s")

        launched = time.perf_counter()
        server = subprocess.Popen(
            [sys.executable, "-m", "raleval", "view", str(log), "--port", "0"],
            stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            line = server.stdout.readline() if server.stdout else ""
            url = line.split(" at ", 1)[1].split()[0]
            rss: list[int] = []
            stop = threading.Event()

            def sample() -> None:
                proc = psutil.Process(server.pid)
                while not stop.is_set():
                    try:
                        rss.append(proc.memory_info().rss)
                    except psutil.Error:
                        return
                    time.sleep(0.05)

            threading.Thread(target=sample, daemon=True).start()
            assert b"raleval view" in _get(url)
            while True:
                rows = json.loads(_get(url + "api/episodes?offset=0&limit=50"))["rows"]
                if rows:
                    break
                time.sleep(0.02)
            first_page = time.perf_counter() - launched
            while not json.loads(_get(url + "api/status"))["done"]:
                time.sleep(0.1)
            indexed = time.perf_counter() - launched
            total = json.loads(_get(url + "api/episodes?limit=1"))["total"]
            rng = random.Random(0)
            opened = []
            for _ in range(20):
                row = json.loads(_get(url + f"api/episodes?offset={rng.randrange(total)}&limit=1"))[
                    "rows"
                ][0]
                t0 = time.perf_counter()
                query = urllib.parse.urlencode(
                    {"run": row["run"], "task": row["task_id"], "epoch": row["epoch"]}
                )
                episode = json.loads(_get(url + "api/episode?" + query))
                opened.append(time.perf_counter() - t0)
                assert episode["task_id"] == row["task_id"]
            stop.set()
        finally:
            server.terminate()
            server.wait(30)
        start = time.perf_counter()
        report = write_report([log], root / "report.html")
        report_s = time.perf_counter() - start
        result = {
            "episodes": total,
            "log_mb": size_mb,
            "first_page_s": first_page,
            "indexed_s": indexed,
            "episode_median_s": statistics.median(opened),
            "episode_max_s": max(opened),
            "rss_peak_gb": max(rss) / 1e9 if rss else float("nan"),
            "report_mb": report.stat().st_size / 1e6,
            "report_s": report_s,
        }
    load = psutil.getloadavg()[0]
    print(
        f"first page {result['first_page_s']:.2f} s (x{result['first_page_s'] / 5:.2f} of the "
        f"5 s target); whole log indexed {result['indexed_s']:.1f} s; an episode "
        f"{result['episode_median_s'] * 1e3:.0f} ms median, {result['episode_max_s'] * 1e3:.0f} "
        f"ms worst (x{result['episode_median_s']:.2f} of 1 s); peak RSS "
        f"{result['rss_peak_gb']:.2f} GB (x{result['rss_peak_gb']:.2f} of 1 GB); report "
        f"{result['report_mb']:.1f} MB in {report_s:.0f} s (x{result['report_mb'] / 20:.2f} of "
        f"20 MB); load {load:.1f}"
    )
    result["load_average"] = load
    result["targets"] = TARGETS
    print(f"wrote {write_json('viewer', result, args.out)}")


if __name__ == "__main__":
    main()
