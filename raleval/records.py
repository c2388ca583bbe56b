"""Typed, versioned records: tasks, steps, trajectories and run headers.

Every record forbids unknown fields so that a typo in a hand-written task file or a schema drift
between versions fails loudly instead of silently dropping data.
"""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from raleval.answers import AnswerType, infer_answer_type, list_elements

SCHEMA_VERSION = 1

__all__ = ["AnswerType"]  # re-exported: records are where users look for record types


class Record(BaseModel):
    """Base of every persisted record."""

    model_config = ConfigDict(extra="forbid", use_enum_values=False)


class Level(str, Enum):
    """R-Eval's cognitive levels."""

    KS = "KS"  # knowledge seeking
    KU = "KU"  # knowledge understanding
    KA = "KA"  # knowledge application


class OutcomeKind(str, Enum):
    """How one step of an episode went."""

    ok = "ok"
    tool_fault = "tool_fault"  # the tool backend failed (outside the agent's control)
    misuse = "misuse"  # unknown tool, wrong or missing arguments
    parse_error = "parse_error"  # the model output could not be parsed into an action
    llm_error = "llm_error"  # the model backend failed or returned nothing


class Termination(str, Enum):
    """Why an episode ended."""

    finished = "finished"
    step_limit = "step_limit"
    cost_limit = "cost_limit"  # the episode spent its budget (max_cost_usd)
    context_limit = "context_limit"
    llm_error = "llm_error"
    tool_fault = "tool_fault"
    invalid_format = "invalid_format"
    program_error = "program_error"  # PAL: the model-written program raised
    timeout = "timeout"
    interrupted = "interrupted"  # the run was stopped (Ctrl-C) while the episode ran
    harness_error = "harness_error"  # a bug in raleval itself; recorded, never swallowed


class ErrorType(str, Enum):
    """R-Eval's error taxonomy (see ``raleval.analysis.taxonomy``)."""

    EM = "EM"
    AM = "AM"
    GE = "GE"
    RE = "RE"
    TE = "TE"
    ME = "ME"


class StopReason(str, Enum):
    """Why an episode stopped, by cause (``raleval.analysis.taxonomy.stop_reason`` derives it
    from the termination and its cause for records written before it existed)."""

    answered = "answered"
    step_budget = "step_budget"
    time_budget = "time_budget"  # wall clock: a harness limit (a slower machine trips it sooner)
    token_budget = "token_budget"  # the configured prompt-token budget (max_context_tokens)
    cost_budget = "cost_budget"  # the configured money budget (max_cost_usd)
    context_overflow = "context_overflow"  # the model's own context window: a harness limit
    tool_failure = "tool_failure"
    model_failure = "model_failure"
    unparseable_output = "unparseable_output"
    program_error = "program_error"  # a model-written program parsed, ran and raised (PAL)
    policy_violation = "policy_violation"  # e.g. a PAL program the sandbox refused
    harness_failure = "harness_failure"  # a raleval bug or an interrupted run


class ToolCall(Record):
    """One call of a named tool with keyword arguments."""

    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class TaskTags(Record):
    question_type: str | None = None
    popularity: Literal["head", "torso", "tail"] | None = None
    dynamism: str | None = None
    answerable: bool = True


class KeyPoint(Record):
    """One fact a long-form answer should state (RAGEval's key points), typed and taken from
    the world, so whether an answer covers or contradicts it is decided by rules
    (``raleval.keypoints``) rather than by a model."""

    slot: str  # what the fact is: "citations", "phd_year", "interest"
    kind: Literal["entity", "number", "year", "member"]  # member: one element of a list
    value: str
    aliases: list[str] = Field(default_factory=list)
    # Words that name the slot in text ("cited", "citations"): a different value of the same
    # kind next to one of them contradicts the key point. Matched as word prefixes.
    cues: list[str] = Field(default_factory=list)
    # The values the slot can take in the world (positions, genders), for an entity slot: an
    # answer naming another of them next to a cue contradicts it. Empty: an entity can only be
    # covered or missed, never contradicted by rule.
    choices: list[str] = Field(default_factory=list)
    statement: str  # the fact as one sentence, as the reference text states it


class Task(Record):
    """One question for an agent, with its gold answers and (for generated tasks) solution."""

    schema_version: int = SCHEMA_VERSION
    id: str
    domain: str
    level: Level
    family: str
    question: str
    answers: list[str] = Field(min_length=1)
    query_time: datetime | None = None
    tags: TaskTags = Field(default_factory=TaskTags)
    solution: list[ToolCall] | None = None
    # What a tool must have returned for a right answer to count as grounded (EM, not AM),
    # when the answer itself need not appear (yes/no, choices, counts): defaults to answers.
    evidence: list[str] | None = None
    metric: str = "f1"  # the family's primary metric (a registered metric name)
    metadata: dict[str, Any] = Field(default_factory=dict)
    # How the answer is graded (raleval.grading.rules). Missing in files written before answer
    # types: inferred from the gold, metric and question type, and the file reader warns.
    answer_type: AnswerType | None = None
    # For a list answer: one entry per gold element, each the element's aliases.
    elements: list[list[str]] | None = None
    # For a long-form answer (answer type long_form): the facts it should state, 3-8, and the
    # reference text (also ``answers[0]``, what token F1, ROUGE-L and BLEU compare against).
    key_points: list[KeyPoint] | None = None

    @model_validator(mode="after")
    def _fill_answer_type(self) -> Task:
        if self.answer_type is None and self.key_points:
            self.answer_type = AnswerType.long_form
        if self.answer_type is None:
            self.answer_type = infer_answer_type(
                self.question, self.answers, self.metric, self.tags.question_type
            )
        if self.answer_type is AnswerType.list and not self.elements:
            self.elements = list_elements(self.answers)
        return self


class AgentSpec(Record):
    """The system under test: a workflow driven by a model on an environment."""

    workflow: str
    model: str
    env: str


class LLMCall(Record):
    """One model call. ``prompt`` holds only the text added since the previous call of the
    episode (the full prompt for the first), so growing ReAct scratchpads are stored once."""

    prompt: str
    prompt_is_delta: bool = False
    output: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    # the prompt tokens a token budget counted for this call before sending it (all of them,
    # or with episode_tokens_count "new" those a prefix cache could not serve); None: no budget
    budget_prompt_tokens: int | None = None
    latency_s: float = 0.0
    server_time_s: float | None = None
    cache_hit: bool = False
    error: str | None = None
    # The harness's share of failures (issue 58), set as the call is recorded; None in files
    # written before they were (raleval.analysis.format_failures derives them there).
    # finish_reason: the server's ("length": cut at max_tokens; None where it said nothing)
    finish_reason: str | None = None
    cut: bool | None = None  # cut at max_tokens (or at the reply's character bound)
    unparseable: bool | None = None  # the workflow recorded its output as not parsing
    repeated: bool | None = None  # it made a tool call already made in the episode


class Step(Record):
    """One agent action and what the environment answered."""

    index: int
    thought: str | None = None
    tool: str | None = None
    arguments: dict[str, Any] | None = None
    raw_action: str | None = None
    observation: str | None = None
    kind: OutcomeKind = OutcomeKind.ok
    cause: str | None = None
    latency_s: float = 0.0
    cached: bool = False


class Trajectory(Record):
    """A finished episode: everything the analysis needs, without re-running anything."""

    schema_version: int = SCHEMA_VERSION
    task_id: str
    epoch: int = 0
    agent: AgentSpec
    steps: list[Step] = Field(default_factory=list)
    llm_calls: list[LLMCall] = Field(default_factory=list)
    answer: str | None = None
    termination: Termination
    termination_cause: str | None = None
    started_at: datetime
    wall_time_s: float
    model_time_s: float = 0.0
    tool_time_s: float = 0.0
    n_llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # prompt tokens the server computed (its prompt tokens less those it served from its
    # prefix cache); None in files written before it was recorded
    uncached_prompt_tokens: int | None = None
    # what ``max_episode_tokens`` counted (its ``episode_tokens_count``); None without a budget
    budget_tokens: int | None = None
    # US dollars the episode's tokens cost at the model's price (raleval.agents.pricing);
    # None: the price is unknown (and in files written before costs were recorded).
    cost_usd: float | None = None
    # A model on this machine (priced at 0): the compute its calls took, in CPU seconds of the
    # embedded llama.cpp server's process, else the compute time a server reports, else the
    # calls' wall time.
    compute_s: float | None = None
    scores: dict[str, float] = Field(default_factory=dict)
    error_type: ErrorType | None = None
    error_cause: str | None = None
    # Set by scoring beside the label (the codebook's, docs/taxonomy.md): raleval's stricter
    # reading, a second named column and never the label (any invalid call is TE; a failed
    # search's suggested titles are not scratchpad; a PAL answer reads tools only by data flow).
    strict_error_type: ErrorType | None = None
    strict_error_cause: str | None = None
    # Set by scoring: the stop reason, and "harness_limit" beside the label when the episode was
    # cut by the machine (wall clock, context window), so a slower machine never hides in a label.
    stop_reason: StopReason | None = None
    error_subcause: str | None = None
    # Set by the runner: the infrastructure cause when the episode failed for a reason outside
    # the model (connection refused, 5xx, timeouts after retries, a harness bug); such episodes
    # are retried by ``--retry-failed`` and left out of the scores (``raleval.failures``).
    failure: str | None = None
    # 0 for the first attempt at (task, epoch); a retry appends a line with the next number,
    # and the last attempt per (task, epoch) is the one that counts.
    attempt: int = 0
    extra: dict[str, Any] = Field(default_factory=dict)


# The issue text calls the persisted episode a "Result"; both names refer to one record.
Result = Trajectory


class RunHeader(Record):
    """First record of a run directory: what produced the results next to it."""

    schema_version: int = SCHEMA_VERSION
    raleval_version: str
    git_revision: str | None = None
    created_at: datetime
    config: dict[str, Any]
    fingerprint: str
    seeds: dict[str, int] = Field(default_factory=dict)
    decoding: dict[str, Any] = Field(default_factory=dict)
    dataset_hash: str
    n_tasks: int
    python: str
    platform: str
    # The exact prompts of the run: the workflow's template and the demonstration tasks
    # (ids per family) with their rendered text (see raleval.app.plan.run_prompts).
    prompts: dict[str, Any] = Field(default_factory=dict)
    # How the run's tasks were chosen beyond --limit: at a context window (-W
    # max_context_tokens), the tasks whose answers the workflow cannot show are left out
    # (raleval.app.views.fit_pool): the window, the pool, how many were kept, their ids.
    task_selection: dict[str, Any] = Field(default_factory=dict)
