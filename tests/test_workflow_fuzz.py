"""Random and adversarial model output never crashes a workflow: every episode ends with a
termination reason and a serialisable trajectory."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from raleval import registry
from raleval.app.runner import run_episode
from raleval.model import Generation, ModelBase
from raleval.records import AgentSpec, Task, Termination, ToolCall, Trajectory
from raleval.workflows.sandbox import check_isolation

ADVERSARIAL = [
    "Action 1: searchPerson(",
    "Finish[",
    "Finish]",
    "]]]]",
    "searchPerson(name=)",
    'searchPerson(name="a", name="b")',
    "getCoauthors(person_id=__import__('os'))",
    "Thought 1: Thought 2: Action 3: Finish[x]\nObservation 9: fake",
    "```python\n```",
    "```python\nimport os\nos._exit(0)\n```",
    "```python\nfinal_result = 1/0\n```",
    '[{"tool": "nope", "arguments": 5}]',
    '{"name": "Finish", "arguments": {}}',
    "\x00\x01\x02",
    "🙂" * 50,
    "a" * 5000,
    "Action 1: " + "(" * 300,
    "Finish[" + "x" * 3000 + "]",
    "\n\n\n",
    "Observation 1:",
    "None",
]

tool_names = st.sampled_from(["searchPerson", "getCoauthors", "Finish", "nope", "", "Search"])
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)
tool_calls = st.builds(
    lambda name, args: ToolCall(tool=name or "x", arguments=args),
    tool_names,
    st.dictionaries(
        st.sampled_from(["name", "person_id", "return_type", "final_answer", "answer", "junk"]),
        json_values,
        max_size=3,
    ),
)
generations = st.builds(
    lambda text, calls: Generation(text=text, tool_calls=calls),
    st.one_of(st.text(max_size=200), st.sampled_from(ADVERSARIAL)),
    st.lists(tool_calls, max_size=2),
)


class FuzzModel(ModelBase):
    name = "fuzz"

    def __init__(self, outputs: list[Generation]) -> None:
        self.outputs = list(outputs)

    async def generate(self, request):
        return self.outputs.pop(0) if self.outputs else Generation(text="")


TASK = Task(id="t", domain="scholar", level="KS", family="1-3", question="Who is X?", answers=["X"])
WORKFLOWS = ["react", "function_calling", "dfsdt", "direct", "planned"]
if check_isolation() is None:
    WORKFLOWS.append("pal")


def _workflow(name, **budgets):
    """The workflow with those of ``budgets`` that its own config has."""
    cls = registry.workflows.get(name)
    return cls.configure({k: v for k, v in budgets.items() if k in cls.Config.model_fields})


@pytest.mark.parametrize("workflow", WORKFLOWS)
@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(outputs=st.lists(generations, min_size=0, max_size=8))
def test_no_exception_escapes(scholar_env, workflow, outputs):
    wf = _workflow(workflow, max_steps=4, dfsdt_query_budget=6, pal_cpu_s=1, pal_wall_s=3)
    traj = asyncio.run(
        run_episode(
            TASK,
            FuzzModel(outputs),
            scholar_env,
            wf,
            AgentSpec(workflow=workflow, model="fuzz", env="scholar"),
        )
    )
    assert traj.termination is not None
    assert traj.termination is not Termination.harness_error, traj.termination_cause
    assert Trajectory.model_validate_json(traj.model_dump_json()) == traj


@pytest.mark.parametrize("workflow", WORKFLOWS)
@pytest.mark.parametrize("text", ADVERSARIAL)
def test_adversarial_outputs(scholar_env, workflow, text):
    wf = _workflow(workflow, max_steps=3, dfsdt_query_budget=4, pal_cpu_s=1, pal_wall_s=3)
    outputs = [Generation(text=text)] * 6
    traj = asyncio.run(
        run_episode(
            TASK,
            FuzzModel(outputs),
            scholar_env,
            wf,
            AgentSpec(workflow=workflow, model="fuzz", env="scholar"),
        )
    )
    assert traj.termination not in (None, Termination.harness_error), traj.termination_cause
