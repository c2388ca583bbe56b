"""raleval export: episodes and steps as Parquet/CSV, and an Inspect AI eval log."""

from __future__ import annotations

import sys

import pytest
from typer.testing import CliRunner

from raleval.app.cli import app
from raleval.app.runner import run_sync
from raleval.config import build_config

pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    cfg = build_config(
        {
            "env": "scholar",
            "env_options": {"size": "tiny"},
            "tasks": "scholar",
            "tasks_per_family": 2,
            "model": "scripted/oracle",
            "log_dir": tmp_path_factory.mktemp("runs"),
        }
    )
    return run_sync(cfg).run_dir


def test_parquet_has_one_row_per_episode_with_call_scores(run_dir, tmp_path):
    out = tmp_path / "episodes.parquet"
    res = CliRunner().invoke(
        app, ["export", str(run_dir), "--format", "parquet", "--out", str(out)]
    )
    assert res.exit_code == 0, res.output
    episodes = pd.read_parquet(out)
    assert len(episodes) == 6
    assert sorted(episodes["family"].unique()) == ["1-3", "2-4", "3-5"]
    assert (episodes["score_f1"] == 1.0).all()
    assert (episodes["score_call_precision"] == 1.0).all()
    assert (episodes["score_call_recall"] == 1.0).all()
    steps = pd.read_parquet(tmp_path / "episodes.steps.parquet")
    assert len(steps) == int(episodes["n_steps"].sum())
    first = steps[steps["task_id"] == episodes["task_id"][0]]
    assert first["tool"].iloc[-1] == "Finish"


def test_csv_export(run_dir, tmp_path):
    out = tmp_path / "e.csv"
    res = CliRunner().invoke(app, ["export", str(run_dir), "--format", "csv", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert len(pd.read_csv(out)) == 6
    assert (tmp_path / "e.steps.csv").is_file()


def test_csv_export_without_out_writes_csv_files_beside_the_run(run_dir, tmp_path, monkeypatch):
    # issue 38: --format csv used to write CSV into episodes.parquet; issue 50: it wrote into
    # the current directory and a second export overwrote the first without a word
    monkeypatch.chdir(tmp_path)
    before = set(run_dir.parent.iterdir())
    for _ in range(2):
        res = CliRunner().invoke(app, ["export", str(run_dir), "--format", "csv"])
        assert res.exit_code == 0, res.output
    assert list(tmp_path.iterdir()) == []  # nothing in the current directory
    name = run_dir.name
    new = sorted(p.name for p in set(run_dir.parent.iterdir()) - before)
    assert new == sorted([f"{name}.episodes.csv", f"{name}.episodes.steps.csv",
                          f"{name}.episodes-2.csv", f"{name}.episodes-2.steps.csv"])  # fmt: skip
    assert len(pd.read_csv(run_dir.parent / f"{name}.episodes.csv")) == 6


def test_an_existing_out_is_replaced_only_with_force(run_dir, tmp_path):
    out = tmp_path / "mine.csv"
    out.write_text("keep me")
    res = CliRunner().invoke(app, ["export", str(run_dir), "--format", "csv", "--out", str(out)])
    assert res.exit_code == 2 and "--force" in res.output
    assert out.read_text() == "keep me"
    res = CliRunner().invoke(
        app, ["export", str(run_dir), "--format", "csv", "--out", str(out), "--force"]
    )
    assert res.exit_code == 0, res.output
    assert len(pd.read_csv(out)) == 6


def test_load_runs_without_pandas_names_the_extra(run_dir, monkeypatch):
    """An ImportError (not a ValueError) that names raleval[export]; the CLI says it too."""
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas now raises ImportError
    from raleval.analysis import load_runs

    with pytest.raises(ImportError, match=r"raleval\[export\]"):
        load_runs([run_dir])
    res = CliRunner().invoke(app, ["export", str(run_dir), "--format", "csv", "--out", "x.csv"])
    assert res.exit_code == 2 and "raleval[export]" in res.output


def test_unknown_format_is_a_user_error(run_dir, tmp_path):
    res = CliRunner().invoke(app, ["export", str(run_dir), "--format", "xlsx", "--out", "x"])
    assert res.exit_code == 2
    assert "--format must be one of parquet, csv, inspect" in res.output


def test_load_runs_gives_a_dataframe(run_dir):
    from raleval.analysis.export import load_runs

    frame = load_runs([run_dir])
    assert len(frame) == 6 and "score_call_recall" in frame.columns


def test_public_load_runs_one_row_per_episode_with_every_field(run_dir):
    from raleval.analysis import load_runs, load_steps
    from raleval.store import RESULTS

    n = len((run_dir / RESULTS).read_text().splitlines())
    frame = load_runs([run_dir])
    assert len(frame) == n == 6
    assert frame["task_id"].is_unique
    for col in ("score_f1", "score_correct", "error_type", "error_cause", "stop_reason",
                "failure", "attempt", "wall_time_s", "model_time_s", "tag_answerable",
                "family", "level", "cost_usd", "compute_s"):  # fmt: skip
        assert col in frame.columns, col
    assert (frame["cost_usd"] == 0.0).all()  # a scripted model: tokens cost nothing
    assert set(frame["error_type"]) == {"EM"} and frame["failure"].isna().all()
    assert frame["score_f1"].mean() == 1.0
    steps = load_steps(run_dir)
    assert len(steps) == sum(frame["n_steps"]) and set(steps["task_id"]) == set(frame["task_id"])
    joined = frame.merge(steps, on=["run", "task_id", "epoch"])
    assert len(joined) == len(steps)


def test_inspect_log_reads_back_through_inspect_ai(run_dir, tmp_path):
    log = pytest.importorskip("inspect_ai.log")
    out = tmp_path / "run.eval"
    res = CliRunner().invoke(
        app, ["export", str(run_dir), "--format", "inspect", "--out", str(out)]
    )
    assert res.exit_code == 0, res.output
    read = log.read_eval_log(str(out))
    assert read.status == "success"
    assert len(read.samples) == 6
    sample = read.samples[0]
    assert sample.scores["f1"].value == 1.0  # one Inspect score per raleval metric
    assert sample.scores["call_recall"].value == 1.0
    calls = [c.function for m in sample.messages for c in (getattr(m, "tool_calls", None) or [])]
    assert calls and calls[0] == "searchPerson"
    scores = {s.name: s for s in read.results.scores}
    assert scores["f1"].metrics["mean"].value == 1.0


def test_a_log_directory_stands_for_every_run_below_it(tmp_path):
    """`runs/` with two runs, a matrix's files and a run set aside by --force: load_runs, export,
    table and report each read the two runs and skip the rest."""
    from raleval.analysis.export import load_runs
    from raleval.analysis.runs import find_runs

    logs = tmp_path / "runs"
    dirs = []
    for workflow in ("react", "function_calling"):
        cfg = build_config(
            {"env": "scholar", "env_options": {"size": "tiny"}, "tasks": "scholar-ks",
             "tasks_per_family": 2, "model": "scripted/oracle", "workflow": workflow,
             "log_dir": logs}
        )  # fmt: skip
        dirs.append(run_sync(cfg).run_dir)
    for name in ("matrix.md", "matrix.json", "matrix-report.html"):
        (logs / name).write_text("{}")
    aside = dirs[0] / "superseded-20260101T000000"
    aside.mkdir()
    (aside / "results.jsonl").write_text((dirs[0] / "results.jsonl").read_text())
    assert find_runs([logs]) == sorted(dirs)
    assert find_runs(sorted(logs.iterdir())) == sorted(dirs)  # `runs/*` as a shell gives it
    frame = load_runs(logs)
    assert len(frame) == 4 and frame["run"].nunique() == 2
    runner = CliRunner()
    out = tmp_path / "all.parquet"
    assert runner.invoke(app, ["export", str(logs), "--out", str(out)]).exit_code == 0
    assert len(pd.read_parquet(out)) == 4
    table = runner.invoke(app, ["table", str(logs), "--format", "csv"])
    assert table.exit_code == 0 and table.output.count("scripted/oracle") == 2, table.output
    html = tmp_path / "report.html"
    report = runner.invoke(app, ["report", *map(str, sorted(logs.iterdir())), "--out", str(html)])
    assert report.exit_code == 0, report.output
    empty = runner.invoke(app, ["report", str(tmp_path / "nothing")])
    assert empty.exit_code == 2 and "no run directory" in empty.output
