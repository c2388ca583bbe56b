"""CRAG mock KG: build time, memory, p50/p99 per API, and a linear rank_bm25 scan baseline.

For each size, in a fresh process: generate the world (``medium`` and ``large`` are built
once into the cache by a separate process, one domain at a time, then their search indexes:
that is the build time, with its peak RSS), open it (a stored world: the SQLite file and its
memory-mapped indexes, nothing rebuilt: the open time), then time ``--calls`` seeded calls of
every one of the 38 APIs through the real tool path (validation, lookup, as-of filtering,
JSON observation). Search APIs are queried with core names (half of them with a typo). The
baseline is what CRAG's mock API does for entity search: a linear BM25 scan over every name of
the type, timed on the same queries, for every kind a search API searches. Targets (issue 25):
every API under 1 ms p50 and 5 ms p99 at small and large; large opens in 3 s or less and
builds under 3 GB peak; name search at least 100x linear BM25 at large.

    pip install -e ".[bench]"
    python benchmarks/crag_env.py --sizes tiny,small [--calls 1000]
    python benchmarks/crag_env.py --sizes large --calls 2000   # first run builds (minutes)
"""

from __future__ import annotations

import argparse
import json
import random
import re
import string
import subprocess
import sys
import time
from pathlib import Path

from _common import quantile, write_json


def _typo(rng: random.Random, text: str) -> str:
    if len(text) < 5:
        return text
    i = rng.randrange(1, len(text) - 1)
    return text[:i] + rng.choice(string.ascii_lowercase) + text[i + 1 :]


def _peak_rss_gb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6  # KiB on Linux


def build(size: str) -> dict:
    """Generate a stored size into the cache with its indexes (if not there) and time it;
    the peak is the process's maximum resident set size."""
    import gc

    from raleval.envs.crag.store import build_world, index_folder, save_indexes, world_path

    path = world_path(size, 0, 1 / 30)
    if path.exists() and index_folder(path).is_dir():
        return {"build_s": None, "build_peak_gb": None, **_sizes(path)}
    t0 = time.perf_counter()
    build_world(size, 0, 1 / 30, path)  # generated and written one domain at a time
    world_s = time.perf_counter() - t0
    world_peak = _peak_rss_gb()
    gc.collect()
    save_indexes(path)
    return {
        "build_s": time.perf_counter() - t0,
        "world_s": world_s,
        "indexes_s": time.perf_counter() - t0 - world_s,
        "world_peak_gb": world_peak,
        "build_peak_gb": _peak_rss_gb(),
        **_sizes(path),
    }


def _sizes(path) -> dict:
    from raleval.envs.crag.store import index_folder

    indexes = sum(f.stat().st_size for f in index_folder(path).rglob("*") if f.is_file())
    return {"file_gb": path.stat().st_size / 1e9, "indexes_gb": indexes / 1e9}


def child(size: str, calls: int, bm25_queries: int) -> dict:
    import psutil

    from raleval.envs.crag import STORED_SIZES, CragEnv
    from raleval.envs.crag.store import WorldFile, world_path
    from raleval.envs.crag.world import generate_world, key_values

    t0 = time.perf_counter()
    if size in STORED_SIZES:
        world = WorldFile(world_path(size, 0, 1 / 30)).world()
    else:
        world = generate_world(size, 0)
    open_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    world.warm()
    index_s = time.perf_counter() - t0
    rss_loaded = psutil.Process().memory_info().rss / 1e9
    env = CragEnv(world)
    rng = random.Random(0)
    name_of = {
        "company": dict(key_values(world.companies, "name")),
        "movie": dict(key_values(world.movies, "title")),
        "person": dict(key_values(world.people, "name")),
    }

    def core_names(kind: str) -> list[str]:
        keys = [k.split(":", 1)[1] for k in world.core(kind)]
        table = name_of.get(kind)
        if table is None:
            return keys
        return [table[int(k) if kind != "company" else k] for k in keys]

    companies, movies = core_names("company"), core_names("movie")
    artists, opens = core_names("artist"), core_names("open")
    people = core_names("person")
    tickers = [k.split(":")[1] for k in world.core("company")]
    songs = [s for a in artists for s in world.artists[a]["works"]]
    movie_ids, person_ids = list(name_of["movie"]), list(name_of["person"])
    games = world.nba
    weeks = sorted(world.charts)

    def q(names: list[str]) -> str:
        name = rng.choice(names)
        return _typo(rng, name) if rng.random() < 0.5 else name

    def args_for(tool: str) -> dict:
        year = rng.randint(2000, 2023)
        g = rng.choice(games)
        week = rng.choice(weeks)
        table = {
            "open_search_entity_by_name": lambda: {"query": q(opens)},
            "open_get_entity": lambda: {"query": rng.choice(opens)},
            "movie_get_person_info": lambda: {"query": q(people)},
            "movie_get_movie_info": lambda: {"query": q(movies)},
            "movie_get_year_info": lambda: {"year": rng.randint(1990, 2023)},
            "movie_get_movie_info_by_id": lambda: {"id": rng.choice(movie_ids)},
            "movie_get_person_info_by_id": lambda: {"id": rng.choice(person_ids)},
            "finance_get_company_name": lambda: {"query": q(companies)},
            "finance_get_ticker_by_name": lambda: {"query": rng.choice(companies)},
            "music_search_artist_entity_by_name": lambda: {"query": q(artists)},
            "music_search_song_entity_by_name": lambda: {"query": q(songs)},
            "music_get_billboard_rank_date": lambda: {
                "rank": rng.randint(1, 10),
                "date": str(week),
            },
            "music_get_billboard_attributes": lambda: {
                "date": str(week),
                "attribute": "weeks_in_chart",
                "song_name": world.charts[week][0]["song"],
            },
            "music_grammy_get_all_awarded_artists": dict,
            "sports_soccer_get_games_on_date": lambda: {"date": rng.choice(world.soccer)["date"]},
            "sports_nba_get_games_on_date": lambda: {"date": g["game_date"]},
            "sports_nba_get_play_by_play_data_by_game_ids": lambda: {"game_ids": [g["game_id"]]},
        }
        if tool in table:
            return table[tool]()
        if tool.startswith("finance_"):
            return {"ticker": rng.choice(tickers)}
        if tool.endswith("_by_year"):
            return {"year": year}
        if "song" in tool:
            return {"song_name": rng.choice(songs)}
        if tool == "music_get_members":
            return {"band_name": rng.choice(artists)}
        return {"artist_name": rng.choice(artists)}

    per_api = {}
    search_queries: dict[str, list[str]] = {}
    for tool in env.tools:
        lat = []
        for _ in range(calls):
            a = args_for(tool.name)
            r = env.call_sync(tool.name, a)
            assert r.kind.value == "ok", (tool.name, a, r.observation)
            lat.append(r.latency_s * 1000)
            if tool.matching == "fuzzy":
                search_queries.setdefault(tool.name, []).append(a["query"])
        per_api[tool.name] = {"p50_ms": quantile(lat, 0.5), "p99_ms": quantile(lat, 0.99)}

    rss_calls = psutil.Process().memory_info().rss / 1e9
    # Linear BM25 over the same names, as CRAG's mock API searches (entity names as documents).
    from rank_bm25 import BM25Okapi

    def tok(s: str) -> list[str]:
        return re.findall(r"[a-z0-9]+", s.lower())

    corpora = {  # every kind a search API searches
        "finance_get_company_name": list(name_of["company"].values()),
        "movie_get_movie_info": list(name_of["movie"].values()),
        "movie_get_person_info": list(name_of["person"].values()),
        "music_search_artist_entity_by_name": list(world.artists),
        "music_search_song_entity_by_name": list(world.songs),
        "open_search_entity_by_name": list(world.open_entities),
    }
    bm25 = {}
    for tool, names in corpora.items():
        index = BM25Okapi([tok(n) or ["_"] for n in names])
        lat = []
        for query in search_queries[tool][:bm25_queries]:
            t = time.perf_counter()
            scores = index.get_scores(tok(query))
            sorted(range(len(names)), key=lambda i: -scores[i])[:10]
            lat.append((time.perf_counter() - t) * 1000)
        ours = per_api[tool]["p50_ms"]
        bm25[tool] = {
            "names": len(names),
            "bm25_p50_ms": quantile(lat, 0.5),
            "ours_p50_ms": ours,
            "speedup": quantile(lat, 0.5) / ours,
        }
    return {
        "size": size,
        "entities": world.n_entities(),
        # generating (in memory) or reopening (stored sizes; their build is timed apart)
        "build_s": None if size in STORED_SIZES else open_s,
        "load_s": open_s if size in STORED_SIZES else None,
        "index_s": index_s,
        "open_s": open_s + index_s,  # a stored world: reopened, its indexes opened
        "stored": size in STORED_SIZES,
        "rss_loaded_gb": rss_loaded,
        "rss_after_calls_gb": rss_calls,  # before the BM25 baseline's own indexes
        "rss_gb": psutil.Process().memory_info().rss / 1e9,
        "apis": per_api,
        "bm25": bm25,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="tiny,small")
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--bm25-queries", type=int, default=200, help="queries per BM25 baseline")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--build", help=argparse.SUPPRESS)
    ap.add_argument("--out")
    args = ap.parse_args()
    if args.build:
        print(json.dumps(build(args.build)))
        return
    if args.child:
        print(json.dumps(child(args.child, args.calls, args.bm25_queries)))
        return
    from raleval.envs.crag import STORED_SIZES

    def run(*argv: str) -> dict:
        proc = subprocess.run(
            [sys.executable, __file__, *argv], capture_output=True, text=True, check=True
        )
        return json.loads(proc.stdout.strip().splitlines()[-1])

    results = []
    for size in args.sizes.split(","):
        built = run("--build", size) if size in STORED_SIZES else {}
        r = run(
            "--child", size, "--calls", str(args.calls), "--bm25-queries", str(args.bm25_queries)
        )
        r.update(built)
        results.append(r)
        if size in STORED_SIZES:
            made = (
                f"build {r['build_s']:.1f} s (world {r['world_s']:.1f} s, peak RSS "
                f"{r['world_peak_gb']:.2f} GB; indexes {r['indexes_s']:.1f} s; peak RSS "
                f"{r['build_peak_gb']:.2f} GB)"
                if r["build_s"] is not None
                else "build: cached"
            )
            print(
                f"{size}: {r['entities']:,} entities, {made}, file {r['file_gb']:.2f} GB + "
                f"indexes {r['indexes_gb']:.2f} GB; opens in {r['open_s']:.2f} s (load "
                f"{r['load_s']:.2f} s + indexes {r['index_s']:.2f} s), RSS "
                f"{r['rss_loaded_gb']:.2f} GB after opening, "
                f"{r['rss_after_calls_gb']:.2f} GB after the calls"
            )
        else:
            print(
                f"{size}: {r['entities']:,} entities, build {r['build_s']:.2f} s + indexes "
                f"{r['index_s']:.2f} s, RSS {r['rss_gb']:.2f} GB"
            )
        worst = max(r["apis"].items(), key=lambda kv: kv[1]["p50_ms"])
        worst99 = max(r["apis"].items(), key=lambda kv: kv[1]["p99_ms"])
        p50s = sorted(v["p50_ms"] for v in r["apis"].values())
        print(
            f"  38 APIs: median of p50s {p50s[len(p50s) // 2]:.3f} ms; slowest p50 "
            f"{worst[0]} {worst[1]['p50_ms']:.2f} ms (p99 {worst[1]['p99_ms']:.2f} ms); "
            f"slowest p99 {worst99[0]} {worst99[1]['p99_ms']:.2f} ms"
        )
        for tool, v in sorted(r["apis"].items(), key=lambda kv: -kv[1]["p50_ms"])[:5]:
            print(f"    {tool}: p50 {v['p50_ms']:.3f} ms, p99 {v['p99_ms']:.3f} ms")
        for tool, b in r["bm25"].items():
            print(
                f"  {tool}: ours {b['ours_p50_ms']:.3f} ms vs linear BM25 "
                f"{b['bm25_p50_ms']:.2f} ms over {b['names']:,} names = {b['speedup']:.0f}x"
            )
    out = Path(args.out) if args.out else None
    path = write_json("crag_env", {"calls_per_api": args.calls, "sizes": results}, out)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
