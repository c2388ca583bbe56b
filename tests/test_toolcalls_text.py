"""Calls a model writes as text: JSON call objects, and the tool's name applied to its JSON
arguments, ``Search({"entity": "X"})``, the way raleval shows calls to a model (found by the
study: Qwen2.5-0.5B wrote its planned workflow's plan in the demonstration's "Information
found" syntax, and all 10 HotpotQA plans were read as holding no call)."""

from __future__ import annotations

import asyncio

from raleval import registry
from raleval.app.runner import run_episode
from raleval.model import Generation, ModelBase
from raleval.records import AgentSpec, Task, ToolCall
from raleval.toolcalls import tool_calls_from_content

PLAN = (
    'Search({"entity": "Laleli Mosque"}): The Laleli Mosque is in Laleli.\n'
    'Search({"entity": "Esma Sultan Mansion"}): It is in Ortakoy.\n'
    "Answer: no"
)


def test_applied_calls_are_read_in_order():
    assert tool_calls_from_content(PLAN) == [
        ToolCall(tool="Search", arguments={"entity": "Laleli Mosque"}),
        ToolCall(tool="Search", arguments={"entity": "Esma Sultan Mansion"}),
    ]


def test_an_argument_called_name_is_an_argument_when_the_call_is_applied():
    assert tool_calls_from_content('searchPerson({"name": "Ada Lin"})') == [
        ToolCall(tool="searchPerson", arguments={"name": "Ada Lin"})
    ]


def test_json_call_objects_and_bare_objects_read_as_before():
    assert tool_calls_from_content('{"name": "Search", "arguments": {"entity": "X"}}') == [
        ToolCall(tool="Search", arguments={"entity": "X"})
    ]
    assert tool_calls_from_content('run({"name": "Search", "arguments": {"entity": "X"}})') == [
        ToolCall(tool="Search", arguments={"entity": "X"})
    ]
    assert tool_calls_from_content('The answer is {"a": 1}') == []


# Qwen2.5-0.5B's plan on a generated scholar task (the study, block 3a): the call, then the
# result it imagined, in the demonstration's "Information found" syntax. The imagined person
# record has a "name" and was read as a call to a tool named after the person (unknown tool,
# labelled TE) in 9 of 15 episodes.
IMAGINED = (
    'searchPerson({"name": "Seil Meirymton", "organization": "Vijairk Institute"}): '
    '[{"person_id": "65b58bb63fb11645359ed3e0", "name": "Seil Meirymton", "interests": '
    '["blockchain"], "num_citation": 217, "num_pubs": 8, "organization": "Vijairk Institute"}]\n'
    'getPersonBasicInfo({"person_id": "65b58bb63fb11645359ed3e0"}): {"name": "Seil Meirymton"}'
)


def test_a_result_the_model_imagined_after_its_call_is_not_a_call():
    assert tool_calls_from_content(IMAGINED) == [
        ToolCall(
            tool="searchPerson",
            arguments={"name": "Seil Meirymton", "organization": "Vijairk Institute"},
        ),
        ToolCall(tool="getPersonBasicInfo", arguments={"person_id": "65b58bb63fb11645359ed3e0"}),
    ]
    openai = '{"id": "c1", "type": "function", "function": {"name": "S", "arguments": "{}"}}'
    assert tool_calls_from_content(openai) == [ToolCall(tool="S", arguments={})]
    assert tool_calls_from_content('{"tool": "Finish", "arguments": {}}') == [
        ToolCall(tool="Finish", arguments={})
    ]
    # a call with the output the model imagined riding along (DFSDT, HotpotQA) is still a call
    imagined = '{"name": "Lookup", "arguments": {"keyword": "X"}, "function_output": "..."}'
    assert tool_calls_from_content(imagined) == [
        ToolCall(tool="Lookup", arguments={"keyword": "X"})
    ]


class Planner(ModelBase):
    name = "planner"

    def __init__(self, replies: list[str]) -> None:
        self.replies = list(replies)

    async def generate(self, request):
        return Generation(text=self.replies.pop(0) if self.replies else "")


def test_planned_workflow_runs_an_applied_plan(scholar_env):
    task = Task(id="t", domain="scholar", level="KS", family="1-3", question="Q?", answers=["A"])
    wf = registry.workflows.get("planned").configure({})
    model = Planner(['searchPerson({"name": "Ada"}): whoever', "Ada"])
    spec = AgentSpec(workflow="planned", model="planner", env="scholar")
    traj = asyncio.run(run_episode(task, model, scholar_env, wf, spec))
    assert traj.steps[0].tool == "searchPerson" and traj.steps[0].kind.value == "ok"
    assert traj.error_cause is None or "invalid_plan" not in traj.error_cause
