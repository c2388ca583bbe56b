"""`raleval view` on a 10,000-sample Inspect log: its first page, read lazily.

A scripted run (the oracle on the tiny scholar world) is replicated to ``--samples`` episodes
(real trajectories under new task ids) and written as an Inspect ``.eval`` log by ``raleval
export --format inspect`` (inspect-ai's own writer). Then the viewer is started as a user
starts it (``raleval view LOG.eval --port 0``, its own process) and measured from the moment
it is launched: until its first page is served (the page and the first 50 rows, from the
log's sample summaries), until every sample is listed, and an episode opened (median and
worst of 20 random rows: one sample read from the zip and graded). Targets (issue 60): first
page < 5 s, an episode < 1 s; each printed as a ratio to its target, with the load average.

    python benchmarks/inspect_view.py [--samples 10000]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

from _common import replicate_run, write_json

TARGETS = {"first_page_s": 5.0, "episode_median_s": 1.0}
LABELS = ("EM", "AM", "GE", "RE", "TE", "ME")  # an opened episode is graded


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=120) as r:
        return r.read()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--samples", type=int, default=10_000)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument(
        "--log", type=Path, default=None, help="an .eval log to view (default: write one)"
    )
    parser.add_argument("--keep", type=Path, default=None, help="copy the written log here")
    args = parser.parse_args()

    from raleval.analysis.export import export_run
    from raleval.app.runner import run_sync
    from raleval.config import RunConfig

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        if args.log is None:
            source = run_sync(
                RunConfig(env="scholar", env_options={"size": "tiny"}, model="scripted/oracle",
                          tasks="scholar", tasks_per_family=10, log_dir=root / "src"),
                "none",
            ).run_dir  # fmt: skip
            big = replicate_run(source, root / "big", args.samples)
            start = time.perf_counter()
            (log,) = export_run(big, "inspect", root / "big.eval")
            export_s = time.perf_counter() - start
            if args.keep is not None:
                shutil.copy(log, args.keep)
        else:
            log, export_s = args.log, float("nan")
        size_mb = log.stat().st_size / 1e6
        print(
            f"Inspect log: {size_mb:.0f} MB, written in {export_s:.0f} s "
            f"(load {os.getloadavg()[0]:.1f})"
        )

        launched = time.perf_counter()
        server = subprocess.Popen(
            [sys.executable, "-m", "raleval", "view", str(log), "--port", "0"],
            stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            line = server.stdout.readline() if server.stdout else ""
            url = line.split(" at ", 1)[1].split()[0]
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
                offset = rng.randrange(total)
                page = json.loads(_get(url + f"api/episodes?offset={offset}&limit=1"))
                row = page["rows"][0]
                t0 = time.perf_counter()
                query = urllib.parse.urlencode(
                    {"run": row["run"], "task": row["task_id"], "epoch": row["epoch"]}
                )
                episode = json.loads(_get(url + "api/episode?" + query))
                opened.append(time.perf_counter() - t0)
                assert episode["task_id"] == row["task_id"] and episode["label"] in LABELS
        finally:
            server.terminate()
            server.wait(30)
    load = os.getloadavg()[0]
    result = {
        "samples": total,
        "log_mb": size_mb,
        "export_s": export_s,
        "first_page_s": first_page,
        "indexed_s": indexed,
        "episode_median_s": statistics.median(opened),
        "episode_max_s": max(opened),
        "load_average": load,
        "cpus": os.cpu_count(),
        "targets": TARGETS,
    }
    print(
        f"first page {first_page:.2f} s (x{first_page / TARGETS['first_page_s']:.2f} of the "
        f"5 s target); all {total} samples listed {indexed:.1f} s; an episode "
        f"{result['episode_median_s'] * 1e3:.0f} ms median, {result['episode_max_s'] * 1e3:.0f}"
        f" ms worst (x{result['episode_median_s']:.2f} of 1 s); load {load:.1f} on "
        f"{os.cpu_count()} CPUs"
    )
    print(f"wrote {write_json('inspect_view', result, args.out)}")


if __name__ == "__main__":
    main()
