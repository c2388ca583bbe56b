"""Seeded fault injection for environments and models, and the retries a real system applies.

``FaultyEnvironment`` makes tool calls fail at a seeded rate (timeouts, HTTP 5xx, 429 with
Retry-After, truncated or malformed payloads, slow responses); ``RetryingEnvironment`` retries
the transient ones with tenacity (exponential back-off with jitter, Retry-After honoured).
``FaultyModel`` and ``RetryingModel`` do the same for model calls (errors, empty, truncated and
slow output). What retries cannot fix is recorded as a tool fault or a model error, which the
taxonomy labels ME with its cause. Decisions depend only on (seed, task, call number), so a
run is reproducible and a test knows which episodes must end in ME.
"""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass, field
from typing import Any

from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential_jitter,
)

from raleval.model import GenerateRequest, Generation, ModelError, ModelWrapper
from raleval.records import OutcomeKind
from raleval.scheduling import outside_turn

TOOL_FAULTS = ("timeout", "http_500", "rate_limited", "truncated", "malformed", "slow")
TRANSIENT_TOOL = {"timeout", "http_500", "rate_limited"}
LLM_FAULTS = ("error", "empty", "truncated", "slow")


def draw(seed: int, *key: Any) -> float:
    """A uniform number in [0, 1) fixed by ``seed`` and ``key``."""
    digest = hashlib.sha256(repr((seed, *key)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


@dataclass
class FaultLog:
    """What was injected, for tests and reports: (task id, call number, attempt) -> kind."""

    injected: dict[tuple[str, int, int], str] = field(default_factory=dict)
    exhausted: set[str] = field(default_factory=set)  # task ids whose retries ran out


class _TransientFault(Exception):
    def __init__(self, kind: str, retry_after: float | None = None) -> None:
        super().__init__(kind)
        self.kind, self.retry_after = kind, retry_after


def _wait(backoff: Any) -> Any:
    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        after = getattr(exc, "retry_after", None)
        return after if after is not None else backoff(state)

    return wait


class FaultyEnvironment:
    """Wraps an environment (session) and injects tool faults at ``rate``.

    ``retries`` transient faults are retried per call; persistent faults and exhausted retries
    come back as ``tool_fault`` results. Non-transient faults (truncated, malformed payloads)
    are returned as they would arrive: the call "succeeds" with damaged data.
    """

    def __init__(
        self,
        env: Any,
        rate: float,
        seed: int = 0,
        retries: int = 2,
        log: FaultLog | None = None,
        task_id: str = "",
        backoff_s: float = 0.001,
        slow_s: float = 0.002,
        persist: float = 0.5,
    ) -> None:
        self._env, self.rate, self.seed, self.retries = env, rate, seed, retries
        self.persist = persist
        self.log = log if log is not None else FaultLog()
        self.task_id, self._calls = task_id, 0
        self._backoff = wait_exponential_jitter(initial=backoff_s, max=backoff_s * 8)
        self._slow_s = slow_s
        self.tools, self.name = env.tools, env.name

    def __getattr__(self, item: str) -> Any:
        return getattr(self._env, item)

    def session(self, task: Any = None) -> FaultyEnvironment:
        return FaultyEnvironment(
            self._env.session(task),
            self.rate,
            self.seed,
            self.retries,
            self.log,
            getattr(task, "id", ""),
            slow_s=self._slow_s,
            persist=self.persist,
        )

    def _fault(self, call: int, attempt: int) -> str | None:
        # A retry follows a fault; outages persist, so it fails again with ``persist``.
        threshold = self.rate if attempt == 0 else self.persist
        if draw(self.seed, "tool", self.task_id, call, attempt) >= threshold:
            return None
        kind = TOOL_FAULTS[int(draw(self.seed, "tool-kind", self.task_id, call) * 6)]
        self.log.injected[(self.task_id, call, attempt)] = kind
        return kind

    async def call(self, name: str, arguments: dict[str, Any]) -> Any:
        # an injected slow or retried call waits as a remote backend's would: outside the
        # episode's turn (raleval.scheduling)
        return await outside_turn(self._call(name, arguments))

    async def _call(self, name: str, arguments: dict[str, Any]) -> Any:
        call = self._calls
        self._calls += 1
        attempt = 0

        async def once() -> Any:
            nonlocal attempt
            kind = self._fault(call, attempt)
            attempt += 1
            if kind in TRANSIENT_TOOL:
                raise _TransientFault(kind, 0.0 if kind == "rate_limited" else None)
            if kind == "slow":
                await asyncio.sleep(self._slow_s)
            result = await self._env.call(name, arguments)
            if kind == "truncated" and result.kind is OutcomeKind.ok:
                result.observation = result.observation[: max(1, len(result.observation) // 3)]
            elif kind == "malformed" and result.kind is OutcomeKind.ok:
                result.observation = result.observation[::-1][:40] + " \\x00{]"
            return result

        try:
            async for attempt_ctx in AsyncRetrying(
                stop=stop_after_attempt(self.retries + 1),
                wait=_wait(self._backoff),
                retry=retry_if_exception(lambda e: isinstance(e, _TransientFault)),
                reraise=True,
            ):
                with attempt_ctx:
                    return await once()
        except _TransientFault as exc:
            from raleval.environment import ToolResult

            self.log.exhausted.add(self.task_id)
            return ToolResult(
                f"{name} failed: {exc.kind} (after {self.retries} retries)",
                OutcomeKind.tool_fault,
                f"{exc.kind}:retries_exhausted",
            )
        raise AssertionError("unreachable")

    def call_sync(self, name: str, arguments: dict[str, Any]) -> Any:
        return self._env.call_sync(name, arguments)


class FaultyModel(ModelWrapper):
    """Injects model faults at ``rate``; ``RetryingModel`` outside it retries the errors."""

    def __init__(
        self,
        model: Any,
        rate: float,
        seed: int = 0,
        log: FaultLog | None = None,
        task_id: str = "",
        slow_s: float = 0.002,
        persist: float = 0.5,
    ) -> None:
        super().__init__(model)
        self.rate, self.seed, self.persist = rate, seed, persist
        self.log = log if log is not None else FaultLog()
        self.task_id, self._calls, self._slow_s = task_id, 0, slow_s

    def for_episode(self, task: Any, env: Any, workflow: str) -> Any:
        inner = self._model.for_episode(task, env, workflow)
        return FaultyModel(
            inner, self.rate, self.seed, self.log, task.id, self._slow_s, self.persist
        )

    async def generate(self, request: GenerateRequest, attempt: int = 0) -> Generation:
        call = self._calls
        threshold = self.rate if attempt == 0 else self.persist  # outages persist
        if draw(self.seed, "llm", self.task_id, call, attempt) < threshold:
            kind = LLM_FAULTS[int(draw(self.seed, "llm-kind", self.task_id, call) * 4)]
            self.log.injected[(self.task_id, call, attempt)] = f"llm:{kind}"
            if kind == "error":
                raise ModelError("injected backend error", "injected_error")
            if kind == "empty":
                self._calls += 1
                return Generation(text="")
            gen = await self._model.generate(request)
            self._calls += 1
            if kind == "truncated":
                gen.text = gen.text[: len(gen.text) // 2]
            else:
                await asyncio.sleep(self._slow_s)
            return gen
        self._calls += 1
        return await self._model.generate(request)


class RetryingModel(ModelWrapper):
    """Retries transient model errors (tenacity, exponential back-off with jitter)."""

    TRANSIENT = frozenset(
        {
            "injected_error",
            "empty_response",
            "rate_limited",
            "timeout",
            "connection_error",
            "http_500",
            "http_502",
            "http_503",
            "http_504",
        }
    )

    def __init__(
        self, model: Any, retries: int = 2, backoff_s: float = 0.001, log: FaultLog | None = None
    ) -> None:
        super().__init__(model)
        self.retries, self.log = retries, log
        self._backoff = wait_exponential_jitter(initial=backoff_s, max=backoff_s * 8)

    async def generate(self, request: GenerateRequest) -> Generation:
        attempt = 0
        try:
            async for ctx in AsyncRetrying(
                stop=stop_after_attempt(self.retries + 1),
                wait=self._backoff,
                retry=retry_if_exception(
                    lambda e: isinstance(e, ModelError) and e.cause in self.TRANSIENT
                ),
                reraise=True,
            ):
                with ctx:
                    inner = self._model
                    if isinstance(inner, FaultyModel):
                        gen = await inner.generate(request, attempt)
                    else:
                        gen = await inner.generate(request)
                    if not gen.text.strip() and not gen.tool_calls:
                        # an empty reply is retried like an error, as serving stacks do
                        raise ModelError("empty response", "empty_response")
                    return gen
                attempt += 1
        except ModelError as exc:
            if exc.cause in self.TRANSIENT and self.log is not None:
                self.log.exhausted.add(getattr(self._model, "task_id", ""))
            if exc.cause in self.TRANSIENT:
                raise ModelError(
                    f"{exc} (after {self.retries} retries)", f"{exc.cause}:retries_exhausted"
                ) from exc
            raise
        raise AssertionError("unreachable")
