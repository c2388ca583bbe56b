"""References a new user needs (issue 61, item 7): ``raleval tasks schema`` prints the task
record's JSON schema, which docs/tasks.md's task-file section follows field by field, and a
metric registered with ``@register_metric`` in a file of the user's is applied by ``raleval
score --metric``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest
from typer.testing import CliRunner

from raleval.app.cli import app
from raleval.store import RESULTS

from .conftest import run_config

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()


@pytest.fixture(scope="module")
def schema():
    res = runner.invoke(app, ["tasks", "schema"])
    assert res.exit_code == 0, res.output
    return json.loads(res.output)


def test_the_schema_accepts_a_written_task_file_and_names_what_is_required(schema, tmp_path):
    # a task file raleval's own loader wrote from HotpotQA's dev file (real data)
    out = tmp_path / "hotpot.jsonl"
    data = ROOT / "tests" / "data" / "hotpot_dev_distractor_v1_head.json"
    res = runner.invoke(app, ["tasks", "load", "hotpotqa", str(data), "--out", str(out)])
    assert res.exit_code == 0, res.output
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(lines) == 53
    for line in lines:
        jsonschema.validate(line, schema)
    assert set(schema["required"]) == {"id", "domain", "level", "family", "question", "answers"}
    bare = {k: v for k, v in lines[0].items() if k != "family"}
    with pytest.raises(jsonschema.ValidationError, match="'family' is a required property"):
        jsonschema.validate(bare, schema)


def test_docs_task_file_section_covers_every_field(schema):
    text = (ROOT / "docs" / "tasks.md").read_text(encoding="utf-8")
    section = text.split("## Task files", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"^\| `(\w+)` \|", section, re.MULTILINE))
    assert listed == set(schema["properties"])
    assert "raleval tasks schema" in section


METRIC_FILE = '''
from raleval import register_metric


@register_metric("answer_words")
def answer_words(prediction, golds):
    """Words in the answer (a metric of the user's own)."""
    return float(len((prediction or "").split()))
'''


def test_score_applies_a_metric_registered_in_a_users_file(tmp_path):
    summary, results = run_config(tmp_path, limit=4, tasks_per_family=4)
    plugin = tmp_path / "my_metrics.py"
    plugin.write_text(METRIC_FILE)
    res = runner.invoke(
        app,
        ["score", str(summary.run_dir), "--metric", f"{plugin}:answer_words",
         "--metric", "rouge_l"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    rows = [json.loads(x) for x in (summary.run_dir / "scores.jsonl").read_text().splitlines()]
    answers = {r.task_id: r.answer for r in results}
    assert len(rows) == 4
    for row in rows:
        assert row["scores"]["answer_words"] == len(answers[row["task_id"]].split())
        assert row["scores"]["rouge_l"] == pytest.approx(1.0)  # the oracle: the gold itself
    stored = [json.loads(x) for x in (summary.run_dir / RESULTS).read_text().splitlines()]
    assert all("answer_words" not in s["scores"] for s in stored)  # results are never rewritten


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("no_such_metric", "unknown metric 'no_such_metric'"),
        ("absent_file.py:x", "cannot import absent_file.py"),
    ],
)
def test_an_unknown_metric_is_a_one_line_error(tmp_path, target, message):
    summary, _ = run_config(tmp_path, limit=1, tasks_per_family=1)
    res = runner.invoke(app, ["score", str(summary.run_dir), "--metric", target])
    assert res.exit_code == 2 and message in " ".join(res.output.split())
