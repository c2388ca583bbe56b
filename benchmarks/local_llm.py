"""Local model speed: raleval's per-episode model time versus llama.cpp's raw compute time.

For each installed local model, runs ReAct on a fixed scholar task set (sequentially, one
llama.cpp slot, so no call waits behind another) and compares, per episode, the model time
raleval measured around each call with the prefill + decode time llama.cpp reports for the same
tokens. A ratio of 1.0 means raleval adds nothing; the target is at least 0.9.

    python benchmarks/local_llm.py [--models qwen2.5-0.5b,smollm2-135m] [--tasks 5]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from _common import write_json

from raleval.agents.local import LOCAL_MODELS, is_installed, stop_servers
from raleval.app.runner import run_sync
from raleval.config import RunConfig
from raleval.store import RESULTS, ResultsFile


def bench_model(name: str, n_tasks: int, log_dir: Path) -> dict:
    cfg = RunConfig(
        env="scholar",
        env_options={"size": "small"},
        workflow="react",
        model=f"local/{name}",
        model_options={"parallel": 1},
        cache=False,  # measure the model, never the response cache
        tasks="scholar-ks",
        tasks_per_family=n_tasks,
        limit=n_tasks,
        log_dir=log_dir,
        max_connections=1,
    )
    start = time.perf_counter()
    summary = run_sync(cfg)
    wall = time.perf_counter() - start
    rows = list(ResultsFile(summary.run_dir / RESULTS))
    ratios, episode_s, model_s, raw_s, calls = [], [], [], [], []
    for r in rows:
        raw = sum(c.server_time_s or 0.0 for c in r.llm_calls)
        if r.model_time_s > 0 and raw > 0:
            ratios.append(raw / r.model_time_s)
        episode_s.append(r.wall_time_s)
        model_s.append(r.model_time_s)
        raw_s.append(raw)
        calls.append(r.n_llm_calls)
    cached = [c.cached_tokens or 0 for r in rows for c in r.llm_calls[1:]]
    return {
        "model": f"local/{name}",
        "episodes": len(rows),
        "mean_f1": summary.mean_f1,
        "median_raw_over_model_time": statistics.median(ratios) if ratios else None,
        "median_episode_s": statistics.median(episode_s),
        "median_model_time_s": statistics.median(model_s),
        "median_llamacpp_time_s": statistics.median(raw_s),
        "median_llm_calls": statistics.median(calls),
        "median_cached_prompt_tokens_after_first_call": statistics.median(cached) if cached else 0,
        "total_wall_s_including_server_start": wall,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--models", default="qwen2.5-0.5b,smollm2-135m")
    parser.add_argument("--tasks", type=int, default=5)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models.split(","):
            if name not in LOCAL_MODELS or not is_installed(LOCAL_MODELS[name]):
                print(f"skip local/{name}: not installed ({LOCAL_MODELS[name].install_hint()})")
                continue
            row = bench_model(name, args.tasks, Path(tmp))
            stop_servers()
            results.append(row)
            print(
                f"local/{name}: {row['episodes']} episodes, median {row['median_episode_s']:.1f}"
                f" s/episode, raw llama.cpp / raleval model time = "
                f"{row['median_raw_over_model_time']:.3f} (median), F1 {row['mean_f1']:.2f}"
            )
    path = write_json("local_llm", {"tasks": args.tasks, "results": results}, args.out)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
