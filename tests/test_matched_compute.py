"""Matched compute (issue 48): one token budget per episode, enforced by the harness where an
episode's model calls are counted, the same for every workflow: no model call begins once the
episode has spent it, and an episode it stops is a budget stop."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from raleval.analysis.taxonomy import stop_reason
from raleval.config import ConfigError
from raleval.records import StopReason, Termination
from raleval.store import read_header
from raleval.workflow import WorkflowConfig

from .conftest import run_config

WORKFLOWS = ["react", "function_calling", "pal", "dfsdt", "direct", "planned"]


@pytest.mark.parametrize("workflow", WORKFLOWS)
def test_no_episode_passes_its_token_budget(tmp_path, workflow):
    """The budget is a hard cap (issue 58), the same rule for every workflow: over several
    budgets, from one that leaves room for one call to one the oracle never reaches, no
    episode's recorded tokens pass it, every call sent had room for its prompt and a full
    ``max_tokens`` reply, and an episode the budget stops ends as a budget stop."""
    _, free = run_config(tmp_path, workflow=workflow, limit=3, run_name="free")
    assert free and all(t.prompt_tokens > 0 for t in free)
    if workflow not in ("pal", "direct"):  # the oracle answers these in one call
        assert all(t.n_llm_calls > 1 for t in free)
    max_tokens = WorkflowConfig().max_tokens  # one max_tokens for every workflow
    first = max(t.llm_calls[0].prompt_tokens for t in free)
    spent = max(t.prompt_tokens + t.completion_tokens for t in free)
    roomy = spent + 4096  # room for every call, the tool schemas counted too
    # the first leaves no room for a second call; where the harness counts tool schemas the
    # scripted model does not, it leaves none for the first either, and the run is refused:
    # the budgets then start from what the refusal says the first call needs
    budgets = [first + max_tokens + 80, first + 2 * max_tokens + 300, roomy]
    tight = budgets[0]
    while budgets:
        budget = budgets.pop(0)
        try:
            _, capped = run_config(
                tmp_path,
                workflow=workflow,
                limit=3,
                workflow_options={"max_episode_tokens": budget},
                run_name=f"capped-{budget}",
            )
        except ConfigError as refused:
            assert workflow in ("function_calling", "dfsdt"), refused  # they send schemas
            need = int(re.search(r"= ([\d,]+) tokens$", str(refused))[1].replace(",", ""))
            assert need > budget
            tight = need + 80
            budgets[:0] = [tight, need + max_tokens + 300]
            continue
        assert len(capped) == len(free)
        unbounded = {t.task_id: t for t in free}
        stopped = 0
        for t in capped:
            assert t.prompt_tokens + t.completion_tokens <= budget
            assert t.n_llm_calls >= 1  # a budget that was not refused fits a first call
            if (t.termination, t.termination_cause) == (Termination.cost_limit, "episode_tokens"):
                stopped += 1
                assert stop_reason(t) is StopReason.cost_budget
                assert t.n_llm_calls < unbounded[t.task_id].n_llm_calls
            else:  # unstopped, the episode is the one without a budget
                assert t.termination is unbounded[t.task_id].termination
                assert t.n_llm_calls == unbounded[t.task_id].n_llm_calls
                assert t.answer == unbounded[t.task_id].answer
        if budget == roomy:
            assert stopped == 0
        elif workflow not in ("pal", "direct") and budget == tight:
            assert stopped == len(capped)


def test_the_matched_compute_arm_has_its_table_beside_the_default_budgets(tmp_path):
    """Cells run at ``max_episode_tokens`` form an arm of their own, shown right after the
    default budgets' table, with tokens and model calls per episode and the tokens' interval."""
    import gzip
    import json
    import shutil
    from pathlib import Path

    from raleval.analysis.study import study_tables

    stored = Path(__file__).resolve().parents[1] / "studies" / "local-models"
    for name in ("scholar__react__local_qwen2.5-0.5b__scholar",
                 "scholar__direct__local_qwen2.5-0.5b__scholar"):  # fmt: skip
        shutil.copytree(stored / name, tmp_path / name)
        matched = tmp_path / f"matched-{name}"
        shutil.copytree(stored / name, matched)
        header = json.loads((matched / "header.json").read_text())
        header["config"]["workflow_options"]["max_episode_tokens"] = 2000
        (matched / "header.json").write_text(json.dumps(header))
    text = study_tables(tmp_path)
    titles = [line for line in text.splitlines() if line.startswith("#### ")]
    assert titles[:4] == [
        "#### generated task sets",
        "#### generated task sets: paired comparisons",
        "#### generated task sets, matched compute: 2000 tokens per episode",
        "#### generated task sets, matched compute: 2000 tokens per episode: paired comparisons",
    ]
    header = next(line for line in text.splitlines() if line.startswith("| workflow"))
    assert header.endswith("| tokens/ep | tokens CI | calls/ep |")
    # under a design, each row also counts the episodes a budget ended (the matched arm's
    # point: the budget, not the workflow's own stopping rule, ends them)
    for cell in tmp_path.glob("matched-*"):
        path = cell / "results.jsonl.gz"
        rows = [json.loads(x) for x in gzip.decompress(path.read_bytes()).splitlines()]
        for row in rows[:3]:
            row["stop_reason"], row["termination"] = "cost_budget", "cost_limit"
        path.write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in rows).encode()))
    declared = [(("react", "local/qwen2.5-0.5b"), ("direct", "local/qwen2.5-0.5b"), None)]
    text = study_tables(tmp_path, declared, "family")
    matched = text.split("matched compute: 2000 tokens per episode\n", 1)[1]
    header, _, *rows = matched.strip().split("\n\n", 1)[0].splitlines()
    for row in rows:
        cells = dict(zip(header.split(" | "), row.split(" | "), strict=True))
        assert cells["at budget"] == "3", row


def test_a_sampled_arm_has_its_own_table_with_pass_at_k(tmp_path):
    """Cells run at a temperature over several epochs (run-to-run consistency) are an arm of
    their own, never merged with the greedy cells, with pass@k and pass^k per system."""
    import gzip
    import json
    import shutil
    from pathlib import Path

    from raleval.analysis.study import study_tables

    stored = Path(__file__).resolve().parents[1] / "studies" / "local-models"
    name = "scholar__react__local_qwen2.5-0.5b__scholar"
    shutil.copytree(stored / name, tmp_path / name)
    sampled = tmp_path / f"sampled-{name}"
    shutil.copytree(stored / name, sampled)
    header = json.loads((sampled / "header.json").read_text())
    header["config"].update(epochs=2, workflow_options={"temperature": 0.7})
    (sampled / "header.json").write_text(json.dumps(header))
    with gzip.open(sampled / "results.jsonl.gz", "rt") as f:
        lines = f.read().splitlines()
    first, second = [json.loads(x) for x in lines], [json.loads(x) for x in lines]
    for row in second:  # epoch 1: every episode wrong, so pass^k is 0 and pass@k epoch 0's
        row.update(epoch=1, answer="no such answer")
    with gzip.open(sampled / "results.jsonl.gz", "wt") as f:
        f.writelines(json.dumps(r) + "\n" for r in first + second)
    text = study_tables(tmp_path)
    titles = [line for line in text.splitlines() if line.startswith("#### ")]
    assert titles[1] == "#### generated task sets, sampled: temperature 0.7, 2 epochs"
    table = text.split(titles[1], 1)[1]
    header, _, row = table.strip().splitlines()[:3]
    cells = dict(zip(header.split("|"), row.split("|"), strict=True))
    assert cells[" n "].strip() == str(2 * len(first))
    assert float(cells[" pass^k "]) == 0.0 and float(cells[" pass@k "]) > 0.0


@pytest.mark.parametrize("workflow", WORKFLOWS)
def test_a_budget_of_new_tokens_counts_what_a_prefix_cache_leaves(tmp_path, workflow):
    """``episode_tokens_count=new`` (issue 62's budget sweep): the workflow's fixed first
    request and what a request shares with the episode's previous one are not counted, so a
    budget far below the prompt tokens sent still lets every episode run as without one; a
    budget a little above what an episode's first call counts stops the episodes that need
    more, as budget stops, and no episode counts past its budget."""

    def counting_new(budget: int, name: str):
        options = {"max_episode_tokens": budget, "episode_tokens_count": "new"}
        return run_config(
            tmp_path, workflow=workflow, limit=3, workflow_options=options, run_name=name
        )

    _, free = run_config(tmp_path, workflow=workflow, limit=3, run_name="free")
    max_tokens = WorkflowConfig().max_tokens
    sent = min(t.prompt_tokens + t.completion_tokens for t in free)
    summary, measured = counting_new(10**6, "measured")
    header = read_header(summary.run_dir)
    assert "new prompt tokens" in header.decoding["budget_counts"]
    fixed = header.decoding["fixed_prompt_tokens"]
    assert fixed and all(n > 0 for n in fixed.values())
    new = {t.task_id: t.budget_tokens for t in measured}
    for t in measured:
        assert 0 < t.budget_tokens < t.prompt_tokens + t.completion_tokens
    # the roomiest episode's new tokens, plus a reply: below every episode's prompt tokens
    # wherever the fixed prompt is larger than what an episode adds to it
    roomy = max(new.values()) + max_tokens
    if workflow not in ("pal", "direct"):
        assert roomy < sent, (roomy, sent, fixed)
    _, capped = counting_new(roomy, "roomy")
    unbounded = {t.task_id: t for t in free}
    for t in capped:
        assert t.budget_tokens <= roomy
        assert t.termination is unbounded[t.task_id].termination
        assert t.answer == unbounded[t.task_id].answer
        assert t.n_llm_calls == unbounded[t.task_id].n_llm_calls
    if workflow in ("pal", "direct"):
        return
    first = max(t.llm_calls[0].completion_tokens or 0 for t in measured)
    tight = min(new.values()) - 1  # no episode's whole count fits
    tight = max(tight, first + max_tokens + 40)
    _, stopped = counting_new(tight, "tight")
    assert any(t.termination_cause == "episode_tokens" for t in stopped)
    for t in stopped:
        assert t.budget_tokens <= tight
        if t.termination_cause == "episode_tokens":
            assert stop_reason(t) is StopReason.cost_budget
            assert t.n_llm_calls < unbounded[t.task_id].n_llm_calls


def test_new_tokens_are_those_past_the_previous_request():
    """A request that extends the previous one and its reply counts only what it adds, with
    the template's tokens of each message it begins; one that shares nothing counts whole; an
    episode's first counts what its fixed first request does not."""
    from raleval.model import Message
    from raleval.workflows.common import (
        MESSAGE_TOKENS,
        new_prompt_tokens,
        request_layout,
        request_tokens,
    )

    class Chars:
        def count_tokens(self, text: str) -> int:
            return len(text)

    model = Chars()
    first = (Message(role="system", content="x" * 500), Message(role="user", content="Q?"))
    full = request_tokens(model, first)
    layout = request_layout(first)
    assert new_prompt_tokens(model, full, layout, None, full - 2) == 2
    # ReAct's scratchpad: the reply continues the turn, and the cache holds it
    pad = (*first, Message(role="assistant", content="Thought: a"))
    longer = (*first, Message(role="assistant", content="Thought: a" + "b" * 30 + "\nObs: c"))
    held = new_prompt_tokens(
        model, 0, request_layout(longer), request_layout(pad)[0], 0, reply="b" * 30
    )
    assert held == len("\nObs: c")
    # a reply sent back as a message is laid out anew: it counts, with its message's tokens
    sent = (*first, Message(role="assistant", content="b" * 30), Message(role="tool", content="o"))
    again = new_prompt_tokens(model, 0, request_layout(sent), layout[0], 0, reply="b" * 30)
    assert again == len("\n<assistant>" + "b" * 30 + "\n<tool>o") + 2 * MESSAGE_TOKENS
    unrelated = request_layout((Message(role="user", content="y" * 100),))
    assert new_prompt_tokens(model, 0, unrelated, layout[0], 0) >= len(unrelated[0]) - 1


def test_the_tokens_interval_never_goes_below_zero():
    """Tokens per episode are a count: the t interval of a cell with one long episode among
    short ones (ReAct with Qwen2.5-1.5B at 4,000 tokens in the third study: a mean of about
    7,600 whose t interval reaches -1,370) is cut at 0, its upper end kept."""
    from raleval.analysis.study import study_tables

    root = Path(__file__).resolve().parents[1] / "studies" / "local-models-3"
    text = study_tables(root)
    lows = []
    for line in text.splitlines():
        if line.startswith("| ") and "local/qwen2.5" in line:
            lows += [int(m) for m in re.findall(r"\| \[(-?\d+), \d+\] \|", line)]
    assert lows and min(lows) >= 0
    assert 0 in lows  # the cell above: cut, not dropped
