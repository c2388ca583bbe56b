"""An optional LLM judge for answers the deterministic rules cannot settle, as CRAG grades.

Never runs unless asked (``raleval score RUN --judge openai/gpt-4o-mini``). Every verdict goes
through the response cache, so re-scoring a run costs no new calls; with two judges the verdict
is their average, as CRAG averaged two graders.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from raleval.model import GenerateRequest, Message, ModelError

RUBRIC = """You grade one answer to a question against the ground truth. Rules:
1. The ground truth is always correct.
2. The answer is correct (score 1) only if it states the same fact as the ground truth; a
   concise summary or a harmless rewording is fine, numbers must match almost exactly (rounding
   of the last digit is fine), a set answer must list exactly the same members.
3. Hedged, self-contradictory or non-answers score 0, as does anything you are unsure about.
Reply with JSON only: {"explanation": "<one sentence>", "score": 0 or 1}"""

_LAST_OBJECT = re.compile(r"\{[^{}]*\}(?![\s\S]*\{)")


def parse_verdict(text: str) -> int | None:
    """The ``score`` of the last JSON object in a reply (0 or 1); ``None`` if unreadable."""
    m = _LAST_OBJECT.search(text or "")
    if m is None:
        return None
    try:
        score = json.loads(m.group(0)).get("score")
    except (json.JSONDecodeError, AttributeError):
        return None
    return score if score in (0, 1) and not isinstance(score, bool) else None


class LLMJudge:
    """Grades with one or more models (spec strings); unreadable replies count as 0."""

    def __init__(self, specs: Sequence[str], cache_path: Path | None = None, **options: Any):
        from raleval.agents.agent import resolve_model
        from raleval.cache import CachedModel, ResponseCache, default_cache_path

        if not specs:
            raise ValueError("the judge needs at least one model spec")
        self.cache = ResponseCache(cache_path or default_cache_path())
        self.models = [CachedModel(resolve_model(s, options), self.cache) for s in specs]
        self.specs = list(specs)
        self.unreadable = 0

    async def agrees(self, question: str, gold: str, prediction: str) -> float:
        """Mean verdict of the judges (0.0 .. 1.0)."""
        request = GenerateRequest(
            messages=(
                Message("system", RUBRIC),
                Message(
                    "user", f"Question: {question}\nGround truth: {gold}\nPrediction: {prediction}"
                ),
            ),
            max_tokens=96,
            temperature=0.0,
        )
        scores = []
        for model in self.models:
            try:
                gen = await model.generate(request)
            except ModelError:
                self.unreadable += 1
                scores.append(0)
                continue
            verdict = parse_verdict(gen.text)
            if verdict is None:
                self.unreadable += 1
            scores.append(verdict or 0)
        return sum(scores) / len(scores)

    def __call__(self, question: str, gold: str, prediction: str) -> bool:
        """Synchronous form for :func:`raleval.tasks.metrics.crag_verdict`: majority says yes."""
        return asyncio.run(self.agrees(question, gold, prediction)) >= 0.5

    def close(self) -> None:
        self.cache.close()
