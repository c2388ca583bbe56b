"""What a generated long-form task must pass before it is emitted, and what the long-form
families of every environment share (docs/longform.md, Families).

The long-form families of every environment (profile, summary, continuation, correction) draw
their key points from the world and run their gold calls; these checks, shared by all of them,
decide whether the task is fit to emit:

- 3 to 8 key points (:data:`MIN_POINTS`, :data:`MAX_POINTS`), no two numbers or years of
  them equal (a number written once beside a cue the two share would be bound to both);
- the reference text covers every key point and contradicts none;
- the executing oracle's answer (the statements of the key points the gold calls' observations
  show, :func:`raleval.keypoints.oracle_text`) covers every key point and contradicts none: the
  task is solvable through the tools;
- the question, read as an answer (what a baseline that echoes the question writes), states no key
  point and writes no key point's value anywhere: no value is guessable from the question (it may
  name another value of a slot, which the echo then contradicts). A correction task is the exception
  by design: its question is the statement to correct, so it states the values that are right (they
  cover their key points) and the planted wrong ones, which must each be *contradicted* by the
  rules, so the echo is never aligned (it hallucinates) and the correct value of a planted slot is
  never in the question.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from raleval.answers import AnswerType
from raleval.families import TaskFamily
from raleval.keypoints import judge_key_points, oracle_text, score_key_points, writes_value
from raleval.records import KeyPoint, Level, Task, TaskTags, ToolCall
from raleval.registry import register_task_family, register_task_set

MIN_POINTS = 3
MAX_POINTS = 8


def unstated(points: Sequence[KeyPoint], text: str) -> list[KeyPoint]:
    """The key points whose value ``text`` does not write anywhere (a question that names a
    value gives that key point away, whether or not it names the slot: such points are dropped
    before a task is built)."""
    return [p for p in points if not writes_value(p, text)]


def rejection(
    points: Sequence[KeyPoint],
    reference: str,
    observations: Sequence[str],
    question: str,
    planted: Sequence[int] = (),
) -> str | None:
    """Why a long-form task must not be emitted, or None when it passes every check above.
    ``planted``: for a correction task, the indices of the key points whose value the
    question's statement gets wrong."""
    if not MIN_POINTS <= len(points) <= MAX_POINTS:
        return f"{len(points)} key points, not {MIN_POINTS}-{MAX_POINTS}"
    numbers = [p.value for p in points if p.kind in ("number", "year")]
    if len(set(numbers)) < len(numbers):
        return f"two numeric key points share a value: {numbers}"
    ref = score_key_points(reference, points)
    if ref.completeness != 1.0 or ref.hallucination != 0.0:
        return f"the reference does not state every key point: {ref.verdicts}"
    answer = oracle_text(points, observations)
    oracle = score_key_points(answer, points)
    if oracle.completeness != 1.0 or oracle.hallucination != 0.0:
        return f"the gold calls do not show every key point: {oracle.verdicts}"
    echo = judge_key_points(question, points)
    for i, verdict in enumerate(echo):
        if not planted:
            # the question gives no value away; naming another value of a slot (the scholar's
            # own organization beside "doctorate") only makes the echo contradict it
            if verdict == "covered" or writes_value(points[i], question):
                return f"the question read as an answer: key point {i} is given away"
            continue
        want = "contradicted" if i in planted else "covered"
        if verdict != want:
            return f"the question read as an answer: key point {i} is {verdict}, not {want}"
    return None


# --- the key points of a scholar's facts ---------------------------------------------------------
# The scholar database and the encyclopedia state the same facts of a scholar in other shapes (a
# database row, a generated page); their long-form families build the key points here, from
# plain values, so that a fact is named by the same cues and stated by the same sentence in both.

PHD_CUES = ["Ph.D", "PhD", "doctorate", "doctoral"]
PAPERS_CUES = ["paper", "publication", "published"]
CITATION_CUES = ["cit"]
# "is a"/"is an" (prefix "a"): "X is an Associate Professor" names the position with no word
# for it, and must contradict "Assistant Professor"
POSITION_CUES = ["position", "is a", "works as", "rank"]


def with_cues(point: KeyPoint, *cues: str) -> KeyPoint:
    """``point`` with more words that name its slot (a source that phrases the fact its own way)."""
    return point.model_copy(update={"cues": [*point.cues, *cues]})


# slot: (kind, cues, statement); the statement names the scholar ({name}) or the paper
# ({subject}) and writes the value shown ({value})
SLOTS: dict[str, tuple[str, list[str], str]] = {
    "position": ("entity", POSITION_CUES, "{name} holds the position of {value}."),
    "gender": ("entity", ["gender"], "The gender of {name} is {value}."),
    "organization": (
        "entity",
        ["works at", "affiliat", "organization"],
        "{name} works at {value}.",
    ),
    "papers": ("number", PAPERS_CUES, "{name} has published {value} papers."),
    "citations": ("number", CITATION_CUES, "The papers of {name} have been cited {value} times."),
    "phd_institution": ("entity", PHD_CUES, "{name} received a Ph.D. from {value}."),
    "phd_year": ("year", PHD_CUES, "{name} received a Ph.D. in {value}."),
    "interest": ("member", ["interest", "works on"], "{name} works on {value}."),
    "top_paper": ("entity", ["most cited paper"], "The most cited paper of {name} is {value}."),
    "top_paper_year": (
        "year",
        ["published in", "appeared in"],
        "The most cited paper of {name} was published in {value}.",
    ),
    "top_paper_citations": ("number", CITATION_CUES, "That paper has been cited {value} times."),
    "top_paper_venue": ("entity", ["venue", "appeared in"], "{subject} appeared in {value}."),
    "top_coauthor": (
        "entity",
        ["coauthor", "collaborator", "writes with"],
        "{name} most often writes with {value}.",
    ),
}


@dataclass(frozen=True)
class ScholarPoints:
    """The key points of the scholar ``name``, one slot of :data:`SLOTS` each."""

    name: str

    def point(
        self,
        slot: str,
        value: str | int,
        shown: str | int | None = None,
        choices: Sequence[str] = (),
        subject: str = "It",
    ) -> KeyPoint:
        """The key point of ``slot`` whose value is ``value`` (the world's). ``shown``: what
        the statement writes instead (a correction task's planted error); ``choices``: the
        values the slot takes in the world, for a closed slot (position, gender, an
        organization, the scholar's own titles or coauthors), whose others an answer naming
        contradicts; ``subject``: how a statement about the paper names it ("It", after one
        that names it)."""
        kind, cues, statement = SLOTS[slot]
        said = value if shown is None else shown
        return KeyPoint(
            slot=slot,
            kind=kind,
            value=str(value),
            cues=cues,
            choices=list(choices),
            statement=statement.format(name=self.name, value=said, subject=subject),
        )

    def phd_institution(self, value: str, organization: str, orgs: Sequence[str]) -> KeyPoint:
        """``organization``: where the scholar works, left out of the choices: an answer naming
        it in the sentence about their doctorate does not claim they took it there."""
        choices = [o for o in orgs if o != organization or o == value]
        return self.point("phd_institution", value, choices=choices)


# --- what the long-form families of every environment share --------------------------------------


@dataclass
class Draft:
    """A long-form task before its checks: the question, the gold calls, the key points (before
    those the question gives away are dropped, except for a correction), the reference text."""

    template: str
    question: str
    calls: list[ToolCall]
    points: list[KeyPoint]
    reference: str | None = None  # None: the statements of the key points, joined
    planted: tuple[int, ...] = ()
    metadata: dict[str, Any] | None = None

    def key_points(self) -> list[KeyPoint]:
        """The key points the task keeps: a value the question names is given away, not a key
        point (a correction's question names them all by design)."""
        if self.planted:
            return list(self.points)
        return unstated(self.points, self.question)[:MAX_POINTS]

    def task(
        self,
        points: list[KeyPoint],
        reference: str,
        at: tuple[str, str, Level, int, int],
        popularity: str,
        **metadata: Any,
    ) -> Task:
        """The task, once it passed its checks; ``at``: (domain, family, level, seed, the
        task's index in its batch); ``metadata`` goes before the draft's own."""
        domain, family, level, seed, k = at
        return Task(
            id=f"{family}-s{seed}-{k:04d}",
            domain=domain,
            level=level,
            family=family,
            question=self.question,
            answers=[reference],
            answer_type=AnswerType.long_form,
            key_points=points,
            tags=TaskTags(
                question_type=family.removeprefix(f"{domain}-lf-"), popularity=popularity
            ),
            solution=self.calls,
            evidence=[p.value for p in points],
            metric="f1",
            metadata={"template": self.template, **metadata, **(self.metadata or {})},
        )


def plant(
    rng: random.Random,
    truth: dict[str, Any],
    others: Callable[[], Iterable[Mapping[str, Any]]],
) -> dict[str, Any] | None:
    """The wrong values a correction task's statement writes: for one or two of ``truth``'s
    slots (drawn by ``rng``), the value of the slot's kind another scholar of the world has
    (``others``, asked once the slots are drawn), never the true one; None when no other
    scholar has a different value for a drawn slot."""
    slots = rng.sample(list(truth), rng.choice((1, 2)))
    pool = list(others())
    shown: dict[str, Any] = {}
    for slot in slots:
        values = [w for o in pool if (w := o.get(slot)) is not None and w != truth[slot]]
        if not values:
            return None
        shown[slot] = rng.choice(values)
    return shown


def correction(
    shown: Mapping[str, Any], make: Callable[[Mapping[str, Any]], list[KeyPoint]]
) -> tuple[str, tuple[int, ...], list[KeyPoint]]:
    """A correction task's statement, the indices of its planted key points and its key points,
    from ``make``: the key points whose statements write the ``shown`` values (``{}``: the true
    ones). The statement writes the planted values; each key point states the corrected one."""
    wrong, right = make(shown), make({})
    statement = " ".join(p.statement for p in wrong)
    planted = tuple(i for i, p in enumerate(wrong) if p.slot in shown)
    return statement, planted, right


Generator = Callable[[Any, int, int], list[Task]]

# CRUD-RAG's four uses of long-form generation and the R-Eval level each is graded at: reading
# (profile), deleting the redundant across documents (summary), creating the unseen
# (continuation), updating the wrong (correction)
USES: dict[str, Level] = {
    "profile": Level.KS,
    "summary": Level.KU,
    "continue": Level.KA,
    "correct": Level.KA,
}


def register_longform(
    env: str, title: str, generator: Callable[[str, Level, Any], Generator], *makers: Any
) -> dict[str, TaskFamily]:
    """Register an environment's long-form families ``<env>-lf-<use>``, one a use of
    :data:`USES` in its order (``makers``: the uses' draft makers, each saying what it asks in
    its docstring), graded by F1 over the key points, and the set ``<env>-longform`` of them
    (the default sets do not include them)."""
    specs = [
        (f"{env}-lf-{use}", level, make, " ".join(make.__doc__.split()))
        for (use, level), make in zip(USES.items(), makers, strict=True)
    ]
    families = {
        fid: TaskFamily(
            id=fid,
            level=level,
            domain=env,
            env=env,
            metric="f1",
            description=f"{title} long-form {level.value}: {what}",
            generate=generator(fid, level, make),
        )
        for fid, level, make, what in specs
    }
    for fid, family in families.items():
        register_task_family(fid)(family)
    register_task_set(f"{env}-longform")(list(families))
    return families
