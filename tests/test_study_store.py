"""A study's finished cells are kept compactly (gzip, no page HTML) and read back as runs:
``raleval study store`` copies them, ``load_run``/``raleval report``/``table`` read the copy."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from typer.testing import CliRunner

from raleval.analysis.runs import load_run
from raleval.analysis.summary import summarize
from raleval.app.cli import app
from raleval.app.study import cell_state, store_cell
from raleval.store import RESULTS, TASKS, ResultsFile, write_tasks
from raleval.tasks.loaders import load_file

from .conftest import finished_and_half_cells, run_config

CRAG_DEV = Path(__file__).parent / "data" / "crag_dev_data_head.jsonl"


def test_a_gzip_only_run_directory_loads_as_the_run(tmp_path):
    summary, _ = run_config(tmp_path / "runs", tasks_per_family=3)
    cell = tmp_path / "copy"
    cell.mkdir()
    (cell / "header.json").write_bytes((summary.run_dir / "header.json").read_bytes())
    for name in (RESULTS, TASKS):
        packed = gzip.compress((summary.run_dir / name).read_bytes())
        (cell / (name + ".gz")).write_bytes(packed)
    original, copy = load_run(summary.run_dir), load_run(cell)
    assert copy.results == original.results and copy.tasks == original.tasks
    assert summarize(copy.results, copy.tasks) == summarize(original.results, original.tasks)


def test_store_keeps_results_drops_page_html_and_repeats_byte_for_byte(tmp_path):
    tasks = load_file("crag", CRAG_DEV)[:3]  # its line 8 (gold 'nan') is skipped
    write_tasks(tmp_path / "crag.jsonl", tasks)
    summary, _ = run_config(
        tmp_path / "runs", env="crag-pages", env_options={}, tasks=str(tmp_path / "crag.jsonl")
    )
    dest = store_cell(summary.run_dir, tmp_path / "study")
    assert sorted(p.name for p in dest.iterdir()) == [
        "header.json",
        "results.jsonl.gz",
        "tasks.jsonl.gz",
    ]
    lines = gzip.decompress((dest / "results.jsonl.gz").read_bytes())
    assert lines == (summary.run_dir / RESULTS).read_bytes()
    text = gzip.decompress((dest / "tasks.jsonl.gz").read_bytes()).decode()
    stored = [json.loads(line) for line in text.splitlines()]
    pages = [p for t in stored for p in t["metadata"]["search_results"]]
    assert pages and all("page_result" not in p and p["page_url"] for p in pages)
    assert "<html" not in text.lower()
    before = {p.name: p.read_bytes() for p in dest.iterdir()}
    store_cell(summary.run_dir, tmp_path / "study")
    assert {p.name: p.read_bytes() for p in dest.iterdir()} == before


def test_cli_stores_finished_cells_only_and_report_reads_the_study(tmp_path):
    # the half cell's tasks file holds more tasks than it has run: it is unfinished
    done, half = finished_and_half_cells(tmp_path / "runs", tmp_path / "runs2")
    assert cell_state(done.run_dir).finished and not cell_state(half.run_dir).finished
    study = tmp_path / "studies" / "s"
    result = CliRunner().invoke(
        app, ["study", "store", str(tmp_path / "runs"), "--into", str(study)]
    )
    assert result.exit_code == 0, result.output
    assert f"left {half.run_dir.name}: 2 of " in result.output
    assert [p.name for p in study.iterdir()] == [done.run_dir.name]
    out = tmp_path / "study.html"
    result = CliRunner().invoke(app, ["report", str(study), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert out.exists() and done.run_dir.name.split("__")[1] in out.read_text()
    result = CliRunner().invoke(app, ["table", str(study), "--format", "csv"])
    assert result.exit_code == 0, result.output


def test_a_superseded_run_is_never_stored(tmp_path):
    """The study set a cell run with old code aside as ``superseded-<cell>``; ``study store``
    listed it as an unfinished cell, and would have stored it once finished."""
    summary, _ = run_config(tmp_path / "runs", tasks_per_family=3)
    log_dir = summary.run_dir.parent
    aside = log_dir / f"superseded-{summary.run_dir.name}"
    summary.run_dir.rename(aside)
    study = tmp_path / "study"
    result = CliRunner().invoke(app, ["study", "store", str(log_dir), "--into", str(study)])
    assert "superseded" not in result.output
    assert not study.exists() or not any(study.iterdir())


def test_a_diagnosed_cell_keeps_its_diagnosis_and_the_table_reads_it(tmp_path):
    from raleval.analysis.diagnosis import cause_tables, read_diagnoses
    from raleval.app.diagnose import diagnose_sync

    summary, _ = run_config(tmp_path / "runs", tasks_per_family=4, model="scripted/wrong-tool")
    assert diagnose_sync(summary.run_dir).diagnosed == 4
    dest = store_cell(summary.run_dir, tmp_path / "study")
    assert (dest / "diagnosis.jsonl.gz").exists() and not (dest / "diagnosis.jsonl").exists()
    stored, original = read_diagnoses(dest), read_diagnoses(summary.run_dir)
    assert len(stored) == 4 and stored == original
    assert cause_tables(stored) == cause_tables(original)
    result = CliRunner().invoke(app, ["table", str(dest), "--diagnosis", "--format", "csv"])
    assert result.exit_code == 0, result.output
    assert "# R-Eval label by cause" in result.output


def test_restore_unpacks_a_study_so_the_run_resumes_it_and_retries_see_the_page_html(tmp_path):
    """A fresh clone has studies/ but no runs/: `study restore` gives the run its cells back.
    A restored crag-pages task has no page HTML; an episode run again takes the task file's."""
    from raleval.app.plan import build_env, run_tasks
    from raleval.app.study import restore_cell
    from raleval.config import RunConfig

    tasks = load_file("crag", CRAG_DEV)[:3]  # its line 8 (gold 'nan') is skipped
    write_tasks(tmp_path / "crag.jsonl", tasks)
    options = dict(env="crag-pages", env_options={}, tasks=str(tmp_path / "crag.jsonl"))
    summary, _ = run_config(tmp_path / "runs", **options)
    study = tmp_path / "study"
    store_cell(summary.run_dir, study)
    (summary.run_dir / RESULTS).unlink()  # nothing else is read: the clone has no runs/

    logs = tmp_path / "clone-runs"
    result = CliRunner().invoke(app, ["study", "restore", str(study), "--into", str(logs)])
    assert result.exit_code == 0, result.output
    restored = logs / summary.run_dir.name
    assert f"restored {restored.name}: 3 of 3 episodes" in result.output
    stored = gzip.decompress((study / restored.name / "results.jsonl.gz").read_bytes())
    assert (restored / RESULTS).read_bytes() == stored
    assert cell_state(restored).finished
    assert not [p for p in logs.iterdir() if p.name.startswith(".")]  # no half-made folder

    # restoring again keeps what is there, even after the run has grown
    (restored / RESULTS).write_bytes(stored + stored.splitlines(keepends=True)[0])
    assert restore_cell(study / restored.name, logs) is None
    assert (restored / RESULTS).read_bytes() != stored

    # the resumed run's tasks: the task file's, pages' HTML included, not the stripped copies
    config = RunConfig(
        **options, workflow="react", model="scripted/oracle", log_dir=logs, cache=False
    )
    assert config.run_dir == restored
    env = build_env(config.env, config.env_options)
    chosen, _ = run_tasks(config, env)
    assert [t.id for t in chosen] == [t.id for t in tasks]
    assert all(p.get("page_result") for t in chosen for p in t.metadata["search_results"]), (
        "a retried episode would run on pages without their HTML"
    )

    # a cell recorded differently (not just stripped) keeps its record: resuming is exact
    text = (restored / TASKS).read_text().replace('"page_url"', '"page_url_"', 1)
    (restored / TASKS).write_text(text)
    chosen, _ = run_tasks(config, env)
    assert "page_url_" in chosen[0].metadata["search_results"][0]


def test_restore_refuses_a_folder_with_no_stored_cells(tmp_path):
    result = CliRunner().invoke(
        app, ["study", "restore", str(tmp_path), "--into", str(tmp_path / "runs")]
    )
    assert result.exit_code != 0 and "holds no stored cells" in result.output


def test_unfinished_cells_kept_apart_resume_on_a_new_machine_and_leave_once_finished(tmp_path):
    """A cell longer than a session: ``--unfinished-into`` keeps its finished episodes in the
    repository apart from the study's cells (a new machine has no runs/); restored, the run
    resumes it, and once stored finished its unfinished copy goes."""
    done, half = finished_and_half_cells(tmp_path / "runs", tmp_path / "runs2")
    total = cell_state(half.run_dir).total
    study, apart = tmp_path / "studies" / "s", tmp_path / "studies" / "s.partial"

    def store(log_dir: Path) -> str:
        result = CliRunner().invoke(
            app,
            ["study", "store", str(log_dir), "--into", str(study), "--unfinished-into", str(apart)],
        )
        assert result.exit_code == 0, result.output
        return result.output

    output = store(tmp_path / "runs")
    assert f"stored unfinished {half.run_dir.name}: 2 of {total} episodes" in output
    assert [p.name for p in study.iterdir()] == [done.run_dir.name]
    assert [p.name for p in apart.iterdir()] == [half.run_dir.name]

    # a new machine: both folders restored, the run finishes the half cell's episodes only
    logs = tmp_path / "new-machine"
    for folder in (study, apart):
        result = CliRunner().invoke(app, ["study", "restore", str(folder), "--into", str(logs)])
        assert result.exit_code == 0, result.output
    assert cell_state(logs / half.run_dir.name).done == 2
    restored = (logs / half.run_dir.name / RESULTS).read_bytes()
    resumed, _ = run_config(logs, tasks_per_family=3, workflow="direct")
    assert resumed.run_dir == logs / half.run_dir.name
    assert (resumed.run_dir / RESULTS).read_bytes().startswith(restored)
    heads = list(ResultsFile(resumed.run_dir / RESULTS).heads())
    assert len(heads) == total  # the 2 restored episodes were not run again
    assert cell_state(resumed.run_dir).finished

    output = store(logs)
    assert f"stored {half.run_dir.name}: {total} of {total} episodes" in output
    assert sorted(p.name for p in study.iterdir()) == sorted([done.run_dir.name, half.run_dir.name])
    assert not apart.exists()  # nothing unfinished is left apart


def test_partial_and_unfinished_into_are_refused_together(tmp_path):
    result = CliRunner().invoke(
        app,
        ["study", "store", str(tmp_path), "--into", str(tmp_path / "a"), "--partial",
         "--unfinished-into", str(tmp_path / "b")],
    )  # fmt: skip
    assert result.exit_code != 0 and "not both" in result.output
