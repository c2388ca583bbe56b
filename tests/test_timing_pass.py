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


def _react_and_direct(log_dir) -> list[RunConfig]:
    """Two cells of the tiny scholar world on the same 3 tasks."""
    base = {
        "env": "scholar", "env_options": {"size": "tiny"}, "model": "scripted/oracle",
        "tasks": "scholar-ks", "tasks_per_family": 6, "limit": 3, "log_dir": log_dir,
    }  # fmt: skip
    return [RunConfig(**base, workflow="react"), RunConfig(**base, workflow="direct")]


def test_a_timing_pass_runs_one_episode_at_a_time_and_records_the_load(tmp_path):
    cells = _react_and_direct(tmp_path / "x")
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
    assert cols[3] == "6" and cols[4] == "3" and cols[-3] == "1"
    assert int(cols[-4]) == sum(r["load_timed_out"] for r in rows if r["workflow"] == "react")
    # where the time went: the shares of wall time in model calls and tools, from the lines
    mine = [r for r in rows if r["workflow"] == "react"]
    wall = sum(r["wall_time_s"] for r in mine)
    assert cols[-2] == f"{100 * sum(r['model_time_s'] for r in mine) / wall:.0f}%"
    assert cols[-1] == f"{100 * sum(r['tool_time_s'] for r in mine) / wall:.0f}%"


def test_a_load_just_below_the_limit_does_not_read_as_the_limit(tmp_path):
    """The table's loads are rounded down to two decimals: an episode that started at 1.497
    under a limit of 1.5 shows 1.49, not a 1.5 that reads as over it."""
    from raleval.analysis.study import timing_table

    line = {
        "workflow": "react", "model": "m", "task_id": "t", "family": "1-1",
        "wall_time_s": 2.0, "model_time_s": 1.0, "tool_time_s": 0.0, "load_before": 1.497,
        "load_timed_out": False, "matches_scored": True,
    }  # fmt: skip
    (tmp_path / "scholar").mkdir()

    def loads_shown(load: float) -> list[str]:
        """The table's median and highest load for one episode that started at ``load``."""
        (tmp_path / "scholar" / TIMING).write_text(json.dumps({**line, "load_before": load}))
        row = next(r for r in timing_table(tmp_path) if r.startswith("| scholar |"))
        return [c.strip() for c in row.strip("|").split("|")][7:9]

    assert loads_shown(1.497) == ["1.49", "1.49"]
    # and a load of exactly 0.29 (28.999... hundredths in floating point) stays 0.29
    assert loads_shown(0.29) == ["0.29", "0.29"]


def test_a_budget_sweeps_pass_checks_each_answer_against_its_own_arms_cell(tmp_path):
    """The third study has no default arm, only budget arms, and its pass times one of them:
    the check once looked for default-arm cells only, found none, and would have checked no
    answer. Now each timed answer is checked against the timed arm's cell, not another arm's,
    and a pass whose arm the study never scored is refused before it runs."""
    import pytest

    from raleval.app.runner import run_sync
    from raleval.records import Trajectory
    from raleval.store import RESULTS

    scored = tmp_path / "study"
    arms = {}
    for arm in ("budget-1000", "budget-2000"):
        cells = [c.model_copy(update={"arm": arm}) for c in _react_and_direct(scored)]
        for cell in cells:
            run_sync(cell)
        arms[arm] = cells
    # each arm's ReAct cell: one answer changed, a different task in each
    tampered = {}
    for k, arm in enumerate(arms):
        path = arms[arm][0].run_dir / RESULTS
        lines = path.read_text().splitlines()
        changed = Trajectory.model_validate_json(lines[k])
        changed.answer = f"not what {arm} timed"
        lines[k] = changed.model_dump_json()
        path.write_text("\n".join(lines) + "\n")
        tampered[arm] = changed.task_id
    timed = [c.model_copy(update={"log_dir": tmp_path / "x"}) for c in arms["budget-2000"]]
    log = timing_pass(timed, tmp_path / "timing", per_cell=3, scored=scored, load=lambda: 0.2)
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(rows) == 6 and all(r["matches_scored"] is not None for r in rows)
    differs = [(r["workflow"], r["task_id"]) for r in rows if r["matches_scored"] is False]
    assert differs == [("react", tampered["budget-2000"])]
    for r in rows:  # where each episode's time went
        assert r["model_time_s"] is not None and r["tool_time_s"] is not None
        assert r["completion_tokens"] > 0
    unscored = [c.model_copy(update={"arm": "budget-4000"}) for c in timed]
    with pytest.raises(ValueError, match="no scored episode"):
        timing_pass(unscored, tmp_path / "timing-4000", per_cell=1, scored=scored,
                    load=lambda: 0.2)  # fmt: skip
    assert not (tmp_path / "timing-4000" / TIMING).exists()


def test_a_pass_resumed_from_its_timing_lines_alone_times_only_the_new_episodes(tmp_path):
    """The pass outlasts a session and a new machine has only the timing.jsonl kept in the
    repository, not the timing cells' run directories: resumed, it runs each cell's new tasks
    and not again the episodes its lines already time (it once re-ran every earlier task of a
    cell with each new one, unrecorded)."""
    import shutil

    from raleval.store import RESULTS, ResultsFile

    cells = _react_and_direct(tmp_path / "x")
    first = timing_pass(cells, tmp_path / "old", per_cell=1, load=lambda: 0.2)
    kept = first.read_text()
    (tmp_path / "new").mkdir()
    shutil.copy(first, tmp_path / "new" / TIMING)  # all a new machine has
    log = timing_pass(cells, tmp_path / "new", per_cell=2, load=lambda: 0.2)
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    assert log.read_text().startswith(kept) and len(rows) == 4
    timed_first, timed_second = rows[0]["task_id"], rows[2]["task_id"]
    for cell in {r["cell"] for r in rows}:
        ran = [h.task_id for h in ResultsFile(tmp_path / "new" / cell / RESULTS).heads()]
        assert ran == [timed_second], (cell, ran, timed_first)


def test_run_timing_sh_resumes_the_pass_from_the_lines_kept_in_the_repository(tmp_path):
    """``studies/run_timing.sh`` on a new machine: the timing lines kept under
    ``studies/<study>-timing/`` go back into the pass's folder, it times only what they lack,
    and the whole file comes back to ``studies/<study>-timing/``."""
    import shutil
    import subprocess
    from pathlib import Path

    from typer.testing import CliRunner

    from raleval.app.cli import app

    from .conftest import script_env

    repo = Path(__file__).resolve().parents[1]
    root = tmp_path / "clone"
    (root / "studies").mkdir(parents=True)
    shutil.copy(repo / "studies" / "run_timing.sh", root / "studies" / "run_timing.sh")
    config = root / "studies" / "s.timing.yaml"
    config.write_text(
        "env: scholar\nenv_options: {size: tiny}\nworkflows: [react, direct]\n"
        "models: [scripted/oracle]\ntasks: scholar-ks\ntasks_per_family: 6\nlimit: 6\n"
    )
    # the study's scored cells, which the pass checks its answers against
    ran = tmp_path / "scored"
    for args in (
        ["run", "--config", str(config), "--log-dir", str(ran), "--display", "none"],
        ["study", "store", str(ran), "--into", str(root / "studies" / "s")],
    ):
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0, result.output
    env = script_env(MAX_LOAD="1000")  # a busy machine: no waiting here

    def run() -> None:
        done = subprocess.run(
            ["bash", str(root / "studies" / "run_timing.sh"), "s"],
            capture_output=True, text=True, env=env, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr

    run()
    kept = root / "studies" / "s-timing" / "scholar" / "timing.jsonl"
    whole = kept.read_text().splitlines()
    assert len(whole) >= 10  # 2 cells, at least 5 episodes each
    # a new machine: no runs/, and the repository kept the first 4 lines of an unfinished pass
    shutil.rmtree(root / "runs")
    kept.write_text("\n".join(whole[:4]) + "\n")
    run()
    again = kept.read_text().splitlines()
    assert again[:4] == whole[:4] and len(again) == len(whole)
    assert [json.loads(x)["task_id"] for x in again] == [json.loads(x)["task_id"] for x in whole]
    first = json.loads(whole[0])["task_id"]
    for cell in (root / "runs" / "study-s-timing" / "scholar").glob("timing-*"):
        assert first not in (cell / "results.jsonl").read_text(), cell.name
    assert all(json.loads(x)["matches_scored"] is True for x in again)


def test_ctrl_c_stops_the_pass_and_keeps_what_it_timed(tmp_path, monkeypatch):
    """Ctrl-C during a timed episode stopped that run only: the pass went on to the next
    episode and, hours later, ended with exit 0. It now stops, the interrupted episode unwritten,
    and the command exits 130."""
    from typer.testing import CliRunner

    import raleval.app.runner as runner
    from raleval.app.cli import app

    real, calls = runner.run_sync, []

    def interrupted_third(config):
        calls.append(config)
        summary = real(config)
        if len(calls) == 3:
            summary.interrupted = True
        return summary

    monkeypatch.setattr(runner, "run_sync", interrupted_third)
    (tmp_path / "t.yaml").write_text(
        "env: scholar\nenv_options: {size: tiny}\nworkflows: [react, direct]\n"
        "models: [scripted/oracle]\ntasks: scholar-ks\ntasks_per_family: 6\nlimit: 3\n"
    )
    result = CliRunner().invoke(
        app,
        ["study", "timing", "--config", str(tmp_path / "t.yaml"), "--out", str(tmp_path / "o"),
         "--per-cell", "3", "--max-load", "1000"],
    )  # fmt: skip
    assert result.exit_code == 130, result.output
    assert len(calls) == 3
    lines = (tmp_path / "o" / "scholar" / TIMING).read_text().splitlines()
    assert len(lines) == 2  # the two before; not the interrupted one, nor any after
