"""Evidence from the world (issue 59): a task's evidence values are what its gold solution's
calls return from its world. A set whose evidence disagrees is refused when it is built or
loaded for a run, and ``raleval score`` reports it on stored runs.

The known case: a CRAG post-processing task whose evidence prices (128.88, 110.31) were not
the world's closing prices on its dates (217.95, 254.63); both pairs give the gold 16.83%, so
an agent that saw the right prices was labelled RE.
"""

import json

import pytest
from typer.testing import CliRunner

from raleval import registry
from raleval.app.cli import app
from raleval.families import (
    EvidenceMismatch,
    check_evidence,
    evidence_missing,
    evidence_not_returned,
)
from raleval.store import TASKS, read_tasks, write_tasks

from .conftest import run_config


@pytest.fixture(scope="module")
def crag():
    return registry.envs.get("crag")(size="tiny")


@pytest.fixture(scope="module")
def price_change(crag):
    """A generated price-change task: evidence two closing prices, the answer their change."""
    tasks = registry.task_families.get("crag-postproc").generate(crag, 12, 0)
    task = next(t for t in tasks if "closing price" in t.question)
    assert task.evidence and len(task.evidence) == 2
    return task


def _scaled(task, factor=0.6):
    """The same task with its evidence prices scaled: the same percentage change, prices the
    world never closed at on those dates (the shape of the known case)."""
    wrong = [f"{float(e) * factor:.2f}" for e in task.evidence]
    return task.model_copy(update={"evidence": wrong}), wrong


def test_every_generated_task_names_evidence_its_world_returns():
    envs = {name: registry.envs.get(name)(size="tiny") for name in ("scholar", "wiki", "crag")}
    checked = 0
    for family in registry.task_families.load_all().values():
        env = envs[family.env]
        tasks = [t for t in family.generate(env, 6, 0) if t.evidence]
        checked += len(tasks)
        assert [(t.id, evidence_not_returned(t, env.session(t))) for t in tasks if
                evidence_not_returned(t, env.session(t))] == []  # fmt: skip
    assert checked >= 50


def test_prices_that_are_not_the_closes_on_the_dates_are_named(crag, price_change):
    assert evidence_not_returned(price_change, crag.session(price_change)) == []
    wrong_task, wrong = _scaled(price_change)
    assert evidence_not_returned(wrong_task, crag.session(wrong_task)) == wrong
    # a price of the history that is not the close on the date asked is not the evidence
    history = (
        crag.session(price_change)
        .call_sync("finance_get_price_history", price_change.solution[1].arguments)
        .data
    )
    other_day_close = str(next(iter(history.values()))["Close"])
    if other_day_close not in price_change.evidence:
        elsewhere = price_change.model_copy(update={"evidence": [other_day_close]})
        assert evidence_not_returned(elsewhere, crag.session(elsewhere)) == [other_day_close]
    with pytest.raises(EvidenceMismatch) as info:
        check_evidence([price_change, wrong_task], crag.session)
    assert price_change.id in str(info.value) and all(w in str(info.value) for w in wrong)


def test_results_the_answer_expression_cannot_read_hold_no_evidence(crag, price_change):
    """A history without the asked dates (another world's calendar, a cut observation): the
    expression breaks on it, so no price in it counts, even one that happens to be there."""
    session = crag.session(price_change)
    ticker, history = (session.call_sync(c.tool, c.arguments) for c in price_change.solution)
    assert evidence_missing(price_change, [ticker.observation, history.observation],
                            [ticker.data, history.data]) == []  # fmt: skip
    dates = [k for k in history.data if any(str(v["Close"]) in price_change.evidence
                                             for v in [history.data[k]])]  # fmt: skip
    cut = {k: v for k, v in history.data.items() if k not in dates}
    # the closes stay in the text under other dates: still not evidence
    text = json.dumps({f"x{k}": v for k, v in history.data.items()})
    assert evidence_missing(price_change, [ticker.observation, text],
                            [ticker.data, cut]) == price_change.evidence  # fmt: skip


def test_a_run_refuses_a_task_file_whose_evidence_disagrees(tmp_path, crag, price_change):
    wrong_task, wrong = _scaled(price_change)
    path = tmp_path / "tasks.jsonl"
    write_tasks(path, [wrong_task])
    result = CliRunner().invoke(
        app,
        ["run", "--env", "crag", "--model", "scripted/oracle", "--tasks", str(path),
         "--log-dir", str(tmp_path / "runs")],
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    said = " ".join(result.output.split())
    assert price_change.id in said and all(w in said for w in wrong)
    # the right evidence runs
    write_tasks(path, [price_change])
    ok = CliRunner().invoke(
        app,
        ["run", "--env", "crag", "--model", "scripted/oracle", "--tasks", str(path),
         "--log-dir", str(tmp_path / "runs"), "--run-name", "ok"],
    )  # fmt: skip
    assert ok.exit_code == 0, ok.output


def test_score_reports_a_stored_run_whose_evidence_disagrees(tmp_path, price_change):
    summary, results = run_config(
        tmp_path, env="crag", env_options={"size": "tiny"}, tasks="crag-postproc",
        tasks_per_family=12, workflow="function_calling",
    )  # fmt: skip
    assert any(r.task_id == price_change.id for r in results)
    clean = CliRunner().invoke(app, ["score", str(summary.run_dir)])
    assert clean.exit_code == 0 and "disagrees with the world" not in clean.output
    # the stored task file as a generator that wrote the wrong prices would have left it
    stored = summary.run_dir / TASKS
    tasks = read_tasks(stored)
    wrong = None
    for i, t in enumerate(tasks):
        if t.id == price_change.id:
            tasks[i], wrong = _scaled(t)
    write_tasks(stored, tasks)
    result = CliRunner().invoke(app, ["score", str(summary.run_dir)])
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    assert "1 task(s) whose evidence disagrees with the world" in said
    assert price_change.id in said and all(w in said for w in wrong)


def test_score_reads_stored_study_cells_without_complaint(tmp_path):
    """The stored studies' CRAG cells: their evidence is what their episodes' gold calls
    returned (their tasks were generated by the generator that stands today)."""
    import shutil
    from pathlib import Path

    cell = "crag__function_calling__local_qwen2.5-0.5b__crag-kg"
    source = Path(__file__).parents[1] / "studies" / "local-models" / cell
    run = tmp_path / cell
    shutil.copytree(source, run)
    result = CliRunner().invoke(app, ["score", str(run)])
    assert result.exit_code == 0, result.output
    assert "disagrees with the world" not in result.output
    assert any(t.evidence and t.solution for t in read_tasks(run / "tasks.jsonl.gz"))
