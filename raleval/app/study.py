"""Finished runs kept in the repository: compact copies of run directories under ``studies/``.

A study's cells run in ``runs/`` (resumable, growing); once a cell has every episode on disk,
``raleval study store`` copies it into the study folder as ``header.json``,
``tasks.jsonl.gz``, ``results.jsonl.gz`` and, when ``raleval diagnose`` ran on it,
``diagnosis.jsonl.gz``: every result line as written (all attempts), the tasks without their
pages' HTML (CRAG's ``page_result``; name, URL and snippet stay). The gzip files carry no
timestamp, so storing the same cell twice gives the same bytes and a repository diff only when
results changed. ``raleval report``, ``table`` and the analysis read
the stored copy as they read a run directory (:func:`raleval.analysis.runs.load_run`).

``raleval study restore`` is the way back: on a fresh clone (``runs/`` is never committed) it
unpacks the stored cells into a log directory, so ``raleval run --config`` resumes the study
where the repository left it instead of running every stored cell again. A restored task has
no page HTML; a run that re-runs one of its episodes (``--retry-failed``) takes the task from
its task file, the HTML included, when the two agree on everything else
(:func:`raleval.app.plan.run_tasks`).
"""

from __future__ import annotations

import gzip
import os
from dataclasses import dataclass
from pathlib import Path

from raleval.analysis.diagnosis import DIAGNOSIS
from raleval.records import Task
from raleval.store import (
    GZ,
    HEADER,
    RESULTS,
    TASKS,
    ResultsFile,
    read_header,
    read_stored_bytes,
    read_tasks,
    stored_file,
)

HTML_PAGE_FIELDS = ("page_result",)  # a page's raw HTML: megabytes, never read by analysis


@dataclass
class CellState:
    """How far a run directory has got: episodes on disk of those it runs."""

    run_dir: Path
    done: int
    total: int
    failed: int  # of those done, the last attempt failed for infrastructure reasons

    @property
    def finished(self) -> bool:
        return self.total > 0 and self.done >= self.total


def cell_state(run_dir: Path) -> CellState:
    """Episodes of ``run_dir`` on disk (the last attempt of each task and epoch) and expected
    (its recorded tasks x the header's epochs)."""
    header = read_header(run_dir)
    tasks = read_tasks(run_dir / TASKS) if (run_dir / TASKS).exists() else []
    epochs = int((header.config if header else {}).get("epochs", 1))
    wanted = {(t.id, e) for t in tasks for e in range(epochs)}
    latest: dict[tuple[str, int], bool] = {}
    for head in ResultsFile(run_dir / RESULTS).heads():
        latest[(head.task_id, head.epoch)] = head.failure is not None
    done = [k for k in latest if k in wanted]
    return CellState(run_dir, len(done), len(wanted), sum(latest[k] for k in done))


def without_page_html(task: Task) -> Task:
    """``task`` with its search-result pages' HTML dropped (name, URL, snippet kept)."""
    pages = task.metadata.get("search_results")
    if not pages:
        return task
    kept = [{k: v for k, v in p.items() if k not in HTML_PAGE_FIELDS} for p in pages]
    return task.model_copy(update={"metadata": {**task.metadata, "search_results": kept}})


def _gzip(data: bytes) -> bytes:
    return gzip.compress(data, compresslevel=9, mtime=0)


def write_atomic_bytes(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data``: readers see the old file or the new, never half."""
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def store_cell(run_dir: Path, into: Path) -> Path:
    """Copy ``run_dir`` compactly to ``into/<its name>``; returns that directory."""
    if read_header(run_dir) is None:
        raise ValueError(f"{run_dir} has no {HEADER}; is it a run directory?")
    dest = into / run_dir.name
    dest.mkdir(parents=True, exist_ok=True)
    tasks = read_tasks(run_dir / TASKS) if (run_dir / TASKS).exists() else []
    text = "".join(without_page_html(t).model_dump_json() + "\n" for t in tasks)
    write_atomic_bytes(dest / (TASKS + GZ), _gzip(text.encode()))
    write_atomic_bytes(dest / (RESULTS + GZ), _gzip((run_dir / RESULTS).read_bytes()))
    write_atomic_bytes(dest / HEADER, (run_dir / HEADER).read_bytes())
    diagnosis = run_dir / DIAGNOSIS  # the counterfactual replays, when `raleval diagnose` ran
    if diagnosis.exists():
        write_atomic_bytes(dest / (DIAGNOSIS + GZ), _gzip(diagnosis.read_bytes()))
    return dest


def restore_cell(cell: Path, into: Path) -> Path | None:
    """Unpack the stored ``cell`` into ``into/<its name>`` as a run directory (header.json,
    tasks.jsonl, results.jsonl and, when stored, diagnosis.jsonl); returns that directory, or
    None when it already holds a run, which is left as it is: nothing on disk is overwritten.
    The directory appears whole or not at all (unpacked beside it, then renamed)."""
    if read_header(cell) is None:
        raise ValueError(f"{cell} has no {HEADER}; is it a stored cell?")
    dest = into / cell.name
    if dest.exists() and any(dest.iterdir()):
        return None
    into.mkdir(parents=True, exist_ok=True)
    tmp = into / f".{cell.name}.restoring"
    tmp.mkdir(exist_ok=True)
    for name in (HEADER, TASKS, RESULTS, DIAGNOSIS):
        source = stored_file(cell, name)
        if source.exists():
            write_atomic_bytes(tmp / name, read_stored_bytes(source))
    if dest.exists():
        dest.rmdir()  # empty, checked above
    os.replace(tmp, dest)
    return dest


SUPERSEDED = "superseded-"  # a run set aside (``--force``, or by hand): never a study's cell


def cells_under(path: Path) -> list[Path]:
    """The run directories directly inside ``path`` (a study or log folder), else ``path``;
    runs set aside (``superseded-*``) are not cells, as :func:`raleval.analysis.runs.find_runs`
    skips them in reports."""
    if (path / HEADER).exists() or not path.is_dir():
        return [path]
    cells = sorted(
        p
        for p in path.iterdir()
        if p.is_dir() and (p / HEADER).exists() and not p.name.startswith(SUPERSEDED)
    )
    return cells or [path]
