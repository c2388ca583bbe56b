"""What each episode cost: prices, recorded costs, the run's table, and the cost budget."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from raleval.agents.pricing import model_price
from raleval.analysis.summary import cost_table, summarize, usd
from raleval.analysis.taxonomy import stop_reason
from raleval.app.cli import app
from raleval.config import ConfigError
from raleval.model import LOCAL_PRICE
from raleval.records import StopReason, Termination, Trajectory
from raleval.store import RESULTS

from .conftest import REPO, run_config
from .stub_openai import StubServer


def _results(run_dir):
    return [json.loads(x) for x in (run_dir / RESULTS).read_text().splitlines()]


def test_priced_run_table_is_tokens_times_price(tmp_path):
    """Issue 36's acceptance line: with -M price_in=1 -M price_out=2 against an
    openai-compatible server that reports its tokens, every episode's cost and the run's
    table are the tokens times the price, to the millionth of a dollar."""
    with StubServer() as stub:
        cmd = [
            "run", "--model", f"openai-compatible/ok@{stub.base_url}",
            "-M", "price_in=1", "-M", "price_out=2",
            "--workflow", "direct", "-E", "size=tiny", "--tasks", "scholar-ks",
            "--tasks-per-family", "5", "--display", "plain", "--no-cache",
            "--log-dir", str(tmp_path), "--run-name", "priced",
        ]  # fmt: skip
        res = CliRunner().invoke(app, cmd, terminal_width=120)
        n_requests = len(stub.requests)
    assert res.exit_code == 0, res.output
    lines = _results(tmp_path / "priced")
    assert len(lines) == 5
    # the server's own usage (11 in, 3 out per completion) is what was recorded and priced
    assert sum(r["prompt_tokens"] for r in lines) == 11 * n_requests
    assert sum(r["completion_tokens"] for r in lines) == 3 * n_requests
    for r in lines:
        assert r["cost_usd"] == (r["prompt_tokens"] * 1 + r["completion_tokens"] * 2) / 1e6
        assert r["compute_s"] is None  # a priced model: money, not local compute seconds
    tokens_in = sum(r["prompt_tokens"] for r in lines)
    tokens_out = sum(r["completion_tokens"] for r in lines)
    total = (tokens_in * 1 + tokens_out * 2) / 1e6
    cell = r"\s*│\s*([\d.]+)"
    row = re.search(r"1-3\s*│\s*5" + cell * 4, res.output)
    assert row, res.output
    assert (int(row[1]), int(row[2])) == (tokens_in, tokens_out)
    assert row[3] == usd(total) == f"{total:.6f}"
    assert row[4] == usd(total / 5)
    # R-Eval's per-task table (raleval table) has the same dollars per episode, before the
    # format-failure rate
    res = CliRunner().invoke(app, ["table", str(tmp_path / "priced"), "--format", "csv"])
    header, body = res.output.splitlines()[:2]
    assert header.endswith(",usd_per_ep,fmt_fail")
    assert body.rsplit(",", 2)[1] == f"{total / 5:.6f}"


def test_prices_from_the_table_options_and_this_machine():
    gpt = model_price("openai", "gpt-4o-mini-2024-07-18", {})  # a dated snapshot
    assert (gpt.input_per_mtok, gpt.output_per_mtok) == (0.15, 0.60)
    assert model_price("openai", "gpt-4o", {}).input_per_mtok == 2.50  # not gpt-4o-mini's
    own = model_price("openai", "gpt-4o", {"price_in": "3", "price_out": 4})
    assert (own.input_per_mtok, own.output_per_mtok, own.source) == (3.0, 4.0, "-M options")
    assert model_price("local", "qwen2.5-0.5b", {}) is LOCAL_PRICE
    assert model_price("scripted", "oracle", {}) is LOCAL_PRICE
    # a server elsewhere with a name the table knows is not OpenAI's price: unknown
    assert model_price("openai-compatible", "gpt-4o@http://10.0.0.1/v1", {}) is None
    with pytest.raises(ConfigError, match="price_out"):
        model_price("openai", "x", {"price_in": 1})
    with pytest.raises(ConfigError, match="price_in"):
        model_price("openai", "x", {"price_in": "cheap", "price_out": 1})
    with pytest.raises(ConfigError, match="non-negative"):
        model_price("openai", "x", {"price_in": -1, "price_out": 1})


def test_cost_budget_stops_the_episode_after_the_call_that_spends_it(tmp_path):
    """-W max_cost_usd: no model call is made once the budget is spent; the episode stops
    as a cost budget stop, like a step budget (the same taxonomy rows)."""
    price = {"price_in": 1, "price_out": 2}
    _, free = run_config(tmp_path, limit=3, model_options=price, run_name="unbounded")
    # what the cheapest first call cost: every episode has spent it after its first call
    budget = min((c.prompt_tokens + 2 * c.completion_tokens) / 1e6 for c in
                 (t.llm_calls[0] for t in free))  # fmt: skip
    assert all(t.n_llm_calls >= 2 and t.termination is Termination.finished for t in free)
    _, capped = run_config(
        tmp_path,
        limit=3,
        model_options=price,
        workflow_options={"max_cost_usd": budget},
        run_name="capped",
    )
    for t in capped:
        assert t.termination is Termination.cost_limit and t.termination_cause == "cost_budget"
        assert stop_reason(t) is StopReason.cost_budget
        calls = t.llm_calls
        before_last = sum(c.prompt_tokens + 2 * c.completion_tokens for c in calls[:-1]) / 1e6
        assert before_last < budget <= t.cost_usd  # the last call crossed it; none after
        assert t.n_llm_calls < next(f for f in free if f.task_id == t.task_id).n_llm_calls
        assert t.cost_usd == (t.prompt_tokens + 2 * t.completion_tokens) / 1e6
        assert t.answer is None and t.error_type is not None


def test_local_models_cost_nothing_and_record_compute_seconds(tmp_path):
    _, trajs = run_config(tmp_path, limit=2)  # scripted/oracle: a model on this machine
    for t in trajs:
        assert t.cost_usd == 0.0 and t.prompt_tokens > 0
        assert t.compute_s is not None and t.compute_s >= 0.0


def test_files_written_before_costs_still_load_and_show_no_cost():
    lines = (REPO / "tests" / "data" / "taxonomy_scripted.jsonl").read_text().splitlines()
    old = [Trajectory.model_validate(json.loads(x)["trajectory"]) for x in lines[:5]]
    assert all("cost_usd" not in json.loads(x)["trajectory"] for x in lines[:5])
    assert all(t.cost_usd is None and t.compute_s is None for t in old)
    rows = summarize(old, {})
    assert rows[-1].cost_usd is None
    assert cost_table(rows) is None  # no cost known: no cost table


def test_cost_budget_without_a_price_is_refused_before_any_episode(tmp_path):
    cmd = [
        "run", "--model", "openai-compatible/x@http://127.0.0.1:9/v1", "-W", "max_cost_usd=1",
        "--workflow", "direct", "-E", "size=tiny", "--tasks", "scholar-ks", "--limit", "1",
        "--display", "none", "--log-dir", str(tmp_path), "--run-name", "r",
        "--no-preflight",  # the endpoint is closed: the price check, not the preflight, refuses
    ]  # fmt: skip
    res = CliRunner().invoke(app, cmd)
    assert res.exit_code == 2 and "max_cost_usd needs the model's price" in res.output
    assert not (tmp_path / "r" / RESULTS).exists()


def test_server_cpu_is_shared_among_the_calls_in_flight():
    """The embedded server's CPU seconds per call: what the process spent while a call was
    alone is that call's; while two were in flight, each gets half."""
    import os

    from raleval.agents.local import ServerCpu, process_cpu_seconds

    def burn(seconds: float) -> None:
        start = process_cpu_seconds(os.getpid())
        while process_cpu_seconds(os.getpid()) - start < seconds:
            sum(i * i for i in range(10_000))

    meter = ServerCpu(os.getpid())  # this process plays the server
    a = meter.start()
    burn(0.2)  # a alone
    b = meter.start()
    burn(0.2)  # a and b
    spent_b = meter.end(b)
    spent_a = meter.end(a)
    assert spent_a is not None and spent_b is not None
    # b: half of the shared stretch; a: the same half plus its stretch alone (to a tick)
    assert spent_b >= 0.09 and spent_a - spent_b >= 0.18
    assert meter.start() is not None and process_cpu_seconds(-1) is None  # no such process
