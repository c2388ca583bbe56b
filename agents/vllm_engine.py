"""``vllm/<model>``: vLLM's offline engine for GPU machines (``pip install raleval[vllm]``).

Concurrent episodes are batched: requests that arrive within ``batch_window_s`` of each other
are sent to ``LLM.generate`` together, which is where vLLM's throughput comes from. Runs on GPU
machines only; on CPU CI it is import-tested (a missing vLLM gives the install hint).
"""

from __future__ import annotations

import asyncio
from typing import Any

from raleval.model import (
    Capabilities,
    GenerateRequest,
    Generation,
    ModelBase,
    ModelError,
    apply_stop,
    bound_reply,
)
from raleval.registry import register_model_provider

INSTALL_HINT = 'pip install "raleval[vllm]" (needs a CUDA GPU)'


class RequestBatcher:
    """Collects concurrent requests and runs them through ``run_batch`` in one call."""

    def __init__(self, run_batch: Any, window_s: float = 0.01, max_batch: int = 256) -> None:
        self._run_batch = run_batch
        self._window_s, self._max_batch = window_s, max_batch
        self._pending: list[tuple[GenerateRequest, asyncio.Future[Generation]]] = []
        self._flusher: asyncio.Task[None] | None = None

    async def submit(self, request: GenerateRequest) -> Generation:
        fut: asyncio.Future[Generation] = asyncio.get_running_loop().create_future()
        self._pending.append((request, fut))
        if len(self._pending) >= self._max_batch:
            await self._flush()
        elif self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush_later())
        return await fut

    async def _flush_later(self) -> None:
        await asyncio.sleep(self._window_s)
        await self._flush()

    async def _flush(self) -> None:
        batch, self._pending = self._pending, []
        if not batch:
            return
        try:
            results = await asyncio.to_thread(self._run_batch, [r for r, _ in batch])
        except Exception as exc:
            for _, fut in batch:
                if not fut.done():
                    fut.set_exception(ModelError(f"{type(exc).__name__}: {exc}", "inference_error"))
            return
        for (_, fut), gen in zip(batch, results, strict=True):
            if not fut.done():
                fut.set_result(gen)


class VLLMModel(ModelBase):
    def __init__(self, model: str, batch_window_s: float = 0.01, **engine_options: Any) -> None:
        try:
            from vllm import LLM, SamplingParams
        except ImportError as exc:
            raise ModelError(f"vllm/<model> needs vLLM: {INSTALL_HINT}", "missing_extra") from exc
        self.name = f"vllm/{model}"
        self.endpoint = self.name
        # the engine is given the messages only: tools and schemas are not passed to it
        self.capabilities = Capabilities(tool_calls="none")
        self._sampling = SamplingParams
        self.llm = LLM(model=model, **engine_options)
        self._batcher = RequestBatcher(self._run_batch, window_s=batch_window_s)

    def _run_batch(self, requests: list[GenerateRequest]) -> list[Generation]:
        conversations = [
            [{"role": m.role, "content": m.content} for m in r.messages] for r in requests
        ]
        # Requests in one batch may differ in decoding settings; vLLM takes one per prompt.
        params = [
            self._sampling(
                temperature=r.temperature, max_tokens=r.max_tokens, stop=list(r.stop) or None
            )
            for r in requests
        ]
        outputs = self.llm.chat(conversations, params, use_tqdm=False)
        gens = []
        for r, out in zip(requests, outputs, strict=True):
            completion = out.outputs[0]
            gen = Generation(
                text=apply_stop(completion.text, r.stop),
                prompt_tokens=len(out.prompt_token_ids or []),
                completion_tokens=len(completion.token_ids or []),
                finish_reason=completion.finish_reason,  # vLLM's: "stop" or "length"
            )
            gens.append(bound_reply(gen, r.max_tokens))  # max_tokens bounds it; this checks
        return gens

    async def generate(self, request: GenerateRequest) -> Generation:
        return await self._batcher.submit(request)


@register_model_provider("vllm")
def make_vllm_model(name: str, run_dir: Any = None, **options: Any) -> VLLMModel:
    """``vllm/<model>``: vLLM's offline engine, batching concurrent episodes (GPU)."""
    return VLLMModel(name, **options)
