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
