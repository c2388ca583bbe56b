"""How the episodes of one event loop share it: deadlines, and turns at the harness's work.

One process runs many episodes at once on one asyncio loop. Left to itself the loop serves
them round-robin: every ready episode advances one step per loop pass, so a burst of model
replies that arrive together (a server answering requests sent together) is finished together,
all at the end of the burst, and the next requests leave together: the burst never spreads out
and each episode waits for the whole burst's harness work (processor sharing).

:class:`Turns` serves them in arrival order instead: an episode does its harness work (prompt,
parsing, graph steps, scoring) in its turn and waits for its model and its tools outside it,
so that the first replies of a burst are handled first and their next requests leave at once.
A few episodes share the turn (:data:`AT_ONCE`), which keeps most of that order and the
loop's batching. Measured at 256 episodes in flight against a 200 ms server on a 2-core
machine (``benchmarks/throughput.py``, two worker processes, alternating runs): 0.65-0.77 of
ideal round-robin, 0.80-0.88 in turns.

The runner gives each episode its turn (:meth:`Turns.turn`) and wraps the model
(:class:`TurnModel`) so that model calls are awaited outside it; code that waits on anything
else inside an episode awaits through :func:`outside_turn`: asynchronous tools
(``Environment.call``: MCP, served environments), injected tool faults, PAL's sandbox. An
in-process tool runs synchronously in the turn. Code that waited without it would only hold
the others back, never deadlock: nothing an episode waits for needs another episode's turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import AsyncIterator, Awaitable
from typing import TypeVar

from raleval.model import GenerateRequest, Generation, ModelWrapper

T = TypeVar("T")

# Python 3.11+: a deadline on the running task; wait_for starts a task per call (3.10 has only
# wait_for).
_deadline = getattr(asyncio, "timeout", None)


async def within(awaitable: Awaitable[T], timeout: float) -> T:
    """``awaitable``'s result, or :class:`asyncio.TimeoutError` after ``timeout`` seconds."""
    if _deadline is None:
        return await asyncio.wait_for(awaitable, timeout)
    async with _deadline(timeout):
        return await awaitable


class _Hold:
    """One episode's claim on its loop's turn."""

    def __init__(self, lock: asyncio.Semaphore) -> None:
        self.lock = lock
        self.held = False

    async def take(self) -> None:
        # cancelled while waiting: not held, and the lock passes to the next in line
        await self.lock.acquire()
        self.held = True

    def give(self) -> None:
        if self.held:
            self.held = False
            self.lock.release()


_current: contextvars.ContextVar[_Hold | None] = contextvars.ContextVar("turn", default=None)


# Episodes in their turn at once. One at a time is strict arrival order, but each episode then
# runs its whole path (graph, HTTP client, scoring) alone and the loop does a pass per episode:
# with one process saturated that cost ~0.6-1 ms more CPU per episode (0.32-0.44 of ideal at
# 256 in flight against 0.50-0.52 without turns). A few at once keep most of the order and
# the batching: at 256 in flight, one process 0.52-0.56 of ideal, two worker processes
# 0.83-0.84 (8 at once: 0.42-0.50 and 0.85; 32: 0.49-0.58 and 0.75; 64: -, 0.71-0.75).
AT_ONCE = 16


class Turns:
    """Turns at the harness's work for the episodes of one event loop, in arrival order,
    ``at_once`` episodes at a time."""

    def __init__(self, at_once: int = AT_ONCE) -> None:
        # FIFO: a release wakes the longest waiter
        self._lock = asyncio.Semaphore(at_once)

    @contextlib.asynccontextmanager
    async def turn(self) -> AsyncIterator[None]:
        """Run the body (one episode) in turns: it holds the turn except while it waits
        through :func:`outside_turn`."""
        hold = _Hold(self._lock)
        await hold.take()
        token = _current.set(hold)
        try:
            yield
        finally:
            _current.reset(token)
            hold.give()


async def outside_turn(awaitable: Awaitable[T]) -> T:
    """Await ``awaitable`` (a model reply, a tool's answer, a subprocess) without holding the
    episode's turn, and take the turn back after it, behind the episodes already waiting.
    Outside an episode run in turns, simply awaits it."""
    hold = _current.get()
    if hold is None or not hold.held:
        return await awaitable
    hold.give()
    try:
        return await awaitable
    finally:
        # If the episode is cancelled while queueing here, it goes on (to record how it
        # ended) without the turn; give() at its end then releases nothing.
        await hold.take()


class TurnModel(ModelWrapper):
    """A model whose replies are awaited outside the episode's turn (with everything wrapped
    inside it: retries and their waits, the endpoint limit, the cache)."""

    async def generate(self, request: GenerateRequest) -> Generation:
        return await outside_turn(self._model.generate(request))
