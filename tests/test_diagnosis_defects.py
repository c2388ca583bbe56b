"""``raleval diagnose`` against scripted models with known defects, written here (the repo's
providers never saw them; issue 46): each must get the cause its defect is.

- a looping agent repeats its first on-path call until the step budget: ``retrieval`` (its
  prefix is longer than the budget leaves; the repeats are cut, never the replay started past
  the budget);
- an order-swapped comparison makes the second look-up first and never the first:
  ``retrieval`` (the order-free departure keeps its own correct call);
- a misspelt argument name with a wrong value: ``retrieval`` (the mend keeps the wrong value);
- a coin-flip model at temperature > 0: ``unstable`` on at least 9 of 10 failed episodes;
- a reader whose evidence overflows a small context: never ``beyond_reach``.

Every model reads only its view (the request after the question), as a model would.
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any, ClassVar

import pytest
from typer.testing import CliRunner

from raleval import registry
from raleval.analysis.diagnosis import Cause, evidence_prefix, read_diagnoses
from raleval.app.cli import app
from raleval.app.diagnose import diagnose_sync
from raleval.app.episodes import run_episode
from raleval.app.plan import build_env
from raleval.app.runner import run_sync
from raleval.config import RunConfig
from raleval.model import Capabilities, GenerateRequest, Generation, ModelBase
from raleval.records import AgentSpec, ToolCall
from raleval.store import RESULTS, TASKS, ResultsFile, read_tasks
from raleval.text import contains_tokens, normalize_answer
from raleval.workflow import GoldPlan

NO_IDEA = "no idea"
WRONG_VALUE = "Qwyx Blorft"  # no entity of the tiny worlds is called anything like it


def _view(request: GenerateRequest, question: str) -> str:
    """The request's text after the question (instructions and demonstrations come before)."""
    parts = []
    for m in request.messages:
        parts.append(m.content)
        parts.extend(f"{c.tool}({c.arguments})" for c in m.tool_calls)
    text = " ".join(" ".join(parts).split())
    q = " ".join(question.split())
    at = text.rfind(q)
    return text[at + len(q) :] if at >= 0 else ""


def _shown(observation: str, view: str) -> bool:
    """An observation is in view when all of it is (a search result's head may be another
    result's head: a person's record starts as the search for them does)."""
    return " ".join(observation.split()) in view


class ViewModel(ModelBase):
    """Base of the defect models: bound to its episode, it knows the task's gold calls and
    what they return, and answers right only when every gold result is in its view."""

    capabilities = Capabilities(cacheable=False)
    endpoint = "test"
    prefix = "view"

    def __init__(self, variant: str = "", task: Any = None, env: Any = None, wf: Any = None):
        self.variant, self.task, self.env, self.workflow = variant, task, env, wf
        self.name = f"{self.prefix}/{variant}"
        self.observations: list[str] | None = None

    def for_episode(self, task: Any, env: Any, workflow: Any) -> ViewModel:
        return type(self)(self.variant, task, env, workflow)

    async def generate(self, request: GenerateRequest) -> Generation:
        if self.observations is None:
            calls = self.task.solution
            results = [await asyncio.to_thread(self.env.call_sync, c.tool, c.arguments)
                       for c in calls]  # fmt: skip
            self.observations = [r.observation for r in results]
        view = _view(request, self.task.question)
        text, calls = self.workflow.gold_reply(request, self.plan(request, view), self.env)
        for stop in request.stop:
            text = text.split(stop)[0] if stop and stop in text else text
        return Generation(text=text, tool_calls=calls)

    def in_view(self, view: str) -> list[bool]:
        assert self.observations is not None
        return [_shown(o, view) for o in self.observations]

    def answer(self, view: str) -> str:
        return self.task.answers[0] if all(self.in_view(view)) else NO_IDEA

    def decoy(self) -> ToolCall:
        """A valid call of a tool no gold call uses, about the question's first words."""
        from pydantic import ValidationError

        used = {c.tool for c in self.task.solution}
        words = " ".join(self.task.question.split()[:3])
        for spec in sorted(self.env.tools, key=lambda t: t.matching != "fuzzy"):
            if spec.name in used or not spec.param_names:
                continue
            try:
                spec.params.model_validate({spec.param_names[0]: words})
            except ValidationError:
                continue
            return ToolCall(tool=spec.name, arguments={spec.param_names[0]: words})
        raise AssertionError("every tool is on the gold path")

    def plan(self, request: GenerateRequest, view: str) -> GoldPlan:
        raise NotImplementedError


class Looper(ViewModel):
    """Once its first gold call's result is in view it cannot find the next call and makes
    the first again, and again; any later gold call whose values it sees it makes."""

    prefix = "looper"

    def plan(self, request: GenerateRequest, view: str) -> GoldPlan:
        shown = self.in_view(view)
        if all(shown):
            return _at(request, None, self.answer(view))
        calls = self.task.solution
        nxt = next(j for j, s in enumerate(shown) if not s)
        call = calls[0] if nxt == 1 else calls[nxt]
        return _at(request, call, NO_IDEA)


class Swapped(ViewModel):
    """A comparison's look-ups in reverse order, the first never made: a wrong tool in its
    place, then an answer from what it sees (step by step, as a script)."""

    prefix = "swapped"

    def plan(self, request: GenerateRequest, view: str) -> GoldPlan:
        script = [*reversed(self.task.solution[1:]), self.decoy()]
        return GoldPlan(script, self.answer(view))


class WrongValue(ViewModel):
    """Misreads the entity of its first call: the first argument's name misspelt and a wrong
    value; once a call's result is in view it follows any gold call whose values it sees."""

    prefix = "wrongvalue"

    def plan(self, request: GenerateRequest, view: str) -> GoldPlan:
        calls = self.task.solution
        shown = self.in_view(view)
        if all(shown):
            return _at(request, None, self.answer(view))
        if not _steps_taken(request):
            first = calls[0]
            (key, _value), *rest = first.arguments.items()
            bent = {key[0] + key[2] + key[1] + key[3:]: WRONG_VALUE, **dict(rest)}
            return _at(request, ToolCall(tool=first.tool, arguments=bent), NO_IDEA)
        seen = normalize_answer(self.task.question + " " + view).split()
        for j, call in enumerate(calls):
            if j == 0 or shown[j]:
                continue  # it never makes the first call right by itself
            values = [normalize_answer(str(v)).split() for v in call.arguments.values()]
            if all(contains_tokens(seen, v) for v in values if v):
                return _at(request, call, NO_IDEA)
        return _at(request, None, NO_IDEA)


class CoinFlip(ViewModel):
    """Sampled at temperature > 0: answers right half the time, whatever it sees, at once.
    Each episode draws from its own seed (the task and how many episodes of it came before),
    so the test is deterministic while every replay is a fresh sample."""

    prefix = "coinflip"
    capabilities = Capabilities(cacheable=True)
    visits: ClassVar[dict[str, int]] = {}
    generated: ClassVar[int] = 0

    def for_episode(self, task: Any, env: Any, workflow: Any) -> ViewModel:
        bound = super().for_episode(task, env, workflow)
        n = CoinFlip.visits.get(task.id, 0)
        CoinFlip.visits[task.id] = n + 1
        bound.rng = random.Random(f"{self.variant}:{task.id}:{n}")  # type: ignore[attr-defined]
        return bound

    async def generate(self, request: GenerateRequest) -> Generation:
        CoinFlip.generated += 1
        answer = self.task.answers[0] if self.rng.random() < 0.5 else NO_IDEA  # type: ignore[attr-defined]
        text, calls = self.workflow.gold_reply(request, GoldPlan([], answer), self.env)
        for stop in request.stop:
            text = text.split(stop)[0] if stop and stop in text else text
        return Generation(text=text, tool_calls=calls)


def _steps_taken(request: GenerateRequest) -> int:
    """Steps the episode has taken: ReAct's step number less one, or function calling's tool
    results."""
    if request.tools:
        return sum(1 for m in request.messages if m.role == "tool")
    from raleval.workflows.react import prompt_slot

    return prompt_slot(request.messages[-1].content)[1] - 1


def _at(request: GenerateRequest, call: ToolCall | None, answer: str) -> GoldPlan:
    """A plan whose call at this step is ``call`` (None: the answer)."""
    if call is None:
        return GoldPlan([], answer)
    return GoldPlan([call] * (_steps_taken(request) + 1), answer)


for _cls in (Looper, Swapped, WrongValue, CoinFlip):
    registry.register_model_provider(_cls.prefix)(lambda name, run_dir=None, _c=_cls, **_: _c(name))


def _run(
    tmp_path: Path,
    model: str,
    env: str,
    tasks: str,
    workflow: str = "react",
    per_family: int = 12,
    **wf: Any,
) -> Path:
    config = RunConfig(
        env=env,
        env_options={"size": "tiny"},
        workflow=workflow,
        workflow_options={"shots": 0, **wf},
        model=model,
        tasks=tasks,
        tasks_per_family=per_family,
        log_dir=tmp_path / model.replace("/", "_"),
    )
    return run_sync(config).run_dir


def _failed(run_dir: Path) -> list[Any]:
    return [d for d in read_diagnoses(run_dir) if not d.correct]


@pytest.mark.parametrize("workflow", ["react", "function_calling"])
def test_a_looping_agent_is_a_retrieval_failure(tmp_path: Path, workflow: str) -> None:
    run_dir = _run(tmp_path, f"looper/{workflow}", "scholar", "2-4", workflow)
    results = list(ResultsFile(run_dir / RESULTS))
    assert {t.termination.value for t in results} == {"step_limit"}  # it loops to the budget
    assert all(len(t.steps) == 10 for t in results)
    diagnose_sync(run_dir)
    failed = _failed(run_dir)
    assert len(failed) == len(results) >= 4
    assert {d.cause for d in failed} == {Cause.retrieval}
    for d in failed:
        fixed = [r for r in d.replays if r.intervention == "gold_retrieval" and not r.control]
        # the 11-step prefix (10 loops and the gold call) was cut to leave the model turns:
        # its repeats went, its first call and the gold call stayed
        assert all(r.prefix_steps == 2 and r.trajectory.llm_calls for r in fixed)
        assert d.outcomes["gold_retrieval"].control_rate == 0.0


@pytest.mark.parametrize("workflow", ["react", "function_calling"])
def test_an_order_swapped_comparison_is_a_retrieval_failure(tmp_path: Path, workflow: str) -> None:
    run_dir = _run(tmp_path, f"swapped/{workflow}", "crag", "crag-comparison", workflow)
    diagnose_sync(run_dir)
    failed = _failed(run_dir)
    assert len(failed) >= 8
    assert {d.cause for d in failed} == {Cause.retrieval}
    tasks = {t.id: t for t in read_tasks(run_dir / TASKS)}
    several = [d for d in failed if len(tasks[d.task_id].solution) >= 2]
    assert len(several) >= 5
    for d in several:
        gold = tasks[d.task_id].solution
        replay = next(r for r in d.replays if r.intervention == "gold_retrieval")
        # its own look-ups (the last first) are kept, the missing first one put after them
        steps = replay.trajectory.steps[: replay.prefix_steps]
        made = [ToolCall(tool=s.tool or "", arguments=s.arguments or {}) for s in steps]
        assert made == [*reversed(gold[1:]), gold[0]]


@pytest.mark.parametrize("workflow", ["react", "function_calling"])
def test_a_misspelt_name_with_a_wrong_value_is_a_retrieval_failure(
    tmp_path: Path, workflow: str
) -> None:
    run_dir = _run(tmp_path, f"wrongvalue/{workflow}", "scholar", "scholar", workflow)
    results = list(ResultsFile(run_dir / RESULTS))
    assert all(t.steps[0].cause == "bad_arguments" for t in results)
    diagnose_sync(run_dir)
    failed = _failed(run_dir)
    assert len(failed) >= 8
    assert {d.cause for d in failed} == {Cause.retrieval}
    for d in failed:
        mend = next(r for r in d.replays if r.intervention == "clean_interface")
        call = mend.trajectory.steps[0]
        # the name mended, the model's wrong value kept
        assert WRONG_VALUE in (call.arguments or {}).values()


def test_a_coin_flip_model_is_unstable_and_a_second_diagnose_asks_nothing(tmp_path: Path) -> None:
    run_dir = _run(tmp_path, "coinflip/a", "scholar", "scholar", temperature=0.7)
    diagnose_sync(run_dir)
    failed = _failed(run_dir)
    assert len(failed) >= 10
    unstable = [d for d in failed if d.cause is Cause.unstable]
    assert len(unstable) >= 0.9 * len(failed), [d.cause for d in failed]
    for d in failed:
        for name, o in d.outcomes.items():
            if o.applied:  # k = 3 samples of the intervention and of its control, rates kept
                assert o.samples == 3 and o.rate is not None and o.control_rate is not None
                replays = [r for r in d.replays if r.intervention == name and not r.control]
                assert sorted(r.sample for r in replays) == [0, 1, 2]
        assert sum(r.control for r in d.replays) == 3  # one control: the unchanged prefix
    # samples are keyed in the cache apart and alike on every diagnose: a second asks nothing
    before = CoinFlip.generated
    result = CliRunner().invoke(app, ["diagnose", str(run_dir), "--fresh"])
    assert result.exit_code == 0, result.output
    assert CoinFlip.generated == before
    assert "0 sent to the model" in result.output
    again = {(d.task_id, d.cause) for d in read_diagnoses(run_dir)}
    assert again == {(d.task_id, d.cause) for d in failed} | {
        (d.task_id, d.cause) for d in read_diagnoses(run_dir) if d.correct
    }


def test_at_temperature_zero_a_control_that_answers_right_makes_it_unstable(
    tmp_path: Path,
) -> None:
    """A failure that does not reproduce from the unchanged prefix (a server that answers
    differently to the same request) has no cause."""
    run_dir = _run(tmp_path, "coinflip/b", "scholar", "scholar")
    diagnose_sync(run_dir)
    failed = _failed(run_dir)
    assert len(failed) >= 5
    for d in failed:
        # the reproductions (the model asked again what it was last asked) aside, one
        # control, asked again when the intervention looked like a fix (issue 63)
        controls = [r for r in d.replays if r.control and r.intervention != "reproduction"]
        assert {r.sample for r in controls} <= {0, 1}
        if any(r.correct for r in controls):
            assert d.cause is Cause.unstable


# -- evidence that overflows the context ------------------------------------------------------


class Reader(ViewModel):
    """Searches once for the question's first words, then answers the gold answer once it is
    in view (token-aligned), else says it does not know."""

    prefix = "reader"

    def __init__(self, variant: str = "", task: Any = None, env: Any = None, wf: Any = None):
        super().__init__(variant, task, env, wf)
        # "ctx1600": a model whose own window is 1,600 tokens (the embedded models' is 8,192)
        self.capabilities = Capabilities(cacheable=False, context_window=int(variant[3:]))

    def plan(self, request: GenerateRequest, view: str) -> GoldPlan:
        tokens = normalize_answer(view).split()
        if any(contains_tokens(tokens, normalize_answer(a).split()) for a in self.task.answers):
            return GoldPlan([], self.task.answers[0])
        if _steps_taken(request):
            return GoldPlan([], NO_IDEA)
        return GoldPlan([self.decoy()], NO_IDEA)


def _answer_returned(env: Any, task: Any) -> bool:
    observations = " ".join(env.call_sync(c.tool, c.arguments).observation for c in task.solution)
    tokens = normalize_answer(observations).split()
    return any(contains_tokens(tokens, normalize_answer(a).split()) for a in task.answers)


registry.register_model_provider("reader")(lambda name, run_dir=None, **_: Reader(name))


@pytest.mark.parametrize("context", [1600, 2000])
def test_evidence_that_overflows_the_context_is_never_beyond_reach(
    tmp_path: Path, context: int
) -> None:
    run_dir = _run(tmp_path, f"reader/ctx{context}", "crag", "crag-kg", per_family=3)
    diagnose_sync(run_dir)
    environment = build_env("crag", {"size": "tiny"})
    tasks = {t.id: t for t in read_tasks(run_dir / TASKS)}
    # a task whose gold results show its answer (else no view ever holds it)
    failed = [d for d in _failed(run_dir) if _answer_returned(environment, tasks[d.task_id])]
    assert len(failed) >= 10
    causes = {d.cause for d in failed}
    assert Cause.beyond_reach not in causes, causes
    assert causes <= {Cause.retrieval, Cause.grounding, Cause.harness_limit}
    for d in failed:
        evidence = d.outcomes.get("evidence_in_hand")
        if evidence is not None and evidence.undecided:
            assert d.cause is Cause.harness_limit
            assert evidence.why is not None
    # the overflow happened: an intervention's evidence was cut out of view, and said so
    # (since issue 63 gold retrieval checks its own results too, so it may say so first)
    assert any("cut" in (o.why or "") for d in failed for o in d.outcomes.values())


@pytest.mark.parametrize("context", [1600, 2000, 3000])
def test_a_replayed_gold_call_is_sized_as_the_live_call_was(context: int) -> None:
    """The oracle's live episode and a replay given its gold calls render the same steps:
    a replayed observation is cut to the room the live one had, not more (issue 46: 8,470
    characters live, 8,579 in the replay, and the replay overflowed)."""
    from raleval.tasks.catalog import load_tasks

    env = build_env("crag", {"size": "tiny"})
    tasks = [t for t in load_tasks("crag-kg", env, "crag", 6, 0) if len(t.solution) >= 1]
    wf = registry.workflows.get("react").configure({"shots": 0, "max_context_tokens": context})
    agent = AgentSpec(workflow="react", model="scripted/oracle", env="crag")
    cut = 0
    for task in tasks:
        oracle = registry.models.get("scripted")("oracle")
        live = asyncio.run(run_episode(task, oracle, env, wf, agent))
        k = len(task.solution)
        if live.termination.value == "context_limit" and len(live.steps) < k:
            continue
        prefix, _ = evidence_prefix(task)
        replay = asyncio.run(run_episode(task, oracle, env, wf, agent, prefix=prefix))
        live_obs = [s.observation for s in live.steps[:k]]
        assert [s.observation for s in replay.steps[:k]] == live_obs, task.id
        cut += any("truncated" in (o or "") for o in live_obs)
        if live.llm_calls[k:]:  # the live model had a turn after the calls: so has the replay
            assert replay.llm_calls
    assert cut >= 2  # the budget was tight enough to cut observations


class SmallLooper(Looper):
    """A looper whose own window is small ("w1600": 1,600 tokens): replaying with it a run of
    a model with a larger window, the recorded observations fill its context."""

    prefix = "smalllooper"

    def __init__(self, variant: str = "", task: Any = None, env: Any = None, wf: Any = None):
        super().__init__(variant, task, env, wf)
        self.capabilities = Capabilities(cacheable=False, context_window=int(variant[1:]))


registry.register_model_provider("smalllooper")(lambda name, run_dir=None, **_: SmallLooper(name))


def test_a_prefix_that_fills_the_context_is_cut_until_the_model_gets_a_turn(
    tmp_path: Path,
) -> None:
    """``diagnose --model`` with a smaller window than the run's: the agent's recorded steps
    fill the context before the model is asked; the oldest go until it is asked, and what
    the context still stops is harness_limit, never a cause."""
    run_dir = _run(tmp_path, "looper/big", "crag", "crag-kg", per_family=3)
    diagnose_sync(run_dir, model="smalllooper/w1600")
    failed = _failed(run_dir)
    assert len(failed) >= 8
    assert Cause.beyond_reach not in {d.cause for d in failed}
    cut = 0
    for d in failed:
        for name in d.outcomes:
            runs = [r for r in d.replays if r.intervention == name and not r.control]
            full = [r for r in runs if not r.trajectory.llm_calls]
            if not full or name == "evidence_in_hand":
                continue
            cut += 1
            # one step fewer each time, until the model was asked or one step was left
            sizes = [r.prefix_steps for r in runs]
            assert sizes == sorted(sizes, reverse=True) and len(set(sizes)) == len(sizes)
            assert runs[-1].trajectory.llm_calls or runs[-1].prefix_steps == 1
            if d.outcomes[name].undecided:
                assert d.cause is Cause.harness_limit
    assert cut >= 1
