"""A run mixing every workflow with scripted models that fail on purpose: the taxonomy gives
each episode the intended label."""

import pytest

from raleval.workflows.sandbox import check_isolation

from .conftest import options_for, run_config

# (workflow, scripted model) -> intended label (with cause prefix where it matters)
EXPECTED = {
    **{(wf, "oracle"): "EM" for wf in ("react", "function_calling", "dfsdt", "pal", "planned")},
    ("direct", "oracle"): "AM",
    **{
        (wf, "memorizer"): "AM"
        for wf in ("react", "function_calling", "dfsdt", "pal", "planned", "direct")
    },
    **{(wf, "oracle-wrong"): "GE" for wf in ("react", "function_calling", "dfsdt", "planned")},
    # PAL's wrong oracle makes the gold calls, then writes the wrong answer as a literal: the
    # evidence was returned, so GE by the codebook (the strict reading's data flow says RE)
    ("pal", "oracle-wrong"): "GE",
    ("direct", "oracle-wrong"): "RE",
    ("react", "malformed"): "TE:unparseable_output:invalid_format",
    ("react", "unknown-tool"): "TE:step_budget:unknown_tool",
    ("dfsdt", "malformed"): "TE:step_budget",
    ("pal", "malformed"): "TE:unparseable_output",
    ("function_calling", "malformed"): "RE",  # a plain-text reply is a (wrong) final answer
    ("react", "abstain"): "RE",
    **{
        (wf, "error"): "ME:model_failure:backend_error"
        for wf in ("react", "function_calling", "dfsdt", "pal", "planned", "direct")
    },
    **{
        (wf, "empty"): "ME:model_failure:empty_response"
        for wf in ("react", "function_calling", "dfsdt", "pal", "planned", "direct")
    },
}


@pytest.mark.parametrize(("workflow", "model"), sorted(EXPECTED))
def test_intended_label(tmp_path, workflow, model):
    if workflow == "pal" and check_isolation() is not None:
        pytest.skip(check_isolation())
    _, results = run_config(
        tmp_path,
        workflow=workflow,
        model=f"scripted/{model}",
        limit=3,
        workflow_options=options_for(workflow, max_steps=4, dfsdt_query_budget=6),
    )
    want = EXPECTED[(workflow, model)]
    for r in results:
        assert r.error_type.value == want.split(":")[0], (r.error_cause, r.termination)
        assert r.error_cause.startswith(want), r.error_cause


def test_the_strict_reading_is_stored_and_tabled_beside_the_label(tmp_path):
    """PAL's wrong oracle writes a literal after its calls returned the evidence: GE by the
    codebook, RE by the strict reading; the run stores both and ``raleval table`` shows both
    counts per system (codebook/strict)."""
    if check_isolation() is not None:
        pytest.skip(check_isolation())
    from typer.testing import CliRunner

    from raleval.app.cli import app

    summary, results = run_config(
        tmp_path, workflow="pal", model="scripted/oracle-wrong", limit=3,
        workflow_options=options_for("pal", max_steps=4),
    )  # fmt: skip
    assert [(r.error_type.value, r.strict_error_type.value) for r in results] == [("GE", "RE")] * 3
    out = CliRunner().invoke(app, ["table", str(summary.run_dir)], env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    row = next(line for line in out.output.splitlines() if "pal/" in line and "3/0" in line)
    cells = [c.strip() for c in row.strip("│ ").split("│")]
    assert cells[-6:] == ["0/0", "0/0", "3/0", "0/3", "0/0", "0/0"], row
