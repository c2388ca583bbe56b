"""Issue 58's acceptance, read from the stored runs of the embedded model
(``studies/decoding-acceptance``: Qwen2.5-Coder-0.5B on the tiny scholar world, 12 tasks a
workflow, ``raleval run --env scholar -E size=tiny --tasks scholar --limit 12 --workflow W
--model local/qwen2.5-0.5b``): what the harness's decoding leaves to chance is bounded on a real
model's output, not only on scripted replies."""

from __future__ import annotations

from pathlib import Path

import pytest

from raleval.analysis.runs import load_run
from raleval.formats import is_unparseable
from raleval.records import OutcomeKind

STORED = Path(__file__).resolve().parents[1] / "studies" / "decoding-acceptance"
RUNS = sorted(p for p in STORED.iterdir() if (p / "header.json").is_file())


def test_every_workflow_has_a_stored_run_of_at_least_12_tasks():
    workflows = {load_run(p).header.config["workflow"] for p in RUNS}
    assert workflows == {"react", "direct", "pal", "planned", "function_calling", "dfsdt"}
    for path in RUNS:
        run = load_run(path)
        assert run.header.config["model"] == "local/qwen2.5-0.5b", path.name
        assert len({t.task_id for t in run.results}) >= 12, path.name


@pytest.mark.parametrize("path", RUNS, ids=lambda p: p.name)
def test_a_stored_run_meets_the_decoding_acceptance(path):
    run = load_run(path)
    workflow = run.header.config["workflow"]
    calls = [c for t in run.results for c in t.llm_calls]
    steps = [s for t in run.results for s in t.steps]
    assert calls and all(c.cut is not None for c in calls)  # flagged as they were made
    assert sum(bool(c.cut) for c in calls) <= 0.05 * len(calls)  # cut at max_tokens
    if workflow == "dfsdt":
        assert sum(s.kind is OutcomeKind.parse_error for s in steps) <= 0.05 * len(steps)
    if workflow in ("planned", "pal"):
        # a plan or a program that does not parse; a program that crashes is the model's
        assert sum(bool(c.unparseable) for c in calls) <= 0.05 * len(calls)
        assert sum(is_unparseable(s.kind, s.cause) for s in steps) <= 0.05 * len(calls)
    if workflow == "function_calling":
        finals = {"Finish"}
        nonfinal = [
            c
            for c in calls
            if c.error is None and not any(tc.tool in finals for tc in c.tool_calls)
        ]
        one_each = sum(len(c.tool_calls) == 1 for c in nonfinal)
        assert nonfinal and one_each >= 0.95 * len(nonfinal)
