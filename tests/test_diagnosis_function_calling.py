"""Function-calling replays, faithful and cache-stable (issue 46, item 7).

What diagnose does on its side (a prefix is the episode's own recorded steps, never rebuilt;
no random value enters a replay's cache key) is tested here together with what the
function-calling workflow must do with such a prefix. The workflow's part (a reply's calls in
one assistant turn, the ids the model gave, deterministic ids where a provider gives none,
a given step sized after its own assistant message) lives in ``workflows/function_calling.py``
and ``workflows/call_ids.py``. A gold call put in carries the text its workflow's own turn
would: none in function calling (its oracle writes none), so the room left for its result is
the live call's.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from raleval import registry
from raleval.analysis.diagnosis import evidence_prefix, read_diagnoses
from raleval.app.cli import app
from raleval.app.diagnose import diagnose_sync
from raleval.app.episodes import run_episode
from raleval.app.plan import build_env
from raleval.app.runner import run_sync
from raleval.config import RunConfig
from raleval.model import Capabilities, GenerateRequest, Generation, ModelBase
from raleval.records import AgentSpec, ToolCall
from raleval.text import contains_tokens, normalize_answer


def _asked(request: GenerateRequest) -> list[tuple[Any, ...]]:
    return [
        (m.role, m.content, [(c.tool, c.arguments) for c in m.tool_calls], m.tool_call_id)
        for m in request.messages
    ]


class AllAtOnce(ModelBase):
    """Makes every gold call of its task in one reply (parallel tool calls), then answers."""

    capabilities = Capabilities(cacheable=False)
    endpoint = "test"
    seen: list[GenerateRequest] = []  # noqa: RUF012 - the requests of every instance

    def __init__(self, task: Any = None) -> None:
        self.name, self.task = "allatonce/fc", task

    def for_episode(self, task: Any, env: Any, workflow: Any) -> AllAtOnce:
        return AllAtOnce(task)

    async def generate(self, request: GenerateRequest) -> Generation:
        AllAtOnce.seen.append(request)
        if not any(m.role == "tool" for m in request.messages):
            return Generation(text="", tool_calls=list(self.task.solution))
        return Generation(text="", tool_calls=[ToolCall(tool="Finish", arguments={"answer": "x"})])


def test_a_reply_with_two_calls_replays_as_one_assistant_turn_with_its_ids() -> None:
    from raleval.tasks.catalog import load_tasks

    env = build_env("crag", {"size": "tiny"})
    task = next(t for t in load_tasks("crag-comparison", env, "crag", 6, 0) if len(t.solution) == 2)
    wf = registry.workflows.get("function_calling").configure({"shots": 0, "parallel_calls": True})
    agent = AgentSpec(workflow="function_calling", model="allatonce/fc", env="crag")
    AllAtOnce.seen.clear()
    original = asyncio.run(run_episode(task, AllAtOnce(), env, wf, agent))
    assert len(original.steps) == 3 and len(AllAtOnce.seen) == 2
    second = _asked(AllAtOnce.seen[1])
    assert [m[0] for m in second].count("assistant") == 1  # live: one turn, two calls
    AllAtOnce.seen.clear()
    asyncio.run(run_episode(task, AllAtOnce(), env, wf, agent, prefix=original.steps[:2]))
    # the replay's first request is the episode's second, ids and turns as recorded
    assert _asked(AllAtOnce.seen[0]) == second


def test_a_replayed_gold_call_is_sized_as_the_live_call_was_in_function_calling() -> None:
    from raleval.tasks.catalog import load_tasks

    env = build_env("crag", {"size": "tiny"})
    tasks = load_tasks("crag-kg", env, "crag", 6, 0)
    wf = registry.workflows.get("function_calling").configure(
        {"shots": 0, "max_context_tokens": 4000}
    )
    agent = AgentSpec(workflow="function_calling", model="scripted/oracle", env="crag")
    cut = 0
    for task in tasks:
        oracle = registry.models.get("scripted")("oracle")
        live = asyncio.run(run_episode(task, oracle, env, wf, agent))
        k = len(task.solution)
        if len(live.steps) < k:
            continue
        prefix, _ = evidence_prefix(task)
        replay = asyncio.run(run_episode(task, oracle, env, wf, agent, prefix=prefix))
        live_obs = [s.observation for s in live.steps[:k]]
        assert [s.observation for s in replay.steps[:k]] == live_obs, task.id
        cut += any("truncated" in (o or "") for o in live_obs)
    assert cut >= 2


class CachedReader(ModelBase):
    """Cacheable: searches once for the question's first words, answers once the gold answer
    is in its view (function calling's tool results)."""

    capabilities = Capabilities(cacheable=True)
    endpoint = "test"
    generated = 0

    def __init__(self, task: Any = None, env: Any = None) -> None:
        self.name, self.task, self.env = "cachedreader/fc", task, env

    def for_episode(self, task: Any, env: Any, workflow: Any) -> CachedReader:
        return CachedReader(task, env)

    async def generate(self, request: GenerateRequest) -> Generation:
        CachedReader.generated += 1
        tools = [m.content for m in request.messages if m.role == "tool"]
        view = normalize_answer(" ".join(tools)).split()
        if any(contains_tokens(view, normalize_answer(a).split()) for a in self.task.answers):
            answer = ToolCall(tool="Finish", arguments={"answer": self.task.answers[0]})
            return Generation(text="", tool_calls=[answer])
        if tools:
            return Generation(text="", tool_calls=[ToolCall(tool="Finish", arguments={})])
        spec = next(t for t in self.env.tools if t.matching == "fuzzy")
        words = " ".join(self.task.question.split()[:3])
        return Generation(text="", tool_calls=[ToolCall(tool=spec.name, arguments={
            spec.param_names[0]: words})])  # fmt: skip


registry.register_model_provider("cachedreader")(lambda name, run_dir=None, **_: CachedReader())


def test_diagnose_fresh_twice_on_a_function_calling_run_asks_nothing_the_second_time(
    tmp_path: Path,
) -> None:
    config = RunConfig(
        env="scholar",
        env_options={"size": "tiny"},
        workflow="function_calling",
        model="cachedreader/fc",
        limit=8,
        log_dir=tmp_path,
    )
    run_dir = run_sync(config).run_dir
    first = diagnose_sync(run_dir)
    assert first.llm_calls > 0
    before = CachedReader.generated
    result = CliRunner().invoke(app, ["diagnose", str(run_dir), "--fresh"])
    assert result.exit_code == 0, result.output
    assert CachedReader.generated == before, result.output
    again = read_diagnoses(run_dir)
    assert sum(d.llm_calls for d in again) == sum(d.cache_hits for d in again) > 0
