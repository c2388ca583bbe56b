"""Shared helpers for the benchmark scripts: quantiles and JSON output."""

from __future__ import annotations

import json
import platform
import statistics
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"


def quantile(values: list[float], q: float) -> float:
    """The q-quantile (0..1) by linear interpolation; NaN for no values."""
    if not values:
        return float("nan")
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=1000, method="inclusive")[max(0, int(q * 1000) - 1)]


def replicate_run(source: Path, target: Path, n: int) -> Path:
    """A run directory with ``n`` episodes made from ``source``'s real tasks and trajectories,
    replicated under new task ids (for measuring analysis at scale)."""
    from raleval.store import RESULTS, TASKS, ResultsFile, read_tasks, write_tasks

    tasks = read_tasks(source / TASKS)
    trajs = list(ResultsFile(source / RESULTS))
    by_id = {t.id: t for t in tasks}
    target.mkdir(parents=True, exist_ok=True)
    new_tasks, lines = [], []
    for i in range(n):
        traj = trajs[i % len(trajs)]
        task = by_id[traj.task_id].model_copy(update={"id": f"{traj.task_id}-r{i:05d}"})
        new_tasks.append(task)
        lines.append(traj.model_copy(update={"task_id": task.id}).model_dump_json() + "\n")
    write_tasks(target / TASKS, new_tasks)
    (target / RESULTS).write_text("".join(lines), encoding="utf-8")
    return target


def write_json(name: str, payload: dict[str, Any], out: Path | None = None) -> Path:
    path = out or RESULTS / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "benchmark": name,
        "created_at": datetime.now(timezone.utc).isoformat(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        **payload,
    }
    path.write_text(json.dumps(payload, indent=2) + "\n")
    return path
