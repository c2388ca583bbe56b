"""A timing pass (issue 48): wall time measured apart from the study, one episode at a time.

The study's own cells run two episodes at once, under ``nice``, spread over days, on a machine
others share; their seconds per episode vary 1.4-2x for one model between hours, so only cost
in tokens and model calls per episode (machine-independent) is compared across cells. Wall
time comes from this pass: every cell runs the same tasks, one episode at a time (one
connection, no response cache), in interleaved order (task by task, the cells in an order
rotated per task, so no cell always runs first or last while the load drifts), and each
episode's line in ``timing.jsonl`` records the machine's load average before and after it.
The pass resumes: episodes already in ``timing.jsonl`` are not run again.

Issue 62: the tasks cover every family of the cells' sample (``per_family`` of each, at least
:data:`MIN_PER_CELL` per cell); before each episode the pass waits until the 1-minute load
average is below ``max_load`` (up to ``load_timeout_s``; the wait and whether it timed out are
in the line); and with the study's stored cells (``scored``) each timed answer is checked
against the scored episode of the same cell and task (``matches_scored``: a mismatch means the
timed episode is not the one the study scored).
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from raleval.config import RunConfig
from raleval.records import Task
from raleval.store import RESULTS, TIMING, ResultsFile, stored_file
from raleval.text import normalize_answer


def interleaved(cells: int, tasks: list[str]) -> list[tuple[int, str]]:
    """(cell index, task id) in the pass's order: task by task, the cells rotated by one for
    each task (cell 0 first for the first task, cell 1 first for the second, ...)."""
    return [((i + k) % cells, task) for i, task in enumerate(tasks) for k in range(cells)]


MIN_PER_CELL = 5  # episodes per cell at the least: a median of fewer says little


def _load() -> float | None:
    try:
        return os.getloadavg()[0]
    except OSError:  # not every platform has one
        return None


def wait_for_load(
    max_load: float,
    timeout_s: float,
    load: Callable[[], float | None] = _load,
    sleep: Callable[[float], None] = time.sleep,
    poll_s: float = 15.0,
) -> tuple[float | None, float, bool]:
    """Wait until ``load()`` is below ``max_load`` or ``timeout_s`` has passed: (the load
    when it stopped waiting, seconds waited, whether it timed out). No load average on this
    platform: no wait."""
    waited = 0.0
    now = load()
    while now is not None and now >= max_load:
        if waited >= timeout_s:
            return now, waited, True
        step = min(poll_s, timeout_s - waited) if timeout_s > waited else poll_s
        sleep(step)
        waited += step
        now = load()
    return now, waited, False


def covering_tasks(tasks: list[Task], per_family: int) -> list[str]:
    """``per_family`` task ids of every family, round-robin over the families in the order
    their tasks come (so a pass cut short still has every family)."""
    by_family: dict[str, list[str]] = {}
    for task in tasks:
        by_family.setdefault(task.family, []).append(task.id)
    out = []
    for i in range(per_family):
        out += [ids[i] for ids in by_family.values() if i < len(ids)]
    return out


def scored_answers(
    study: Path, arm: str | None = None
) -> dict[tuple[str, str, str, str], str | None]:
    """(env, workflow, model, task id) -> the answer of the scored episode (its last attempt)
    in a study folder's cells of ``arm`` (None: the default arm, whose cells have none) with
    one epoch. A budget sweep has no default arm: its pass times one budget's arm."""
    from raleval.app.study import cells_under
    from raleval.store import read_header

    out: dict[tuple[str, str, str, str], str | None] = {}
    for cell in cells_under(study):
        header = read_header(cell)
        config = header.config if header else {}
        if (config.get("arm") or None) != arm or int(config.get("epochs", 1) or 1) != 1:
            continue
        key = (str(config.get("env")), str(config.get("workflow")), str(config.get("model")))
        for traj in ResultsFile(stored_file(cell, RESULTS)):
            out[(*key, traj.task_id)] = traj.answer
    return out


def timing_pass(
    configs: list[RunConfig],
    out: Path,
    per_cell: int | None = None,
    per_family: int | None = None,
    max_load: float = 1.5,
    load_timeout_s: float = 900.0,
    scored: Path | None = None,
    load: Callable[[], float | None] = _load,
    sleep: Callable[[float], None] = time.sleep,
) -> Path:
    """Run the timing pass of ``configs`` (cells of one environment and task set) into
    ``out``: of the tasks the first cell selects, ``per_family`` of every family (by default
    enough for :data:`MIN_PER_CELL` episodes per cell; ``per_cell`` instead takes the first
    ``per_cell``), every cell on each, one episode at a time in :func:`interleaved` order, each
    after :func:`wait_for_load`; returns ``out/timing.jsonl``. ``scored``: a study folder
    whose default-arm cells the timed answers are checked against."""
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
    if per_cell is not None:
        ids = [t.id for t in tasks][:per_cell]
    else:
        families = len({t.family for t in tasks}) or 1
        need = per_family or max(1, math.ceil(MIN_PER_CELL / families))
        ids = covering_tasks(tasks, need)
    answers = scored_answers(scored, first.arm) if scored is not None else {}
    scored_cells = {key[:3] for key in answers}
    if scored is not None and not any(
        (c.env, c.workflow, c.model) in scored_cells for c in configs
    ):
        # the check would pass nothing and flag nothing: the third study's pass, timing the
        # budget-8000 arm, once looked for the study's default arm, which a sweep has not
        raise ValueError(
            f"no scored episode in {scored} for the pass's cells (arm {first.arm or 'default'}):"
            " each timed answer is checked against the cell the study scored"
        )
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
        # the cell's run so far, and this task: not the earlier tasks whose episodes are in
        # timing.jsonl but not in the run directory (a pass resumed from its timing.jsonl
        # alone, on a machine without the runs, would time them all again unrecorded)
        held = {h.task_id for h in ResultsFile(cell.run_dir / RESULTS).heads()}
        sample = [t for t in ran[index] if t in held and t != task_id] + [task_id]
        before, waited, timed_out = wait_for_load(max_load, load_timeout_s, load, sleep)
        started = time.time()
        summary = run_sync(cell.model_copy(update={"sample_ids": sample}))
        if summary.interrupted:  # Ctrl-C: the pass stops here, as the run did
            raise KeyboardInterrupt(f"interrupted; the episodes timed so far are in {log}")
        after = load()
        traj = _latest(cell.run_dir, task_id)
        key = (cell.env, cell.workflow, cell.model, task_id)
        match = None
        if key in answers and traj is not None:
            match = normalize_answer(answers[key] or "") == normalize_answer(traj.answer or "")
        row: dict[str, Any] = {
            "cell": name,
            "workflow": cell.workflow,
            "model": cell.model,
            "task_id": task_id,
            "family": next((t.family for t in tasks if t.id == task_id), None),
            "started_at": started,
            "wall_time_s": traj.wall_time_s if traj else None,
            "tokens": traj.prompt_tokens + traj.completion_tokens if traj else None,
            "llm_calls": traj.n_llm_calls if traj else None,
            # where the time went: the model calls (the server's own compute within them),
            # the tools, and the tokens the server computed (uncached prompt, generated)
            **_time_split(traj),
            "load_before": before,
            "load_after": after,
            "load_wait_s": waited,
            "load_timed_out": timed_out,
            "max_load": max_load,
            "answer": traj.answer if traj else None,
            "matches_scored": match,
            "cpus": os.cpu_count(),
        }
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(row) + "\n")
    return log


def _time_split(traj: Any) -> dict[str, Any]:
    """A timed episode's time and tokens by where they went (None where it failed to run)."""
    if traj is None:
        return dict.fromkeys(_SPLIT)
    server = [c.server_time_s for c in traj.llm_calls if c.server_time_s is not None]
    return {
        "model_time_s": traj.model_time_s,
        "server_time_s": sum(server) if server else None,
        "tool_time_s": traj.tool_time_s,
        "uncached_prompt_tokens": traj.uncached_prompt_tokens,
        "completion_tokens": traj.completion_tokens,
    }


_SPLIT = (
    "model_time_s", "server_time_s", "tool_time_s", "uncached_prompt_tokens", "completion_tokens",
)  # fmt: skip


def _latest(run_dir: Path, task_id: str) -> Any:
    """The last recorded episode of ``task_id`` in ``run_dir`` (None if it failed to run)."""
    found = None
    for traj in ResultsFile(run_dir / RESULTS):
        if traj.task_id == task_id:
            found = traj
    return found
