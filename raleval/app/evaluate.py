"""``raleval.evaluate(...)``: what ``raleval run`` runs, called from Python (a notebook, a
script), returning the episodes as a DataFrame with the run directory.

The same configuration record, the same preflight, the same runner and report as the command;
only the terminal output is left out. A run directory that holds the run already resumes."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Evaluation:
    """One evaluation's results: its run directory and one DataFrame row per episode
    (``raleval.analysis.load_runs``: ``score_f1``, ``error_type``, ``family``, ...)."""

    run_dir: Path
    episodes: Any
    ran: int  # episodes run now
    skipped: int  # episodes the run directory already held (a resumed run)
    failures: dict[str, int]  # infrastructure failures by cause (not scored)


def evaluate(*, preflight: bool = True, report: bool = True, **settings: Any) -> Evaluation:
    """Run the configuration ``settings`` name (:class:`raleval.config.RunConfig`'s fields:
    env, model, workflow, tasks, limit, env_options, log_dir, ...; ``None`` leaves a default)
    exactly as ``raleval run`` does, and return its episodes. ``report``: also write the
    run's report.html, as the command does. Raises :class:`raleval.config.ConfigError` on a
    configuration that cannot run (a dead endpoint included, with ``preflight``)."""
    from raleval.app.runner import run_sync
    from raleval.config import build_config

    config = build_config(
        {k: v for k, v in settings.items() if v is not None}, source="raleval.evaluate"
    )
    if preflight:
        from raleval.app.preflight import preflight_all

        preflight_all([config])
    summary = run_sync(config, "none")
    if summary.interrupted:
        raise KeyboardInterrupt(f"interrupted; finished episodes are in {summary.run_dir}")
    if summary.write_error is not None:
        raise OSError(f"cannot write results in {summary.run_dir}: {summary.write_error}")
    try:
        from raleval.analysis import load_runs

        episodes = load_runs([summary.run_dir])
    except ImportError as exc:
        raise ImportError(
            f"raleval.evaluate returns a pandas DataFrame: pip install 'raleval[export]' ({exc})"
        ) from exc
    if report and summary.ran:
        from raleval.analysis.report import save_report
        from raleval.analysis.runs import load_run

        save_report([load_run(summary.run_dir)], summary.run_dir / "report.html")
    return Evaluation(
        run_dir=summary.run_dir,
        episodes=episodes,
        ran=summary.ran,
        skipped=summary.skipped,
        failures=dict(summary.failures),
    )
