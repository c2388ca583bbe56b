"""Inspect AI both ways (issue 60), checked with Inspect's own code: raleval's export read by
``read_eval_log``, ``messages_df``, ``events_df`` and ``inspect score``; a log written by
``inspect eval`` itself read by ``raleval compare`` and served by ``raleval view``; an
exported log opened in ``inspect view`` in a real browser."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest
from typer.testing import CliRunner

from raleval.app.cli import app

from .conftest import run_config

log = pytest.importorskip("inspect_ai.log")
pytest.importorskip("pandas")

FIXTURES = Path(__file__).parent / "fixtures" / "inspect"
INSPECT = shutil.which("inspect", path=str(Path(sys.executable).parent)) or shutil.which("inspect")
runner = CliRunner()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """An oracle ReAct run, a function-calling run, a run cut by its step budget and a run
    whose every episode failed for infrastructure reasons (a closed port)."""
    root = tmp_path_factory.mktemp("runs")
    oracle, _ = run_config(root, tasks_per_family=2, tasks="scholar", run_name="oracle")
    fc, _ = run_config(root, tasks_per_family=2, workflow="function_calling", run_name="fc")
    budget, _ = run_config(
        root, tasks_per_family=1, workflow_options={"max_steps": 1}, run_name="budget"
    )
    failed, _ = run_config(
        root,
        tasks_per_family=2,
        workflow="direct",
        model=f"openai-compatible/ok@http://127.0.0.1:{free_port()}/v1",
        model_options={"max_retries": 0},
        cache=False,
        run_name="failed",
    )
    return {
        "oracle": oracle.run_dir,
        "fc": fc.run_dir,
        "budget": budget.run_dir,
        "failed": failed.run_dir,
    }


def export(run_dir: Path) -> Path:
    res = runner.invoke(app, ["export", str(run_dir), "--format", "inspect"])
    assert res.exit_code == 0, res.output
    (line,) = res.output.strip().splitlines()
    return Path(line.removeprefix("wrote "))


@pytest.fixture(scope="module")
def exported(runs):
    return {name: export(path) for name, path in runs.items()}


def test_export_is_named_and_placed_as_inspect_names_its_logs(runs, exported):
    for name, path in exported.items():
        assert path.parent == runs[name].parent
        assert path.suffix == ".eval"
        stamp, task, rid = path.stem.split("_")
        datetime.strptime(stamp[:19], "%Y-%m-%dT%H-%M-%S")
        assert task.startswith("scholar-") and len(rid) == 22
    header = log.read_eval_log(str(exported["fc"]), header_only=True)
    assert header.eval.task == "raleval/scholar/function_calling/scripted/oracle"
    # a second export of one run would land on the same name: refused without --force
    res = runner.invoke(app, ["export", str(runs["oracle"]), "--format", "inspect"])
    assert res.exit_code == 2 and "--force" in res.output


@pytest.mark.parametrize("name", ["oracle", "fc", "failed"])
def test_inspect_reads_every_sample_with_model_events_usage_and_time(exported, runs, name):
    from inspect_ai.analysis import events_df, messages_df, samples_df

    from raleval.analysis.runs import load_run

    path = str(exported[name])
    read = log.read_eval_log(path)
    run = load_run(runs[name])
    assert len(read.samples) == len(run.results) > 0
    for sample in read.samples:
        kinds = [e.event for e in sample.events]
        assert kinds.count("model") >= 1, sample.id
        assert kinds[0] == "span_begin" and "sample_init" in kinds
        started = datetime.fromisoformat(sample.started_at)
        assert started.year >= 2024 and started <= datetime.now(timezone.utc)
    usage = read.stats.model_usage[read.eval.model]
    assert usage.input_tokens == sum(t.prompt_tokens for t in run.results)
    assert datetime.fromisoformat(read.stats.started_at).year >= 2024
    assert read.stats.completed_at >= read.stats.started_at
    assert len(messages_df(path)) > 0
    assert len(events_df(path)) > 0
    assert len(samples_df(path)) == len(run.results)
    if name == "failed":
        assert all(s.error is not None for s in read.samples)
        assert all("connection_error" in s.error.message for s in read.samples)
        assert all(s.scores is None for s in read.samples)  # not scored, as raleval says
        errors = [e for s in read.samples for e in s.events if e.event == "model"]
        assert all(e.error and "connection_error" in e.error for e in errors)
        assert all(
            not [m for m in s.messages if m.role == "user" and "connection_error" in m.text]
            for s in read.samples
        )  # a model failure is the model event's error, not a user message
    else:
        assert usage.input_tokens > 0
        for sample in read.samples:
            assert sample.error is None
            tools = [e for e in sample.events if e.event == "tool"]
            assert tools and tools[-1].function == "Finish"
            assert tools[-1].result == sample.scores["f1"].answer  # Finish answered
            assert sample.scores["f1"].value == 1.0
            assert sample.scores["correct"].metadata["label"] == "EM"
            assert sample.model_usage[read.eval.model].input_tokens > 0
            assert sample.messages[0].role == "system"  # instructions and demonstrations
            assert "Here is an example" in sample.messages[0].text
        f1 = {s.name: s for s in read.results.scores}["f1"]
        assert f1.metrics["mean"].value == 1.0
        assert f1.metrics["ci_low"].value < 1.0  # the clustered interval, not a bare mean


def test_react_keeps_its_literal_text_beside_the_parsed_call(exported):
    read = log.read_eval_log(str(exported["oracle"]), resolve_attachments=True)
    sample = read.samples[0]
    (first,) = [m for m in sample.messages if m.role == "assistant" and m.tool_calls][:1]
    assert 'searchPerson(name="' in first.text  # what the model wrote, as written
    assert first.tool_calls[0].function == "searchPerson"
    model = next(e for e in sample.events if e.event == "model")
    assert "Here is an example" in model.input[0].text  # the prompt raleval sent


def test_budget_stop_is_a_sample_limit(exported):
    read = log.read_eval_log(str(exported["budget"]))
    assert read.samples
    for sample in read.samples:
        assert sample.limit is not None and sample.limit.type == "turn"
        assert sample.limit.limit == 1
        assert any(e.event == "sample_limit" for e in sample.events)


@pytest.mark.slow
def test_inspect_score_match_runs_on_the_export_without_a_model(exported, tmp_path):
    target = tmp_path / "scored.eval"
    shutil.copy(exported["oracle"], target)
    proc = subprocess.run(
        [INSPECT, "score", "--scorer", "match", "--action", "append", str(target), "--overwrite"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    scores = {s.name: s for s in log.read_eval_log(str(target), header_only=True).results.scores}
    assert scores["match"].metrics["accuracy"].value == 1.0
    assert scores["f1"].metrics["mean"].value == 1.0  # raleval's scores kept beside it


def test_an_export_reads_back_as_the_same_run(runs, exported):
    from raleval.analysis.runs import find_runs, load_run

    original, back = load_run(runs["oracle"]), load_run(exported["oracle"])
    assert find_runs([exported["oracle"]]) == [exported["oracle"]]
    assert back.system == original.system
    original.rescore()
    pairs = {(t.task_id, t.epoch): t for t in original.results}
    for t in back.results:
        o = pairs[(t.task_id, t.epoch)]
        assert (t.answer, t.error_type, t.scores["f1"]) == (o.answer, o.error_type, o.scores["f1"])
        assert [(s.tool, s.arguments) for s in t.steps] == [(s.tool, s.arguments) for s in o.steps]
    failed = load_run(exported["failed"])
    assert failed.results and failed.scored == []  # sample errors stay out of the scores


def test_compare_an_export_against_its_run_on_any_stored_score(runs, exported):
    res = runner.invoke(
        app, ["compare", str(exported["oracle"]), str(runs["oracle"]), "--metric", "em"]
    )
    assert res.exit_code == 0, res.output
    assert " A-B        6   +0.000" in res.output  # the same six episodes, graded alike
    res = runner.invoke(
        app, ["compare", str(exported["oracle"]), str(runs["oracle"]), "--metric", "nope"]
    )
    assert res.exit_code == 2 and "no run has a score named 'nope'" in res.output


@pytest.fixture(scope="module")
def inspect_eval_log(runs, tmp_path_factory):
    """A log written by ``inspect eval`` of a two-sample mockllm task with a tool, on two of
    the oracle run's tasks (their ids, questions and answers), offline."""
    if INSPECT is None:
        pytest.skip("the inspect command is not installed")
    from raleval.store import TASKS, read_tasks

    tmp = tmp_path_factory.mktemp("inspect")
    tasks = list(read_tasks(runs["oracle"] / TASKS))[:2]
    samples = tmp / "samples.json"
    samples.write_text(
        json.dumps([{"id": t.id, "question": t.question, "answer": t.answers[0]} for t in tasks])
    )
    env = {**os.environ, "INSPECT_LOG_DIR": str(tmp / "logs"), "NO_COLOR": "1"}
    proc = subprocess.run(
        [INSPECT, "eval", "lookup_task.py", "-T", f"samples={samples}", "--display", "none"],
        cwd=FIXTURES,  # inspect eval takes a task file's path relative to where it runs
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (path,) = (tmp / "logs").glob("*.eval")
    return path


@pytest.mark.slow
@pytest.mark.integration
def test_compare_an_inspect_eval_log_against_a_raleval_run(inspect_eval_log, runs, tmp_path):
    read = log.read_eval_log(str(inspect_eval_log))
    assert read.eval.model == "mockllm/model" and len(read.samples) == 2
    res = runner.invoke(app, ["compare", str(inspect_eval_log), str(runs["oracle"])])
    assert res.exit_code == 0, res.output
    assert "A = inspect/mockllm/model" in res.output
    assert "pairs: clustered paired t test, Holm over 1 comparison" in res.output
    assert " A-B        2   +0.000" in res.output  # the two shared tasks, both right in both
    assert "verdict A-B:" in res.output
    # Inspect's own scorer's verdicts, kept beside raleval's grading
    again = tmp_path / inspect_eval_log.name
    shutil.copy(inspect_eval_log, again)
    res = runner.invoke(
        app, ["compare", str(inspect_eval_log), str(again), "--metric", "inspect_match"]
    )
    assert res.exit_code == 0 and "A = inspect/mockllm/model" in res.output, res.output


@pytest.mark.slow
@pytest.mark.integration
def test_view_serves_an_inspect_eval_log_beside_a_run(inspect_eval_log, runs):
    from raleval.analysis.runs import find_runs

    from .test_viewer import Served

    served = Served(find_runs([inspect_eval_log, runs["oracle"]]))
    try:
        served.wait_indexed()
        status = served.get("api/status")
        assert [r["episodes"] for r in status["runs"]] == [2, 6]
        page = served.get("api/episodes?run=0")
        assert page["total"] == 2 and all(r["right"] for r in page["rows"])
        task = page["rows"][0]["task_id"]
        view = served.get(f"api/episode?run=0&task={task}&epoch=0")
        assert view["label"] == "EM"  # graded by raleval: the tool's result holds the gold
        assert [s["tool"] for s in view["steps"]] == ["lookup"]
        assert view["steps"][0]["obs"] == view["gold"]
        side = served.get(f"api/side?runs=0,1&task={task}&epoch=0")
        assert len(side["columns"]) == 2 and side["divergence"] == 0
    finally:
        served.close()


@pytest.mark.slow
@pytest.mark.integration
def test_inspect_view_shows_the_transcripts_model_and_tool_events(exported, tmp_path):
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from .test_report import chromium_driver

    if INSPECT is None:
        pytest.skip("the inspect command is not installed")
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(exported["oracle"], logs / exported["oracle"].name)
    driver = chromium_driver(tmp_path)
    port = free_port()
    server = subprocess.Popen(
        [INSPECT, "view", "start", "--log-dir", str(logs), "--host", "127.0.0.1",
         "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                break
            time.sleep(0.5)
        driver.get(f"http://127.0.0.1:{port}/")
        # the page re-renders as it loads: an element found a moment ago may be gone
        wait = WebDriverWait(driver, 90, ignored_exceptions=(StaleElementReferenceException,))

        def sample_link(d):
            links = [a.get_attribute("href") or "" for a in d.find_elements(By.TAG_NAME, "a")]
            return next((h for h in links if "/samples/sample/scholar-1-3-s0-0000/" in h), None)

        driver.get(wait.until(sample_link))  # the log's sample list, then the first sample

        def open_transcript(d):
            tabs = d.find_elements(By.XPATH, "//*[@role='tab']")
            tab = next((t for t in tabs if t.text.strip().lower() == "transcript"), None)
            if tab is None:
                return False
            tab.click()
            return True

        wait.until(open_transcript)

        def body(d):
            return d.find_element(By.TAG_NAME, "body").text.lower()

        wait.until(lambda d: "model call" in body(d) and "tool: searchperson" in body(d))
        text = body(driver)
        assert "size limit" not in text and "events were removed" not in text
        assert "model call: none/scripted/oracle" in text  # a model event, with its usage
        assert "tool: searchperson" in text and "tool: finish" in text  # the tool events
        assert "here is an example" in text  # the prompt raleval sent, demonstrations included
    finally:
        driver.quit()
        server.terminate()
        server.wait(10)


def test_a_file_that_is_no_inspect_log_is_a_clear_error(runs, tmp_path):
    broken = tmp_path / "broken.eval"
    broken.write_bytes(b"PK not really a zip")
    res = runner.invoke(app, ["compare", str(broken), str(runs["oracle"])])
    assert res.exit_code == 2 and "broken.eval: not a readable Inspect log" in res.output
    other = tmp_path / "config.json"
    other.write_text('{"eval": 1}')  # JSON, but no Inspect log header
    res = runner.invoke(app, ["table", str(other)])
    assert res.exit_code == 2 and "no run directory in" in res.output


def _rows(head, summaries):
    """What the viewer's list takes from a log's header and summaries."""
    from raleval.analysis.inspect_log import inspect_header
    from raleval.analysis.log_index import message_text, summary_score

    header = inspect_header(Path("log.eval"), head.eval, len(summaries))
    rows = [
        (
            str(s.id), int(s.epoch), s.metadata, bool(s.error), bool(s.limit), s.total_time,
            s.input if isinstance(s.input, str) else [message_text(m) for m in s.input],
            summary_score(s.scores, "f1"), summary_score(s.scores, "correct"),
        )
        for s in summaries
    ]  # fmt: skip
    return header.config, str(header.created_at), rows


def _journal_only(path: Path, out: Path) -> Path:
    """The log as Inspect leaves it while it is still being written: no header.json and no
    summaries.json, only its journal (the summaries in numbered chunks)."""
    import zipfile

    with zipfile.ZipFile(path) as src, zipfile.ZipFile(out, "w") as dst:
        for name in src.namelist():
            if name not in ("header.json", "summaries.json"):
                dst.writestr(name, src.read(name))
    return out


def test_the_list_reads_the_zip_as_inspects_reader_does(exported, inspect_eval_log, tmp_path):
    """Issue 60: the lazy list reads an .eval file's summaries as plain JSON; every field the
    list shows is what Inspect's own (validating) reader gives, for raleval's exports and a log
    of `inspect eval`, finished or still being written."""
    from raleval.analysis import inspect_log
    from raleval.store import RecordFileError

    logs = [*exported.values(), inspect_eval_log]
    logs.append(_journal_only(inspect_eval_log, tmp_path / "journal.eval"))
    for path in logs:
        raw = inspect_log.raw_summaries(path)
        assert raw is not None, path
        head = log.read_eval_log(str(path), header_only=True)
        validated = list(log.read_eval_log_sample_summaries(str(path)))
        assert validated and _rows(*raw) == _rows(head, validated), path
    # a file that is no zip is left to Inspect's reader, which names it
    bad = tmp_path / "bad.eval"
    bad.write_bytes(b"not a zip")
    assert inspect_log.raw_summaries(bad) is None
    with pytest.raises(RecordFileError, match=r"bad\.eval: not a readable Inspect log"):
        inspect_log.inspect_summaries(bad)
