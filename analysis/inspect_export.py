"""A raleval run written as an Inspect AI eval log (``raleval export --format inspect``).

One sample per episode, through inspect-ai's own log types and ``write_eval_log``: the system
prompt and demonstrations, the literal model text with its parsed call, a span per step
holding its model event (the prompt raleval sent, the output, usage, time) and tool event,
score events per metric, infrastructure failures as sample errors, budget stops as limits;
usage and timing in the stats; each metric's mean with its clustered 95% interval in the
results. The model is named ``none/<model>`` (Inspect's provider for "no model to call") so
``inspect score`` needs no ``--model``. The other way: :mod:`raleval.analysis.inspect_log`.

Needs the ``inspect`` extra, imported on first use.
"""

from __future__ import annotations

import re
from collections import defaultdict
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from raleval.analysis.inspect_log import require_inspect
from raleval.analysis.runs import Run, unit_interval
from raleval.failures import failure_cause
from raleval.records import LLMCall, OutcomeKind, Step, StopReason, Trajectory

# Inspect names JSON logs by this pattern (``inspect log list`` and ``inspect view`` show a
# .json log only when its name matches); .eval logs are named the same way.
_ID_CHARS = "23456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def task_name(run: Run) -> str:
    """The Inspect task name of a run: ``raleval/<env>/<workflow>/<model>``."""
    first = run.results[0] if run.results else None
    if first is None:
        return f"raleval/{run.path.name}"
    a = first.agent
    return f"raleval/{a.env}/{a.workflow}/{a.model}"


def inspect_model(model: str) -> str:
    """A raleval model's name in Inspect: under Inspect's provider for "no model to call",
    since ``inspect score`` rebuilds the log's model from its name and raleval's own specs
    (``scripted/oracle``, a llama.cpp path) name no Inspect provider."""
    return f"none/{model}"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-")


def inspect_file_name(run: Run, suffix: str = ".eval") -> str:
    """``<created>_<task>_<id>.eval``, Inspect's own naming, so ``inspect log list`` and
    ``inspect view`` list the file (a .json log is listed only under such a name). The id is
    derived from the run directory's path, so one run's name is the same at every export."""
    import hashlib

    created = _created(run)
    stamp = created.strftime("%Y-%m-%dT%H-%M-%S") + "-00-00"
    digest = int(hashlib.sha256(str(run.path.resolve()).encode()).hexdigest(), 16)
    rid = "".join(_ID_CHARS[(digest >> (6 * i)) % len(_ID_CHARS)] for i in range(22))
    return f"{stamp}_{_slug(task_name(run).removeprefix('raleval/'))}_{rid}{suffix}"


def _created(run: Run) -> datetime:
    if run.header is not None:
        created = run.header.created_at
    elif run.results:
        created = min(t.started_at for t in run.results)
    else:
        created = datetime.now(timezone.utc)
    return created if created.tzinfo else created.replace(tzinfo=timezone.utc)


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def full_prompts(calls: list[LLMCall]) -> list[str]:
    """Each call's whole prompt from the stored deltas (:class:`LLMCall` keeps only what was
    added since the previous call, with or without that call's output). The record does not
    say which: a delta that starts with the previous output was cut after the prompt alone."""
    prompts: list[str] = []
    previous, output = "", ""
    for call in calls:
        if not call.prompt_is_delta:
            text = call.prompt
        elif output and not call.prompt.startswith(output):
            text = previous + output + call.prompt
        else:
            text = previous + call.prompt
        prompts.append(text)
        previous, output = text, call.output
    return prompts


_ROLE = re.compile(r"(?:^|\n)(system|user|assistant|tool): ", re.MULTILINE)


def _prompt_messages(prompt: str) -> list[Any]:
    """A prompt as chat messages: a chat workflow's prompt is stored as ``role: text`` blocks
    (the roles are split out again); a text workflow's prompt is one user message."""
    from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageUser

    kinds = {
        "system": ChatMessageSystem,
        "user": ChatMessageUser,
        "assistant": ChatMessageAssistant,
        "tool": ChatMessageUser,  # its call id is not in the text: shown as what came back
    }
    if not prompt.startswith(("system: ", "user: ")):
        return [ChatMessageUser(content=prompt)]
    parts = _ROLE.split(prompt)
    out = []
    for role, text in zip(parts[1::2], parts[2::2], strict=True):
        out.append(kinds[role](content=text.strip("\n") or "(empty)"))
    return out


def _system_text(run: Run, t: Trajectory, question: str, prompt: str | None) -> str | None:
    """The instructions and demonstrations the episode's first prompt held before the
    question: a chat prompt's system block, a text prompt's text up to the question."""
    if not prompt:
        return None
    if prompt.startswith("system: "):
        first = _prompt_messages(prompt)[0]
        return first.text
    at = prompt.rfind(question) if question else -1
    head = prompt[:at] if at > 0 else prompt
    head = re.sub(r"Question:\s*$", "", head).rstrip()
    return head or None


def _tool_call(step: Step, call_id: str) -> Any:
    from inspect_ai.tool import ToolCall

    return ToolCall(id=call_id, function=step.tool or "", arguments=dict(step.arguments or {}))


def _tool_error(step: Step) -> Any:
    from inspect_ai.tool import ToolCallError

    if step.kind is OutcomeKind.misuse:
        return ToolCallError(type="parsing", message=step.observation or step.cause or "")
    if step.kind is OutcomeKind.tool_fault:
        return ToolCallError(type="unknown", message=step.observation or step.cause or "")
    return None


def _tool_result(t: Trajectory, step: Step) -> str:
    if step.observation is not None:
        return step.observation
    if step.tool == "Finish":  # Finish has no observation in raleval: answer it as Inspect's submit
        return t.answer or ""
    return ""


def _literal(step: Step) -> str:
    """What the model wrote for a step: a ReAct thought and its action line as written."""
    parts = [p for p in (step.thought, step.raw_action) if p]
    return "\n".join(parts)


def _messages(run: Run, t: Trajectory, question: str, prompts: list[str]) -> list[Any]:
    from inspect_ai.model import (
        ChatMessageAssistant,
        ChatMessageSystem,
        ChatMessageTool,
        ChatMessageUser,
    )

    messages: list[Any] = []
    system = _system_text(run, t, question, prompts[0] if prompts else None)
    if system:
        messages.append(ChatMessageSystem(content=system))
    messages.append(ChatMessageUser(content=question))
    for s in t.steps:
        if s.tool is None:  # no action: what the model wrote, and what the harness said
            if s.kind is OutcomeKind.llm_error:
                continue  # the model event carries the failure
            messages.append(ChatMessageAssistant(content=_literal(s) or "(no action)"))
            if s.observation:
                messages.append(ChatMessageUser(content=s.observation))
            continue
        call_id = f"step-{s.index}"
        messages.append(
            ChatMessageAssistant(content=_literal(s), tool_calls=[_tool_call(s, call_id)])
        )
        messages.append(
            ChatMessageTool(
                content=_tool_result(t, s),
                tool_call_id=call_id,
                function=s.tool,
                error=_tool_error(s),
            )
        )
    if t.answer is not None:
        messages.append(ChatMessageAssistant(content=t.answer))
    return messages


def _group_steps(t: Trajectory) -> list[tuple[int | None, list[Step]]]:
    """Which steps each model call produced: a function call per step of a call with tool
    calls, one step per text call; steps past the last call (a PAL program's tool calls) stay
    with the last call. The record does not link them, so this is by order."""
    groups: list[tuple[int | None, list[Step]]] = []
    steps = list(t.steps)
    for i, call in enumerate(t.llm_calls):
        take = max(1, len(call.tool_calls)) if not call.error or steps else 0
        groups.append((i, steps[:take]))
        steps = steps[take:]
    if steps:
        if groups:
            last, taken = groups[-1]
            groups[-1] = (last, taken + steps)
        else:
            groups.append((None, steps))
    return groups


_LIMITS = {
    StopReason.step_budget: "turn",
    StopReason.time_budget: "time",
    StopReason.token_budget: "token",
    StopReason.cost_budget: "cost",
    StopReason.context_overflow: "token",
}


def _config_limit(run: Run, kind: str) -> float:
    config = run.header.config if run.header else {}
    options = config.get("workflow_options") or {}
    keys = {
        "turn": ("max_steps",),
        "time": ("time_limit_s",),
        "token": ("max_context_tokens", "max_episode_tokens"),
        "cost": ("max_cost_usd",),
    }[kind]
    for key in keys:
        for source in (options, config):
            value = source.get(key)
            if isinstance(value, (int, float)):
                return float(value)
    return 0.0


def _events_and_limit(
    run: Run, t: Trajectory, question: str, target: list[str], prompts: list[str]
) -> tuple[list[Any], Any]:
    from inspect_ai._util.error import EvalError
    from inspect_ai.dataset import Sample
    from inspect_ai.event import (
        ErrorEvent,
        InfoEvent,
        ModelEvent,
        SampleInitEvent,
        SampleLimitEvent,
        ScoreEvent,
        SpanBeginEvent,
        SpanEndEvent,
        ToolEvent,
    )
    from inspect_ai.log import EvalSampleLimit
    from inspect_ai.model import (
        ChatCompletionChoice,
        ChatMessageAssistant,
        GenerateConfig,
        ModelOutput,
        ModelUsage,
    )
    from inspect_ai.tool import ToolCall

    start = _aware(t.started_at)
    clock = 0.0  # seconds into the episode, by the recorded latencies

    def at() -> dict[str, Any]:
        return {"timestamp": start + timedelta(seconds=clock), "working_start": clock}

    events: list[Any] = [
        SpanBeginEvent(id="init", type="init", name="init", **at()),
        SampleInitEvent(
            sample=Sample(id=t.task_id, input=question, target=target),
            state={"messages": [], "output": {}},
            span_id="init",
            **at(),
        ),
        SpanEndEvent(id="init", span_id="init", **at()),
        SpanBeginEvent(id="solvers", type="solvers", name=t.agent.workflow, **at()),
    ]
    for n, (call_index, steps) in enumerate(_group_steps(t)):
        span = f"step-{n}"
        events.append(SpanBeginEvent(id=span, parent_id="solvers", type="step", name=span, **at()))
        if call_index is not None:
            call = t.llm_calls[call_index]
            calls = [
                ToolCall(id=f"call-{call_index}-{k}", function=c.tool, arguments=c.arguments)
                for k, c in enumerate(call.tool_calls)
            ]
            usage = ModelUsage(
                input_tokens=call.prompt_tokens or 0,
                output_tokens=call.completion_tokens or 0,
                total_tokens=(call.prompt_tokens or 0) + (call.completion_tokens or 0),
                input_tokens_cache_read=call.cached_tokens,
            )
            output = ModelOutput(
                model=t.agent.model,
                choices=[
                    ChatCompletionChoice(
                        message=ChatMessageAssistant(
                            content=call.output, tool_calls=calls or None, model=t.agent.model
                        ),
                        stop_reason="tool_calls" if calls else "stop",
                    )
                ]
                if call.error is None or call.output
                else [],
                usage=usage,
                time=call.latency_s,
                error=call.error,
            )
            begin = at()
            clock += call.latency_s
            events.append(
                ModelEvent(
                    model=inspect_model(t.agent.model),
                    input=_prompt_messages(prompts[call_index]),
                    tools=[],
                    tool_choice="auto",
                    config=GenerateConfig(),
                    output=output,
                    error=call.error,
                    cache="read" if call.cache_hit else None,
                    completed=start + timedelta(seconds=clock),
                    working_time=call.latency_s,
                    span_id=span,
                    **begin,
                )
            )
        for s in steps:
            if s.tool is None:
                if s.kind is not OutcomeKind.llm_error:
                    events.append(
                        InfoEvent(
                            source="raleval",
                            data={"step": s.index, "kind": s.kind.value, "cause": s.cause,
                                  "text": _literal(s), "observation": s.observation},
                            span_id=span,
                            **at(),
                        )
                    )  # fmt: skip
                continue
            begin = at()
            clock += s.latency_s
            events.append(
                ToolEvent(
                    id=f"step-{s.index}",
                    function=s.tool,
                    arguments=dict(s.arguments or {}),
                    result=_tool_result(t, s),
                    error=_tool_error(s),
                    completed=start + timedelta(seconds=clock),
                    working_time=s.latency_s,
                    span_id=span,
                    **begin,
                )
            )
        events.append(SpanEndEvent(id=span, span_id=span, **at()))
    clock = max(clock, t.wall_time_s)
    limit = None
    kind = _LIMITS.get(t.stop_reason) if t.stop_reason else None
    if kind is not None:
        value = _config_limit(run, kind)
        reason = t.stop_reason.value if t.stop_reason else None
        events.append(
            SampleLimitEvent(
                type=kind,
                message=f"{reason} ({t.termination.value}: {t.termination_cause or '-'})",
                limit=value or None,
                span_id="solvers",
                **at(),
            )
        )
        limit = EvalSampleLimit(type=kind, limit=value, reason=reason)
    events.append(SpanEndEvent(id="solvers", span_id="solvers", **at()))
    failure = failure_cause(t)
    if failure is not None:
        error = EvalError(
            message=f"{failure}: {t.termination.value} ({t.termination_cause or '-'})",
            traceback="",
            traceback_ansi="",
        )
        events.append(ErrorEvent(error=error, **at()))
    else:
        events.append(SpanBeginEvent(id="scorers", type="scorers", name="scorers", **at()))
        for name, score in _scores(t).items():
            events.append(
                ScoreEvent(score=score, target=target, scorer=name, span_id="scorers", **at())
            )
        events.append(SpanEndEvent(id="scorers", span_id="scorers", **at()))
    return events, limit


def _scores(t: Trajectory) -> dict[str, Any]:
    """One Inspect Score per raleval metric; the label and its cause ride on ``correct``."""
    from inspect_ai.scorer import Score

    scores = {}
    for name, value in sorted(t.scores.items()):
        meta = None
        if name == "correct":
            meta = {
                "label": t.error_type.value if t.error_type else None,
                "cause": t.error_cause,
                "stop_reason": t.stop_reason.value if t.stop_reason else None,
            }
        scores[name] = Score(
            value=float(value),
            answer=t.answer,
            explanation=t.error_cause if name == "correct" else None,
            metadata=meta,
        )
    return scores


def _sample(run: Run, t: Trajectory) -> Any:
    from inspect_ai._util.error import EvalError
    from inspect_ai.log import EvalSample
    from inspect_ai.model import ModelOutput, ModelUsage

    task = run.tasks.get(t.task_id)
    question = task.question if task else ""
    target = list(task.answers) if task else []
    prompts = full_prompts(t.llm_calls)
    events, limit = _events_and_limit(run, t, question, target, prompts)
    failure = failure_cause(t)
    start = _aware(t.started_at)
    usage = ModelUsage(
        input_tokens=t.prompt_tokens,
        output_tokens=t.completion_tokens,
        total_tokens=t.prompt_tokens + t.completion_tokens,
        total_cost=t.cost_usd,
    )
    return EvalSample(
        id=t.task_id,
        epoch=t.epoch + 1,
        input=question,
        target=target,
        messages=_messages(run, t, question, prompts),
        output=ModelOutput.from_content(model=t.agent.model, content=t.answer or ""),
        scores=None if failure else _scores(t),
        metadata={
            "family": task.family if task else None,
            "level": task.level.value if task else None,
            "domain": task.domain if task else None,
            "termination": t.termination.value,
            "termination_cause": t.termination_cause,
            "label": t.error_type.value if t.error_type else None,
            "cause": t.error_cause,
            "stop_reason": t.stop_reason.value if t.stop_reason else None,
            "failure": failure,
            "attempt": t.attempt,
        },
        events=events,
        model_usage={inspect_model(t.agent.model): usage},
        started_at=start.isoformat(),
        completed_at=(start + timedelta(seconds=t.wall_time_s)).isoformat(),
        total_time=t.wall_time_s,
        working_time=t.model_time_s + t.tool_time_s,
        error=EvalError(message=events[-1].error.message, traceback="", traceback_ansi="")
        if failure
        else None,
        limit=limit,
    )


def _results(run: Run, cluster: str = "auto") -> tuple[Any, list[Any]]:
    """Each metric's mean over the scored episodes with its clustered 95% interval (task
    means as units, :func:`raleval.analysis.runs.unit_interval`), epochs reduced by the mean,
    and the per-sample reductions."""
    from inspect_ai.log import (
        EvalMetric,
        EvalResults,
        EvalSampleReductions,
        EvalSampleScore,
        EvalScore,
    )

    scored = run.scored
    names = sorted({k for t in scored for k in t.scores})
    epochs = max((t.epoch + 1 for t in run.results), default=1)
    scores, reductions = [], []
    for name in names:
        have = [t for t in scored if name in t.scores]
        values = [float(t.scores[name]) for t in have]
        bounded = all(0.0 <= v <= 1.0 for v in values)
        interval = unit_interval(run, have, lambda t, n=name: t.scores[n], cluster, bounded)
        metrics = {"mean": EvalMetric(name="mean", value=interval.estimate)}
        if interval.low == interval.low:  # NaN: one task or cluster, no spread to measure
            metrics["ci_low"] = EvalMetric(name="ci_low", value=interval.low)
            metrics["ci_high"] = EvalMetric(name="ci_high", value=interval.high)
        scores.append(
            EvalScore(
                name=name,
                scorer=name,
                reducer="mean" if epochs > 1 else None,
                scored_samples=len(have),
                unscored_samples=len(run.results) - len(have),
                metrics=metrics,
                metadata={"interval": "clustered 95%", "cluster": cluster},
            )
        )
        if epochs > 1:
            per_task: dict[str, list[float]] = defaultdict(list)
            for t in have:
                per_task[t.task_id].append(float(t.scores[name]))
            reductions.append(
                EvalSampleReductions(
                    scorer=name,
                    reducer="mean",
                    samples=[
                        EvalSampleScore(value=sum(v) / len(v), sample_id=k)
                        for k, v in sorted(per_task.items())
                    ],
                )
            )
    results = EvalResults(
        total_samples=len(run.results), completed_samples=len(scored), scores=scores
    )
    return results, reductions


def write_inspect_log(run: Run, out: Path) -> Path:
    """An Inspect AI eval log of ``run`` (``.eval`` or ``.json`` by ``out``'s suffix)."""
    require_inspect()
    from inspect_ai.log import (
        EvalConfig,
        EvalDataset,
        EvalLog,
        EvalPlan,
        EvalPlanStep,
        EvalSpec,
        EvalStats,
        write_eval_log,
    )
    from inspect_ai.model import ModelUsage

    header = run.header
    first = run.results[0] if run.results else None
    model = first.agent.model if first else "unknown"
    workflow = first.agent.workflow if first else "raleval"
    created = _created(run)
    samples = [_sample(run, t) for t in run.results]
    usage = ModelUsage(
        input_tokens=sum(t.prompt_tokens for t in run.results),
        output_tokens=sum(t.completion_tokens for t in run.results),
        total_tokens=sum(t.prompt_tokens + t.completion_tokens for t in run.results),
    )
    starts = [_aware(t.started_at) for t in run.results]
    ends = [_aware(t.started_at) + timedelta(seconds=t.wall_time_s) for t in run.results]
    spec = EvalSpec(
        run_id=run.path.name,
        eval_id=inspect_file_name(run).rsplit("_", 1)[1].split(".")[0],
        created=created.isoformat(),
        task=task_name(run),
        task_id=run.path.name,
        task_version=0,
        dataset=EvalDataset(
            name=run.task_set if header else run.path.name,
            samples=len(run.tasks),
            sample_ids=sorted(run.tasks),
        ),
        model=inspect_model(model),
        config=EvalConfig(epochs=max((t.epoch + 1 for t in run.results), default=1)),
        solver=workflow,
        packages={"raleval": header.raleval_version} if header else {},
        metadata={
            "raleval_model": model,
            "raleval_env": first.agent.env if first else None,
            "raleval_config": header.config if header else {},
            "raleval_prompts": header.prompts if header else {},
        },
    )
    results, reductions = _results(run)
    eval_log = EvalLog(
        eval=spec,
        plan=EvalPlan(name=workflow, steps=[EvalPlanStep(solver=workflow)]),
        results=results,
        stats=EvalStats(
            started_at=min(starts).isoformat() if starts else created.isoformat(),
            completed_at=max(ends).isoformat() if ends else created.isoformat(),
            model_usage={inspect_model(model): usage},
        ),
        samples=samples,
        status="success",
    )
    if reductions:  # set after: EvalLog's validator reads a reductions argument as a dict
        eval_log.reductions = reductions
    write_eval_log(eval_log, str(out))
    return out
