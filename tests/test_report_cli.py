"""``raleval report A B C`` writes a new file outside every run and leaves the runs' own
reports unchanged; the console table fits an 80-column terminal."""

from __future__ import annotations

import hashlib

from typer.testing import CliRunner

from raleval.app.cli import app

runner = CliRunner()


def make_runs(tmp_path) -> list:
    dirs = []
    for model in ("scripted/oracle", "scripted/abstain"):
        res = runner.invoke(
            app,
            ["run", "--model", model, "-E", "size=tiny", "--tasks", "scholar",
             "--tasks-per-family", "2", "--display", "none", "--log-dir", str(tmp_path / "runs")],
        )  # fmt: skip
        assert res.exit_code == 0, res.output
    dirs = sorted((tmp_path / "runs").iterdir())
    assert len(dirs) == 2 and all((d / "report.html").exists() for d in dirs)
    return dirs


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_report_of_several_runs_is_a_new_file(tmp_path, monkeypatch):
    dirs = make_runs(tmp_path)
    before = [digest(d / "report.html") for d in dirs]
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    res = runner.invoke(app, ["report", *map(str, dirs)])
    assert res.exit_code == 0, res.output
    beside = dirs[0].parent  # beside the runs, not in the current directory (issue 50)
    first = beside / f"report-{dirs[0].name}-and-1-more.html"
    assert res.output.strip() == f"report: {first}"
    res = runner.invoke(app, ["report", *map(str, dirs)])  # never overwrites: a new name
    assert res.output.strip() == f"report: {beside / f'report-{dirs[0].name}-and-1-more-2.html'}"
    assert list(work.iterdir()) == []
    assert [digest(d / "report.html") for d in dirs] == before
    res = runner.invoke(app, ["report", str(dirs[0]), "--out", str(first)])
    assert res.exit_code == 2 and "--force" in res.output
    res = runner.invoke(app, ["report", str(dirs[0]), "--out", str(first), "--force"])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["report", str(dirs[0]), "--out", str(dirs[1] / "x.html")])
    assert res.exit_code == 2 and "inside the run" in res.output
    assert not (dirs[1] / "x.html").exists()


def test_console_table_fits_80_columns(tmp_path):
    res = CliRunner().invoke(
        app,
        ["run", "--model", "scripted/oracle", "-E", "size=tiny", "--tasks", "scholar",
         "--tasks-per-family", "2", "--log-dir", str(tmp_path)],
        env={"COLUMNS": "80"},
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    table = [line for line in res.output.splitlines() if line[:1] in "┏┃┡│└"]
    assert table and max(len(line) for line in table) <= 80
    assert not any("…" in line for line in table)  # nothing truncated
    assert any("3-5" in line for line in table) and any("all" in line for line in table)


def test_plain_display_says_each_phase_and_each_episode(tmp_path):
    res = CliRunner().invoke(
        app,
        ["run", "--model", "scripted/oracle", "-E", "size=tiny", "--tasks", "scholar",
         "--tasks-per-family", "2", "--limit", "3", "--log-dir", str(tmp_path),
         "--display", "plain"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    out = res.output.splitlines()
    title = "scholar__react__scripted_oracle__scholar"
    for phase in ("loading model scripted/oracle", "building the scholar environment",
                  "loading tasks (scholar)"):  # fmt: skip
        assert f"{title}: {phase} ..." in out
        assert any(line.startswith(f"{title}: {phase}: done in ") for line in out)
    episodes = [line for line in out if line.startswith("[")]
    assert [line[:5] for line in episodes] == ["[1/3]", "[2/3]", "[3/3]"]
    assert all("(epoch 0): EM, F1 1.00, finished" in line for line in episodes)


def test_viewer_has_every_model_call_and_the_dfsdt_tree(tmp_path):
    from raleval.analysis.report import build_report, episode_view
    from raleval.analysis.runs import load_run
    from tests.conftest import run_config

    summary, _ = run_config(tmp_path, workflow="dfsdt", limit=1)
    run = load_run(summary.run_dir)
    (t,) = run.results
    e = episode_view(0, run, t, 0.5)
    assert len(e["llm"]) == t.n_llm_calls >= 2
    first = e["llm"][0]
    assert first["delta"] is False and first["prompt"] == t.llm_calls[0].prompt
    assert run.tasks[t.task_id].question in first["prompt"]  # the whole first prompt
    assert [c["output"] for c in e["llm"]] == [c.output for c in t.llm_calls]
    tree = e["tree"]
    assert tree[0]["parent"] is None and tree[0]["depth"] == 0
    assert len(tree) == len(t.extra["tree"]) and any(n["status"] == "answer" for n in tree)
    html = build_report([run])
    assert "DFSDT search tree" in html and "model calls" in html


def test_figures_have_no_single_axis_radar_and_legends_outside(tmp_path):
    import pytest

    pytest.importorskip("matplotlib")
    from raleval.analysis import plots
    from raleval.analysis.report import build_report
    from raleval.analysis.runs import load_run
    from tests.conftest import run_config

    one, _ = run_config(tmp_path, limit=2, run_name="one")  # one family: one axis
    html = build_report([load_run(one.run_dir)])
    assert "react: F1 by domain and level" not in html  # no radar over a single axis
    assert "F1 by domain x level" in html
    three, _ = run_config(tmp_path, tasks="scholar", limit=3, run_name="three")
    html = build_report([load_run(three.run_dir)])
    assert "react: F1 by domain and level" in html
    # long CRAG-like axis names are written out on the y axis, level; the legend sits right of
    # the axes (the browser test in test_report.py measures that nothing overlaps)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    captured = {}
    real = plots._svg

    def keep(fig):
        captured["fig"] = fig
        ax = fig.axes[0]
        captured["rotation"] = ax.get_yticklabels()[0].get_rotation()
        captured["labels"] = [t.get_text() for t in ax.get_yticklabels()]
        captured["legend_x"] = ax.get_legend().get_bbox_to_anchor().x0
        captured["axes_x1"] = ax.get_window_extent().x1
        return real(fig)

    series = {f"sys{i}": {f"finance {lvl} question": 0.5 for lvl in "ABCDEF"} for i in range(2)}
    plots._svg, saved = keep, plots._svg
    try:
        plots.level_bars("F1", series)
    finally:
        plots._svg = saved
        plt.close("all")
    assert captured["rotation"] == 0.0
    assert sorted(captured["labels"]) == [f"finance {lvl} question" for lvl in "ABCDEF"]
    assert captured["legend_x"] >= captured["axes_x1"]  # starts right of the axes


def test_report_of_a_stored_study_goes_under_runs_not_into_the_study(tmp_path, monkeypatch):
    """Issue 61: `raleval report studies/...` wrote into the repository's stored study."""
    from pathlib import Path

    study = Path(__file__).resolve().parents[1] / "studies" / "local-models-2"
    cells = sorted(p for p in study.iterdir() if (p / "results.jsonl.gz").exists())
    cell = min(cells, key=lambda p: (p / "results.jsonl.gz").stat().st_size)
    before = sorted(p.name for p in study.iterdir())
    monkeypatch.chdir(tmp_path)
    res = runner.invoke(app, ["report", str(cell)])
    assert res.exit_code == 0, res.output
    written = Path(res.output.strip().removeprefix("report: "))
    assert written.parent == tmp_path / "runs" and written.exists()
    assert sorted(p.name for p in study.iterdir()) == before
