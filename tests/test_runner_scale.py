"""What an episode costs the event loop at scale: no thread hop per graph step."""

from __future__ import annotations

import asyncio
import functools
from concurrent.futures import ThreadPoolExecutor

import pytest

from raleval.app.runner import run
from raleval.config import RunConfig


class RecordingExecutor(ThreadPoolExecutor):
    """The loop's default executor, remembering what was sent to it."""

    def __init__(self) -> None:
        super().__init__(max_workers=2)
        self.names: list[str] = []

    def submit(self, fn, /, *args, **kwargs):  # type: ignore[override]
        inner, inner_args = fn, args
        while isinstance(inner, functools.partial):
            inner, inner_args = inner.func, (*inner.args, *inner_args)
        # asyncio.to_thread submits partial(ctx.run, func, ...): the function is its argument
        if getattr(inner, "__qualname__", "") == "Context.run" and inner_args:
            inner = inner_args[0]
        self.names.append(getattr(inner, "__qualname__", repr(inner)))
        return super().submit(fn, *args, **kwargs)


@pytest.mark.parametrize("workflow", ["react", "function_calling", "dfsdt", "planned"])
def test_graph_routing_never_runs_in_the_thread_pool(tmp_path, workflow):
    # LangGraph runs a plain-function edge through run_in_executor: at hundreds of episodes in
    # flight every step then queued for a pool thread and the GIL. Routing must be coroutines.
    executor = RecordingExecutor()
    config = RunConfig(
        env="scholar",
        env_options={"size": "tiny"},
        workflow=workflow,
        model="scripted/oracle",
        tasks="scholar-ks",
        tasks_per_family=4,
        limit=4,
        log_dir=tmp_path,
        cache=False,
    )

    async def main():
        asyncio.get_running_loop().set_default_executor(executor)
        return await run(config, display="none")

    summary = asyncio.run(main())
    assert summary.ran == 4 and summary.mean_f1 == 1.0
    # the results writer (an fsync never blocks the loop) and the executing oracle reading its
    # gold calls' results are the pool's only users
    assert set(executor.names) - {"Environment.call_sync"} == {"ResultsFile.append_many"}


def test_resume_reads_heads_that_agree_with_the_whole_results(tmp_path):
    # resuming holds a ResultHead per episode, not the trajectory: the same keys, attempts and
    # infrastructure failures as the full records, the last attempt per key winning
    from raleval.app.rundir import latest_heads
    from raleval.failures import failure_cause
    from raleval.records import AgentSpec, Step, Termination, Trajectory
    from raleval.store import RESULTS, ResultsFile

    def traj(tid, attempt, term, cause=None, failure=None, epoch=0):
        return Trajectory(
            task_id=tid, epoch=epoch, agent=AgentSpec(workflow="w", model="m", env="e"),
            termination=term, termination_cause=cause, failure=failure, attempt=attempt,
            started_at="2026-01-01T00:00:00Z", wall_time_s=1.0,
            steps=[Step(index=0, tool="search", arguments={"q": "x"}, observation="o" * 500)],
        )  # fmt: skip

    trajs = [
        traj("a", 0, Termination.llm_error, "connection_error"),
        traj("a", 1, Termination.finished),
        traj("b", 0, Termination.llm_error, "http_503"),
        traj("b", 0, Termination.finished, epoch=1),
        traj("c", 0, Termination.llm_error, "empty_response"),
        traj("d", 0, Termination.finished, failure="faults_exhausted"),
        traj("e", 0, Termination.harness_error, "KeyError: x"),
    ]
    ResultsFile(tmp_path / RESULTS).append_many(trajs)
    heads = {k: (h.attempt, failure_cause(h)) for k, h in latest_heads(tmp_path).items()}
    assert heads == {
        ("a", 0): (1, None),
        ("b", 0): (0, "http_503"),
        ("b", 1): (0, None),
        ("c", 0): (0, None),
        ("d", 0): (0, "faults_exhausted"),
        ("e", 0): (0, "harness_error"),
    }
