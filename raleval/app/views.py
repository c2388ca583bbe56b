"""Which tasks an agent can answer from what a workflow shows it at a context window.

The executing oracle (``scripted/oracle``) answers only from observations as the workflow
rendered them (after the observation budget for the window) and declines otherwise, so a
task is *answerable in view* exactly when the oracle's episode at that window is right.
``raleval audit --context N`` reports the share per family; ``raleval tasks fit`` writes a
task set that leaves out the tasks its window cannot show.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

from raleval.records import AgentSpec, Task

DEFAULT_VIEW_WORKFLOW = "react"


def answerable_in_view(
    tasks: Iterable[Task],
    env: Any,
    context_tokens: int,
    workflow: str = DEFAULT_VIEW_WORKFLOW,
    env_name: str = "",
    seed: int = 0,
) -> dict[str, bool]:
    """task id -> whether the oracle, run through ``workflow`` with ``max_context_tokens`` of
    ``context_tokens`` (four characters a token, as the scripted models count), answers it
    right, with the demonstrations a run of ``seed`` shows. A task without a solution to
    execute counts as not shown."""
    answers = oracle_answers_in_view(tasks, env, context_tokens, workflow, env_name, seed)
    return {tid: correct for tid, (correct, _) in answers.items()}


def oracle_answers_in_view(
    tasks: Iterable[Task],
    env: Any,
    context_tokens: int,
    workflow: str = DEFAULT_VIEW_WORKFLOW,
    env_name: str = "",
    seed: int = 0,
) -> dict[str, tuple[bool, str | None]]:
    """task id -> (right, answer) of the executing oracle run through ``workflow`` at
    ``context_tokens`` (:func:`answerable_in_view`); its answer is
    :data:`raleval.agents.scripted.NOT_VISIBLE` where the view cut what it needs."""
    from raleval import registry
    from raleval.agents.scripted import OracleModel
    from raleval.analysis.scoring import score_trajectory
    from raleval.app.demonstrations import demonstration_tasks, solved_example
    from raleval.app.episodes import run_episode
    from raleval.config import RunConfig
    from raleval.tasks.testbeds import wrap_session

    task_list = list(tasks)
    # the workflow's own defaults and the run's demonstrations (they take prompt room too)
    wf = registry.workflows.get(workflow).configure({"max_context_tokens": context_tokens})
    run = RunConfig(env=env_name, workflow=workflow, model="scripted/oracle", seed=seed)
    demos = demonstration_tasks(run, env, task_list, wf.config.shots)
    wf = wf.with_config(
        demonstrations={
            family: [
                wf.render_example(solved_example(t, env), wrap_session(env, t, env)) for t in group
            ]
            for family, group in demos.items()
        }
    )
    agent = AgentSpec(workflow=workflow, model="scripted/oracle", env=env_name or "env")
    oracle = OracleModel()
    graph = wf.build(oracle, env)

    async def judge(task_list: list[Task]) -> dict[str, tuple[bool, str | None]]:
        out: dict[str, tuple[bool, str | None]] = {}
        for task in task_list:
            traj = await run_episode(task, oracle, env, wf, agent, graph=graph)
            score_trajectory(traj, task)
            out[task.id] = (traj.scores.get("correct", 0.0) >= 1.0, traj.answer)
        return out

    return _in_a_loop(judge(task_list))


def fit_pool(
    pool: list[Task],
    env: Any,
    context_tokens: int | None,
    workflow: str,
    env_name: str,
    seed: int,
) -> tuple[list[Task], dict[str, Any]]:
    """``pool`` without the tasks whose answer ``workflow`` cannot show at ``context_tokens``
    (``-W max_context_tokens``), and what was left out: an agent is never scored on what the
    harness hid from it. A task is left out when the executing oracle, run through this
    workflow at this window, declines because the values its answer reads were cut from the
    rendered observations; tasks without a gold solution stay."""
    if not context_tokens:
        return pool, {}
    from raleval.agents.scripted import NOT_VISIBLE

    checkable = [t for t in pool if t.solution]
    if not checkable:
        return pool, {}
    answers = oracle_answers_in_view(checkable, env, context_tokens, workflow, env_name, seed)
    hidden = {tid for tid, (_, answer) in answers.items() if answer == NOT_VISIBLE}
    kept = [t for t in pool if t.id not in hidden]
    return kept, {
        "context_tokens": context_tokens,
        "pool": len(pool),
        "kept": len(kept),
        "left_out": sorted(hidden),
    }


def _in_a_loop(coroutine: Any) -> Any:
    """Run ``coroutine`` to its end, also when called from inside a running event loop (a
    run planned by :func:`raleval.app.runner.run`): then in a thread of its own."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()
