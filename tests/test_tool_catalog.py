"""``raleval list tools --env E --json``: every tool with its JSON-schema parameters, its
description and one example call that finds data in the default world."""

from __future__ import annotations

import json

import jsonschema
import pytest
from typer.testing import CliRunner

from raleval import registry
from raleval.app.cli import app
from raleval.records import OutcomeKind

runner = CliRunner()


def _catalog(*args: str) -> list[dict]:
    result = runner.invoke(app, ["list", "tools", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


@pytest.mark.parametrize(
    ("env", "options", "n_tools"),
    [("crag", {}, 38), ("scholar", {"size": "tiny"}, 7)],
)
def test_every_tool_has_a_working_example(env, options, n_tools):
    args = ["--env", env, *(x for k, v in options.items() for x in ("-E", f"{k}={v}"))]
    catalog = _catalog(*args)
    assert len(catalog) == n_tools
    environment = registry.envs.get(env)(**options)
    for tool in catalog:
        assert set(tool) == {"name", "description", "parameters", "returns", "example"}
        assert tool["description"] and tool["parameters"]["type"] == "object"
        arguments = tool["example"]["arguments"]
        jsonschema.validate(arguments, tool["parameters"])  # the example obeys the schema
        result = environment.call_sync(tool["name"], arguments)
        assert result.kind is OutcomeKind.ok, (tool["name"], result.observation)
        assert result.data not in (None, [], {}, [None, None]), tool["name"]


def test_wiki_search_has_an_example_and_lookup_none():
    catalog = {t["name"]: t for t in _catalog("--env", "wiki", "-E", "size=tiny")}
    assert set(catalog) == {"Search", "Lookup"}
    assert catalog["Lookup"]["example"] is None  # it reads the page a Search opened
    env = registry.envs.get("wiki")(size="tiny")
    result = env.call_sync("Search", catalog["Search"]["example"]["arguments"])
    assert result.kind is OutcomeKind.ok and not result.observation.startswith("Could not find")


def test_list_tools_needs_an_environment():
    result = runner.invoke(app, ["list", "tools"])
    assert result.exit_code != 0 and "needs --env" in result.output


def test_the_table_shows_the_examples():
    result = runner.invoke(app, ["list", "tools", "--env", "scholar", "-E", "size=tiny"])
    assert (
        result.exit_code == 0 and "getPersonPubs" in result.output and "person_id" in result.output
    )
