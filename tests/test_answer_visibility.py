"""Answers must be visible in the agent's view: a long price history keeps the entries nearest
the query time, and the executing oracle answers only from observations as the workflow
rendered them (docs/observations.md)."""

from __future__ import annotations

import asyncio
import json
import re

import pytest

from raleval import registry
from raleval.agents.scripted import NOT_VISIBLE, OracleModel
from raleval.analysis.scoring import score_trajectory
from raleval.app.runner import run_episode
from raleval.records import AgentSpec
from raleval.tasks.catalog import load_tasks
from raleval.workflows.common import TRUNCATION_MARKER, fit_observation, fit_series


class _Chars:
    """Four characters a token, as the scripted models count."""

    def count_tokens(self, text: str) -> int:
        return (len(text) + 3) // 4


SERIES = {f"2024-01-{d:02d} 00:00:00 EST": {"Close": 100 + d} for d in range(1, 31)}


def test_a_long_series_keeps_its_newest_entries_as_json():
    text = json.dumps(SERIES, separators=(", ", ": "))
    cut = fit_observation(_Chars(), text, 120)
    assert _Chars().count_tokens(cut) <= 120
    shown = json.loads(cut)  # still valid JSON
    dates = [k for k in shown if k != "truncated"]
    assert dates[0] == "2024-01-30 00:00:00 EST"  # the newest, first
    assert dates == sorted(dates, reverse=True)
    assert dates == sorted(SERIES, reverse=True)[: len(dates)]  # no gap: the newest run
    assert shown["truncated"] == f"{30 - len(dates)} older entries cut"
    assert fit_observation(_Chars(), text, 10_000) == text  # fits: unchanged


def test_other_long_results_keep_their_head_as_before():
    items = json.dumps([{"date": f"2024-01-{d:02d}", "title": f"t{d}"} for d in range(1, 31)])
    cut = fit_observation(_Chars(), items, 60)
    assert cut.startswith(items[:100]) and "more characters]" in cut  # a list keeps its head
    assert fit_series(items, lambda s: True) is None
    assert fit_series("no json here", lambda s: True) is None
    # a budget too small for one entry falls back to the character cut
    tiny = fit_observation(_Chars(), json.dumps(SERIES), 16)
    assert TRUNCATION_MARKER.split("{")[0] in tiny


@pytest.fixture(scope="module")
def default_crag():
    env = registry.envs.get("crag")()
    return env, load_tasks(env.default_tasks or "crag-kg", env, "crag", 100, 0)


def _run(task, env, workflow: str, context: int):
    wf = registry.workflows.get(workflow).configure({"max_context_tokens": context})
    agent = AgentSpec(workflow=workflow, model="scripted/oracle", env="crag")
    traj = asyncio.run(run_episode(task, OracleModel(), env, wf, agent))
    score_trajectory(traj, task)
    return traj


def test_postproc_price_history_at_8192_tokens_shows_both_dates(default_crag):
    """The default world's crag-postproc questions name a date 30 trading days back and the
    last one; rendered at 8,192 tokens the price history holds both (the oldest entries were
    kept before, and both dates fell in the cut part)."""
    env, tasks = default_crag
    postproc = [
        t
        for t in tasks
        if t.family == "crag-postproc"
        and any(c.tool == "finance_get_price_history" for c in t.solution or [])
    ]
    assert len(postproc) >= 5
    for workflow in ("react", "function_calling"):
        for task in postproc:
            traj = _run(task, env, workflow, 8192)
            [prices] = [s for s in traj.steps if s.tool == "finance_get_price_history"]
            shown = json.loads(prices.observation)
            assert "truncated" in shown, (workflow, task.id)  # it was cut
            days = re.findall(r"\d{4}-\d{2}-\d{2}", task.question)
            assert len(days) == 2
            for day in days:
                assert f"{day} 00:00:00 EST" in shown, (workflow, task.id, day)
            assert traj.error_type.value == "EM", (workflow, task.id, traj.error_cause)


def test_the_oracle_does_not_answer_what_the_view_cut(default_crag):
    """A closing price asked for a date the 4,096-token view cut: the oracle says it was not
    shown (a wrong answer) where before it answered from the full result (AM); a date the
    view kept it answers, grounded (EM)."""
    env, tasks = default_crag
    condition = [
        t
        for t in tasks
        if t.family == "crag-condition"
        and any(c.tool == "finance_get_price_history" for c in t.solution or [])
    ]
    outcomes = set()
    for task in condition:
        traj = _run(task, env, "react", 4096)
        [prices] = [s for s in traj.steps if s.tool == "finance_get_price_history"]
        [day] = re.findall(r"\d{4}-\d{2}-\d{2}", task.question)
        if f'"{day} 00:00:00 EST"' in prices.observation:
            assert traj.error_type.value == "EM", (task.id, traj.answer)
            outcomes.add("shown")
        else:
            assert traj.answer == NOT_VISIBLE, task.id
            assert traj.scores["correct"] == 0.0
            # RE; GE where the price happens to appear on another day (the taxonomy matches
            # the value, not the way to it)
            assert traj.error_type.value in ("RE", "GE"), (task.id, traj.error_cause)
            outcomes.add("cut")
    assert outcomes == {"shown", "cut"}


def test_audit_context_column_and_a_task_set_fitted_to_the_window(tmp_path):
    """`raleval audit --context` reports the share of a family whose answer the view shows;
    `raleval tasks fit` keeps exactly those tasks, and the oracle answers every one of them
    right at that window."""
    from typer.testing import CliRunner

    from raleval.app.cli import app
    from raleval.store import read_tasks

    from .conftest import run_config

    common = ["--env", "crag", "--per-family", "30"]
    window = ["--context", "4096", *common]
    audit = CliRunner().invoke(
        app, ["audit", "--tasks", "crag-condition", "--world", "tiny", *window, "--json"]
    )
    report = json.loads(audit.stdout)
    assert report["context"] == 4096 and report["view_workflow"] == "react"
    [family] = report["families"]
    assert 0.0 < family["in_view"] < 1.0  # some closing prices were cut, some shown
    out = tmp_path / "fit.jsonl"
    fit = CliRunner().invoke(app, ["tasks", "fit", "crag-condition", "--out", str(out), *window])
    assert fit.exit_code == 0, fit.stdout
    kept = read_tasks(out)
    assert len(kept) == round(family["in_view"] * family["n"])
    assert f"kept {len(kept)} of {family['n']} tasks" in " ".join(fit.stdout.split())
    _, results = run_config(
        tmp_path,
        env="crag",
        env_options={},
        tasks=str(out),
        workflow_options={"max_context_tokens": 4096},
    )
    assert len(results) == len(kept)
    assert all(r.error_type.value == "EM" for r in results), [r.answer for r in results]


def test_a_run_at_a_context_window_leaves_out_what_it_cannot_show(tmp_path):
    """With -W max_context_tokens the plan drops the tasks whose answers the workflow's view
    cuts (the oracle's labelled non-answers), records them in the header, and every kept task
    is answerable: the oracle scores EM on all of them."""
    from raleval.store import read_header
    from tests.conftest import run_config

    options = {"env": "crag", "tasks": "crag-condition", "tasks_per_family": 100}
    summary, results = run_config(
        tmp_path, **options, workflow_options={"max_context_tokens": 8192}
    )
    selection = read_header(summary.run_dir).task_selection
    assert selection["context_tokens"] == 8192 and selection["kept"] == len(results)
    assert 0 < len(selection["left_out"]) == selection["pool"] - selection["kept"]
    assert {t.task_id for t in results}.isdisjoint(selection["left_out"])
    assert all(t.error_type is not None and t.error_type.value == "EM" for t in results)
    plain, _ = run_config(tmp_path / "no-window", **options)
    assert read_header(plain.run_dir).task_selection == {}
