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
    # the machine's real load would make the pass wait for it: a quiet machine, scripted
    log = timing_pass(cells, tmp_path / "timing", per_cell=2, load=lambda: 0.2)
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
    again = timing_pass(cells, tmp_path / "timing", per_cell=2, load=lambda: 0.2)
    assert again.read_text() == log.read_text()
    assert (tmp_path / "timing" / TIMING) == log


def test_the_pass_covers_every_family_waits_for_a_low_load_and_checks_each_answer(tmp_path):
    """Issue 62: at least five episodes per cell covering every family, each after the load
    fell below the limit (the wait and a timed-out wait recorded), and a timed answer that
    differs from the scored episode's is flagged; the table says all of it."""
    from raleval.analysis.study import timing_table
    from raleval.app.runner import run_sync
    from raleval.records import Trajectory
    from raleval.store import RESULTS

    base = {
        "env": "scholar", "env_options": {"size": "tiny"}, "model": "scripted/oracle",
        "tasks_per_family": 4, "limit": 12, "sample_seed": 7,
    }  # fmt: skip
    scored = tmp_path / "study"
    cells = [RunConfig(**base, workflow=w, log_dir=scored) for w in ("react", "direct")]
    for cell in cells:
        run_sync(cell)
    # the study's scored ReAct episode of one task answered otherwise than the timed one will
    react_dir = cells[0].run_dir
    lines = (react_dir / RESULTS).read_text().splitlines()
    changed = Trajectory.model_validate_json(lines[0])
    changed.answer = "not what the timed episode says"
    lines[0] = changed.model_dump_json()
    (react_dir / RESULTS).write_text("\n".join(lines) + "\n")

    loads = iter([3.0, 2.0, 1.2] + [0.5] * 11 + [9.0] * 1000)
    slept: list[float] = []
    timed = [c.model_copy(update={"log_dir": tmp_path / "x"}) for c in cells]
    log = timing_pass(
        timed, tmp_path / "timing", max_load=1.5, load_timeout_s=60, scored=scored,
        load=lambda: next(loads), sleep=slept.append,
    )  # fmt: skip
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    families = {t for t in (r["family"] for r in rows)}
    assert len(families) == 3  # scholar's three families, each in every cell
    for workflow in ("react", "direct"):
        mine = [r for r in rows if r["workflow"] == workflow]
        assert len(mine) >= 5 and {r["family"] for r in mine} == families
    # the first episode waited two polls for the load (3.0, 2.0) and ran at 1.2
    assert rows[0]["load_before"] == 1.2 and rows[0]["load_wait_s"] == 30.0
    assert rows[0]["load_timed_out"] is False and slept[:2] == [15.0, 15.0]
    # once the load stays high the wait gives up after the timeout and says so
    late = [r for r in rows if r["load_timed_out"]]
    assert late and all(r["load_wait_s"] == 60 and r["load_before"] == 9.0 for r in late)
    # every timed answer was checked; exactly the tampered one differs
    assert all(r["matches_scored"] is not None for r in rows)
    differs = [r for r in rows if r["matches_scored"] is False]
    assert [(r["workflow"], r["task_id"]) for r in differs] == [("react", changed.task_id)]
    table = "\n".join(timing_table(tmp_path / "timing"))
    react_row = next(line for line in table.splitlines() if "| react |" in line)
    cols = [c.strip() for c in react_row.strip("|").split("|")]
    assert cols[3] == "6" and cols[4] == "3" and cols[-1] == "1"
    assert int(cols[-2]) == sum(r["load_timed_out"] for r in rows if r["workflow"] == "react")
