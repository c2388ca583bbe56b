"""The harness's share of failures (issue 58): every model call records whether it was cut at
``max_tokens``, wrote output the workflow could not parse, or repeated a tool call already
made in the episode; each cell's format-failure rate shows in ``raleval table``, the report,
``study tables`` and ``compare``. And a token budget a first call cannot fit is refused."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from raleval import registry
from raleval.analysis.format_failures import (
    FormatFailures,
    ends_in_loop,
    episode_format_failures,
    format_failures,
    format_gap_note,
)
from raleval.analysis.report import build_report
from raleval.analysis.runs import load_run
from raleval.app.cli import app
from raleval.config import ConfigError
from raleval.model import GenerateRequest, Generation, ModelBase, apply_stop
from raleval.records import ToolCall, Trajectory
from raleval.store import HEADER, RESULTS, ResultsFile
from raleval.workflow import WorkflowConfig

from .conftest import run_config

RUNAWAY = "and then I will look it up and " * 200  # far past 128 tokens


class Unruly(ModelBase):
    """A model that writes runaway text, several calls a reply, and repeats calls. It cuts a
    reply at ``max_tokens`` as a server does (4 characters a token) and says so
    (``finish_reason``), as the OpenAI API does."""

    name = "unruly/x"

    def __init__(self) -> None:
        self.n = 0

    def for_episode(self, task: Any, env: Any, workflow: Any) -> Unruly:
        return Unruly()

    def script(self, request: GenerateRequest) -> tuple[str, list[ToolCall]]:
        self.n += 1
        ada = ToolCall(tool="searchPerson", arguments={"name": "Ada Lovelace"})
        bob = ToolCall(tool="searchPerson", arguments={"name": "Bob"})
        cyd = ToolCall(tool="searchPerson", arguments={"name": "Cyd"})
        if request.tools:  # native function calling
            replies = {
                1: ("", [ada, bob]),  # two calls in one reply, neither made before
                2: ("", [ada]),  # a repeat
                3: ("", [bob, cyd]),  # two calls, one a repeat
            }
            return replies.get(self.n, (RUNAWAY, []))  # 4: runaway text, no call: the end
        replies_text = {
            1: ' I look.\nAction 1: searchPerson(name="Ada Lovelace")',
            2: ' Again.\nAction 2: searchPerson(name="Ada Lovelace")',  # a repeat
            3: f" Hmm.\nAction 3: {RUNAWAY}",  # cut, and no action parses
            4: " Done.\nAction 4: Finish[Ada]",
        }
        return replies_text[self.n], []

    async def generate(self, request: GenerateRequest) -> Generation:
        text, calls = self.script(request)
        text = apply_stop(text, request.stop)
        reason = "tool_calls" if calls else "stop"
        if len(text) > 4 * request.max_tokens:
            text, reason = text[: 4 * request.max_tokens], "length"
        return Generation(
            text=text,
            tool_calls=calls,
            prompt_tokens=sum(len(m.content) // 4 for m in request.messages),
            completion_tokens=(len(text) + 3) // 4 + 8 * len(calls),
            finish_reason=reason,
        )


registry.register_model_provider("unruly")(lambda name, run_dir=None, **_: Unruly())


def _flags(t: Trajectory) -> list[tuple[bool | None, bool | None, bool | None]]:
    return [(c.cut, c.unparseable, c.repeated) for c in t.llm_calls]


@pytest.mark.parametrize(
    ("workflow", "flags", "counts"),
    [
        (
            "function_calling",
            # calls: two in one reply, of which only the first runs (one call a turn); a
            # repeat; two again, the first (never run before) runs; runaway text, cut (the end) in
            # a loop
            [(False, False, False), (False, False, True), (False, False, False),
             (True, False, False)],
            FormatFailures(
                calls=4, cut=1, unparseable=0, repeated=1, failed=2, failed_low=2, looped=1
            ),
        ),
        (
            "react",
            # a call; its repeat; runaway text (a loop) cut mid-action that does not parse; Finish
            [(False, False, False), (False, False, True), (True, True, False),
             (False, False, False)],
            FormatFailures(
                calls=4, cut=1, unparseable=1, repeated=1, failed=2, failed_low=2, looped=1
            ),
        ),
    ],
)  # fmt: skip
def test_an_unruly_model_gets_exactly_its_format_failures(tmp_path, workflow, flags, counts):
    summary, results = run_config(tmp_path, workflow=workflow, model="unruly/x", limit=2)
    assert len(results) == 2
    for t in results:
        assert _flags(t) == flags
        assert episode_format_failures(t) == counts
        cut = [c for c in t.llm_calls if c.cut]
        assert all(c.finish_reason == "length" for c in cut)
    total = format_failures(results)
    assert (total.calls, total.failed, total.rate) == (8, 2 * counts.failed, counts.failed / 4)
    # the column shows in raleval table, and in the report
    res = CliRunner().invoke(
        app, ["table", str(summary.run_dir), "--format", "csv"], env={"COLUMNS": "200"}
    )
    assert res.exit_code == 0, res.output
    header, row = res.output.splitlines()[:2]
    assert header.split(",")[-1] == "fmt_fail"
    assert row.split(",")[-1] == f"{100 * counts.failed / 4:.1f}%"
    report = build_report([load_run(summary.run_dir)])
    assert "format failures (model calls)" in report and "fmt_fail" in report
    assert (
        f"{100 * counts.failed / 4:.1f}%: {2 * counts.cut} cut at max_tokens, "
        f"{2 * counts.unparseable} unparseable, {2 * counts.repeated} repeated, of 8"
    ) in report


def test_old_calls_without_flags_get_bounds_from_steps_and_tokens():
    """A file written before the flags: cut from the completion tokens at the header's
    max_tokens, unparseable and repeated from the steps; the failed calls a range."""
    line = {
        "task_id": "t",
        "agent": {"workflow": "react", "model": "m", "env": "e"},
        "termination": "finished",
        "started_at": "2026-01-01T00:00:00Z",
        "wall_time_s": 1.0,
        "llm_calls": [
            {"prompt": "p", "completion_tokens": 128},  # cut, and its action did not parse
            {"prompt": "p", "completion_tokens": 20},
            {"prompt": "p", "completion_tokens": 20},  # a repeat
            {"prompt": "p", "completion_tokens": 9},
        ],
        "steps": [
            {"index": 0, "kind": "parse_error", "cause": "invalid_format"},
            {"index": 1, "tool": "search", "arguments": {"q": "a"}},
            {"index": 2, "tool": "search", "arguments": {"q": "a"}},
            {"index": 3, "tool": "Finish", "arguments": {"answer": "x"}},
        ],
    }
    traj = Trajectory.model_validate_json(json.dumps(line))
    got = episode_format_failures(traj, max_tokens=128)
    assert got == FormatFailures(4, 1, 1, 1, failed=3, derived=True, failed_low=1)
    assert got.text() == "25.0-75.0%"
    assert episode_format_failures(traj).cut == 0  # no max_tokens known: none counted cut
    # a gap is said only where the ranges leave no doubt
    clean = FormatFailures(calls=4, failed=0, failed_low=0)
    assert format_gap_note(got, clean, 0.10) != ""  # at least 25% against 0%
    assert format_gap_note(got, clean, 0.30) == ""  # 25% is not 30 points for sure
    worse = FormatFailures(calls=4, failed=4, failed_low=4)
    assert format_gap_note(got, worse, 0.20) != ""  # at least 25 points below 100%
    assert format_gap_note(got, worse, 0.30) == ""


def test_the_gap_note_names_the_kinds_and_blames_the_harness_only_for_cut_or_unparsed_replies():
    looped = FormatFailures(calls=20, repeated=19, failed=19, failed_low=19)
    clean = FormatFailures(calls=20)
    note = format_gap_note(clean, looped, 0.10)
    assert "0.0% vs 95.0% of calls (more than 10 points; by kind none vs repeats 95.0%)" in note
    assert note.endswith(
        "each failed call parsed and repeats an earlier call (the model looping, or paging a "
        "tool such as Lookup on), not the harness's parsing"
    )
    assert "harness's handling" not in note
    # one cut reply on either side puts the harness back among the suspects
    for cut_side in (
        FormatFailures(calls=20, repeated=18, cut=1, failed=19, failed_low=19),
        FormatFailures(calls=20, unparseable=1, failed=1, failed_low=1),
    ):
        note = format_gap_note(cut_side, looped, 0.0) or format_gap_note(clean, cut_side, 0.0)
        assert note.endswith("the gap may be the harness's handling of the output"), note
    mixed = FormatFailures(calls=20, repeated=18, cut=1, failed=19, failed_low=19)
    assert mixed.kinds_text() == "repeats 90.0%, cut 5.0%"
    # one cut call in 20 cannot make a gap of 90 points: the note says where the gap is
    note = format_gap_note(FormatFailures(calls=20, cut=1, failed=1, failed_low=1), looped, 0.10)
    assert note.endswith(
        ": cut or unparseable calls are at most 5.0% of either side's, so the gap is in calls "
        "that parsed and repeat an earlier one (the model looping, or paging a tool such as "
        "Lookup on), not the harness's parsing"
    ), note
    # a side with more cut calls than the gap keeps the harness a suspect
    many = FormatFailures(calls=20, cut=3, failed=3, failed_low=3)
    assert format_gap_note(many, looped, 0.10).endswith("the harness's handling of the output")
    # derived counts tally repeats by executed call: three a reply can exceed the replies
    derived = FormatFailures(calls=4, repeated=9, cut=2, failed=4, derived=True, failed_low=2)
    assert derived.kinds_text() == "repeats up to 100.0%, cut 50.0%"


def test_compare_says_when_the_runs_format_failures_differ(tmp_path):
    unruly, _ = run_config(tmp_path, workflow="react", model="unruly/x", limit=3)
    oracle, _ = run_config(tmp_path, workflow="react", limit=3)
    args = ["compare", str(unruly.run_dir), str(oracle.run_dir)]
    res = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert "format failures 50.0% of 12 model calls" in res.output
    said = " ".join(res.output.split())
    said_gap = "A-B: format failures differ: 50.0% vs 0.0% of calls (more than 10 points; by kind"
    assert said_gap in said
    assert "the gap may be the harness's handling of the output" in said
    res = CliRunner().invoke(app, [*args, "--format-gap", "0.6"], env={"COLUMNS": "200"})
    assert res.exit_code == 0 and "format failures differ" not in res.output


def test_a_budget_no_first_call_fits_is_refused_with_both_sizes(tmp_path):
    with pytest.raises(ConfigError) as err:
        options = {"max_episode_tokens": 600}
        run_config(tmp_path, workflow="dfsdt", limit=2, workflow_options=options)
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith("-W max_episode_tokens=600 is below what dfsdt's first model call")
    prompt = int(message.split("a ", 1)[1].split("-token prompt")[0].replace(",", ""))
    cap = WorkflowConfig().max_tokens
    assert prompt > 600 and f"plus max_tokens {cap} = {prompt + cap:,} tokens" in message
    # from the command line: exit 2, one line, nothing run
    res = CliRunner().invoke(
        app,
        ["run", "--env", "scholar", "-E", "size=tiny", "--workflow", "dfsdt", "--model",
         "scripted/oracle", "--limit", "2", "-W", "max_episode_tokens=600",
         "--log-dir", str(tmp_path / "cli")],
        env={"COLUMNS": "400"},
    )  # fmt: skip
    assert res.exit_code == 2
    [line] = [x for x in res.output.splitlines() if "max_episode_tokens=600" in x]
    assert re.search(rf"a [\d,]+-token prompt .* plus max_tokens {cap} = [\d,]+ tokens$", line)
    assert not list((tmp_path / "cli").rglob(RESULTS))
    # a budget the first call fits runs, and its header says what the budget counts
    budget = prompt + cap + 72
    summary, _ = run_config(
        tmp_path, workflow="dfsdt", limit=2, workflow_options={"max_episode_tokens": budget}
    )
    header = json.loads((summary.run_dir / HEADER).read_text())
    assert "cached" in header["decoding"]["budget_counts"]
    for t in ResultsFile(summary.run_dir / RESULTS):
        assert t.prompt_tokens + t.completion_tokens <= budget
        assert t.uncached_prompt_tokens == t.prompt_tokens  # scripted: no prefix cache


def test_study_tables_have_the_column_and_the_second_study_reads():
    stored = Path(__file__).resolve().parents[1] / "studies" / "local-models-2"
    if not stored.is_dir():
        pytest.skip("the second study's stored cells are not in this checkout")
    from raleval.analysis.study import study_tables

    text = study_tables(stored)
    header = next(line for line in text.splitlines() if line.startswith("| workflow"))
    assert "| fmt fail |" in header


DATA = Path(__file__).parent / "data"


def test_the_loop_reading_agrees_with_hand_labels_of_real_cut_replies():
    """85 real replies cut at max_tokens (SmolLM2 and Qwen2.5, every workflow of the stored
    studies), labelled by hand before ``ends_in_loop`` was written: it agrees on every one,
    both ways."""
    labelled = json.loads((DATA / "cut_replies_labelled.json").read_text(encoding="utf-8"))
    replies = labelled["replies"]
    loops = [r for r in replies if r["loop"]]
    assert len(loops) >= 25 and len(replies) - len(loops) >= 25
    wrong = [(i, r["loop"]) for i, r in enumerate(replies) if ends_in_loop(r["reply"]) != r["loop"]]
    assert not wrong


@pytest.mark.parametrize(
    ("reply", "loop"),
    [
        ("r8 = Lookup('x')\nr9 = Lookup('x')\nr10 = Lookup('x')\nr11 = Look", True),
        ("r11 = Lookup('x')\nr10 = Lookup('x')\nr9 = Lookup('x')\nr8 = Look", False),  # down
        ('{"a": 1}\n{"a": 1}', False),  # two copies, but under 32 characters
        ('{"name": "Search", "arguments": {"q": 1}}\n{"name": "Search", "arguments": {"q": 1}}',
         True),  # two whole copies, the first at the reply's start
        ('{"name": "Search", "arguments": {"q": 1}}\n{"name": "Search", "argu', False),  # 1.5
        ('"2022-02-28": 1.17, "2022-05-26": 1.23, "2022-08-23": 1.23, "2022-11-', False),
        ("x = 1\n" + "0" * 60, True),  # a number run away (read digit by digit)
        ("The answer is Ada.\n\n" * 3 + "  \n", True),  # trailing blanks do not hide it
        ("Ada Lovelace wrote the first program; Charles Babbage designed the engine.", False),
    ],
)  # fmt: skip
def test_a_loop_is_two_copies_of_one_unit_at_the_reply_s_end(reply, loop):
    assert ends_in_loop(reply) is loop


def test_the_loop_reading_looks_past_its_window_for_nothing():
    """Only the reply's last LOOP_WINDOW characters count: unrelated text longer than the window
    is no loop, and a loop after it is found (its time: benchmarks/loop_reading.py)."""
    import random

    rng = random.Random(0)
    text = "".join(rng.choice("abcdefghij ") for _ in range(5000))
    assert not ends_in_loop(text)
    assert ends_in_loop(text + "the same again; " * 200)


@settings(max_examples=200, deadline=None)
@given(
    prefix=st.text(max_size=200),
    unit=st.text(min_size=16, max_size=120).filter(lambda u: u.strip() == u and u),
    copies=st.integers(min_value=2, max_value=6),
    cut=st.integers(min_value=0, max_value=119),
)
def test_any_unit_repeated_twice_at_the_end_is_a_loop(prefix, unit, copies, cut):
    assert ends_in_loop(prefix + unit * copies + unit[: min(cut, len(unit) - 1)])


@settings(max_examples=200, deadline=None)
@given(
    words=st.lists(st.integers(min_value=0, max_value=10**6), min_size=1, max_size=80, unique=True)
)
def test_text_whose_words_never_repeat_is_no_loop(words):
    # distinct numbers spelled as words of letters: no unit of two or more words comes twice
    text = " ".join("".join(chr(97 + int(d)) for d in str(w)) + "q" for w in words)
    assert not ends_in_loop(text)
