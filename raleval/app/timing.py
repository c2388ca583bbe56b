"""A timing pass (issue 48): wall time measured apart from the study, one episode at a time.

The study's own cells run two episodes at once, under ``nice``, spread over days, on a machine
others share; their seconds per episode vary 1.4-2x for one model between hours, so only cost
in tokens and model calls per episode (machine-independent) is compared across cells. Wall
time comes from this pass: every cell runs the same tasks, one episode at a time (one
connection, no response cache), in interleaved order (task by task, the cells in an order
rotated per task, so no cell always runs first or last while the load drifts), and each
episode's line in ``timing.jsonl`` records the machine's load average before and after it.
The pass resumes: episodes already in ``timing.jsonl`` are not run again.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from raleval.config import RunConfig
from raleval.store import RESULTS, TIMING, ResultsFile


def interleaved(cells: int, tasks: list[str]) -> list[tuple[int, str]]:
    """(cell index, task id) in the pass's order: task by task, the cells rotated by one for
    each task (cell 0 first for the first task, cell 1 first for the second, ...)."""
    return [((i + k) % cells, task) for i, task in enumerate(tasks) for k in range(cells)]


def _load() -> float | None:
    try:
        return os.getloadavg()[0]
    except OSError:  # not every platform has one
        return None


def timing_pass(configs: list[RunConfig], out: Path, per_cell: int | None = None) -> Path:
    """Run the timing pass of ``configs`` (cells of one environment and task set) into
    ``out``: the tasks the first cell selects (the first ``per_cell`` of them), every cell on
    each, one episode at a time in :func:`interleaved` order; returns ``out/timing.jsonl``."""
    from raleval.app.plan import build_env, run_tasks
    from raleval.app.runner import run_sync

    if not configs:
        raise ValueError("a timing pass needs at least one cell")
    first = configs[0].with_defaults()
    if any((c.env, c.with_defaults().tasks) != (first.env, first.tasks) for c in configs):
        raise ValueError("a timing pass times cells of one environment and task set")
    out.mkdir(parents=True, exist_ok=True)
    log = out / TIMING
    done = set()
    if log.exists():
        for line in log.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            done.add((row["cell"], row["task_id"]))
    tasks, _ = run_tasks(first, build_env(first.env, first.env_options))
    ids = [t.id for t in tasks][:per_cell]
    cells = [
        c.model_copy(
            update={
                "max_connections": 1,  # one episode at a time
                "cache": False,  # a cached reply costs no time
                "log_dir": out,
                "run_name": f"timing-{c.slug()}",
            }
        )
        for c in configs
    ]
    ran: dict[int, list[str]] = {i: [] for i in range(len(cells))}
    for index, task_id in interleaved(len(cells), ids):
        cell = cells[index]
        ran[index].append(task_id)
        name = str(cell.run_name)
        if (name, task_id) in done:
            continue
        before, started = _load(), time.time()
        run_sync(cell.model_copy(update={"sample_ids": list(ran[index])}))
        after = _load()
        traj = _latest(cell.run_dir, task_id)
        row: dict[str, Any] = {
            "cell": name,
            "workflow": cell.workflow,
            "model": cell.model,
            "task_id": task_id,
            "started_at": started,
            "wall_time_s": traj.wall_time_s if traj else None,
            "tokens": traj.prompt_tokens + traj.completion_tokens if traj else None,
            "llm_calls": traj.n_llm_calls if traj else None,
            "load_before": before,
            "load_after": after,
            "cpus": os.cpu_count(),
        }
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(row) + "\n")
    return log


def _latest(run_dir: Path, task_id: str) -> Any:
    """The last recorded episode of ``task_id`` in ``run_dir`` (None if it failed to run)."""
    found = None
    for traj in ResultsFile(run_dir / RESULTS):
        if traj.task_id == task_id:
            found = traj
    return found
