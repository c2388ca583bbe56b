"""R-Eval's error taxonomy by evidence and cause, computed from a stored trajectory alone.

The label follows the codebook every hand-labelled set is adjudicated by (docs/taxonomy.md
says it in the project's words). It is a pure function (:func:`label`) of four facts:

- correct: the answer is right under its type's rule (``raleval.grading.rules``);
- evidence: a gold alias (or every value of the task's ``evidence``) appears, token-aligned,
  in an OBSERVATION the agent received: a failed search's suggested titles, a distractor's
  result, a PAL program's tool results and a planned workflow's executed calls included; the
  model's own thoughts and Finish line never count. A right PAL answer is grounded only when
  ``final_result`` reads a tool result (``raleval.analysis.programs``). On a question with no
  answer to find (false premise, unanswerable) the check of the premise is the evidence;
- the stop reason (:class:`~raleval.records.StopReason`), derived from the termination and
  its cause (:func:`stop_reason`);
- whether misuse interrupted the retrieval (:func:`misuse_interrupted`): every call from the
  first invalid one on (unknown tool, bad arguments, an action that did not parse, a key the
  tool declares to come from an earlier result that none had returned) was invalid.

Evidence is asked first, as the paper does: wrong with the answer shown is GE whatever ended
the episode; only then is the interruption asked about. A fault outside the agent is ME;
misuse that ended the episode (output no parser took, a program that raised or that the
sandbox refused) or dominated it is TE; otherwise, an answer, a give-up or any budget (step,
time, token, cost, the model's context window) halted the retrieval: RE, the budget kept in
the cause, so a slower machine cannot move a label. A stop by the machine (wall clock, context
window) is reported as sub-cause ``harness_limit`` beside the label. ``strict=True`` gives
raleval's stricter reading (any invalid call is TE, suggested titles are not content, PAL
answers by data flow right or wrong), stored beside the label as ``strict_error_type``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from raleval.analysis.programs import answer_program, answer_reads_tools
from raleval.analysis.references import declared_references
from raleval.failures import refused_call_escaped
from raleval.records import (
    ErrorType,
    OutcomeKind,
    Step,
    StopReason,
    Termination,
    Trajectory,
)
from raleval.text import contains_tokens, normalize_answer

# R-Eval's code called an answer accurate at token F1 >= 0.05; ``raleval score --threshold``
# still offers that reading for free-text answers.
DEFAULT_THRESHOLD = 0.5
REVAL_THRESHOLD = 0.05

# Stops outside the agent's control: R-Eval's "faults in the retrieval tool itself" and its
# code's model errors ("No response").
EXTERNAL = frozenset(
    {StopReason.tool_failure, StopReason.model_failure, StopReason.harness_failure}
)
# Budgets: the retrieval halted on an allowance (R-Eval's RE, the budget kept in the cause).
BUDGETS = frozenset(
    {
        StopReason.step_budget,
        StopReason.time_budget,
        StopReason.token_budget,
        StopReason.cost_budget,
        StopReason.context_overflow,
    }
)
# Stops that are themselves improper use: output no parser took, a program that raised, a
# program the sandbox refused.
MISUSE_STOPS = frozenset(
    {StopReason.unparseable_output, StopReason.program_error, StopReason.policy_violation}
)
# Limits of the machine rather than of the protocol: reported beside the label.
HARNESS_LIMITS = frozenset({StopReason.time_budget, StopReason.context_overflow})

# A program that did not compile: output no parser took, like a malformed ReAct action.
_NOT_PYTHON = re.compile(r"(?:SyntaxError|IndentationError|TabError)\b")
_CONTEXT = re.compile(r"context|too (?:long|many tokens)|exceed", re.IGNORECASE)
_POLICY = re.compile(
    r"sandbox|denied|forbidden|permission|policy|seccomp|landlock|not allowed", re.IGNORECASE
)


def stop_reason(trajectory: Trajectory) -> StopReason:
    """Why the episode stopped, from its termination and cause."""
    term, cause = trajectory.termination, trajectory.termination_cause or ""
    if term is Termination.finished:
        return StopReason.answered
    if term is Termination.step_limit:
        return StopReason.step_budget
    if term is Termination.cost_limit:
        return StopReason.cost_budget
    if term is Termination.context_limit:
        return StopReason.token_budget if cause == "token_budget" else StopReason.context_overflow
    if term is Termination.timeout:
        return StopReason.time_budget
    if term is Termination.llm_error:
        return StopReason.context_overflow if _CONTEXT.search(cause) else StopReason.model_failure
    if term is Termination.tool_fault:
        return StopReason.tool_failure
    if term is Termination.invalid_format:
        return StopReason.unparseable_output
    if term is Termination.program_error or refused_call_escaped(trajectory):
        # a model-written program the harness could not carry out: refused by the sandbox, not
        # Python at all (the cause is the exception's name), or a program that ran and raised
        if _POLICY.search(cause):
            return StopReason.policy_violation
        if _NOT_PYTHON.match(cause):
            return StopReason.unparseable_output
        return StopReason.program_error
    return StopReason.harness_failure  # interrupted, harness_error


def _observations(trajectory: Trajectory) -> list[str]:
    return [
        s.observation
        for s in trajectory.steps
        if s.kind is OutcomeKind.ok and s.observation and s.tool not in (None, "Finish")
    ]


# A search that found nothing and lists page titles instead (ReAct's and R-Eval's wiki tools:
# "Could not find X. Similar: ['A', 'B']."). The codebook counts the titles as scratchpad (the
# paper checks containment); the strict reading does not: a gold that only stands among them
# was never read, though its page might have been (HotpotQA's "Evolution" lists
# 'David Weissman', the answer, among the pages that mention it).
_SUGGESTIONS = re.compile(r"^(Could not find .*?)\s*Similar:\s*\[.*\]\.?\s*$", re.DOTALL)


def _content(observation: str) -> str:
    """What an observation says about the world in the strict reading: a failed search's
    suggested titles dropped."""
    miss = _SUGGESTIONS.match(observation)
    return miss.group(1) if miss else observation


def evidence_found(
    trajectory: Trajectory,
    golds: Sequence[str],
    every: Sequence[str] | None = None,
    question: str = "",
    suggestions: bool = True,
) -> bool:
    """Whether the answer was shown: a gold alias appears, token-aligned, in an observation a
    tool returned, or, with ``every`` (the values a computed answer reads), each of them
    appears in one. Every observation is scratchpad, a failed search's suggested titles
    included (the codebook); ``suggestions=False`` is the strict reading, where a gold alias
    standing only among those titles was not shown (:func:`_content`) though a value of
    ``every`` there was. "yes" and "no" are never taken as shown (any page says "no"), and
    where the task names the values its answer reads, neither is a gold the question itself
    names (the winner of a comparison is one of the two names asked about)."""
    observations = _observations(trajectory)
    if every:  # the task names what counts, a disambiguation page's titles included
        seen = [normalize_answer(obs).split() for obs in observations]
        needles = [normalize_answer(v).split() for v in every]
        needles = [n for n in needles if n]
        if needles and all(any(contains_tokens(t, n) for t in seen) for n in needles):
            return True
    shown = observations if suggestions else [_content(obs) for obs in observations]
    seen = [normalize_answer(obs).split() for obs in shown]
    asked = normalize_answer(question).split()
    needles = [normalize_answer(g).split() for g in golds]
    needles = [
        n
        for n in needles
        if n and n not in (["yes"], ["no"]) and not (every and contains_tokens(asked, n))
    ]
    return any(contains_tokens(t, n) for t in seen for n in needles)


References = Mapping[str, Sequence[str]]  # tool -> arguments naming an earlier result


def invalid_calls(
    trajectory: Trajectory, question: str = "", references: References | None = None
) -> list[str]:
    """The causes of the episode's invalid calls, in order: misuse the environment reported
    (unknown tool, bad arguments), actions that did not parse, and ``unknown_id``: an
    argument the tool declares to name an earlier result (``references``: a person_id, a
    ticker, a game id; ``raleval.analysis.references``) whose value no earlier observation
    held, nor the question as a one-token key (:func:`_given`), i.e. one the model made up."""
    return [cause for _, cause in invalid_steps(trajectory, question, references)]


def _held(value: object, seen: str) -> bool:
    """Whether ``value`` stands in ``seen`` as a whole word, in its case: an id ``1`` inside
    ``12`` was not given, nor a ticker ``PELLIUS`` made from the name "Pellius Foods"."""
    text = str(value).strip()
    return bool(text) and re.search(rf"(?<!\w){re.escape(text)}(?!\w)", seen) is not None


def _given(value: object, question: str, observed: str) -> bool:
    """Whether a value passed where the tool declares a key was given: returned by an earlier
    observation, or named by the question as a key. A key is one token (an id, a ticker, a
    game id); the name a question asks about ("Cormel Labs" passed as a ticker) is not one."""
    if _held(value, observed):
        return True
    return not re.search(r"\s", str(value).strip()) and _held(value, question)


def invalid_steps(
    trajectory: Trajectory, question: str = "", references: References | None = None
) -> list[tuple[int, str]]:
    """(step index, cause) of each invalid call of :func:`invalid_calls`; without
    ``references``, those the episode's environment declares."""
    if references is None:
        references = declared_references(trajectory.agent.env)
    out: list[tuple[int, str]] = []
    seen = ""
    for step in trajectory.steps:
        if step.kind in (OutcomeKind.misuse, OutcomeKind.parse_error):
            out.append((step.index, step.cause or step.kind.value))
        elif step.tool and step.tool != "Finish" and step.arguments:
            for key in references.get(step.tool, ()):
                value = step.arguments.get(key)
                values = value if isinstance(value, list) else [value]
                if any(v is not None and not _given(v, question, seen) for v in values):
                    out.append((step.index, "unknown_id"))
                    break
        if step.observation:
            seen += "\n" + step.observation
    return out


def premise_checked(
    trajectory: Trajectory,
    checks: Sequence[str] = (),
    question: str = "",
    references: References | None = None,
) -> bool:
    """Whether the episode checked a premise: a successful call to a tool of ``checks`` (the
    call a task's gold plan decides the premise with; any tool without one) whose keys were
    not made up. A null from another domain's tool, or from a key the model invented (a
    company's name passed as its ticker), says nothing about the premise."""
    made_up = {i for i, cause in invalid_steps(trajectory, question, references)}
    return any(
        s.kind is OutcomeKind.ok
        and s.observation
        and s.tool not in (None, "Finish")
        and (not checks or s.tool in checks)
        and s.index not in made_up
        for s in trajectory.steps
    )


def _is_call(step: Step) -> bool:
    """A call of the agent's: a tool call other than the answer, or an action that did not parse."""
    return step.kind in (OutcomeKind.misuse, OutcomeKind.parse_error) or step.tool not in (
        None,
        "Finish",
    )


def misuse_interrupted(
    trajectory: Trajectory, question: str = "", references: References | None = None
) -> list[str]:
    """The causes of the invalid calls when misuse dominated the episode: every call from the
    first invalid one on (refused, unparsed, or carrying a made-up key) was invalid; empty
    otherwise. One incidental invalid call among valid ones did not interrupt the retrieval
    (the codebook: TE needs an interruption)."""
    bad = invalid_steps(trajectory, question, references)
    if not bad:
        return []
    invalid = {i for i, _ in bad}
    first = min(invalid)
    calls = [s.index for s in trajectory.steps if s.index >= first and _is_call(s)]
    return [cause for _, cause in bad] if all(i in invalid for i in calls) else []


def label(correct: bool, evidence: bool, stop: StopReason, misuse: bool) -> ErrorType:
    """The R-Eval class of an episode (docs/taxonomy.md): a pure function of four facts.
    ``misuse``: improper use of the tools interrupted the retrieval (in the codebook, misuse
    that dominated it; in the strict reading, any invalid call)."""
    if correct:
        return ErrorType.EM if evidence else ErrorType.AM
    if evidence:  # R-Eval asks first whether the scratchpad held the answer
        return ErrorType.GE
    if stop in EXTERNAL:  # then whether, and why, the retrieval was interrupted
        return ErrorType.ME
    if misuse or stop in MISUSE_STOPS:
        return ErrorType.TE
    return ErrorType.RE  # answered, or halted on a budget


def _useful(
    trajectory: Trajectory,
    correct: bool,
    golds: Sequence[str],
    evidence: Sequence[str] | None,
    question: str,
    premise_check: bool,
    premise_tools: Sequence[str],
    references: References | None,
    stop: StopReason,
    strict: bool,
) -> bool:
    """Whether the scratchpad held the useful information (the codebook's reading, or with
    ``strict`` raleval's stricter one)."""
    if premise_check and not evidence:
        useful = premise_checked(trajectory, premise_tools, question, references)
    else:
        useful = evidence_found(trajectory, golds, evidence, question, suggestions=not strict)
    program = answer_program(trajectory)
    if program is not None and useful and (correct or strict):
        # A right PAL answer is grounded only when final_result reads a tool result (a literal
        # is AM). A wrong one after the evidence came back is GE in the codebook, whether the
        # program wrote a literal or crashed; the strict reading asks the data flow there too.
        called = {s.tool for s in trajectory.steps if s.tool and s.tool != "Finish"}
        useful = stop is StopReason.answered and answer_reads_tools(program, called)
    return useful


def _cause(kind: ErrorType, stop: StopReason, trajectory: Trajectory, bad: Sequence[str]) -> str:
    if kind is ErrorType.EM:
        return "EM:grounded"
    if kind is ErrorType.AM:
        return "AM:from_memory"
    if kind is ErrorType.GE:
        return "GE:evidence_ignored"
    if kind is ErrorType.RE:
        return f"RE:{stop.value}" if stop is not StopReason.answered else "RE:wrong_answer"
    if kind is ErrorType.ME:
        detail = trajectory.termination_cause
        return f"ME:{stop.value}:{detail}" if detail else f"ME:{stop.value}"
    where = "misuse" if stop is StopReason.answered else stop.value
    detail = bad[-1] if bad else None
    return f"TE:{where}:{detail}" if detail and detail != where else f"TE:{where}"


def classify_episode(
    trajectory: Trajectory,
    correct: bool,
    golds: Sequence[str],
    evidence: Sequence[str] | None = None,
    *,
    question: str = "",
    premise_check: bool = False,
    premise_tools: Sequence[str] = (),
    references: References | None = None,
    strict: bool = False,
) -> tuple[ErrorType, str, StopReason, str | None]:
    """Label one graded episode: ``(label, cause, stop reason, sub-cause)``, by the codebook
    (``docs/taxonomy.md``), or with ``strict`` by raleval's stricter reading (any invalid call
    is TE; a failed search's suggested titles are not scratchpad; a PAL answer is grounded
    only through its data flow, right or wrong), kept as a second, named column.

    ``premise_check``: the task has no answer to find (false premise, unanswerable), so any
    successful tool call is evidence unless ``evidence`` names what must have been seen; with
    ``premise_tools`` (the tool of the gold plan's deciding call), only a call to one of them
    whose keys were not made up (:func:`premise_checked`).
    ``evidence`` (the values a computed answer reads) must all have been seen; of ``golds``
    (aliases of one answer) one is enough. ``references``: the arguments each tool declares
    to name an earlier result (:func:`invalid_calls`).
    """
    stop = stop_reason(trajectory)
    sub = "harness_limit" if stop in HARNESS_LIMITS else None
    useful = _useful(
        trajectory, correct, golds, evidence, question, premise_check, premise_tools,
        references, stop, strict,
    )  # fmt: skip
    if strict:
        bad = invalid_calls(trajectory, question, references)
    else:
        bad = misuse_interrupted(trajectory, question, references)
    kind = label(correct, useful, stop, bool(bad))
    return kind, _cause(kind, stop, trajectory, bad), stop, sub


def classify(
    trajectory: Trajectory,
    golds: Sequence[str],
    threshold: float | None = None,
    evidence: Sequence[str] | None = None,
) -> tuple[ErrorType, str]:
    """Label a trajectory graded as an entity answer (``raleval.analysis.scoring`` grades by
    the task's type). With ``threshold``, an answer counts as correct at that token F1 (R-Eval's
    code: :data:`REVAL_THRESHOLD`) instead of by an entity match."""
    from raleval.grading.metrics import f1_score
    from raleval.grading.rules import entity_match

    if threshold is not None:
        correct = f1_score(trajectory.answer, golds) >= threshold
    else:
        correct = entity_match(trajectory.answer, golds)
    kind, cause, _, _ = classify_episode(trajectory, correct, golds, evidence)
    return kind, cause
