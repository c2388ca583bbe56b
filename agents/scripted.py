"""Deterministic test models (``scripted/<name>``). Never chosen for a real run by default.

- ``oracle``: replays each task's gold solution in the workflow's own format, then answers.
- ``malformed``: writes actions no parser accepts (exercises ``parse_error`` / ``invalid_format``).
- ``unknown-tool``: calls a tool that does not exist (exercises ``misuse``).
- ``abstain``: answers "I don't know" at once.
- ``error``: the backend fails on every call (exercises ``llm_error``).
- ``empty``: the backend returns empty text.
- ``replay``: replays the model outputs recorded in a results file (``-M path=results.jsonl``),
  task by task, so a stored run can be re-executed against the tools without the model.
"""

from __future__ import annotations

import asyncio
import html
import re
from typing import Any

from raleval.families import answer_of
from raleval.model import (
    Capabilities,
    GenerateRequest,
    Generation,
    ModelBase,
    ModelError,
    apply_stop,
)
from raleval.records import Task, ToolCall
from raleval.registry import register_model_provider
from raleval.text import contains_tokens, normalize_answer
from raleval.workflow import GoldPlan

_STEP_TAIL = re.compile(r"(Thought|Action)\s+(\d+):\s*$")


def _estimate_tokens(text: str) -> int:
    return (len(text) + 3) // 4


class ScriptedModel(ModelBase):
    """Base: subclasses produce the raw text for a prompt; stop sequences apply as on a server."""

    endpoint = "scripted"
    capabilities = Capabilities(cacheable=False)

    def __init__(self, name: str) -> None:
        self.name = f"scripted/{name}"

    def respond(self, prompt: str) -> str:
        raise NotImplementedError

    def respond_with_tools(self, request: GenerateRequest) -> tuple[str, list[ToolCall]]:
        """Native function calling; by default the text reply and no structured call."""
        prompt = request.messages[-1].content if request.messages else ""
        return self.respond(prompt), []

    latency_s: float = 0.0  # simulated model latency (crash and throughput tests)

    def reply(self, request: GenerateRequest) -> tuple[str, list[ToolCall]]:
        """The raw reply text and native tool calls for ``request``."""
        if request.tools:
            return self.respond_with_tools(request)
        return self.respond(request.messages[-1].content if request.messages else ""), []

    async def generate(self, request: GenerateRequest) -> Generation:
        if self.latency_s:
            await asyncio.sleep(self.latency_s)
        text, calls = self.reply(request)
        text = apply_stop(text, request.stop)
        return Generation(
            text=text,
            tool_calls=calls,
            prompt_tokens=sum(_estimate_tokens(m.content) for m in request.messages),
            completion_tokens=_estimate_tokens(text) + 8 * len(calls),
        )


def _tail(prompt: str) -> tuple[str, int]:
    """Which ReAct slot the prompt asks for (``Thought`` or ``Action``) and its step number."""
    m = _STEP_TAIL.search(prompt[-40:])
    if m is None:
        return "Thought", 1
    return m.group(1), int(m.group(2))


WRONG_ANSWER = "an answer that is wrong"
# What the executing oracle answers when the environment did not return what the task's
# solution needs (another world, missing data, a failed call): wrong, and says why.
NOT_RETURNED = "not found: the tools did not return the answer"


class NoSolution(ModelError):
    """A task the oracle cannot solve by executing anything (a loaded dataset without one)."""

    def __init__(self, task: Task) -> None:
        super().__init__(
            f"the oracle has no solution to execute for task {task.id} (family {task.family}): "
            "it answers only from what tools return, and this task has neither a gold solution "
            "nor data to build one from (HotpotQA's supporting titles)",
            "no_solution",
        )


def built_solution(task: Task) -> list[ToolCall] | None:
    """A solution for a loaded task, where its data allow one: HotpotQA's supporting titles
    become ``Search`` calls, then ``Lookup`` of the answer on the last page; a CRAG task with
    its search-result pages (``crag-pages``) searches them for its question."""
    titles = task.metadata.get("supporting_titles")
    if not titles:
        if task.metadata.get("search_results"):
            return [ToolCall(tool="search_pages", arguments={"query": task.question})]
        return None
    # HotpotQA escapes HTML in its titles ("Tunnels &amp; Trolls"); pages go by plain text
    calls = [ToolCall(tool="Search", arguments={"entity": html.unescape(str(t))}) for t in titles]
    calls.append(ToolCall(tool="Lookup", arguments={"keyword": task.answers[0]}))
    return calls


def _appears(observations: list[str], needles: list[str]) -> bool:
    tokens = [normalize_answer(o).split() for o in observations]
    wanted = [normalize_answer(n).split() for n in needles]
    return any(contains_tokens(t, n) for t in tokens for n in wanted if n)


def answer_from_results(task: Task, results: list[Any]) -> str:
    """The answer a reader of ``results`` (the ``ToolResult`` of each solution call) gives:
    the task's answer expression evaluated over the returned data; else the gold answer only
    where the observations show it (every element of a list, or the task's evidence); else
    :data:`NOT_RETURNED`."""
    if any(r.kind.value != "ok" for r in results):
        return NOT_RETURNED
    expr = task.metadata.get("answer_expr")
    if expr:
        value = answer_of(expr, [r.data for r in results])
        return NOT_RETURNED if value is None else value
    observations = [r.observation for r in results]
    premise = task.answer_type is not None and task.answer_type.value == "invalid_premise"
    if (premise or not task.tags.answerable) and not task.evidence:
        return task.answers[0] if results else NOT_RETURNED  # the premise was checked
    if task.evidence:
        found = all(_appears(observations, [e]) for e in task.evidence)
    elif task.elements:
        found = all(_appears(observations, aliases) for aliases in task.elements)
    elif normalize_answer(task.answers[0]) in ("yes", "no"):
        found = False  # a "yes" somewhere in a page is no reading of a yes/no answer
    else:
        found = _appears(observations, task.answers)
    return task.answers[0] if found else NOT_RETURNED


class OracleModel(ScriptedModel):
    """Executes a task's gold solution against the episode's environment, answers from what
    the tools returned (:func:`answer_from_results`), and plays the solution back in the
    workflow's own format (the workflow's ``gold_reply``).

    It never answers the stored gold on faith: where the environment lacks the data (a task
    run on another world, a loaded dataset the corpus does not hold) its answer is wrong.
    Variants, for exercising the taxonomy: ``memorizer`` gives the gold answer without calling
    any tool (AM) and, on a counterfactual testbed, the real world's answer rather than the
    tools'; ``oracle-wrong`` makes the gold calls and then answers wrongly (GE).
    """

    def __init__(
        self,
        task: Task | None = None,
        env: Any = None,
        workflow: Any = None,
        variant: str = "oracle",
    ) -> None:
        super().__init__(variant)
        self.task, self.env, self.workflow, self.variant = task, env, workflow, variant
        self.executed: str | None = None  # the answer the solution's results give

    def for_episode(self, task: Task, env: Any, workflow: Any) -> OracleModel:
        bound = OracleModel(task, env, workflow, self.variant)
        bound.latency_s = self.latency_s
        return bound

    def solution(self) -> list[ToolCall]:
        """The calls this oracle makes: the task's gold solution, or one built from its data."""
        assert self.task is not None
        if self.task.solution:
            return list(self.task.solution)
        built = built_solution(self.task)
        if built is None:
            raise NoSolution(self.task)
        return built

    async def execute(self) -> str:
        """Run the solution against the episode's environment and read the answer from it.

        ``call_sync`` in a thread: the environment's own call path without the harness's
        fault injection (those faults reach the workflow's calls, not the oracle's reading).
        """
        calls = self.solution()
        results = [await asyncio.to_thread(self.env.call_sync, c.tool, c.arguments) for c in calls]
        assert self.task is not None
        return answer_from_results(self.task, results)

    def plan(self) -> GoldPlan:
        """What this variant plays back for its task."""
        if self.task is None or self.workflow is None:
            raise ModelError("the oracle needs a task: use it through the runner", "no_task")
        task = self.task
        if self.variant == "memorizer":  # what it remembers of the real world, not the tools'
            return GoldPlan([], task.metadata.get("original_answers", task.answers)[0])
        calls = self.solution()
        if self.variant == "oracle-wrong":
            return GoldPlan(calls, WRONG_ANSWER)
        answer = self.executed if self.executed is not None else NOT_RETURNED
        expr = task.metadata.get("answer_expr") if answer != NOT_RETURNED else None
        return GoldPlan(calls, answer, expr)

    async def generate(self, request: GenerateRequest) -> Generation:
        if self.variant not in ("memorizer", "oracle-wrong") and self.executed is None:
            if self.task is None or self.env is None:
                raise ModelError("the oracle needs a task: use it through the runner", "no_task")
            self.executed = await self.execute()
        return await super().generate(request)

    def reply(self, request: GenerateRequest) -> tuple[str, list[ToolCall]]:
        plan = self.plan()
        return self.workflow.gold_reply(request, plan, self.env)


class AlternatingModel(OracleModel):
    """Right on a task's 1st, 3rd, ... episode and wrong on its 2nd, 4th, ...: with epochs,
    pass@k and pass^k differ (exercises repeated runs)."""

    def __init__(self) -> None:
        super().__init__(variant="alternating")
        self.visits: dict[str, int] = {}

    def for_episode(self, task: Task, env: Any, workflow: Any) -> OracleModel:
        n = self.visits.get(task.id, 0)
        self.visits[task.id] = n + 1
        bound = OracleModel(task, env, workflow, "oracle" if n % 2 == 0 else "oracle-wrong")
        bound.latency_s = self.latency_s
        return bound


class _Fixed(ScriptedModel):
    def __init__(self, name: str, thought: str, action: str) -> None:
        super().__init__(name)
        self.thought, self.action = thought, action

    def respond(self, prompt: str) -> str:
        slot, n = _tail(prompt)
        if slot == "Action":
            return f" {self.action}"
        return f" {self.thought}\nAction {n}: {self.action}"


class FailingModel(ScriptedModel):
    def __init__(self, name: str, empty: bool) -> None:
        super().__init__(name)
        self.empty = empty

    def respond(self, prompt: str) -> str:
        if self.empty:
            return ""
        raise ModelError("scripted backend failure", "backend_error")


class ReplayModel(ScriptedModel):
    """Replays recorded outputs of each task's trajectory, in order."""

    def __init__(self, path: str, outputs: list[str] | None = None) -> None:
        super().__init__("replay")
        self.path = path
        self._outputs = outputs
        self._by_task: dict[str, list[str]] | None = None

    def _load(self) -> dict[str, list[str]]:
        if self._by_task is None:
            from pathlib import Path

            from raleval.store import ResultsFile

            if not Path(self.path).exists():
                raise ValueError(f"scripted/replay: no results file at {self.path}")
            self._by_task = {
                t.task_id: [c.output for c in t.llm_calls] for t in ResultsFile(Path(self.path))
            }
        return self._by_task

    def for_episode(self, task: Task, env: Any, workflow: Any) -> ReplayModel:
        outputs = self._load().get(task.id)
        if outputs is None:
            raise ValueError(f"scripted/replay: task {task.id} is not in {self.path}")
        bound = ReplayModel(self.path, list(outputs))
        bound.latency_s = self.latency_s
        return bound

    def respond(self, prompt: str) -> str:
        if not self._outputs:
            raise ModelError("replay exhausted: the recording has no more outputs", "replay_end")
        return self._outputs.pop(0)


_BUILDERS = {
    "oracle": lambda: OracleModel(),
    "memorizer": lambda: OracleModel(variant="memorizer"),
    "oracle-wrong": lambda: OracleModel(variant="oracle-wrong"),
    "alternating": lambda: AlternatingModel(),
    "malformed": lambda: _Fixed("malformed", "Let me look this up.", "I will search the person"),
    "unknown-tool": lambda: _Fixed("unknown-tool", "Let me browse.", "browse(query=answer)"),
    "abstain": lambda: _Fixed("abstain", "I cannot know this.", "Finish[I don't know]"),
    "error": lambda: FailingModel("error", empty=False),
    "empty": lambda: FailingModel("empty", empty=True),
}


@register_model_provider("scripted")
def make_scripted_model(name: str, run_dir: Any = None, **options: Any) -> ScriptedModel:
    """``scripted/<name>``: deterministic test models (oracle, replay, failure kinds)."""
    latency = float(options.pop("latency_s", 0.0))
    if name == "replay":
        if set(options) != {"path"}:
            raise ValueError("scripted/replay needs one option: -M path=results.jsonl")
        model: ScriptedModel = ReplayModel(str(options["path"]))
    else:
        if options:
            raise ValueError(f"scripted models take only latency_s (got {sorted(options)})")
        if name not in _BUILDERS:
            from raleval.registry import UnknownNameError

            raise UnknownNameError("scripted model", name, list(_BUILDERS))
        model = _BUILDERS[name]()
    model.latency_s = latency
    return model


SCRIPTED_NAMES = sorted([*_BUILDERS, "replay"])
