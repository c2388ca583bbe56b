"""``hf/<path>``: a local transformers model (no hub access: the path must exist locally).

R-Eval's Table 4 defaults: prompts longer than ``max_length`` (2048) tokens are cut in the
middle, greedy decoding, at most 128 new tokens, stop sequences applied to the output.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
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

INSTALL_HINT = 'pip install "raleval[torch]"'


class HFModel(ModelBase):
    """A causal LM loaded with transformers; generation runs in a worker thread."""

    def __init__(
        self, path: str, max_length: int = 2048, device: str = "cpu", dtype: str = "float32"
    ) -> None:
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as exc:
            raise ModelError(f"hf/<path> needs PyTorch: {INSTALL_HINT}", "missing_extra") from exc
        if not Path(path).exists():
            raise ValueError(f"hf/{path}: no such local model directory (nothing is downloaded)")
        self.name = f"hf/{path}"
        self.endpoint = self.name
        self.max_length = max_length
        self.capabilities = Capabilities(context_window=max_length, tool_calls="none")
        self._torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        self.model = AutoModelForCausalLM.from_pretrained(
            path, local_files_only=True, dtype=getattr(torch, dtype)
        ).to(device)
        self.model.eval()
        self._lock = threading.Lock()  # one generation at a time per loaded model

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def _prompt_ids(self, request: GenerateRequest) -> list[int]:
        messages = [{"role": m.role, "content": m.content} for m in request.messages]
        if getattr(self.tokenizer, "chat_template", None):
            ids = self.tokenizer.apply_chat_template(
                messages, add_generation_prompt=True, tokenize=True
            )
            if isinstance(ids, dict) or hasattr(ids, "keys"):
                ids = ids["input_ids"]
        else:
            ids = self.tokenizer("\n".join(m["content"] for m in messages))["input_ids"]
        budget = self.max_length - request.max_tokens
        if len(ids) > budget > 0:  # keep the head and the tail, as R-Eval's server does
            half = budget // 2
            ids = ids[:half] + ids[len(ids) - (budget - half) :]
        return list(ids)

    def _generate_sync(self, request: GenerateRequest) -> Generation:
        torch = self._torch
        ids = self._prompt_ids(request)
        with self._lock, torch.no_grad():
            inputs = torch.tensor([ids], device=self.model.device)
            out = self.model.generate(
                inputs,
                attention_mask=torch.ones_like(inputs),
                max_new_tokens=request.max_tokens,
                do_sample=False,
                pad_token_id=self.tokenizer.pad_token_id or self.tokenizer.eos_token_id,
            )
        new = out[0][len(ids) :].tolist()
        text = apply_stop(self.tokenizer.decode(new, skip_special_tokens=True), request.stop)
        # generate() stops at EOS or at max_new_tokens: a full budget means it was cut
        reason = "length" if len(new) >= request.max_tokens else "stop"
        gen = Generation(
            text=text, prompt_tokens=len(ids), completion_tokens=len(new), finish_reason=reason
        )
        return bound_reply(gen, request.max_tokens)

    async def generate(self, request: GenerateRequest) -> Generation:
        try:
            return await asyncio.to_thread(self._generate_sync, request)
        except Exception as exc:  # an inference crash is a model error, recorded as ME
            raise ModelError(f"{type(exc).__name__}: {exc}", "inference_error") from exc


@register_model_provider("hf")
def make_hf_model(name: str, run_dir: Any = None, **options: Any) -> HFModel:
    """``hf/<path>``: a local transformers checkpoint (pip install raleval[torch])."""
    return HFModel(name, **options)
