"""With parallel calls on (``-W parallel_calls=true``), a function-calling reply holding several
calls runs them in the order written: a Finish after other calls ends the episode once they have
run (found by the study: Qwen2.5-0.5B wrote Search, Lookup and Finish in one reply, and the
episode ended with the Search and Lookup never run or recorded). By default one call a turn:
only a reply's first call runs, and the model is asked again."""

import asyncio

from raleval import registry
from raleval.app.runner import run_episode
from raleval.model import Generation, ModelBase
from raleval.records import AgentSpec, Task, ToolCall


class OneReply(ModelBase):
    name = "one-reply"

    def __init__(self, calls: list[ToolCall]) -> None:
        self.calls, self.requests = calls, 0

    async def generate(self, request):
        self.requests += 1
        return Generation(text="", tool_calls=self.calls if self.requests == 1 else [])


TASK = Task(id="t", domain="scholar", level="KS", family="1-3", question="Who?", answers=["X"])


def _run(env, calls, **options):
    wf = registry.workflows.get("function_calling").configure(options)
    model = OneReply(calls)
    spec = AgentSpec(workflow="function_calling", model="m", env="scholar")
    return asyncio.run(run_episode(TASK, model, env, wf, spec)), model


def test_calls_before_finish_run_and_are_recorded(scholar_env):
    search = ToolCall(tool="searchPerson", arguments={"name": "Ada"})
    finish = ToolCall(tool="Finish", arguments={"answer": "a guess"})
    after = ToolCall(tool="getPersonInterest", arguments={"person_id": "p"})
    traj, model = _run(scholar_env, [search, finish, after], parallel_calls=True)
    assert [s.tool for s in traj.steps] == ["searchPerson", "Finish"]
    assert traj.steps[0].observation  # it ran: its result is in the record
    assert traj.answer == "a guess" and traj.termination.value == "finished"
    assert model.requests == 1  # the episode ended at the Finish, no second turn


def test_a_reply_opening_with_finish_ends_at_once(scholar_env):
    finish = ToolCall(tool="Finish", arguments={"answer": "X"})
    search = ToolCall(tool="searchPerson", arguments={"name": "Ada"})
    traj, _ = _run(scholar_env, [finish, search])
    assert [s.tool for s in traj.steps] == ["Finish"] and traj.answer == "X"


def test_one_call_a_turn_by_default(scholar_env):
    search = ToolCall(tool="searchPerson", arguments={"name": "Ada"})
    finish = ToolCall(tool="Finish", arguments={"answer": "a guess"})
    traj, model = _run(scholar_env, [search, finish])
    # the Finish written beside the search never ran: the model was asked again, and its
    # empty second reply ended the episode
    assert traj.steps[0].tool == "searchPerson"
    assert traj.answer != "a guess"
    assert model.requests == 2
    assert traj.llm_calls[0].tool_calls == [search, finish]  # the record keeps what it wrote
