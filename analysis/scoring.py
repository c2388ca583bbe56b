"""Scores and error labels of a stored trajectory: pure, no model or tool call.

One scoring path: :func:`score_trajectory` grades the answer once by the task's type
(``raleval.grading.rules``) and stores the verdict in ``traj.scores``; every table (overall,
family, level, CRAG type/domain/popularity/dynamism) aggregates those stored numbers through
:func:`aggregate`, so slices always add up to the overall score.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from raleval import registry
from raleval.analysis.calls import call_scores, gold_of
from raleval.analysis.progress import progress_rate
from raleval.analysis.taxonomy import classify_episode
from raleval.answers import AnswerType
from raleval.grading.longform import overlap_scores
from raleval.grading.rules import (
    CRAG_POINTS,
    DEFAULT_GRAMMAR,
    FREE_TEXT_THRESHOLD,
    PhraseGrammar,
    Verdict,
    gpt2_tokens,
    grade_task,
)
from raleval.records import Task, Trajectory

# What a trajectory's scores hold after scoring (besides the task's own metric).
# (and "ungraded", 1.0, on an answer the rules could not decide)
SCORE_KEYS = ("correct", "score", "f1", "em", "relaxed_f1", "crag", "missing")
# Scored too on a long-form answer, against its reference text, where registered (CRUD-RAG).
LONG_FORM_METRICS = ("rouge_l", "bleu")
# RAGEval's key-point shares on a long-form answer (keys of ``Trajectory.scores``).
KP_COMPLETENESS, KP_HALLUCINATION, KP_IRRELEVANCE = (
    "kp_completeness",
    "kp_hallucination",
    "kp_irrelevance",
)
# A free-text gold at least this many words long is long text: a benchmark's profile
# (``-S profile=crud|rageval``) scores it with ROUGE-L and BLEU too (CRUD-RAG's and RAGEval's
# references are paragraphs; HotpotQA's and CRAG's answers are a few words)
LONG_GOLD_WORDS = 20


def free_key_points(task: Task) -> list[str]:
    """A loaded benchmark's free-text key points (``metadata["key_points"]``: DragonBall's,
    CRUD-RAG's key information), which no rule judges; empty for any other task."""
    points = task.metadata.get("key_points") if isinstance(task.metadata, dict) else None
    return [p for p in points if isinstance(p, str)] if isinstance(points, list) else []


def has_long_gold(task: Task, profile: str = "standard") -> bool:
    """Whether ``task``'s gold is long text scored by overlap (ROUGE-L, BLEU): a task with key
    points (typed or free text) under every profile; under a benchmark's profile also any
    free-text gold of :data:`LONG_GOLD_WORDS` words or more."""
    if task.key_points or free_key_points(task):
        return True
    if profile == "standard" or task.answer_type is not AnswerType.free_text:
        return False
    from raleval.text import words

    return any(len(words(g)) >= LONG_GOLD_WORDS for g in task.answers if g)


def rejects_correctly(task: Task, verdict: Verdict) -> bool:
    """Whether the answer is the right way to decline ``task``: any abstention where the answer
    is absent (RGB), but only "invalid question" on a false premise (CRAG counts "I don't know"
    there as missing)."""
    if not task.tags.answerable:
        return verdict.correct
    return task.answer_type is AnswerType.invalid_premise and verdict.correct


def warm_scoring() -> None:
    """Load what scoring reads once per process before episodes run: GPT-2's vocabulary
    (relaxed F1, every verdict; ~0.1 s to read). Loaded lazily, it would stall the event loop
    while the first finished episodes wait to be scored. Without the vocabulary installed this
    does nothing: scoring then says what is missing, as before."""
    with contextlib.suppress(RuntimeError):
        gpt2_tokens("")


def score_trajectory(
    traj: Trajectory,
    task: Task,
    threshold: float | None = None,
    grammar: PhraseGrammar = DEFAULT_GRAMMAR,
    profile: str = "standard",
) -> Verdict:
    """Grade ``traj`` against ``task`` and fill its scores, stop reason and label, in place.

    Scores: ``correct`` (0/1 by the answer type's rule), ``score`` (the type's primary metric),
    ``f1`` and ``em`` (SQuAD, R-Eval's metrics), ``relaxed_f1`` (R-Eval's GPT-2 token match
    rate), ``crag`` (+1 accurate / 0 missing / -1 incorrect), ``missing`` (abstained), and the
    task's own registered metric when it is another one. A long-form answer also gets
    RAGEval's ``kp_completeness``, ``kp_hallucination`` and ``kp_irrelevance`` and CRUD-RAG's
    ``rouge_l`` and ``bleu`` against the reference text, as the metric ``profile`` defines them
    (``grading/longform.py``: ``standard``, ``crud``, ``rageval``); so does a loaded
    benchmark's answer with free-text key points and, under ``crud`` or ``rageval``, any
    answer whose gold is long text (:func:`has_long_gold`). ``threshold`` only moves
    the F1 at which a free-text answer counts as correct. For tasks with a gold solution, the
    call-level scores too (``analysis/calls.py``: call_precision, call_recall, call_f1,
    on_gold_path, first_departure, evidence_retrieved) and, where the task stores its
    subgoals, ``progress`` (AgentBoard's progress rate, ``analysis/progress.py``). Judged CRAG
    verdicts come from ``raleval score --judge``, never from here.
    """
    verdict = grade_task(task, traj.answer, grammar, threshold or FREE_TEXT_THRESHOLD)
    traj.scores = {
        "correct": float(verdict.correct),
        "score": verdict.score,
        "f1": verdict.f1,
        "em": verdict.em,
        "relaxed_f1": verdict.relaxed_f1,
        "crag": CRAG_POINTS[verdict.crag],
        "missing": float(verdict.abstained and not verdict.correct),
    }
    if verdict.ungraded:  # rules could not decide (grading/freetext.py): counted apart
        traj.scores["ungraded"] = 1.0
    if rejects_correctly(task, verdict):
        # CRAG and RGB count a rejection as the right answer where no answer exists.
        traj.scores.update({"f1": 1.0, "em": 1.0, "relaxed_f1": 1.0})
    if verdict.completeness is not None:  # a long-form answer: RAGEval's key-point shares
        traj.scores.update(
            {
                KP_COMPLETENESS: verdict.completeness,
                KP_HALLUCINATION: verdict.hallucination or 0.0,
                KP_IRRELEVANCE: verdict.irrelevance or 0.0,
            }
        )
    if has_long_gold(task, profile):
        # CRUD-RAG's overlap metrics against the reference, by the profile's definition
        traj.scores.update(overlap_scores(traj.answer, task.answers, profile))
    if task.metric not in traj.scores and task.metric in registry.metrics:
        traj.scores[task.metric] = registry.metrics.get(task.metric)(traj.answer, task.answers)
    gold = gold_of(task)  # normalised once for the call scores and the progress rate
    traj.scores.update(call_scores(traj, task, gold))  # with a gold solution (analysis/calls.py)
    progress = progress_rate(traj, task, gold)  # AgentBoard's, over stored subgoals
    if progress is not None:
        traj.scores["progress"] = progress
    golds = [g for e in task.elements or [] for g in e] or task.answers
    premise = task.answer_type is AnswerType.invalid_premise or not task.tags.answerable
    facts = {
        "question": task.question,
        "premise_check": premise,
        # the gold plan's last call is the one its answer reads: it decides the premise
        "premise_tools": [task.solution[-1].tool] if premise and task.solution else (),
    }
    evidence = long_form_evidence(task, verdict) or task.evidence
    kind, cause, stop, sub = classify_episode(traj, verdict.correct, golds, evidence, **facts)
    strict, strict_cause, _, _ = classify_episode(
        traj, verdict.correct, golds, evidence, strict=True, **facts
    )
    if premise and verdict.correct:
        cause = f"{kind.value}:correct_rejection"
        strict_cause = f"{strict.value}:correct_rejection"
    traj.error_type, traj.error_cause = kind, cause
    traj.strict_error_type, traj.strict_error_cause = strict, strict_cause
    traj.stop_reason, traj.error_subcause = stop, sub
    return verdict


def long_form_evidence(task: Task, verdict: Verdict) -> list[str] | None:
    """What a long-form episode must have seen (docs/longform.md): a right answer, the value of
    every key point it states (a stated value no tool showed was not retrieved: AM); a wrong
    one, every key point's value (all in hand and still wrong: GE; else RE)."""
    if not task.key_points or verdict.key_points is None:
        return None
    if verdict.correct:
        pairs = zip(task.key_points, verdict.key_points, strict=True)
        return [p.value for p, v in pairs if v == "covered"]
    return [p.value for p in task.key_points]


# --- aggregation: the one way every table reads per-episode verdicts ---------------------------


@dataclass(frozen=True)
class Aggregate:
    """Means of the per-episode verdicts over a group of episodes."""

    n: int
    correct: float  # accuracy: share of episodes graded correct
    score: float  # mean of the type's primary metric
    f1: float
    em: float
    relaxed_f1: float
    missing: float
    hallucination: float  # CRAG: answered and wrong
    crag_score: float  # CRAG: accuracy - hallucination
    ungraded: float = 0.0  # share the rules could not decide: neither missing nor wrong

    @classmethod
    def of(cls, trajs: list[Trajectory]) -> Aggregate:
        n = len(trajs)
        if n == 0:
            return cls(0, *(float("nan"),) * 8)

        def mean(key: str) -> float:
            return sum(t.scores.get(key, 0.0) for t in trajs) / n

        correct = mean("correct")
        ungraded = sum(t.scores.get("ungraded", 0.0) > 0 for t in trajs) / n
        missing = (
            sum(t.scores.get("crag", 0.0) == 0.0 and not t.scores.get("ungraded") for t in trajs)
            / n
        )
        hall = sum(t.scores.get("crag", 0.0) < 0 for t in trajs) / n
        return cls(
            n=n,
            correct=correct,
            score=mean("score"),
            f1=mean("f1"),
            em=mean("em"),
            relaxed_f1=mean("relaxed_f1"),
            missing=missing,
            hallucination=hall,
            crag_score=correct - hall,
            ungraded=ungraded,
        )


def aggregate(
    trajs: Iterable[Trajectory], key: Callable[[Trajectory], str | None] | None = None
) -> dict[str, Aggregate]:
    """Group episodes by ``key`` (all in one ``"all"`` group without one) and aggregate each;
    episodes whose key is ``None`` are left out of that slicing."""
    groups: dict[str, list[Trajectory]] = {}
    for t in trajs:
        k = "all" if key is None else key(t)
        if k is not None:
            groups.setdefault(k, []).append(t)
    return {k: Aggregate.of(v) for k, v in sorted(groups.items())}
