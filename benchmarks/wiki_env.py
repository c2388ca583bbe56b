"""Wikipedia environment offline store: build throughput and Search / Lookup latency.

The corpus is the generated encyclopedia of the ``medium`` scholar world (25k scholars, 75k
papers, their organizations and disambiguation pages: about 100k pages). Steps:

1. render the pages to a JSON-lines corpus (the format users bring their own pages in);
2. build a store from that file with the real loader (FTS5 index included): pages/s;
3. in a fresh process, open the store and time 10,000 seeded calls per kind through the real
   tool path: Search hits (exact titles), Search misses (a typo in the title: the fuzzy and
   BM25 suggestion path), and Lookup of words from the current page.

    python benchmarks/wiki_env.py [--size medium] [--calls 10000]
    python benchmarks/wiki_env.py --generated --size large   # the environment's own store

With ``--generated`` the store is the one ``-E backend=generated`` opens (rendered into the
cache on first use, timed as the build), and step 3 runs on it: how long the generated wiki
world of that size takes to open in a new process, and its resident memory.

Targets (issue #6): Search p50 under 5 ms, Lookup p50 under 1 ms.
"""

from __future__ import annotations

import argparse
import json
import random
import string
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import quantile, write_json


def _typo(rng: random.Random, text: str) -> str:
    if len(text) < 5:
        return text + "x"
    i = rng.randrange(1, len(text) - 1)
    return text[:i] + rng.choice(string.ascii_lowercase) + text[i + 1 :]


def _stats(samples: list[float]) -> dict[str, float]:
    ms = [s * 1000 for s in samples]
    return {"p50_ms": quantile(ms, 0.5), "p99_ms": quantile(ms, 0.99), "n": len(ms)}


def child(path: str, calls: int) -> dict:
    """Runs in a fresh process: open the store, then time Search and Lookup."""
    import psutil

    from raleval.envs.wiki import OfflineBackend, WikiEnv, WikiStore

    t0 = time.perf_counter()
    store = WikiStore(Path(path))
    store.warm()
    load_s = time.perf_counter() - t0
    rss_open = psutil.Process().memory_info().rss / 1e9
    env = WikiEnv(OfflineBackend(store))
    titles = store.titles()
    rng = random.Random(0)
    hits, misses, lookups = [], [], []
    found = 0
    for _ in range(calls):
        session = env.session()
        title = rng.choice(titles)
        r = session.call_sync("Search", {"entity": title})
        hits.append(r.latency_s)
        found += session.page is not None or r.observation.startswith("Could not find")
        words = [w for w in (session.page.text.split() if session.page else []) if len(w) > 4]
        if words:
            r = session.call_sync("Lookup", {"keyword": rng.choice(words).strip(".,;()")})
            lookups.append(r.latency_s)
        r = env.session().call_sync("Search", {"entity": _typo(rng, title)})
        misses.append(r.latency_s)
    return {
        "pages": len(store),
        "load_s": load_s,
        "rss_gb_after_open": rss_open,
        # after the calls, with every title in a list (the benchmark's own) and the store's
        # pages that SQLite and the indexes mapped while answering (file-backed: the OS
        # reclaims them)
        "rss_gb": psutil.Process().memory_info().rss / 1e9,
        "search_hit": _stats(hits),
        "search_miss": _stats(misses),
        "lookup": _stats(lookups),
        "answered": found,
    }


def measure_in_child(path: Path, calls: int) -> dict:
    """:func:`child` on the store at ``path``, in a fresh process (its open time and memory
    are a new process's)."""
    proc = subprocess.run(
        [sys.executable, __file__, "--child", str(path), "--calls", str(calls)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def print_latencies(measured: dict) -> None:
    for kind in ("search_hit", "search_miss", "lookup"):
        s = measured[kind]
        print(f"{kind:12s} p50 {s['p50_ms']:.3f} ms  p99 {s['p99_ms']:.3f} ms  (n={s['n']})")


def generated(args: argparse.Namespace) -> None:
    """Open (building on first use) the generated store of ``--size``, then time it in a new
    process as ``child`` does."""
    from raleval.envs.wiki.generated import generated_store, generated_store_path

    path = generated_store_path("scholar", args.size, 0)
    built = not path.exists()
    t0 = time.perf_counter()
    generated_store("scholar", args.size, 0)
    build_s = time.perf_counter() - t0 if built else None
    measured = measure_in_child(path, args.calls)
    size_gb = path.stat().st_size / 1e9
    built_text = f"built in {build_s:.0f} s" if built else "already built"
    print(
        f"generated {args.size} store: {measured['pages']:,} pages, {size_gb:.2f} GB "
        f"({built_text}); open {measured['load_s']:.2f} s, RSS {measured['rss_gb_after_open']:.2f} "
        f"GB after opening, {measured['rss_gb']:.2f} GB after the calls"
    )
    print_latencies(measured)
    result = {"size": args.size, "generated": True, "build_s": build_s, "store_gb": size_gb}
    print(f"wrote {write_json('wiki_env_generated', {**result, **measured}, args.out)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", default="medium")
    ap.add_argument("--calls", type=int, default=10_000)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path)
    ap.add_argument(
        "--generated", action="store_true", help="measure the generated world's own store"
    )
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.calls)))
        return
    if args.generated:
        generated(args)
        return

    from raleval.envs.scholar.store import load_world
    from raleval.envs.wiki.generated import scholar_pages
    from raleval.envs.wiki.loaders import build_store

    t0 = time.perf_counter()
    world = load_world(args.size, 0)
    world_s = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        corpus, store_path = Path(tmp) / "pages.jsonl", Path(tmp) / "store.sqlite"
        t0 = time.perf_counter()
        n = 0
        with open(corpus, "w", encoding="utf-8") as fh:
            for title, text in scholar_pages(world):
                fh.write(json.dumps({"title": title, "text": text}, ensure_ascii=False) + "\n")
                n += 1
        render_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        counts = build_store(store_path, [corpus], progress=False)
        build_s = time.perf_counter() - t0
        size_mb = store_path.stat().st_size / 1e6
        measured = measure_in_child(store_path, args.calls)
    result = {
        "size": args.size,
        "world_load_or_build_s": world_s,
        "pages_rendered": n,
        "render_s": render_s,
        "build": {**counts, "seconds": build_s, "pages_per_s": n / build_s, "store_mb": size_mb},
        **measured,
        "targets": {"search_p50_ms": 5.0, "lookup_p50_ms": 1.0},
    }
    print(f"pages: {n} (rendered in {render_s:.1f} s)")
    print(
        f"store build from JSON lines: {build_s:.1f} s = {n / build_s:,.0f} pages/s, "
        f"{size_mb:.0f} MB; load {measured['load_s']:.2f} s, RSS {measured['rss_gb']:.2f} GB"
    )
    print_latencies(measured)
    path = write_json("wiki_env", result, args.out)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
