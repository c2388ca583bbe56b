"""The combined table of a matrix run (``raleval run --config matrix.yaml``): one row per cell,
written as ``matrix.md``, ``matrix.csv`` and ``matrix.json`` in the log directory."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from raleval.analysis.runs import load_run
from raleval.analysis.summary import summarize
from raleval.config import RunConfig
from raleval.store import RESULTS, write_atomic

COLUMNS = (
    "env", "workflow", "model", "tasks", "n", "failed", "correct", "f1", "exact", "missing",
    "s_per_episode", "usd_per_episode", "run_dir",
)  # fmt: skip


def matrix_rows(configs: list[RunConfig]) -> list[dict[str, Any]]:
    """One row per cell: its axes and the episode means of its run (the summary's all row)."""
    rows = []
    for cfg in configs:
        cfg = cfg.with_defaults()
        row: dict[str, Any] = {
            "env": cfg.env,
            "workflow": cfg.workflow,
            "model": cfg.model,
            "tasks": cfg.tasks,
            "run_dir": str(cfg.run_dir),
        }
        if (cfg.run_dir / RESULTS).exists():
            run = load_run(cfg.run_dir)
            total = summarize(run.results, run.tasks)[-1]
            row |= {
                "n": total.n,
                "failed": total.failed,
                "correct": round(total.correct, 4),
                "f1": round(total.f1, 4),
                "exact": round(total.em, 4),
                "missing": round(total.missing, 4),
                "s_per_episode": round(total.wall_s, 3),
                # None: some episode's price is unknown (-M price_in= -M price_out=)
                "usd_per_episode": None
                if total.cost_usd is None or not total.n
                else round(total.cost_usd / total.n, 6),
            }
        rows.append({k: row.get(k) for k in COLUMNS})
    return rows


def to_markdown(rows: list[dict[str, Any]]) -> str:
    shown = [c for c in COLUMNS if c != "run_dir"]

    def cell(v: Any, column: str) -> str:
        if v is None:
            return "-"
        if column == "usd_per_episode":
            return f"{v:.6f}"  # to the millionth: a token at $1 per million
        return f"{v:.3f}" if isinstance(v, float) else str(v)

    lines = ["| " + " | ".join(shown) + " |", "|" + "---|" * len(shown)]
    lines += ["| " + " | ".join(cell(r[c], c) for c in shown) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def to_csv(rows: list[dict[str, Any]]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


def write_matrix(log_dir: Path, rows: list[dict[str, Any]]) -> list[Path]:
    """Write the three files into ``log_dir``; returns their paths."""
    log_dir.mkdir(parents=True, exist_ok=True)
    out = {
        log_dir / "matrix.md": to_markdown(rows),
        log_dir / "matrix.csv": to_csv(rows),
        log_dir / "matrix.json": json.dumps(rows, indent=2) + "\n",
    }
    for path, text in out.items():
        write_atomic(path, text)
    return list(out)
