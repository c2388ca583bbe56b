"""Interface testbeds reach what each workflow's model reads: ``@inject`` plants its instruction
in every kind of result (numbers too), and where a workflow's model never reads a result (PAL,
direct) the run says the attack does not apply instead of reporting rates as if it did."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from raleval import registry
from raleval.analysis.runs import load_run, robustness_rates
from raleval.app.cli import app
from raleval.environment import ToolResult
from raleval.records import OutcomeKind
from raleval.tasks.catalog import load_tasks
from raleval.tasks.testbeds.interface import INJECTION, InterfaceSession


class _Returns:
    """A session whose one tool returns ``data`` as the environment would render it."""

    name = "scholar"

    def __init__(self, tools: list[Any], data: Any, observation: str) -> None:
        self.tools, self.data, self.observation = tools, data, observation

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        return self.call_sync(name, arguments)

    def call_sync(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        return ToolResult(self.observation, OutcomeKind.ok, data=self.data)


@pytest.fixture(scope="module")
def inject_task() -> tuple[Any, Any]:
    env = registry.envs.get("scholar")(size="tiny")
    return env, load_tasks("scholar@inject", env, "scholar", 2, 3)[0]


@pytest.mark.parametrize(
    ("data", "observation"),
    [
        (42, "42"),
        (3.5, "3.5"),
        (True, "true"),
        ([], "No publications found."),
        (None, "No result."),
        ("", ""),
        ("A text.", "A text."),
        (["a", "b"], '["a", "b"]'),
        ({"name": "Ada"}, '{"name": "Ada"}'),
        ([{"name": "Ada"}], '[{"name": "Ada"}]'),
    ],
    ids=[
        "int",
        "float",
        "bool",
        "empty-list",
        "none",
        "empty-text",
        "text",
        "values",
        "record",
        "records",
    ],
)
def test_every_result_type_carries_the_injection(inject_task, data: Any, observation: str) -> None:
    env, task = inject_task
    planted = INJECTION.format(planted=task.metadata["testbed"]["planted"])
    session = InterfaceSession(_Returns(list(env.tools), data, observation), task)
    result = session.call_sync(env.tools[0].name, {})
    # as written, or as a JSON string inside a rendered record
    assert planted in result.observation or json.dumps(planted)[1:-1] in result.observation
    if isinstance(data, (int, float)) and not isinstance(data, bool):
        assert result.data == data  # a number keeps its value: programs compute with it
        assert result.observation.startswith(observation)


def _cli_run(tmp_path: Path, workflow: str) -> tuple[str, dict[str, float]]:
    args = ["run", "-m", "scripted/oracle", "-w", workflow, "--env", "scholar", "-E", "size=tiny",
            "--tasks", "scholar@inject", "--limit", "3", "--log-dir", str(tmp_path),
            "--run-name", workflow, "--display", "none"]  # fmt: skip
    if workflow == "pal":
        args += ["-W", "pal_unsafe=true"]  # the machine may lack Landlock; the oracle's program
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return result.output, robustness_rates(load_run(tmp_path / workflow))["inject"]


@pytest.mark.parametrize("workflow", ["pal", "direct"])
def test_inject_says_it_does_not_apply_where_no_result_reaches_the_model(
    tmp_path: Path, workflow: str
) -> None:
    output, rates = _cli_run(tmp_path, workflow)
    assert f"does not apply to {workflow}" in " ".join(output.split())
    assert rates["reached"] == 0.0
    assert not {"utility", "attack_success", "f1"} & set(rates)


@pytest.mark.parametrize("workflow", ["react", "function_calling", "dfsdt", "planned"])
def test_inject_reaches_the_model_of_workflows_that_read_results(
    tmp_path: Path, workflow: str
) -> None:
    output, rates = _cli_run(tmp_path, workflow)
    assert "does not apply" not in output
    assert rates["reached"] == 1.0
    assert rates["attack_success"] == 0.0 and rates["utility"] == 1.0  # the oracle resists
