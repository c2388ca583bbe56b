"""Free-text key points judged as RAGEval judges them: relevant / irrelevant / wrong.

RAGEval (Zhu et al., 2024, section 3.3; its ``keypoint_metrics.py``) asks an LLM, one key point
at a time, whether the generated answer states it (*relevant*), does not address it
(*irrelevant*) or states something that disagrees with it (*wrong*); **completeness** is the
share of relevant points, **hallucination** the share of wrong ones, **irrelevance** the rest.
Its prompt's rules, kept here in raleval's own wording (``grading/prompts/keypoints_rageval_
{en,zh}.txt``, :data:`PROMPT_VERSION`): an answer that says the information is not enough
counts as *irrelevant*, never *wrong*; a missing detail that does not change the answer is
*irrelevant*; only a specific, disagreeing statement is *wrong*; where the key point is itself
"unable to answer" (an unanswerable question), an answer that answers anyway is *wrong*
(RAGEval's rule 6, decided here without a model). The verdict is the last
``[[[Relevant]]]`` / ``[[[Irrelevant]]]`` / ``[[[Wrong]]]`` marker of the reply, as RAGEval
reads it.

Typed key points (:class:`raleval.records.KeyPoint`, generated worlds) keep their rules
(:mod:`raleval.keypoints`); this judge is for the loaded benchmarks' free-text key points
(``task.metadata["key_points"]``: DragonBall's, CRUD-RAG's key information). An answer the
phrase grammar reads as an abstention is *irrelevant* on every point without asking a model;
every model verdict goes through the response cache.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from raleval.grading.rules import DEFAULT_GRAMMAR, PhraseGrammar
from raleval.keypoints import KeyPointScores
from raleval.model import GenerateRequest, Message, ModelError

PROMPT_VERSION = "rageval-keypoints-v1"
RELEVANT, IRRELEVANT, WRONG = "relevant", "irrelevant", "wrong"
LABELS = (RELEVANT, IRRELEVANT, WRONG)
# RAGEval's three labels as raleval's key-point verdicts (raleval.keypoints)
AS_VERDICT = {RELEVANT: "covered", IRRELEVANT: "missing", WRONG: "contradicted"}

_MARK = re.compile(r"\[\[\[\s*(relevant|irrelevant|wrong)\s*\]\]\]", re.IGNORECASE)
_WORD = re.compile(r"\b(relevant|irrelevant|wrong)\b", re.IGNORECASE)
_CJK = re.compile(r"[\u3400-\u9fff]")


def keypoint_prompt(language: str) -> str:
    """The system prompt for ``language`` (``zh`` or anything else: English)."""
    name = "keypoints_rageval_zh.txt" if language == "zh" else "keypoints_rageval_en.txt"
    return resources.files("raleval.grading").joinpath("prompts", name).read_text("utf-8").strip()


def parse_keypoint_verdict(text: str | None) -> str | None:
    """The last ``[[[label]]]`` marker of a reply; failing one, the reply's only label word;
    ``None`` if unreadable."""
    marks = _MARK.findall(text or "")
    if marks:
        return marks[-1].lower()
    words = {w.lower() for w in _WORD.findall(text or "")}
    return words.pop() if len(words) == 1 else None


def language_of(text: str) -> str:
    return "zh" if _CJK.search(text or "") else "en"


def scores_of(labels: Sequence[str]) -> KeyPointScores:
    """RAGEval's completeness, hallucination and irrelevance over one answer's labels."""
    n = len(labels) or 1
    return KeyPointScores(
        completeness=labels.count(RELEVANT) / n,
        hallucination=labels.count(WRONG) / n,
        irrelevance=labels.count(IRRELEVANT) / n,
        verdicts=[AS_VERDICT[label] for label in labels],
    )


class KeyPointJudge:
    """Judges free-text key points with one or more models (spec strings): the majority
    label, a tie or an unreadable reply counting as irrelevant (counted in
    :attr:`unreadable`), so a judge that cannot answer never invents a hallucination."""

    prompt_version = PROMPT_VERSION

    def __init__(
        self,
        specs: Sequence[str],
        cache_path: Path | None = None,
        grammar: PhraseGrammar = DEFAULT_GRAMMAR,
        models: Sequence[Any] | None = None,
        **options: Any,
    ) -> None:
        if models is None:
            from raleval.agents.agent import resolve_model
            from raleval.cache import CachedModel, ResponseCache, default_cache_path

            if not specs:
                raise ValueError("the key-point judge needs at least one model spec")
            self.cache = ResponseCache(cache_path or default_cache_path())
            models = [CachedModel(resolve_model(s, options), self.cache) for s in specs]
        else:
            self.cache = None  # models given directly (tests, a caller's own cache)
        self.models = list(models)
        self.spec = "+".join(specs)
        self.grammar = grammar
        self.unreadable = 0

    def _request(
        self, model: Any, question: str, answer: str, point: str, language: str
    ) -> GenerateRequest:
        user = (
            f"问题：{question}\n生成回答：{answer}\n标准回答要点：{point}"
            if language == "zh"
            else f"Question: {question}\nGenerated answer: {answer}\nKey point: {point}"
        )
        messages = [Message("system", keypoint_prompt(language)), Message("user", user)]
        if getattr(getattr(model, "capabilities", None), "prefill", False):
            # a small model held to the form: the label is the next word
            messages.append(Message("assistant", "[[["))
            return GenerateRequest(
                messages=tuple(messages), max_tokens=6, temperature=0.0, stop=("]]]",)
            )
        return GenerateRequest(messages=tuple(messages), max_tokens=160, temperature=0.0)

    async def _ask(self, model: Any, request: GenerateRequest) -> str | None:
        try:
            gen = await model.generate(request)
        except ModelError:
            return None
        text = gen.text or ""
        if request.messages[-1].role == "assistant":
            text = request.messages[-1].content + text + "]]]"
        return parse_keypoint_verdict(text)

    async def judge_point(
        self, question: str, answer: str | None, point: str, language: str | None = None
    ) -> str:
        """One key point's label on ``answer``."""
        if self.grammar.abstains(answer) or not (answer or "").strip():
            return IRRELEVANT  # RAGEval: "not enough information" is irrelevant, not wrong
        if self.grammar.abstains(point):
            # RAGEval's rule: the key point is "unable to answer" and the answer gives
            # information instead of declining: wrong, not irrelevant
            return WRONG
        lang = language or language_of(f"{question}{point}")
        votes = []
        for model in self.models:
            label = await self._ask(model, self._request(model, question, answer, point, lang))
            if label is None:
                self.unreadable += 1
                label = IRRELEVANT
            votes.append(label)
        for label in (RELEVANT, WRONG):
            if sum(v == label for v in votes) * 2 > len(votes):
                return label
        return IRRELEVANT

    async def judge(
        self,
        question: str,
        answer: str | None,
        points: Sequence[str],
        language: str | None = None,
    ) -> KeyPointScores:
        """Every key point's label on ``answer``, as RAGEval's three shares."""
        labels = [await self.judge_point(question, answer, p, language) for p in points]
        return scores_of(labels)

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()
