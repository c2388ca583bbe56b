"""Context budgets: observations are cut to fit with a visible marker, function calling counts
its tool schemas, and the budget follows the model's own context window."""

from __future__ import annotations

import asyncio
import json

from raleval import registry
from raleval.agents.scripted import OracleModel
from raleval.app.runner import run_episode
from raleval.model import Capabilities, GenerateRequest, Generation, ModelBase, ModelError
from raleval.records import AgentSpec, ToolCall
from raleval.tasks.catalog import load_tasks
from raleval.workflows.common import fit_observation

from .conftest import run_config


class _Chars:
    """Four characters a token, as the scripted models and the fallback count."""

    def count_tokens(self, text: str) -> int:
        return (len(text) + 3) // 4


def test_fit_observation_cuts_with_a_marker_that_counts_what_was_dropped():
    text = "x" * 1000
    assert fit_observation(_Chars(), text, 300) == text
    cut = fit_observation(_Chars(), text, 50)
    kept = cut.index(" [")
    assert cut == "x" * kept + f" [... truncated: {1000 - kept} more characters]"
    assert (len(cut) + 3) // 4 <= 50
    assert fit_observation(_Chars(), text, None) == text


class SmallWindowOracle(OracleModel):
    capabilities = Capabilities(cacheable=False, context_window=4096)

    def for_episode(self, task, env, workflow):
        bound = SmallWindowOracle(task, env, workflow, self.variant)
        return bound


def _price_tasks(env):
    tasks = load_tasks("crag-kg", env, "crag", 6, 0)
    return [
        t for t in tasks if any(c.tool == "finance_get_price_history" for c in t.solution or [])
    ]


def test_react_fits_a_years_prices_into_a_4096_token_window():
    env = registry.envs.get("crag")(size="tiny")
    tasks = _price_tasks(env)
    assert len(tasks) >= 3
    for name in ("react", "function_calling", "dfsdt", "planned"):
        workflow = registry.workflows.get(name)()
        agent = AgentSpec(workflow=name, model="scripted/small", env="crag")
        for task in tasks:
            traj = asyncio.run(run_episode(task, SmallWindowOracle(), env, workflow, agent))
            # no prompt the model's server would refuse: each one plus the reply fits
            assert traj.termination.value == "finished", (name, task.id, traj.termination_cause)
            assert max(c.prompt_tokens for c in traj.llm_calls) + 128 <= 4096, (name, task.id)
            prices = [s for s in traj.steps if s.tool == "finance_get_price_history"]
            # a date-keyed series is cut to its newest entries and stays JSON
            assert prices, (name, task.id)
            shown = json.loads(prices[0].observation)
            assert shown["truncated"].endswith("older entries cut"), (name, task.id)
            dates = [k for k in shown if k != "truncated"]
            assert dates == sorted(dates, reverse=True), (name, task.id)


def test_function_calling_counts_its_tool_schemas(tmp_path):
    # 38 CRAG schemas are far over 256 tokens; the system prompt and question are not
    _, results = run_config(
        tmp_path,
        env="crag",
        env_options={"size": "tiny"},
        workflow="function_calling",
        tasks="crag-simple",
        limit=1,
        workflow_options={"max_context_tokens": 256, "shots": 0},
    )
    [r] = results
    assert (r.termination.value, r.termination_cause) == ("context_limit", "token_budget")
    assert r.llm_calls == []


def test_domain_tools_offer_only_the_questions_domain(tmp_path):
    env = registry.envs.get("crag")(size="tiny", domain_tools="true")
    assert len(env.tools) == 38  # the environment itself keeps CRAG's 38
    tasks = load_tasks("crag-simple", env, "crag", 10, 0)
    finance = next(t for t in tasks if t.domain == "crag/finance")
    assert {t.name.split("_")[0] for t in env.session(finance).tools} == {"finance"}
    default = registry.envs.get("crag")(size="tiny")
    assert len(default.session(finance).tools) == 38
    summary, results = run_config(
        tmp_path,
        env="crag",
        env_options={"size": "tiny", "domain_tools": "true"},
        tasks="crag-simple",
        tasks_per_family=10,
        workflow_options={"shots": 0},
    )
    by_id = {r.task_id: r for r in results}
    prompt = by_id[finance.id].llm_calls[0].prompt
    assert "finance_get_ticker_by_name(" in prompt and "movie_get_movie_info(" not in prompt
    assert all(r.scores["f1"] == 1.0 for r in results)
    from raleval.store import read_header

    assert read_header(summary.run_dir).config["env_options"]["domain_tools"] == "true"


class LoopingServer(ModelBase):
    """Repeats one action with a long observation forever, as the embedded model did on a CRAG
    comparison, and refuses like llama.cpp any request that cannot fit its window with the
    reply and a chat template's tokens."""

    capabilities = Capabilities(cacheable=False, context_window=4096)

    def __init__(self, action: str) -> None:
        self.action, self.prompts = action, []

    async def generate(self, request: GenerateRequest) -> Generation:
        prompt = sum(self.count_tokens(m.content) for m in request.messages)
        self.prompts.append(prompt)
        if prompt + request.max_tokens + 64 > self.capabilities.context_window:
            raise ModelError(f"request ({prompt} tokens) exceeds the context size", "http_400")
        return Generation(text=f" Look again.\nAction: {self.action}")


def test_react_ends_at_its_window_before_a_server_must_refuse_a_prompt():
    env = registry.envs.get("crag")(size="tiny")
    task = _price_tasks(env)[0]
    call = next(c for c in task.solution if c.tool == "finance_get_price_history")
    model = LoopingServer(f'finance_get_price_history(ticker="{call.arguments["ticker"]}")')
    workflow = registry.workflows.get("react").configure({"max_steps": 50, "shots": 0})
    agent = AgentSpec(workflow="react", model="scripted/looping", env="crag")
    traj = asyncio.run(run_episode(task, model, env, workflow, agent))
    # before: the scratchpad crept past the window, the last request was refused (llm_error)
    assert (traj.termination.value, traj.termination_cause) == ("context_limit", "context_window")
    # the first price history takes what the window leaves (its newest entries), the loop's
    # second call gets the smallest room, and the third Thought no longer fits
    assert len(traj.steps) >= 2 and traj.llm_calls and not any(c.error for c in traj.llm_calls)
    assert max(model.prompts) + 128 + 64 <= 4096


class VerboseTemplateServer(ModelBase):
    """Calls one tool forever (natively), as the embedded Qwen2.5-0.5B did on CRAG, behind a
    chat template that lays the tools out at far more tokens than their JSON: the server counts
    ``overhead`` tokens above the harness's count of the messages and schemas. Like llama.cpp,
    a reply gets what the window leaves (cut, "length") and a full window is refused."""

    capabilities = Capabilities(cacheable=False, context_window=8192)

    def __init__(self, call: ToolCall, overhead: int) -> None:
        self.call, self.overhead, self.cut = call, overhead, 0

    async def generate(self, request: GenerateRequest) -> Generation:
        shown = "\n".join(m.content for m in request.messages) + json.dumps(request.tools)
        prompt = self.count_tokens(shown) + self.overhead
        window = self.capabilities.context_window
        if prompt >= window:
            raise ModelError(f"request ({prompt} tokens) exceeds the context size", "http_400")
        text = json.dumps({"name": self.call.tool, "arguments": self.call.arguments})
        if prompt + request.max_tokens > window:  # the window ends the reply mid-call
            self.cut += 1
            room = window - prompt
            return Generation(
                text=text[: 4 * room], prompt_tokens=prompt, completion_tokens=room,
                finish_reason="length",
            )  # fmt: skip
        return Generation(
            text="", tool_calls=[self.call], prompt_tokens=prompt, completion_tokens=20,
            finish_reason="tool_calls",
        )  # fmt: skip


def test_a_server_counting_more_than_the_harness_ends_the_episode_at_the_window_not_on_a_cut():
    """The third study: function calling with Qwen2.5-0.5B on CRAG at 8,000 tokens sent a
    request llama.cpp counted 8,184 tokens of its 8,192 (the chat template lays CRAG's tools
    out at more tokens than the harness counted), got an 8-token reply cut mid-call, and took
    it as the answer. The context check now learns, from the server's count of each request
    it let through, how far it counts short, so the episode ends at its window instead."""

    env = registry.envs.get("crag")(size="tiny")
    task = _price_tasks(env)[0]
    call = next(c for c in task.solution if c.tool == "finance_get_price_history")
    loose = {
        "function_calling": {"max_steps": 100},
        "dfsdt": {"dfsdt_query_budget": 1000, "dfsdt_max_depth": 100},
    }
    for name, options in loose.items():
        model = VerboseTemplateServer(ToolCall(tool=call.tool, arguments=call.arguments), 400)
        workflow = registry.workflows.get(name).configure({**options, "shots": 0})
        agent = AgentSpec(workflow=name, model="scripted/verbose-template", env="crag")
        traj = asyncio.run(run_episode(task, model, env, workflow, agent))
        assert model.cut == 0, (name, [s.arguments for s in traj.steps][-2:])
        assert traj.answer is None, (name, traj.answer)
        assert (traj.termination.value, traj.termination_cause) == (
            "context_limit", "context_window",
        ), name  # fmt: skip
        assert not any(c.error for c in traj.llm_calls), name


class ReadsThenAnswers(VerboseTemplateServer):
    """VerboseTemplateServer's first call, then Finish with an answer (in ``workflow``'s Finish
    arguments): a model that reads the (large) result of its one call before answering."""

    def __init__(self, call: ToolCall, overhead: int, workflow: str) -> None:
        super().__init__(call, overhead)
        self.workflow = workflow

    async def generate(self, request: GenerateRequest) -> Generation:
        gen = await super().generate(request)
        if not any(m.role == "tool" for m in request.messages) or not gen.tool_calls:
            return gen
        answer = {"answer": "42"}
        if self.workflow == "dfsdt":
            answer = {"return_type": "give_answer", "final_answer": "42"}
        return Generation(
            text="", tool_calls=[ToolCall(tool="Finish", arguments=answer)],
            prompt_tokens=gen.prompt_tokens, completion_tokens=10, finish_reason="tool_calls",
        )  # fmt: skip


def test_a_result_that_fills_the_window_leaves_the_model_its_turn_to_read_it():
    """The third study, function calling with Qwen2.5-1.5B on CRAG: a price history sized to
    the room the fixed template allowance left filled the window that the context check, which
    had measured the server counting 300 tokens more, then found full. The episode ended at its
    window after one call, with no answer, the result never read. The room now takes the
    measured tokens off as well: the model reads the result and answers."""
    env = registry.envs.get("crag")(size="tiny")
    task = _price_tasks(env)[0]
    call = next(c for c in task.solution if c.tool == "finance_get_price_history")
    for name in ("function_calling", "dfsdt"):
        model = ReadsThenAnswers(ToolCall(tool=call.tool, arguments=call.arguments), 400, name)
        workflow = registry.workflows.get(name).configure({"shots": 0})
        agent = AgentSpec(workflow=name, model="scripted/reads-then-answers", env="crag")
        traj = asyncio.run(run_episode(task, model, env, workflow, agent))
        first = traj.steps[0]
        assert first.tool == call.tool and "truncated" in (first.observation or ""), name
        assert (traj.termination.value, traj.answer) == ("finished", "42"), (
            name, traj.termination, traj.termination_cause,
        )  # fmt: skip
        assert len(traj.llm_calls) == 2 and model.cut == 0, name
        assert not any(c.error for c in traj.llm_calls), name
