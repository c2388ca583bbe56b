"""The timing pass (issue 48): every cell on the same tasks, one episode at a time, in
interleaved order, each episode's line with the load before and after; resumable."""

from __future__ import annotations

import json

from raleval.app.timing import TIMING, interleaved, timing_pass
from raleval.config import RunConfig
from raleval.store import HEADER


def test_interleaved_rotates_which_cell_goes_first():
    assert interleaved(3, ["a", "b", "c"]) == [
        (0, "a"), (1, "a"), (2, "a"),
        (1, "b"), (2, "b"), (0, "b"),
        (2, "c"), (0, "c"), (1, "c"),
    ]  # fmt: skip


def test_a_timing_pass_runs_one_episode_at_a_time_and_records_the_load(tmp_path):
    base = {
        "env": "scholar", "env_options": {"size": "tiny"}, "model": "scripted/oracle",
        "tasks": "scholar-ks", "tasks_per_family": 6, "limit": 3, "log_dir": tmp_path / "x",
    }  # fmt: skip
    cells = [RunConfig(**base, workflow="react"), RunConfig(**base, workflow="direct")]
    log = timing_pass(cells, tmp_path / "timing", per_cell=2)
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(r["workflow"], r["task_id"]) for r in rows] == [
        ("react", rows[0]["task_id"]), ("direct", rows[0]["task_id"]),
        ("direct", rows[2]["task_id"]), ("react", rows[2]["task_id"]),
    ]  # fmt: skip
    assert rows[0]["task_id"] != rows[2]["task_id"]
    for r in rows:
        assert r["wall_time_s"] >= 0 and r["tokens"] > 0 and r["llm_calls"] >= 1
        assert r["load_before"] is not None and r["load_after"] is not None
    for cell in {r["cell"] for r in rows}:
        header = json.loads((tmp_path / "timing" / cell / HEADER).read_text())
        assert header["config"]["max_connections"] == 1 and header["config"]["cache"] is False
    # resuming runs nothing again
    again = timing_pass(cells, tmp_path / "timing", per_cell=2)
    assert again.read_text() == log.read_text()
    assert (tmp_path / "timing" / TIMING) == log
