"""Plan building: seconds for ``make_plan`` of one run (tasks generated, subgoals attached,
demonstrations solved), best of ``--repeats``, with the world built once beforehand (cached).

    python benchmarks/plan_building.py [--env scholar] [--size small] [--per-family 50]
        [--limit 4] [--repeats 3]

A ``--limit`` smaller than the task set shows what preparing the set once saves: subgoals are
attached to the chosen tasks only (each one re-runs its gold solution through the session an
episode sees), not to the whole generated pool.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from _common import write_json


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--env", default="scholar")
    ap.add_argument("--size", default="small")
    ap.add_argument("--tasks", default=None)
    ap.add_argument("--per-family", type=int, default=50)
    ap.add_argument("--limit", type=int, default=4, help="0: the whole set")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    from raleval.app.plan import make_plan
    from raleval.config import RunConfig

    times: list[float] = []
    n_tasks = 0
    with tempfile.TemporaryDirectory() as tmp:
        config = RunConfig(
            env=args.env,
            env_options={"size": args.size},
            model="scripted/oracle",
            tasks=args.tasks,
            tasks_per_family=args.per_family,
            limit=args.limit or None,  # 0: the whole set
            log_dir=Path(tmp),
        )
        make_plan(config)  # builds (or loads) the world's cache: not timed
        for _ in range(args.repeats):
            started = time.perf_counter()
            plan = make_plan(config)
            times.append(time.perf_counter() - started)
            n_tasks = len(plan.tasks)
    result = {
        "env": args.env,
        "size": args.size,
        "tasks": args.tasks,
        "per_family": args.per_family,
        "limit": args.limit,
        "tasks_planned": n_tasks,
        "seconds_best": round(min(times), 4),
        "seconds_all": [round(t, 4) for t in times],
        "load_average": os.getloadavg()[0],
    }
    print(result)
    write_json("plan_building", result, args.out)


if __name__ == "__main__":
    main()
