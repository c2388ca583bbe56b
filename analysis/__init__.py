"""Taxonomy, aggregation, plots and reports over stored trajectories (``raleval.analysis``).

For notebooks: ``from raleval.analysis import load_runs, load_steps`` (pandas DataFrames, one
row per episode / per step; see ``raleval.analysis.export``). Loaded on first use, so importing
this package stays cheap.
"""

from __future__ import annotations

from typing import Any

__all__ = ["load_runs", "load_steps"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from raleval.analysis import export

        return getattr(export, name)
    raise AttributeError(f"module 'raleval.analysis' has no attribute {name!r}")
