"""A token budget (``-W max_episode_tokens``) checked before a run: what it counts, said in the
header, and a budget no episode could spend a first call of refused up front.

The harness (``raleval.workflows.common.EpisodeRecord``) sends a call only if the tokens the
episode has spent, the call's prompt (counted before sending) and a full ``max_tokens`` reply
fit the budget; so a budget below a workflow's fixed first request (system prompt, tool
schemas, demonstrations, the question's template) plus ``max_tokens`` would end every episode
before its first call. docs/running.md ("Token budgets") says why it counts what it counts.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from raleval.config import ConfigError, RunConfig
from raleval.model import GenerateRequest, Generation, ModelBase, ModelError
from raleval.records import AgentSpec, Task
from raleval.workflow import Workflow

# What the header says a budget counts (RunHeader.decoding["budget_counts"]).
BUDGET_COUNTS = (
    "prompt_tokens + completion_tokens as the server reports them, prompt tokens served from "
    "its prefix cache included (the uncached ones are recorded beside: "
    "uncached_prompt_tokens); a call is sent only if the tokens spent, its prompt counted "
    "before sending and max_tokens fit the budget"
)
# The same with episode_tokens_count "new" (docs/running.md, "Token budgets").
BUDGET_COUNTS_NEW = (
    "new prompt tokens + completion tokens: a request's prompt tokens past its common prefix "
    "with the episode's previous request (the first request's: past the workflow's fixed "
    "first request, with an empty question), counted by the harness before sending, which is "
    "what a server's prefix cache leaves to compute, and the server's completion tokens; a "
    "call is sent only if the tokens spent, its new tokens and max_tokens fit the budget"
)


def budget_counts(workflow: Workflow) -> str:
    """What ``workflow``'s token budget counts, as the run header says it."""
    return BUDGET_COUNTS_NEW if workflow.config.episode_tokens_count == "new" else BUDGET_COUNTS


class _FirstRequest(ModelBase):
    """A model that keeps the first request it is sent and ends the episode there."""

    name = "probe"

    def __init__(self) -> None:
        self.request: GenerateRequest | None = None

    async def generate(self, request: GenerateRequest) -> Generation:
        self.request = request
        raise ModelError("the first request is all a budget check needs", "probe")


async def _first_requests(
    workflow: Workflow, env: Any, tasks: list[Task]
) -> list[tuple[str, GenerateRequest]]:
    from raleval.app.episodes import run_episode

    out = []
    workflow = workflow.with_config(max_episode_tokens=None)  # the budget would stop it first
    for task in tasks:
        probe = _FirstRequest()
        agent = AgentSpec(workflow=workflow.name, model=probe.name, env="probe")
        # the workflow's first request for the task's family, with no question in it
        await run_episode(task.model_copy(update={"question": ""}), probe, env, workflow, agent)
        if probe.request is not None:
            out.append((task.family, probe.request))
    return out


def budget_counter(config: RunConfig) -> Any:
    """What counts a first request's tokens: an embedded model's own tokenizer (its llama.cpp
    server, started here once and kept for the run's episodes in this process), else ~4
    characters a token (a scripted model's own count; a lower bound for a remote model's,
    so a budget refused is one no first call fits)."""
    from raleval.agents.agent import ModelSpec, resolve_model

    if ModelSpec.parse(config.model).provider == "local":
        return resolve_model(config.model, dict(config.model_options))
    return ModelBase()


def first_request_tokens(
    workflow: Workflow, env: Any, tasks: list[Task], counter: Any
) -> dict[str, tuple[int, int]]:
    """Per task family, the tokens of the workflow's first request with an empty question
    (counted by ``counter``, as :func:`raleval.workflows.common.request_tokens` counts) and
    its ``max_tokens``: together, the least a budget must leave for an episode's first
    call."""
    from raleval.workflows.common import request_tokens

    one_each = list({t.family: t for t in tasks}.values())
    # its own event loop, in a thread: the caller may be inside one (raleval.app.runner.run)
    with ThreadPoolExecutor(1) as pool:
        found = pool.submit(asyncio.run, _first_requests(workflow, env, one_each)).result()
    return {
        family: (request_tokens(counter, r.messages, r.tools), r.max_tokens) for family, r in found
    }


def check_episode_budget(
    config: RunConfig, workflow: Workflow, env: Any, tasks: list[Task]
) -> Workflow:
    """Refuse a ``max_episode_tokens`` below what a first call of the workflow needs on some
    of the run's task families: one line naming both sizes. Counting new tokens, a first call
    needs its question's tokens and ``max_tokens``; the workflow is returned with each
    family's fixed first request counted (``fixed_prompt_tokens``), which it does not count."""
    budget = workflow.config.max_episode_tokens
    if budget is None:
        return workflow
    counter = budget_counter(config)
    needs = first_request_tokens(workflow, env, tasks, counter)
    if not needs:
        return workflow
    if workflow.config.episode_tokens_count == "new":
        reply = max(r for _, r in needs.values())
        if budget <= reply:
            raise ConfigError(
                f"-W max_episode_tokens={budget} leaves no room for a question: counting new "
                f"tokens, a first call needs its question's tokens plus max_tokens {reply:,}"
            )
        return workflow.with_config(fixed_prompt_tokens={f: p for f, (p, _) in needs.items()})
    family, (prompt, reply) = max(needs.items(), key=lambda kv: sum(kv[1]))
    if budget < prompt + reply:
        how = f"{counter.name}'s tokens" if counter.name != "model" else "~4 characters a token"
        raise ConfigError(
            f"-W max_episode_tokens={budget} is below what {workflow.name}'s first model call "
            f"needs on {env.name} ({family}): a {prompt:,}-token prompt (instructions, tool "
            f"schemas, demonstrations, question template; {how}) plus "
            f"max_tokens {reply:,} = {prompt + reply:,} tokens"
        )
    return workflow
