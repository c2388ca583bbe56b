"""``--max-connections auto``: a concurrency limit that finds what an endpoint serves.

The limit is additive increase, multiplicative decrease (AIMD, as TCP's congestion window,
RFC 5681): a window of successful requests at the current limit, while the run has had work
for every slot, raises it by one; an overload answer (HTTP 429 or 503) halves it, once per
overload (the requests that were already in flight when it was cut do not cut it again).
``Retry-After`` on an overload holds every new request until that time. The level at which the
endpoint refused is remembered: the limit grows back to one below it and stays, then probes one
above after :data:`PROBE_AFTER_WINDOWS` clean windows (an endpoint can gain capacity).

The refused level is the number in flight when the refused request was sent, lowered by the
rest of its burst. Requests to one endpoint travel on separate connections and the endpoint
does not see them in the order the client sent them, so the first refusal the client reads may
be the request it sent sixth of eight to a server that holds four, which alone would put the
level at six (a run once settled at 5 against such a server). Each further refusal among the
requests sent before the cut bounds it again: of the ``n`` the client had in flight around the
first (when it was sent or when its refusal was read, whichever is more), ``k`` refused means
the endpoint held at most ``n - k``; eight in flight with four refused means it held four.
Neither bound alone is enough (a request sent before the cut may reach the endpoint only after
the burst, and is then not refused). A further refusal never lowers it below the limit the
decrease already chose, and only a probe that holds raises it.

A probe that is refused goes back to the remembered level without halving and doubles the wait
for the next, and :data:`PROBE_HOLD_WINDOWS` full windows at the probe's level with no refusal
make it the new level. One window is not enough: the client counts a request in flight until
its answer is read, so under CPU load the endpoint may have answered one of them before the
last was sent and never had the probe's level at once (a probe at 5 was once kept against a
server that refuses a fifth); each further window at that level is another chance for it to
refuse.

Inspect AI's adaptive connections work alike (start at 20, grow while the provider keeps up,
back off on rate-limit retries, and the samples in flight track the limit); here it starts
at :data:`AUTO_START` and the episodes in flight follow it too (:func:`episode_room`).

Every change of the limit or of the remembered level is logged (logger
``raleval.concurrency``) and appended as one JSON line to the run directory's
``concurrency.jsonl``, so a run records the level it chose and why it stopped growing.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from raleval.config import RunConfig
from raleval.scheduling import outside_turn

AUTO_START = 8  # the default --max-connections
AUTO_MAX = 64
DECREASE = 0.5  # multiplicative decrease on an overload
PROBE_AFTER_WINDOWS = 8  # clean windows at the remembered level before probing above it
MAX_PROBE_AFTER_WINDOWS = 256  # each refused probe doubles the wait, up to this
PROBE_HOLD_WINDOWS = 3  # full windows, none refused, at a probe's level to make it the level
OVERLOAD_STATUSES = frozenset({429, 503})
LOG_NAME = "concurrency.jsonl"

logger = logging.getLogger("raleval.concurrency")


class RequestSlot:
    """One request's place under the limit; the request says how it went."""

    def __init__(self, limit: AdaptiveLimit) -> None:
        self._limit = limit
        self._era = limit.era
        self._level = limit.in_flight  # requests in flight with this one
        self.outcome: str | None = None

    def succeeded(self) -> None:
        self.outcome = "ok"

    def overloaded(self, status: int, retry_after_s: float | None = None) -> None:
        """The endpoint refused this request for load (``status`` 429 or 503)."""
        self.outcome = str(status)
        self._limit._overload(self._era, self._level, status, retry_after_s)


class AdaptiveLimit:
    """An AIMD limit on requests in flight to one endpoint, shared by one event loop's
    episodes; :meth:`request` takes a slot, :func:`episode_room` admits an episode."""

    def __init__(
        self,
        start: int = AUTO_START,
        maximum: int = AUTO_MAX,
        minimum: int = 1,
        record: Path | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not 1 <= minimum <= maximum:
            raise ValueError(f"need 1 <= minimum <= maximum, got {minimum}, {maximum}")
        self.minimum, self.maximum = minimum, maximum
        self.limit = float(min(max(start, minimum), maximum))
        self.in_flight = 0
        self.episodes = 0
        self.era = 0  # bumped by each decrease: older requests' overloads do not count again
        self.ceiling: int | None = None  # one below the level the endpoint refused at
        self.overloads = 0
        # the burst the last cut answered: (its era, requests in flight at it, refusals so far)
        self._burst: tuple[int, int, int] | None = None
        self.peak = int(self.limit)
        self._successes = 0  # in this window
        self._busy = False  # every slot was taken during this window (episodes or requests)
        self._full = False  # ... by requests in flight at once: the endpoint served them all
        self._clean_windows = 0
        self._held_windows = 0  # full windows at a probe's level since it began, none refused
        self._probe_after = PROBE_AFTER_WINDOWS
        self._hold_until = 0.0
        self._clock = clock
        self._start = clock()
        self._record = record
        self._changed: asyncio.Condition | None = None
        self._log("start")

    @property
    def level(self) -> int:
        """Requests (and episodes) allowed in flight now."""
        return int(self.limit)

    @property
    def settled(self) -> int:
        """The level it holds: the current one, except during a probe above the level the
        endpoint last refused at."""
        return self.level if self.ceiling is None else min(self.level, self.ceiling)

    def _condition(self) -> asyncio.Condition:
        if self._changed is None:  # made inside the loop that uses it
            self._changed = asyncio.Condition()
        return self._changed

    async def _notify(self) -> None:
        cond = self._condition()
        async with cond:
            cond.notify_all()

    @contextlib.asynccontextmanager
    async def request(self) -> AsyncIterator[RequestSlot]:
        """A slot for one request: waits while the limit is full or ``Retry-After`` holds."""
        cond = self._condition()
        async with cond:
            while True:
                hold = self._hold_until - self._clock()
                if hold > 0:
                    with contextlib.suppress(asyncio.TimeoutError):
                        await asyncio.wait_for(cond.wait(), hold)
                    continue
                if self.in_flight < self.level:
                    break
                self._busy = True
                await cond.wait()
            self.in_flight += 1
            if self.in_flight >= self.level:
                self._busy = self._full = True
        slot = RequestSlot(self)
        try:
            yield slot
        finally:
            self.in_flight -= 1
            if slot.outcome == "ok":
                self._success()
            await self._notify()

    async def admit_episode(self) -> None:
        """Wait until fewer episodes than the limit are running, then count this one."""
        cond = self._condition()
        async with cond:
            while self.episodes >= self.level:
                self._busy = True
                await cond.wait()
            self.episodes += 1
            if self.episodes >= self.level:
                self._busy = True  # the run has work for every slot

    async def end_episode(self) -> None:
        self.episodes -= 1
        await self._notify()

    def _success(self) -> None:
        self._successes += 1
        if self._successes < self.level:
            return
        busy, full = self._busy, self._full
        self._successes, self._busy, self._full = 0, False, False
        if not busy:
            return  # the run did not use every slot: nothing says the endpoint takes more
        if self.ceiling is None:
            self._set(self.limit + 1, "grow")
            return
        if self.level > self.ceiling:
            if not full:
                return  # the probe's level was never in flight at once: no answer yet
            self._held_windows += 1
            if self._held_windows < PROBE_HOLD_WINDOWS:
                return
            # the endpoint served the probe's level at once, window after window, refusing none
            self.ceiling, self._probe_after, self._clean_windows, self._held_windows = (
                self.level,
                PROBE_AFTER_WINDOWS,
                0,
                0,
            )
            self._log("probe held")
            return
        if self.level < self.ceiling:
            self._set(self.limit + 1, "grow")
            return
        self._clean_windows += 1
        if self._clean_windows >= self._probe_after:
            self._clean_windows = 0
            self._set(self.level + 1, "probe")

    def _overload(self, era: int, level: int, status: int, retry_after_s: float | None) -> None:
        self.overloads += 1
        if retry_after_s:
            self._hold_until = max(self._hold_until, self._clock() + retry_after_s)
        if era != self.era:
            self._refused_again(era)  # already answered by a cut: it only tells the level
            return
        self._successes, self._busy, self._full, self._clean_windows = 0, False, False, 0
        self._held_windows = 0
        # in flight around this request: when it was sent, or now (it is still counted)
        seen = max(level, self.in_flight, 1)
        self._burst = (era, seen, 1)
        if self.ceiling is not None and self.level > self.ceiling and seen > self.ceiling:
            # a probe refused, capacity unchanged: back to it, the next probe waits twice as long
            self._probe_after = min(2 * self._probe_after, MAX_PROBE_AFTER_WINDOWS)
            self._set(self.ceiling, f"probe refused (HTTP {status})")
        else:
            refused_at = max(level - 1, self.minimum)  # only a probe held raises the ceiling
            self.ceiling = refused_at if self.ceiling is None else min(self.ceiling, refused_at)
            self._set(math.floor(self.limit * DECREASE), f"HTTP {status}")
        self.era += 1

    def _refused_again(self, era: int) -> None:
        """Another refusal of a request sent before the last cut: of the ``n`` the client had
        in flight then, ``k`` refused means the endpoint held at most ``n - k``."""
        if self._burst is None or self._burst[0] != era or self.ceiling is None:
            return
        _, n, k = self._burst
        k += 1
        self._burst = (era, n, k)
        held = max(n - k, self.level, self.minimum)
        if held < self.ceiling:
            logger.info("max-connections auto: refused level %d -> %d", self.ceiling + 1, held + 1)
            self.ceiling = held
            self._log("refused again in the burst")

    def _set(self, value: float, why: str) -> None:
        before = self.level
        self.limit = float(min(max(value, self.minimum), self.maximum))
        self.peak = max(self.peak, self.level)
        if self.level != before:
            self._log(why, before)

    def _log(self, why: str, before: int | None = None) -> None:
        entry: dict[str, Any] = {
            "t_s": round(self._clock() - self._start, 3),
            "limit": self.level,
            "settled": self.settled,
            "ceiling": self.ceiling,
            "why": why,
            "in_flight": self.in_flight,
        }
        if before is not None:
            logger.info("max-connections auto: %d -> %d (%s)", before, self.level, why)
        if self._record is not None:
            # a record that cannot be written is no result
            with contextlib.suppress(OSError), self._record.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(entry) + "\n")

    def describe(self) -> str:
        """One line for the end of a run."""
        return (
            f"max-connections auto: settled at {self.settled} (peak {self.peak}, "
            f"{self.overloads} overload answers)"
        )


def adaptive_limit(
    config: RunConfig, model: Any, ceiling: int, run_dir: Path
) -> AdaptiveLimit | None:
    """The run's adaptive limit when ``config.max_connections`` is ``auto`` (None otherwise),
    between 1 and ``ceiling`` episodes, given to ``model`` and recorded in ``run_dir``."""
    if config.max_connections != "auto":
        return None
    limit = AdaptiveLimit(
        start=min(AUTO_START, ceiling), maximum=ceiling, record=run_dir / LOG_NAME
    )
    if not model.use_adaptive_limit(limit):
        logger.info("max-connections auto: %s signals no overload; %d", model.name, limit.level)
    return limit


@contextlib.asynccontextmanager
async def episode_room(limit: AdaptiveLimit | None) -> AsyncIterator[None]:
    """Run the body (one episode) once fewer episodes than ``limit`` run (waiting outside the
    episode's turn); without a limit, at once."""
    if limit is None:
        yield
        return
    await outside_turn(limit.admit_episode())
    try:
        yield
    finally:
        await limit.end_episode()


def settled(run_dir: Path) -> dict[str, Any] | None:
    """The last level ``concurrency.jsonl`` in ``run_dir`` records, if the run adapted."""
    path = run_dir / LOG_NAME
    if not path.exists():
        return None
    last = None
    for line in path.read_text(encoding="utf-8").splitlines():
        with contextlib.suppress(ValueError):
            last = json.loads(line)
    return last if isinstance(last, dict) else None
