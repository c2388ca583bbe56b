"""Runs as tables and as Inspect AI logs: ``raleval export RUN --format parquet|csv|inspect``.

- :func:`episodes_frame` / :func:`steps_frame`: one row per episode (scores flattened to
  ``score_<name>`` columns, call-level scores included) and one row per step, as pandas
  DataFrames; :func:`load_runs` reads run directories straight into the episode frame.
- Parquet (pyarrow) or CSV: ``PATH`` holds the episodes and ``<stem>.steps.<ext>`` the steps.
- ``inspect``: an Inspect AI eval log per run (:mod:`raleval.analysis.inspect_export`), named
  as Inspect names its logs and placed beside the run unless ``--out`` says otherwise.

Needs the ``export`` extra (pyarrow, pandas); ``inspect`` needs the ``inspect`` extra.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from raleval.analysis.extras import MissingExtraError
from raleval.analysis.runs import Run, find_runs, load_run
from raleval.failures import failure_cause
from raleval.records import TaskTags, Trajectory

__all__ = ["MissingExtraError", "export_run", "load_runs", "load_steps"]

FORMATS = ("parquet", "csv", "inspect")
STEP_COLUMNS = [
    "run",
    "system",
    "task_id",
    "epoch",
    "index",
    "tool",
    "arguments",
    "observation",
    "thought",
    "raw_action",
    "kind",
    "cause",
    "latency_s",
    "cached",
]


def _pandas() -> Any:
    try:
        import pandas as pd
    except ImportError as exc:
        raise MissingExtraError(
            "load_runs, load_steps and export need pandas and pyarrow: "
            'pip install "raleval[export]"'
        ) from exc
    return pd


def episode_row(run: Run, t: Trajectory) -> dict[str, Any]:
    """One flat record of an episode."""
    task = run.tasks.get(t.task_id)
    row: dict[str, Any] = {
        "run": str(run.path),
        "system": run.system,
        "workflow": t.agent.workflow,
        "model": t.agent.model,
        "env": t.agent.env,
        "task_id": t.task_id,
        "epoch": t.epoch,
        "family": task.family if task else None,
        "level": task.level.value if task else None,
        "domain": task.domain if task else None,
        "question": task.question if task else None,
        "gold": json.dumps(task.answers, ensure_ascii=False) if task else None,
        "answer": t.answer,
        "termination": t.termination.value,
        "termination_cause": t.termination_cause,
        "error_type": t.error_type.value if t.error_type else None,
        "error_cause": t.error_cause,
        "stop_reason": t.stop_reason.value if t.stop_reason else None,
        "error_subcause": t.error_subcause,
        "failure": failure_cause(t),  # infrastructure cause; such rows are not scored
        "attempt": t.attempt,
        "answer_type": task.answer_type.value if task and task.answer_type else None,
        "n_steps": len(t.steps),
        "n_tool_calls": sum(1 for s in t.steps if s.tool is not None),
        "n_llm_calls": t.n_llm_calls,
        "prompt_tokens": t.prompt_tokens,
        "completion_tokens": t.completion_tokens,
        "cost_usd": t.cost_usd,  # None: the model's price is unknown
        "compute_s": t.compute_s,  # a model on this machine
        "wall_time_s": t.wall_time_s,
        "model_time_s": t.model_time_s,
        "tool_time_s": t.tool_time_s,
        "started_at": t.started_at.isoformat(),
    }
    tags = task.tags.model_dump(mode="json") if task else {}
    for name in TaskTags.model_fields:
        row[f"tag_{name}"] = tags.get(name)
    for name, value in sorted(t.scores.items()):
        row[f"score_{name}"] = value
    return row


def step_rows(run: Run, t: Trajectory) -> list[dict[str, Any]]:
    return [
        {
            "run": str(run.path),
            "system": run.system,
            "task_id": t.task_id,
            "epoch": t.epoch,
            "index": s.index,
            "tool": s.tool,
            "arguments": json.dumps(s.arguments, ensure_ascii=False, default=repr)
            if s.arguments is not None
            else None,
            "observation": s.observation,
            "thought": s.thought,
            "raw_action": s.raw_action,
            "kind": s.kind.value,
            "cause": s.cause,
            "latency_s": s.latency_s,
            "cached": s.cached,
        }
        for s in t.steps
    ]


def episodes_frame(runs: Iterable[Run]) -> Any:
    """A DataFrame with one row per episode of ``runs``."""
    pd = _pandas()
    return pd.DataFrame([episode_row(r, t) for r in runs for t in r.results])


def steps_frame(runs: Iterable[Run]) -> Any:
    """A DataFrame with one row per step of every episode of ``runs``."""
    pd = _pandas()
    rows = [row for r in runs for t in r.results for row in step_rows(r, t)]
    return pd.DataFrame(rows, columns=STEP_COLUMNS)


def load_runs(paths: Iterable[Path | str], frame: str = "pandas") -> Any:
    """The episodes of the run directories ``paths`` as one DataFrame: one row per episode
    (the last attempt per task and epoch), with every score (``score_<name>``), the label,
    cause and stop reason, the infrastructure ``failure`` (such rows are not scored),
    timings, token counts and the task's family, level, domain and tags (``tag_<name>``).
    ``frame="polars"`` returns a polars DataFrame (polars must be installed)."""
    return _as(episodes_frame(load_run(p) for p in find_runs(_paths(paths))), frame)


def load_steps(paths: Iterable[Path | str], frame: str = "pandas") -> Any:
    """One row per step of every episode of the run directories ``paths`` (join with
    :func:`load_runs` on ``run``, ``task_id`` and ``epoch``)."""
    return _as(steps_frame(load_run(p) for p in find_runs(_paths(paths))), frame)


def _paths(paths: Iterable[Path | str] | Path | str) -> list[Path | str]:
    return [paths] if isinstance(paths, (str, Path)) else list(paths)


def _as(df: Any, frame: str) -> Any:
    if frame == "pandas":
        return df
    if frame == "polars":
        try:
            import polars as pl
        except ImportError as exc:
            raise MissingExtraError("frame='polars' needs polars: pip install polars") from exc
        return pl.from_pandas(df)
    raise ValueError(f"frame must be 'pandas' or 'polars', not {frame!r}")


def steps_path(out: Path) -> Path:
    """Where the steps go beside the episodes file: ``runs.parquet`` -> ``runs.steps.parquet``."""
    return out.with_name(f"{out.stem}.steps{out.suffix}")


# What ``raleval export`` names its file when no --out is given: the exported folder's name
# and a suffix that says the format, beside that folder (``runs/a`` -> ``runs/a.episodes.csv``).
# An Inspect log is named as Inspect names its own (raleval.analysis.inspect_export).
DEFAULT_OUT = {"parquet": "episodes.parquet", "csv": "episodes.csv"}


def default_export_path(source: Path | str, fmt: str) -> Path:
    """``<source>.<DEFAULT_OUT[fmt]>`` beside ``source``, numbered so that an existing file
    (or its steps file) is never overwritten."""
    source = Path(source).resolve()
    stem, suffix = f"{source.name}.{DEFAULT_OUT[fmt]}".rsplit(".", 1)
    path, n = source.parent / f"{stem}.{suffix}", 1
    while path.exists() or steps_path(path).exists():
        n += 1
        path = source.parent / f"{stem}-{n}.{suffix}"
    return path


def export_run(
    run_dir: Path | list[Path], fmt: str, out: Path | None = None, replace: bool = False
) -> list[Path]:
    """Write the run ``run_dir`` (or every run below a log directory, or several) as ``fmt``
    to ``out`` (default beside the first path given, :func:`default_export_path`); returns the
    files written. An existing ``out`` is replaced only with ``replace``. Parquet and CSV hold
    every run's episodes in one table (``run`` names each row's); an Inspect log is one file
    per run (``out`` itself for one run, ``<stem>.<run name><suffix>`` beside it for several)."""
    if fmt not in FORMATS:
        raise ValueError(f"--format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    paths = _paths(run_dir)
    if fmt == "inspect":
        return _export_inspect(paths, out, replace)
    if out is None:
        out = default_export_path(paths[0], fmt)
    elif not replace and (out.exists() or steps_path(out).exists()):
        raise FileExistsError(f"{out} exists; pass --force to replace it")
    runs = [load_run(p) for p in find_runs(paths)]
    for run in runs:
        run.rescore()  # current scores (call-level ones too), as the report shows them
    out.parent.mkdir(parents=True, exist_ok=True)
    episodes, steps = episodes_frame(runs), steps_frame(runs)
    written = [out, steps_path(out)]
    if fmt == "parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError as exc:
            raise MissingExtraError('Parquet needs pyarrow: pip install "raleval[export]"') from exc
        episodes.to_parquet(out, index=False)
        steps.to_parquet(written[1], index=False)
    else:
        episodes.to_csv(out, index=False)
        steps.to_csv(written[1], index=False)
    return written


def _export_inspect(paths: list[Path | str], out: Path | None, replace: bool) -> list[Path]:
    """One Inspect log per run: ``out`` for one run; else Inspect's own file name for each,
    beside the run (no ``out``), in ``out`` (a folder) or in ``out``'s folder (several runs;
    ``.json`` if ``out`` says so)."""
    from raleval.analysis.inspect_export import inspect_file_name, write_inspect_log

    runs = [load_run(p) for p in find_runs(paths)]
    targets = []
    for run in runs:
        run.rescore()  # current scores (call-level ones too), as the report shows them
        if out is not None and len(runs) == 1 and not out.is_dir():
            target = out
        else:  # Inspect's name, in the folder --out names (or holds), else beside the run
            suffix = ".json" if out is not None and out.suffix == ".json" else ".eval"
            folder = (out if out.is_dir() else out.parent) if out is not None else None
            target = (folder or run.path.resolve().parent) / inspect_file_name(run, suffix)
        if target.exists() and not replace:
            raise FileExistsError(f"{target} exists; pass --force to replace it")
        targets.append(target)
    for run, target in zip(runs, targets, strict=True):
        target.parent.mkdir(parents=True, exist_ok=True)
        write_inspect_log(run, target)
    return targets
