"""Scholar environment at scale: build, load, memory and per-API latency, plus a BM25 baseline.

For each size: build time (fresh generation, search indexes included; CPU seconds and peak
memory count the build's forked steps, memory as the largest single process), load time and
resident memory (a fresh process opens the world and maps its saved search indexes; memory
again after the calls, which touch the mapped pages), and p50/p99 latency of every API over
10,000 seeded calls through the real tool path (validation, lookup, JSON observation). In the
same process and on the same names it runs a plain linear rank_bm25 scan, as CRAG's mock API
does, and prints our speed-up.

    pip install -e ".[bench]"
    python benchmarks/scholar_env.py --sizes small,large [--calls 10000] [--bm25-queries 20]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import string
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import quantile, write_json

SELF, CHILDREN = resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN


def cpu_s() -> float:
    """CPU seconds of this process and of its finished children (the build's forked steps)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def rss_gb() -> float:
    import psutil

    return psutil.Process().memory_info().rss / 1e9


def _typo(rng: random.Random, text: str) -> str:
    if len(text) < 4:
        return text
    i = rng.randrange(1, len(text) - 1)
    return text[:i] + rng.choice(string.ascii_lowercase) + text[i + 1 :]


def child(path: str, calls: int, bm25_queries: int) -> dict:
    """Runs in a fresh process: load, measure every API, compare with BM25."""
    from raleval.envs.scholar import ScholarEnv, ScholarStore

    t0, c0 = time.perf_counter(), time.process_time()
    store = ScholarStore(Path(path))
    store.warm()
    env = ScholarEnv(store)
    load_s, load_cpu_s = time.perf_counter() - t0, time.process_time() - c0
    mem = rss_gb()

    rng = random.Random(20261122)
    rowids = [rng.randrange(1, store.n_persons + 1) for _ in range(calls)]
    people = store.persons_by_rowid(sorted(set(rowids)))
    pub_rowids = [rng.randrange(1, store.n_pubs + 1) for _ in range(calls)]
    pubs = {
        p["rowid"]: p
        for i in range(0, len(pub_rowids), 500)
        for p in store.pubs_by_rowid(sorted(set(pub_rowids[i : i + 500])))
    }

    def name_query(i: int) -> str:
        name = people[rowids[i]]["name"]
        return _typo(rng, name) if i % 4 == 0 else name  # a quarter carry a typo

    workloads = {
        "searchPerson(name)": lambda i: {"name": name_query(i)},
        "searchPerson(name,organization)": lambda i: {
            "name": people[rowids[i]]["name"],
            "organization": people[rowids[i]]["organization"],
        },
        "searchPerson(interest)": lambda i: {"interest": people[rowids[i]]["interests"][0]},
        "searchPublication": lambda i: {"publication_info": pubs[pub_rowids[i]]["title"]},
        "getCoauthors": lambda i: {"person_id": people[rowids[i]]["id"]},
        "getPersonInterest": lambda i: {"person_id": people[rowids[i]]["id"]},
        "getPublication": lambda i: {"pub_id": pubs[pub_rowids[i]]["id"]},
        "getPersonBasicInfo": lambda i: {"person_id": people[rowids[i]]["id"]},
        "getPersonPubs": lambda i: {"person_id": people[rowids[i]]["id"]},
    }
    latency = {}
    for label, make_args in workloads.items():
        tool = label.split("(")[0]
        args = [make_args(i) for i in range(calls)]
        times = []
        for a in args:
            s = time.perf_counter()
            res = env.call_sync(tool, a)
            times.append(time.perf_counter() - s)
            if res.kind.value != "ok":
                raise RuntimeError(f"{tool}({a}) failed: {res.observation}")
        latency[label] = {
            "p50_ms": 1000 * quantile(times, 0.5),
            "p99_ms": 1000 * quantile(times, 0.99),
            "calls": len(times),
        }

    mem_after_calls = rss_gb()
    # Baseline: CRAG's mock API ranks names with a linear BM25Okapi scan.
    from rank_bm25 import BM25Okapi

    norm = re.compile(rf"[{re.escape(string.punctuation)}]")
    names = store.names.strings
    t = time.perf_counter()
    bm25 = BM25Okapi([norm.sub("", n.lower()).split() for n in names])
    bm25_build = time.perf_counter() - t
    queries = [name_query(i) for i in range(bm25_queries)]
    ours, theirs = [], []
    for q in queries:
        s = time.perf_counter()
        store.names.search(q, 10, 80.0)
        ours.append(time.perf_counter() - s)
        s = time.perf_counter()
        scores = bm25.get_scores(norm.sub("", q.lower()).split())
        top = sorted(range(len(scores)), key=scores.__getitem__, reverse=True)[:10]
        del top
        theirs.append(time.perf_counter() - s)
    return {
        "n_persons": store.n_persons,
        "n_pubs": store.n_pubs,
        "load_s": load_s,
        "load_cpu_s": load_cpu_s,
        "rss_gb_after_load": mem,
        # the search indexes are memory-mapped: their pages count once touched by the calls
        "rss_gb_after_calls": mem_after_calls,
        "latency": latency,
        "name_search_vs_bm25": {
            "names": len(names),
            "queries": len(queries),
            "ours_p50_ms": 1000 * quantile(ours, 0.5),
            "bm25_linear_p50_ms": 1000 * quantile(theirs, 0.5),
            "speedup_p50": quantile(theirs, 0.5) / quantile(ours, 0.5),
            "bm25_index_build_s": bm25_build,
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="small,large")
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--bm25-queries", type=int, default=20)
    parser.add_argument(
        "--world-dir",
        type=Path,
        default=None,
        help="keep built worlds here (default: a temporary folder)",
    )
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="reuse a world already in --world-dir instead of rebuilding",
    )
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child[0], int(args.child[1]), int(args.child[2]))))
        return

    from raleval.envs.scholar.world import generate_world

    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.world_dir or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        for size in args.sizes.split(","):
            path = folder / f"scholar-{size}-s0.sqlite"
            build_s = build_cpu_s = row_peak = None
            if not (args.reuse and path.exists()):
                t, c = time.perf_counter(), cpu_s()
                generate_world(size, 0, path)
                build_s, build_cpu_s = time.perf_counter() - t, cpu_s() - c
                # the largest single process: the build itself or one of its forked steps
                peak = max(resource.getrusage(who).ru_maxrss for who in (SELF, CHILDREN))
                row_peak = peak / 1e6  # kB -> GB
            out = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--child",
                    str(path),
                    str(args.calls),
                    str(args.bm25_queries),
                ],
                capture_output=True,
                text=True,
                check=True,
                env=os.environ,
            )
            row = json.loads(out.stdout.strip().splitlines()[-1])
            row["build_s"] = build_s
            row["build_peak_rss_gb"] = row_peak
            # CPU seconds beside wall seconds: on a shared machine the wall clock is the load's
            row["build_cpu_s"] = build_cpu_s
            row["load_avg_1min"] = os.getloadavg()[0]
            row["file_mb"] = path.stat().st_size / 1e6
            saved = path.with_name(f"{path.stem}.index")
            row["index_mb"] = sum(f.stat().st_size for f in saved.rglob("*") if f.is_file()) / 1e6
            results[size] = row
            lat = row["latency"]
            built = (
                f"{build_s:.1f} s ({build_cpu_s:.1f} s CPU, peak RSS {row_peak:.1f} GB)"
                if build_s is not None
                else "reused"
            )
            print(
                f"[{size}] {row['n_persons']:,} scholars / {row['n_pubs']:,} papers: "
                f"build {built}, load {row['load_s']:.2f} s ({row['load_cpu_s']:.2f} s CPU), "
                f"RSS {row['rss_gb_after_load']:.2f} GB after load, "
                f"{row['rss_gb_after_calls']:.2f} GB after the calls, "
                f"file {row['file_mb']:.0f} MB + index {row['index_mb']:.0f} MB "
                f"(load average {row['load_avg_1min']:.1f})"
            )
            for api, v in lat.items():
                print(f"    {api:34s} p50 {v['p50_ms']:8.3f} ms   p99 {v['p99_ms']:8.3f} ms")
            b = row["name_search_vs_bm25"]
            print(
                f"    name search vs linear BM25 over {b['names']:,} names: "
                f"{b['ours_p50_ms']:.2f} ms vs {b['bm25_linear_p50_ms']:.1f} ms p50 "
                f"= {b['speedup_p50']:.0f}x"
            )
    path = write_json("scholar_env", {"calls_per_api": args.calls, "sizes": results}, args.out)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
