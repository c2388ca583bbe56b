"""Judges: grade an answer against its gold CRAG's way, accurate / missing / hallucinated.

Never runs unless asked (``raleval score RUN --judge openai/gpt-4o-mini``, ``raleval judge
validate``). A judge is named by a spec: ``scripted/rules`` applies raleval's own grading
(:mod:`raleval.grading.rules`) and calls no model; any other spec is a model, asked with the
prompt in ``prompts/judge_crag3.txt`` (:data:`PROMPT_VERSION`). Repeat a model spec to make a
panel whose verdict is the majority, as CRAG averaged two graders.

As in CRAG's evaluator, an abstention is *missing* whatever the judge would say: the phrase
grammar (:class:`~raleval.grading.rules.PhraseGrammar`) decides it before any judge is asked,
and "invalid question" against a false-premise gold is decided the same way. Every model
verdict goes through the response cache, so re-scoring or re-validating costs no new calls.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any, Protocol

from raleval.answers import AnswerType
from raleval.grading.agreement import ACCURATE, HALLUCINATED, MISSING, VERDICTS
from raleval.grading.rules import DEFAULT_GRAMMAR, PhraseGrammar
from raleval.grading.rules import grade as rule_grade
from raleval.model import GenerateRequest, Message, ModelError

RULES_SPEC = "scripted/rules"
# Bump when the prompt file or the way a request is built changes: scores and validation
# results name it, so a measured kappa is never attached to another prompt's verdicts.
PROMPT_VERSION = "crag3-v1"
RULES_VERSION = "rules-v1"


def judge_prompt() -> str:
    """The system prompt model judges get (``grading/prompts/judge_crag3.txt``)."""
    return (
        resources.files("raleval.grading")
        .joinpath("prompts", "judge_crag3.txt")
        .read_text(encoding="utf-8")
        .strip()
    )


_LAST_OBJECT = re.compile(r"\{[^{}]*\}(?![\s\S]*\{)")
_WORD = re.compile(r"\b(accurate|missing|hallucinated)\b", re.IGNORECASE)


def parse_verdict(text: str) -> int | None:
    """The ``score`` of the last JSON object in a reply (0 or 1); ``None`` if unreadable.
    A three-way ``verdict`` reads as 1 for accurate, 0 otherwise."""
    three = parse_three_way(text)
    return None if three is None else int(three == ACCURATE)


def parse_three_way(text: str) -> str | None:
    """The verdict of a reply: the last JSON object's ``verdict`` (or CRAG's ``score``: 1
    accurate, 0 hallucinated); failing JSON, a reply whose only verdict word is one of the
    three; ``None`` if unreadable."""
    m = _LAST_OBJECT.search(text or "")
    if m is not None:
        try:
            obj = json.loads(m.group(0))
        except json.JSONDecodeError:
            obj = None
        if isinstance(obj, dict):
            word = obj.get("verdict")
            if isinstance(word, str) and word.strip().lower() in VERDICTS:
                return word.strip().lower()
            score = obj.get("score")
            if score in (0, 1) and not isinstance(score, bool):
                return ACCURATE if score == 1 else HALLUCINATED
            return None
    words = {w.lower() for w in _WORD.findall(text or "")}
    return words.pop() if len(words) == 1 else None


class Judge(Protocol):
    """Anything that grades one answer three ways; ``spec`` and ``prompt_version`` name it in
    scores and validation results."""

    spec: str
    prompt_version: str

    async def grade(
        self,
        question: str,
        golds: Sequence[str],
        answer: str,
        answer_type: str,
        elements: Sequence[Sequence[str]] | None = None,
    ) -> str: ...

    def close(self) -> None: ...


async def judge_answer(
    judge: Judge,
    question: str,
    golds: Sequence[str],
    answer: str | None,
    answer_type: AnswerType | str = AnswerType.entity,
    elements: Sequence[Sequence[str]] | None = None,
    grammar: PhraseGrammar = DEFAULT_GRAMMAR,
) -> str:
    """The judge's verdict on ``answer``; an abstention is missing without asking the judge
    (CRAG counts "I don't know" as missing before its judge is called), and on a false-premise
    gold "invalid question" is accurate and anything else is not, by rule, as CRAG decides."""
    kind = AnswerType(answer_type)
    if grammar.abstains(answer):
        return MISSING
    assert answer is not None  # an absent answer abstains
    if kind is AnswerType.invalid_premise and grammar.claims_invalid(answer):
        return ACCURATE
    return await judge.grade(question, list(golds), answer, kind.value, elements)


class RulesJudge:
    """``scripted/rules``: raleval's own typed grading as a judge (no model call)."""

    spec = RULES_SPEC
    prompt_version = RULES_VERSION

    def __init__(self, grammar: PhraseGrammar = DEFAULT_GRAMMAR) -> None:
        self.grammar = grammar

    async def grade(
        self,
        question: str,
        golds: Sequence[str],
        answer: str,
        answer_type: str,
        elements: Sequence[Sequence[str]] | None = None,
    ) -> str:
        verdict = rule_grade(
            answer, golds, answer_type, elements=elements, grammar=self.grammar, question=question
        )
        # three ways only: an answer the rules leave ungraded is not accepted
        return {"accurate": ACCURATE, "missing": MISSING}.get(verdict.crag, HALLUCINATED)

    def close(self) -> None:
        pass


class LLMJudge:
    """Grades with one or more models (spec strings): the majority verdict; an unreadable
    reply or a failed call counts as hallucinated (CRAG counts a parse error as not correct)
    and is counted in :attr:`unreadable`."""

    prompt_version = PROMPT_VERSION

    def __init__(self, specs: Sequence[str], cache_path: Path | None = None, **options: Any):
        from raleval.agents.agent import resolve_model
        from raleval.cache import CachedModel, ResponseCache, default_cache_path

        if not specs:
            raise ValueError("the judge needs at least one model spec")
        self.cache_path = cache_path or default_cache_path()
        self.cache = ResponseCache(self.cache_path)
        self.models = [CachedModel(resolve_model(s, options), self.cache) for s in specs]
        self.specs = list(specs)
        self.spec = "+".join(self.specs)
        self.unreadable = 0
        self._system = judge_prompt()

    def _request(
        self, model: Any, question: str, gold: str, prediction: str, answer_type: str
    ) -> GenerateRequest:
        user = (
            f"Question: {question}\nAnswer type: {answer_type}\nGround truth: {gold}\n"
            f"Prediction: {prediction}"
        )
        messages = [Message("system", self._system), Message("user", user)]
        # A model that continues a final assistant message is held to the JSON form: small
        # local models otherwise explain instead of answering.
        if getattr(getattr(model, "capabilities", None), "prefill", False):
            # held to the form, the verdict is the next word: stop at its closing quote
            messages.append(Message("assistant", '{"verdict": "'))
            return GenerateRequest(
                messages=tuple(messages), max_tokens=8, temperature=0.0, stop=('"',)
            )
        return GenerateRequest(messages=tuple(messages), max_tokens=48, temperature=0.0)

    async def _ask(self, model: Any, request: GenerateRequest) -> str | None:
        try:
            gen = await model.generate(request)
        except ModelError:
            return None
        text = gen.text or ""
        if request.messages[-1].role == "assistant":
            text = request.messages[-1].content + text
        return parse_three_way(text)

    async def grade(
        self,
        question: str,
        golds: Sequence[str],
        answer: str,
        answer_type: str = AnswerType.entity.value,
        elements: Sequence[Sequence[str]] | None = None,
    ) -> str:
        gold = " | ".join(golds) if len(golds) > 1 else (golds[0] if golds else "")
        votes: list[str] = []
        for model in self.models:
            word = await self._ask(model, self._request(model, question, gold, answer, answer_type))
            if word is None:
                self.unreadable += 1
                word = HALLUCINATED
            votes.append(word)
        if sum(v == ACCURATE for v in votes) * 2 >= len(votes):
            return ACCURATE
        return MISSING if sum(v == MISSING for v in votes) * 2 > len(votes) else HALLUCINATED

    async def agrees(self, question: str, gold: str, prediction: str) -> float:
        """Share of the judges that call ``prediction`` accurate (0.0 .. 1.0)."""
        scores = []
        for model in self.models:
            request = self._request(model, question, gold, prediction, "unknown")
            word = await self._ask(model, request)
            if word is None:
                self.unreadable += 1
            scores.append(float(word == ACCURATE))
        return sum(scores) / len(scores)

    def __call__(self, question: str, gold: str, prediction: str) -> bool:
        """Synchronous form for :func:`raleval.grading.metrics.crag_verdict`: majority says yes."""
        return asyncio.run(self.agrees(question, gold, prediction)) >= 0.5

    def close(self) -> None:
        self.cache.close()


def resolve_judge(specs: Sequence[str], cache_path: Path | None = None, **options: Any) -> Judge:
    """The judge ``specs`` name: ``scripted/rules`` alone, or a panel of models."""
    specs = list(specs)
    if RULES_SPEC in specs:
        if len(specs) > 1:
            raise ValueError(f"{RULES_SPEC} is a judge of its own; it cannot join a panel")
        return RulesJudge()
    return LLMJudge(specs, cache_path=cache_path, **options)
