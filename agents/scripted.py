"""Deterministic test models (``scripted/<name>``). Never chosen for a real run by default.

- ``oracle``: replays each task's gold solution in the workflow's own format, then answers.
- ``malformed``: writes actions no parser accepts (exercises ``parse_error`` / ``invalid_format``).
- ``unknown-tool``: calls a tool that does not exist (exercises ``misuse``).
- ``abstain``: answers "I don't know" at once.
- ``error``: the backend fails on every call (exercises ``llm_error``).
- ``empty``: the backend returns empty text.
- ``wrong-tool``, ``constant``, ``misspelled-arg``: one defect each (for ``raleval diagnose``,
  docs/diagnosis.md): a wrong but valid first call, then an answer from what it saw; the gold
  calls, then a constant answer; the gold calls with an argument name misspelled.
- ``replay``: replays the model outputs recorded in a results file (``-M path=results.jsonl``),
  task by task, so a stored run can be re-executed against the tools without the model.
"""

from __future__ import annotations

import asyncio
import html
import re
from typing import Any

from raleval.families import answer_of, read_values
from raleval.keypoints import oracle_text
from raleval.model import (
    LOCAL_PRICE,
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


CHARS_PER_TOKEN = 4  # what scripted models count a token as
CALL_TOKENS = 8  # what a native tool call counts


def _estimate_tokens(text: str) -> int:
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


class ScriptedModel(ModelBase):
    """Base: subclasses produce the raw text for a prompt; stop sequences apply as on a server."""

    endpoint = "scripted"
    capabilities = Capabilities(cacheable=False, price=LOCAL_PRICE)

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
        # as a server does: a reply longer than max_tokens is cut there ("length"); a native
        # call counts 8 tokens, and calls that do not fit are not made
        reason = "tool_calls" if calls else "stop"
        calls_fit = calls[: request.max_tokens // CALL_TOKENS]
        room = request.max_tokens - CALL_TOKENS * len(calls_fit)
        if len(calls_fit) < len(calls) or _estimate_tokens(text) > room:
            calls, text, reason = calls_fit, text[: CHARS_PER_TOKEN * room], "length"
        return Generation(
            text=text,
            tool_calls=calls,
            prompt_tokens=sum(_estimate_tokens(m.content) for m in request.messages),
            completion_tokens=_estimate_tokens(text) + CALL_TOKENS * len(calls),
            finish_reason=reason,
        )


def _tail(prompt: str) -> tuple[str, int]:
    """Which ReAct slot the prompt asks for (``Thought`` or ``Action``) and its step number."""
    m = _STEP_TAIL.search(prompt[-40:])
    if m is None:
        return "Thought", 1
    return m.group(1), int(m.group(2))


WRONG_ANSWER = "an answer that is wrong"


def read_answer_expr(answer: str, needles: list[str], n_results: int) -> str:
    """An answer expression for a task that gives none (text results, a wiki page): the
    answer, taken only where the results hold what grounds it (its evidence, or the answer
    itself), else None. A PAL program ends with it: its answer then depends on its results,
    as the taxonomy asks of a grounded PAL answer (a bare literal is AM)."""
    results = ", ".join(f"r{i}" for i in range(n_results))
    return (
        f"{answer!r} if all(n.lower() in ' '.join(map(str, [{results}])).lower() "
        f"for n in {needles!r}) else None"
    )


# What the executing oracle answers when the environment did not return what the task's
# solution needs (another world, missing data, a failed call): wrong, and says why.
NOT_RETURNED = "not found: the tools did not return the answer"
# What it answers when the tools returned the answer but the workflow's view of their results
# (after its observation budget) does not show what the answer rests on: a model could only
# guess, so the oracle does not answer either.
NOT_VISIBLE = "not shown: the answer was cut from the observations"


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
    for a long-form task, the statement of each key point whose value the results show
    (:func:`raleval.keypoints.oracle_text`); the task's answer expression evaluated over the
    returned data; else the gold answer only
    where the observations show it (every element of a list, or the task's evidence); else
    :data:`NOT_RETURNED`."""
    if any(r.kind.value != "ok" for r in results):
        return NOT_RETURNED
    if task.key_points:  # a long-form answer: the statement of every key point it was shown
        return oracle_text(task.key_points, [r.observation for r in results]) or NOT_RETURNED
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


def visible_in(task: Task, results: list[Any], shown: list[str]) -> bool:
    """Whether ``shown`` (the observations as the workflow rendered them) holds what the
    answer to ``task`` rests on: every value its answer expression reads and every key it
    looks them up by (a closing price's date), and what the taxonomy counts as evidence
    (every value of the task's ``evidence``, every element of a list, else one gold alias)."""
    if task.key_points:  # every key point's value: the oracle writes only what it saw
        return oracle_text(task.key_points, shown) == oracle_text(
            task.key_points, [r.observation for r in results]
        )
    premise = task.answer_type is not None and task.answer_type.value == "invalid_premise"
    if (premise or not task.tags.answerable) and not task.evidence:
        return True  # the premise check needs only that a call succeeded
    expr = task.metadata.get("answer_expr")
    if expr:
        data = [r.data for r in results]
        read = read_values(expr, data, limit=10**6, keys_looked_up=True)
        if not all(_appears(shown, [v]) for v in read):
            return False
    if task.evidence:
        return all(_appears(shown, [e]) for e in task.evidence)
    if task.elements:
        return all(_appears(shown, aliases) for aliases in task.elements)
    if normalize_answer(task.answers[0]) in ("yes", "no"):
        return bool(expr)  # a computed yes/no: its values were checked above
    return _appears(shown, task.answers)


class OracleModel(ScriptedModel):
    """Executes a task's gold solution against the episode's environment, answers from what
    the tools returned (:func:`answer_from_results`), and plays the solution back in the
    workflow's own format (the workflow's ``gold_reply``).

    It never answers the stored gold on faith: where the environment lacks the data (a task
    run on another world, a loaded dataset the corpus does not hold) its answer is wrong, and
    where the workflow's view of the results (after its observation budget for the context
    window) does not show what the answer rests on, it answers :data:`NOT_VISIBLE`
    (:func:`visible_in`): a task solvable by the tools but not by what the agent sees shows in
    the oracle's own scores.
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
        self.results: list[Any] = []  # the solution's results (ToolResult), once executed
        self.observations: list[str] = []  # what the solution's calls returned

    def for_episode(self, task: Task, env: Any, workflow: Any) -> OracleModel:
        bound = OracleModel(task, env, workflow, self.variant)
        bound.latency_s, bound.capabilities = self.latency_s, self.capabilities
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
        self.results = results
        self.observations = [r.observation for r in results]
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
        if expr is None and answer != NOT_RETURNED and calls:
            expr = read_answer_expr(answer, task.evidence or [answer], len(calls))
        return GoldPlan(calls, answer, expr)

    async def generate(self, request: GenerateRequest) -> Generation:
        if self.variant not in ("memorizer", "oracle-wrong") and self.executed is None:
            if self.task is None or self.env is None:
                raise ModelError("the oracle needs a task: use it through the runner", "no_task")
            self.executed = await self.execute()
        return await super().generate(request)

    def reply(self, request: GenerateRequest) -> tuple[str, list[ToolCall]]:
        plan = self.plan()
        if plan.answer not in (NOT_RETURNED, WRONG_ANSWER) and self.variant != "memorizer":
            shown = self.workflow.shown_observations(request)
            # the answer is only given once the calls are made; before, nothing is shown yet
            done = shown is None or len(shown) >= len(plan.calls)
            if done and shown is not None and not visible_in(self.task, self.results, shown):
                plan = GoldPlan(plan.calls, NOT_VISIBLE)
        return self.workflow.gold_reply(request, plan, self.env)


def view_text(request: GenerateRequest, question: str) -> str:
    """What a model sees of its own episode: the request's text after the question (the
    instructions and demonstrations before it are not the episode), whitespace collapsed."""
    parts = []
    for m in request.messages:
        parts.append(m.content)
        parts.extend(f"{c.tool}({c.arguments})" for c in m.tool_calls)
    text = " ".join(" ".join(parts).split())
    q = " ".join(question.split())
    at = text.rfind(q)
    return text[at + len(q) :] if at >= 0 else text


def fingerprint(observation: str, size: int = 40) -> str:
    """The start of an observation, whitespace collapsed: how a view is checked for it (a
    workflow may cut a long observation, never its start)."""
    return " ".join(observation.split())[:size]


CONSTANT_ANSWER = "a constant answer"


def misspelled(name: str) -> str:
    """``name`` with its 2nd and 3rd letters swapped (``query`` -> ``qeury``)."""
    if len(name) >= 3 and name[1] != name[2]:
        return name[0] + name[2] + name[1] + name[3:]
    return name + "x"


class DefectModel(OracleModel):
    """An oracle with one defect, reading only what is in its view: it answers the executed
    gold answer when every gold call's result is in its view, else :data:`NOT_RETURNED`.

    - ``wrong-tool``: first calls a valid tool no gold path uses, then answers from what it
      saw; put on the gold path (its first gold result in view) it follows it;
    - ``constant``: makes the gold calls, then answers :data:`CONSTANT_ANSWER` whatever it saw;
    - ``misspelled-arg``: makes the gold calls with the first argument name misspelled.
    """

    def for_episode(self, task: Task, env: Any, workflow: Any) -> DefectModel:
        bound = DefectModel(task, env, workflow, self.variant)
        bound.latency_s = self.latency_s
        return bound

    def sees(self, request: GenerateRequest, observations: list[str]) -> bool:
        view = view_text(request, self.task.question if self.task else "")
        return all(fingerprint(o) in view for o in observations)

    def wrong_call(self) -> ToolCall:
        """A valid call of a tool that no gold path uses (search tools first), with the first
        text value of the first gold call (or the question) as its argument."""
        from pydantic import ValidationError

        assert self.task is not None
        calls = self.solution()
        used = {c.tool for c in calls}
        used |= {c["tool"] for alt in self.task.metadata.get("alt_solutions") or [] for c in alt}
        texts = [v for c in calls[:1] for v in c.arguments.values() if isinstance(v, str)]
        value = texts[0] if texts else self.task.question
        tools = sorted(self.env.tools, key=lambda t: t.matching != "fuzzy")
        for spec in tools:
            if spec.name in used or not spec.param_names:
                continue
            args = {spec.param_names[0]: value}
            try:
                spec.params.model_validate(args)
            except ValidationError:
                continue
            return ToolCall(tool=spec.name, arguments=args)
        raise ModelError("scripted/wrong-tool: every tool is on a gold path", "no_wrong_tool")

    def reply(self, request: GenerateRequest) -> tuple[str, list[ToolCall]]:
        calls = self.solution()
        answer = self.executed if self.sees(request, self.observations) else NOT_RETURNED
        answer = answer or NOT_RETURNED
        if self.variant == "constant":
            plan = GoldPlan(calls, CONSTANT_ANSWER)
        elif self.variant == "misspelled-arg":
            bent = [
                ToolCall(
                    tool=c.tool,
                    arguments={
                        (misspelled(k) if i == 0 else k): v
                        for i, (k, v) in enumerate(c.arguments.items())
                    },
                )
                for c in calls
            ]
            plan = GoldPlan(bent, answer)
        elif self.sees(request, self.observations[:1]):  # wrong-tool, put on the gold path
            plan = GoldPlan(calls, answer)
        else:
            plan = GoldPlan([self.wrong_call()], answer)
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
        bound.latency_s, bound.capabilities = self.latency_s, self.capabilities
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
        bound.latency_s, bound.capabilities = self.latency_s, self.capabilities
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
    "wrong-tool": lambda: DefectModel(variant="wrong-tool"),
    "constant": lambda: DefectModel(variant="constant"),
    "misspelled-arg": lambda: DefectModel(variant="misspelled-arg"),
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
