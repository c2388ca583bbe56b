"""How the episodes of one event loop share it: deadlines, and turns at the harness's work.

One process runs many episodes at once on one asyncio loop. Left to itself the loop serves
them round-robin: every ready episode advances one step per loop pass, so a burst of model
replies that arrive together (a server answering requests sent together) is finished together,
all at the end of the burst, and the next requests leave together: the burst never spreads out
and each episode waits for the whole burst's harness work (processor sharing).

:class:`Turns` serves them in arrival order instead: an episode does its harness work (prompt,
parsing, graph steps, scoring) in its turn, one episode at a time, and waits for its model and
its tools outside it, so that the first reply of a burst is handled first and its next request
leaves at once. Measured at 256 episodes in flight against a 200 ms server on this 2-core
machine (``benchmarks/throughput.py``): 0.73-0.76 of ideal throughput round-robin, 0.83-0.86 in
turns. The runner gives each episode its turn (:meth:`Turns.turn`) and wraps the model
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

    def __init__(self, lock: asyncio.Lock) -> None:
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


class Turns:
    """Turns at the harness's work for the episodes of one event loop, in arrival order."""

    def __init__(self) -> None:
        self._lock = asyncio.Lock()  # FIFO: a release wakes the longest waiter

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
