"""``--max-connections auto``: AIMD against a real HTTP server on 127.0.0.1 that refuses load."""

from __future__ import annotations

import asyncio
import contextlib
import json
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from raleval.app.cli import app
from raleval.concurrency import LOG_NAME, PROBE_AFTER_WINDOWS, PROBE_HOLD_WINDOWS, AdaptiveLimit
from raleval.store import RESULTS

from .stub_openai import StubServer, capacity_run_args

runner = CliRunner()


def _run(stub: StubServer, tmp_path, name: str, connections: str, n: int = 40):
    cmd = capacity_run_args(stub.base_url, str(tmp_path), name, connections, n)
    res = runner.invoke(app, cmd)
    lines = [json.loads(x) for x in (tmp_path / name / RESULTS).read_text().splitlines()]
    return res, lines


def test_auto_finds_the_servers_capacity_and_loses_no_episode(tmp_path):
    """Issue 36's acceptance line: against a server that answers 429 to more than 4 requests
    in flight (Retry-After 0), a fixed 16 loses episodes as rate_limited, and auto finishes
    all 40 with none failed, settled at or below 4 and recorded in the run."""
    with StubServer() as stub:
        stub.hold_s = 0.1  # long enough that a retry at once meets the same four in flight
        res, fixed = _run(stub, tmp_path, "fixed", "16")
        fixed_failures = [r["failure"] for r in fixed if r["failure"]]
        fixed_refused, stub.refused = stub.refused, 0
        res, auto = _run(stub, tmp_path, "auto", "auto")
        refused = stub.refused
    # the server is a real limit: at 16 in flight, retries alone do not get through
    assert fixed_failures and set(fixed_failures) == {"rate_limited"}
    assert refused * 5 < fixed_refused  # auto drew far fewer refusals than a fixed 16
    assert res.exit_code == 0, res.output
    assert len(auto) == 40 and not [r for r in auto if r["failure"]]
    assert all(r["answer"] == "Paris" for r in auto)
    record = [json.loads(x) for x in (tmp_path / "auto" / LOG_NAME).read_text().splitlines()]
    assert record[0]["why"] == "start" and record[0]["limit"] == 8
    assert any(e["why"] == "HTTP 429" for e in record)  # it backed off on the server's answer
    assert record[-1]["settled"] <= 4
    assert f"max-connections auto: settled at {record[-1]['settled']}" in res.output
    assert refused > 0  # the server did refuse requests: they were retried, none lost


async def _full_window(limit, refuse=None, retry_after=None):
    """``limit.level`` requests at once; the last ``refuse`` of them refused, if set."""
    async with contextlib.AsyncExitStack() as stack:
        slots = [await stack.enter_async_context(limit.request()) for _ in range(limit.level)]
        for i, slot in enumerate(reversed(slots)):
            if refuse and i < refuse:
                slot.overloaded(429, retry_after)
            else:
                slot.succeeded()


def test_a_probe_that_one_full_window_let_through_is_not_kept_if_the_next_is_refused():
    """The flake this rule answers: the client counted the probe's level in flight, but the
    endpoint had answered one of them already and never saw that many at once. One full window
    at the probe's level is no proof; a refusal in a later one sends it back to the level it
    knew, without halving."""

    async def scenario():
        limit = AdaptiveLimit(start=4, maximum=10)
        limit.ceiling = 3  # refused at 4 before: 4 is a probe

        await _full_window(limit)  # all four counted at once, none refused
        assert (limit.level, limit.settled) == (4, 3)  # not yet held
        await _full_window(limit, refuse=1)
        assert (limit.level, limit.ceiling) == (3, 3)  # back, not halved to 2

    asyncio.run(scenario())


@settings(max_examples=200, deadline=None)
@given(st.data(), st.integers(2, 16))
def test_the_refused_level_is_read_from_the_whole_burst_in_any_order(data, n):
    """The flake this rule answers: against a server holding four, eight sent at once, the
    first refusal read was the one sent sixth, and the run settled at 5. Requests reach the
    endpoint in no fixed order, so whichever ``k`` of ``n`` in flight are refused, and in
    whatever order their refusals are read, the remembered level is at most ``n - k`` (the
    endpoint held no more), never below the limit the one decrease chose, and at most one
    below the level the first refusal read was sent at; the record says so."""
    refused = data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=n, unique=True))

    async def scenario(record):
        limit = AdaptiveLimit(start=n, maximum=64, record=record)
        async with contextlib.AsyncExitStack() as stack:
            slots = [await stack.enter_async_context(limit.request()) for _ in range(n)]
            for i in refused:  # read in the drawn order
                slots[i].overloaded(429)
            for i in set(range(n)) - set(refused):
                slots[i].succeeded()
        return limit

    with tempfile.TemporaryDirectory() as tmp:
        record = Path(tmp) / LOG_NAME
        limit = asyncio.run(scenario(record))
        last = json.loads(record.read_text().splitlines()[-1])
    halved = max(n // 2, 1)
    assert limit.overloads == len(refused) and limit.level == halved  # one decrease only
    first_sent_at = refused[0] + 1  # the slots were taken in order
    assert limit.ceiling == max(min(first_sent_at - 1, max(n - len(refused), halved)), 1)
    assert (last["ceiling"], last["settled"]) == (limit.ceiling, limit.settled)


def test_aimd_grows_while_the_endpoint_keeps_up_and_halves_once_per_overload():
    """The limit's arithmetic without a server: additive increase per window in which every
    slot was taken, multiplicative decrease once for the requests sent before the cut, the
    refused level read from the whole burst, a probe above it after clean windows, Retry-After
    holding new requests."""
    now = [0.0]

    async def scenario():
        limit = AdaptiveLimit(start=4, maximum=10, clock=lambda: now[0])
        await _full_window(limit)
        assert limit.level == 5  # a busy window of successes: +1
        for _ in range(6):  # one request at a time: the slots were never all taken
            async with limit.request() as slot:
                slot.succeeded()
        assert limit.level == 5
        await _full_window(limit, refuse=2)  # two of five refused: one halving, not two ...
        assert (limit.level, limit.overloads) == (2, 2)
        assert limit.ceiling == 3  # ... and the endpoint held the other three
        await _full_window(limit)
        assert limit.level == limit.settled == 3  # back up to below the refused level ...
        for _ in range(PROBE_AFTER_WINDOWS - 1):
            await _full_window(limit)
        assert limit.level == 3  # ... held there ...
        await _full_window(limit)
        assert limit.level == 4 and limit.settled == 3  # ... then a probe above it
        await _full_window(limit, refuse=1, retry_after=5.0)
        assert limit.level == 3  # a refused probe goes back without halving ...
        for _ in range(PROBE_AFTER_WINDOWS):
            now[0] += 5.0  # (past each Retry-After hold)
            await _full_window(limit)
        assert limit.level == 3  # ... and the next probe waits twice as long
        for _ in range(PROBE_AFTER_WINDOWS):
            await _full_window(limit)
        assert limit.level == 4 and limit.settled == 3
        for _ in range(PROBE_HOLD_WINDOWS - 1):  # full windows at the probe's level go through
            await _full_window(limit)
        assert limit.settled == 3  # ... not yet enough to say the endpoint had them at once
        await _full_window(limit)
        assert limit.level == limit.settled == 4  # the endpoint takes more now
        await _full_window(limit, refuse=1, retry_after=5.0)
        assert (limit.level, limit.ceiling) == (2, 3)  # refused at or below it: halved
        # Retry-After 5 s holds every new request until the clock has passed it
        waiter = asyncio.ensure_future(limit.request().__aenter__())
        for _ in range(20):
            await asyncio.sleep(0)
        assert not waiter.done()
        now[0] += 5.0
        async with limit.request() as slot:  # a request after the hold; its end wakes the rest
            slot.succeeded()
        await asyncio.wait_for(waiter, 10.0)

    asyncio.run(scenario())
