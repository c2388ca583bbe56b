"""Outside agents (``--workflow agent:MODULE:FACTORY``): recorded through the tools and the
model raleval hands them, budgeted, and scored as the built-in workflows are."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from raleval import registry
from raleval.app.runner import run_episode
from raleval.config import ConfigError
from raleval.model import Generation, ModelBase
from raleval.records import AgentSpec, OutcomeKind, Task, Termination, ToolCall

from .conftest import REPO, run_config

# LangGraph 1.x marks its prebuilt ReAct agent deprecated in favour of langchain.agents (a
# package raleval does not install); it is still the prebuilt agent the issue names
pytestmark = pytest.mark.filterwarnings("ignore:create_react_agent has been moved")

LANGGRAPH = f"agent:{REPO / 'examples' / 'agents' / 'langgraph_react.py'}:make_agent"
TASK = Task(id="t", domain="scholar", level="KS", family="1-3", question="Who?", answers=["X"])


def _tool_steps(traj):
    return [
        (s.tool, s.arguments, s.observation, s.kind)
        for s in traj.steps
        if s.tool not in (None, "Finish")
    ]


SMOLAGENTS = f"agent:{REPO / 'examples' / 'agents' / 'smolagents_tools.py'}:make_agent"
LANGCHAIN = f"agent:{REPO / 'examples' / 'agents' / 'langchain_agent.py'}:make_agent"


def test_langgraph_prebuilt_agent_scores_as_function_calling(tmp_path):
    """30 scholar tasks, the scripted oracle playing each gold solution as native tool calls:
    every call the LangGraph agent makes is recorded, and every score, label and progress
    rate is what the built-in function-calling workflow gets."""
    _same_as_function_calling(tmp_path, LANGGRAPH)


def test_langchain_create_agent_scores_as_function_calling(tmp_path):
    """The same for LangChain 1.x's ``create_agent`` (the langchain package, not a raleval
    dependency: the test runs where it is installed, e.g. beside the newest release)."""
    pytest.importorskip("langchain.agents")
    _same_as_function_calling(tmp_path, LANGCHAIN)


def test_smolagents_tool_calling_agent_scores_as_function_calling(tmp_path):
    """The same for smolagents, a synchronous framework: 30 agents in threads of their own,
    each waiting on calls made on the episode's loop (in the loop's default executor, the
    oracle's calls found no free worker and every episode hung)."""
    pytest.importorskip("smolagents")
    _same_as_function_calling(tmp_path, SMOLAGENTS)


def _same_as_function_calling(tmp_path, workflow):
    common = {"tasks": None, "tasks_per_family": 10, "limit": 30}
    _, builtin = run_config(tmp_path / "fc", workflow="function_calling", **common)
    _, outside = run_config(tmp_path / "agent", workflow=workflow, **common)
    assert len(builtin) == len(outside) == 30
    by_task = {t.task_id: t for t in builtin}
    for traj in outside:
        ref = by_task[traj.task_id]
        assert traj.termination is Termination.finished
        assert _tool_steps(traj) and _tool_steps(traj) == _tool_steps(ref)
        assert traj.answer == ref.answer
        assert traj.scores == ref.scores
        assert (traj.error_type, traj.error_cause) == (ref.error_type, ref.error_cause)
        # one model call per tool call, and the last one answers
        assert traj.n_llm_calls == len(_tool_steps(traj)) + 1
        assert [c.tool_calls[0].tool for c in traj.llm_calls[:-1]] == [
            s[0] for s in _tool_steps(traj)
        ]
    assert all(t.scores["progress"] == 1.0 for t in outside)


class Scripted(ModelBase):
    """Replies in turn from ``replies`` (text, tool calls); then repeats the last one."""

    name = "scripted-test"

    def __init__(self, replies):
        self.replies, self.requests = replies, 0

    async def generate(self, request):
        reply = self.replies[min(self.requests, len(self.replies) - 1)]
        self.requests += 1
        return Generation(text=reply[0], tool_calls=list(reply[1]), prompt_tokens=10)


def _run(env, target, model, **options):
    wf_cls = registry.workflows.get(f"agent:{target}")
    wf = wf_cls.configure(options)
    wf.preflight()
    spec = AgentSpec(workflow=f"agent:{target}", model="m", env="scholar")
    return asyncio.run(run_episode(TASK, model, env, wf, spec))


SEARCH = ToolCall(tool="searchPerson", arguments={"name": "Ada"})

# --- factories the tests name by module path -------------------------------------------------


def sync_agent(episode):
    """A plain synchronous program: calls the tools as functions (in raleval's thread)."""
    search = {f.__name__: f for f in episode.functions}["searchPerson"]

    def run(question):
        first = search(name="Ada")
        return f"saw {len(first)} characters"

    return run


def greedy_agent(episode):
    """A LangGraph agent with no budget of its own and a model that never stops calling."""
    from langgraph.prebuilt import create_react_agent

    return create_react_agent(episode.model, episode.tools)


def crashing_agent(episode):
    async def run(question):
        await episode.call_tool("searchPerson", {"name": "Ada"})
        raise ValueError("the agent's own bug")

    return run


def swallowing_agent(episode):
    """Catches every error a tool raises and keeps calling past its time: the episode still
    ends, at the first call after the time limit."""

    async def run(question):
        for _ in range(100):
            with contextlib.suppress(Exception):
                await episode.call_tool("searchPerson", {"name": "Ada"})
            await asyncio.sleep(0.05)
        return "never"

    return run


def blocking_agent(episode):
    """An async agent that calls a sync tool on the event loop (it would wait on itself)."""

    async def run(question):
        return episode.functions[0](name="Ada")

    return run


def silent_agent(episode):
    return lambda question: None


# ----------------------------------------------------------------------------------------------


def test_a_sync_agent_calling_plain_functions_is_recorded(scholar_env):
    traj = _run(scholar_env, f"{__name__}:sync_agent", Scripted([("", [])]))
    assert [s.tool for s in traj.steps] == ["searchPerson", "Finish"]
    assert traj.steps[0].kind is OutcomeKind.ok and traj.steps[0].observation
    assert traj.answer == f"saw {len(traj.steps[0].observation)} characters"
    assert traj.termination is Termination.finished


def test_the_step_budget_ends_an_agent_that_never_stops(scholar_env):
    model = Scripted([("", [SEARCH])])
    traj = _run(scholar_env, f"{__name__}:greedy_agent", model, max_steps=3)
    assert traj.termination is Termination.step_limit
    assert [s.tool for s in traj.steps] == ["searchPerson"] * 3
    assert model.requests == 3  # the fourth call was refused before it reached the model


def test_an_agent_that_raises_is_a_program_error_and_its_calls_stay(scholar_env):
    traj = _run(scholar_env, f"{__name__}:crashing_agent", Scripted([("", [])]))
    assert traj.termination is Termination.program_error
    assert traj.termination_cause == "agent_exception:ValueError"
    assert [s.tool for s in traj.steps] == ["searchPerson", None]
    assert traj.steps[-1].observation == "the agent's own bug"


def test_a_swallowed_end_still_ends_the_episode(scholar_env):
    traj = _run(scholar_env, f"{__name__}:swallowing_agent", Scripted([("", [])]), time_limit_s=1)
    assert traj.termination is Termination.timeout
    assert traj.answer is None and 1 <= len(traj.steps) < 100


def test_an_agent_that_returns_nothing_is_invalid_format(scholar_env):
    traj = _run(scholar_env, f"{__name__}:silent_agent", Scripted([("", [])]))
    assert traj.termination is Termination.invalid_format
    assert traj.termination_cause == "agent_answer:empty"


def test_an_unknown_tool_the_framework_refuses_is_recorded_as_misuse(scholar_env):
    bogus = ToolCall(tool="searchEverything", arguments={"q": "Ada"})
    model = Scripted([("", [bogus]), ("X", [])])
    traj = _run(scholar_env, f"{__name__}:greedy_agent", model)
    assert traj.steps[0].tool == "searchEverything"
    assert traj.steps[0].kind is OutcomeKind.misuse
    assert traj.answer == "X" and traj.termination is Termination.finished


def test_bad_arguments_reach_the_environment(scholar_env):
    bad = ToolCall(tool="getCoauthors", arguments={"who": "Ada"})
    traj = _run(scholar_env, f"{__name__}:greedy_agent", Scripted([("", [bad]), ("X", [])]))
    assert traj.steps[0].tool == "getCoauthors"
    assert traj.steps[0].kind is OutcomeKind.misuse
    assert traj.steps[0].cause and "argument" in traj.steps[0].cause


@pytest.mark.parametrize(
    "target, says",
    [
        ("agent", "agent:MODULE:FACTORY"),
        ("agent:no_such_module_xyz:f", "cannot import"),
        (f"agent:{__name__}:no_such_factory", "has no"),
        ("agent:not-installed", "raleval.agents_external"),
    ],
)
def test_a_target_that_names_no_agent_is_refused(target, says):
    with pytest.raises(ConfigError, match=says):
        registry.workflows.get(target).configure({}).preflight()


def test_a_parametrized_name_resolves_through_its_prefix():
    from raleval.registry import UnknownNameError

    wf = registry.workflows.get("agent:pkg.mod:make")
    assert issubclass(wf, registry.workflows.get("agent")) and wf.target == "pkg.mod:make"
    assert registry.workflows.get("agent:pkg.mod:make") is wf  # resolved once
    with pytest.raises(UnknownNameError):
        registry.workflows.get("react:anything")  # react takes no argument
    with pytest.raises(UnknownNameError):
        registry.workflows.get("nosuch:thing")


def test_a_sync_call_on_the_event_loop_is_an_error_not_a_deadlock(scholar_env):
    traj = _run(scholar_env, f"{__name__}:blocking_agent", Scripted([("", [])]), time_limit_s=30)
    assert traj.termination is Termination.program_error
    assert traj.termination_cause == "agent_exception:RuntimeError"
    assert "event loop" in traj.steps[-1].observation


@pytest.mark.parametrize("name", ["agent:pkg.mod:make", 'command:sh "a b.sh" --x'])
def test_a_parametrized_workflow_travels_to_a_worker_process(name):
    """--backend processes pickles the plan: the workflow comes back with its argument and
    its options (the class itself is made at run time and cannot be pickled by name)."""
    import pickle

    wf = registry.workflows.get(name).configure({"max_steps": 3})
    back = pickle.loads(pickle.dumps(wf))
    assert type(back).__mro__[1] is type(wf).__mro__[1]
    assert (getattr(back, "target", None), getattr(back, "command", None)) == (
        getattr(wf, "target", None),
        getattr(wf, "command", None),
    )
    assert back.config == wf.config and back.config.max_steps == 3
