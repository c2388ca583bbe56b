"""The workflow contract: a class with its own pydantic config that compiles one graph per run.

A workflow knows how to drive a model over an environment's tools (``build``), how a solved task
looks in its own format (``render_example``, for k-shot prompts) and how a scripted oracle
answers one of its requests (``gold_reply``); nothing outside it branches on its name. Options
are validated against the workflow's own config class, so an option another workflow uses is
an error that names this one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from raleval.config import ConfigError
from raleval.model import TOOL_CALL_MODES, Capabilities, GenerateRequest
from raleval.records import ToolCall

# The context a model without a declared window gets (a scripted model). Large enough for the
# biggest default observation (a year of CRAG's daily price bars, ~7k tokens) beside the
# 38-tool prompt, so the oracle solves every default task; real models declare their own.
DEFAULT_CONTEXT_TOKENS = 16384


class WorkflowConfig(BaseModel):
    """Budgets and decoding every workflow has (R-Eval defaults)."""

    model_config = ConfigDict(extra="forbid")

    time_limit_s: float = Field(600.0, gt=0)
    temperature: float = Field(0.0, ge=0)
    # One cap for every call of every workflow (a PAL program included): each workflow's
    # decoding ends a reply after one action (a stop, one fenced program, a schema of one call
    # or one plan), so the cap only stops a reply that runs away.
    max_tokens: int = Field(256, ge=1)
    max_context_tokens: int | None = Field(None, ge=256)
    # US dollars an episode may spend on tokens (at the model's price): once spent, the
    # episode makes no further model call and stops as a budget stop (cost_budget).
    max_cost_usd: float | None = Field(None, gt=0)
    # Tokens (prompt, cached ones included, + completion, as the server reports them) an
    # episode may spend: a hard cap the harness checks before every model call whatever the
    # workflow (the matched-compute arm gives every workflow the same budget, issue 48). A call
    # whose prompt and max_tokens could pass it is not sent: the episode stops as a budget
    # stop (cost_limit, cause "episode_tokens"); docs/running.md, "Token budgets".
    max_episode_tokens: int | None = Field(None, ge=1)
    # What the budget counts. "all": every prompt token, cached or not, + completion (a cap
    # that holds on any server). "new": the prompt tokens a prefix cache could not serve + the
    # completion: the part of a request not shared with the episode's previous one (its first
    # request: the part not in the workflow's fixed first request, ``fixed_prompt_tokens``);
    # the tokens a server with a prefix cache computes, counted the same on every server.
    episode_tokens_count: Literal["all", "new"] = "all"
    # family -> tokens of the workflow's first request with an empty question (instructions,
    # tool schemas, demonstrations, template): set by the run's budget check, read by "new"
    fixed_prompt_tokens: dict[str, int] = Field(default_factory=dict)
    # An observation longer than this (tokens) is cut with a visible marker; whatever the
    # setting, one is cut to fit what is left of the context (so no prompt overflows it).
    max_obs_tokens: int | None = Field(None, ge=16)
    prompt_file: str | None = None
    # k-shot: ``shots`` demonstration tasks of each task's own family, from a pool disjoint
    # from the tasks under test; the same tasks for every workflow, each rendered in the
    # workflow's own format by the runner (``demonstrations``: family -> rendered texts).
    shots: int = Field(1, ge=0, le=16)
    demonstrations: dict[str, list[str]] = Field(default_factory=dict)
    demonstration_ids: dict[str, list[str]] = Field(default_factory=dict)
    # family -> the demonstrations' answers: an answer equal to one is flagged as copied
    demonstration_answers: dict[str, list[str]] = Field(default_factory=dict)
    examples: list[str] = Field(default_factory=list)  # for a family without its own


def tool_call_decoding(capabilities: Capabilities, parallel: bool = False) -> str:
    """The decoding of a tool-calling workflow's turns with a model of ``capabilities``."""
    mode = capabilities.tool_calls
    calls = "several calls a turn (parallel_calls)" if parallel else "one call a turn"
    return f"tool calls: {mode}, {TOOL_CALL_MODES.get(mode, 'undeclared')}; {calls}"


def workflow_flags(options: dict[str, Any]) -> tuple[list[str], str]:
    """The keys of a model's options (``-M``) that are workflow options, and the ``-W`` flags
    that set them: decoding and budgets are set per workflow, which sends them with every
    request, so no model takes them."""
    keys = [k for k in options if k in WorkflowConfig.model_fields]
    return keys, " ".join(f"-W {k}={options[k]}" for k in keys)


@dataclass(frozen=True)
class SolvedExample:
    """A task with its gold calls already run: what a k-shot example is rendered from."""

    question: str
    calls: list[tuple[Any, str]]  # (ToolCall, observation)
    answer: str
    answer_expr: str | None = None  # how the answer follows from results r0, r1, ... (PAL)


@dataclass(frozen=True)
class GoldPlan:
    """What a scripted oracle plays back: the gold calls, then the answer; ``answer_expr``
    computes the answer from the calls' results (PAL writes it as the program's last line)."""

    calls: list[ToolCall]
    answer: str
    answer_expr: str | None = None


class Workflow:
    """Base of every workflow; subclasses set ``name`` and ``Config`` and implement ``build``."""

    name: ClassVar[str] = "workflow"
    Config: ClassVar[type[WorkflowConfig]] = WorkflowConfig
    # Whether an episode can start from given steps (the graph's input ``prefix``: a list of
    # ``Step``; a replay is an ordinary episode that starts there, see docs/diagnosis.md).
    accepts_prefix: ClassVar[bool] = False

    def __init__(self, config: WorkflowConfig | None = None) -> None:
        self.config = config if config is not None else self.Config()

    @classmethod
    def configure(cls, options: dict[str, Any]) -> Workflow:
        """The workflow with ``options`` (``-W key=value``) validated by its own config."""
        try:
            return cls(cls.Config(**options))
        except ValidationError as exc:
            problems = []
            for err in exc.errors():
                key = ".".join(str(p) for p in err["loc"]) or "options"
                if err["type"] == "extra_forbidden":
                    problems.append(f"{cls.name} has no option {key!r}")
                else:
                    problems.append(f"{key}: {err['msg']}")
            valid = ", ".join(sorted(cls.Config.model_fields))
            raise ConfigError(
                f"invalid workflow option: {'; '.join(problems)}. Options of {cls.name}: {valid}"
            ) from None

    def with_config(self, **changes: Any) -> Workflow:
        """The same workflow with some config fields replaced."""
        return type(self)(self.config.model_copy(update=changes))

    def build(self, model: Any, env: Any) -> Any:
        """The compiled graph for ``model`` on ``env``'s tools (once per run; what differs per
        episode arrives in LangGraph's ``configurable``)."""
        raise NotImplementedError

    def decoding(self, capabilities: Capabilities) -> str:
        """How this workflow's model calls are decoded for a model of ``capabilities``: what
        ends a reply after one action (the run header and ``raleval run`` say it)."""
        return f"free text, cut at max_tokens={self.config.max_tokens}"

    def preflight(self) -> None:
        """Refuse, with a message, to run where this workflow cannot (e.g. no sandbox)."""

    def recursion_limit(self) -> int:
        """LangGraph super-steps an episode may need."""
        return 50

    def render_example(self, example: SolvedExample, env: Any) -> str:
        """A solved task in this workflow's own trace format (k-shot prompts)."""
        raise ConfigError(f"workflow {self.name!r} does not take k-shot examples")

    def shown_observations(self, request: GenerateRequest) -> list[str] | None:
        """The tools' observations as ``request`` shows them to the model (after the
        workflow's observation budget): what the scripted oracle may answer from. By default
        the tool messages of a native tool-calling conversation; None for a workflow whose
        model reads no observation (its answer is not limited by a view)."""
        return [m.content for m in request.messages if m.role == "tool"]

    def gold_reply(
        self, request: GenerateRequest, plan: GoldPlan, env: Any
    ) -> tuple[str, list[ToolCall]]:
        """What a model that follows ``plan`` answers to ``request``, in this workflow's
        format: the text and the native tool calls (the scripted oracle's reply)."""
        raise NotImplementedError(f"workflow {self.name!r} has no scripted-oracle format")
