"""Inspect AI eval logs read as runs: an ``.eval`` or ``.json`` log of any Inspect task.

Samples (and epochs) are episodes, tool events steps, model events calls, the output's
completion the answer; a sample error is an infrastructure failure (not scored), a limit a
budget stop. Inspect's scores are kept as ``inspect_<scorer>``, and raleval grades every sample
that has a target. :func:`read_inspect_run` gives what :func:`raleval.analysis.runs.load_run`
makes a run of; :func:`inspect_summaries` and :func:`read_inspect_sample` read one sample at a
time for the lazy viewer. The other way: :mod:`raleval.analysis.inspect_export`.

Needs the ``inspect`` extra, imported on first use.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from raleval.analysis.extras import MissingExtraError
from raleval.records import (
    AgentSpec,
    LLMCall,
    OutcomeKind,
    RunHeader,
    Step,
    Task,
    Termination,
    Trajectory,
)

INSPECT_SCORE = "inspect_"  # an Inspect log's own scores: inspect_<scorer>


def require_inspect() -> None:
    """Import inspect-ai, or say which extra installs it."""
    try:
        import inspect_ai.log  # noqa: F401
    except ImportError as exc:
        raise MissingExtraError(
            'Inspect AI logs need inspect-ai: pip install "raleval[inspect]"'
        ) from exc


def is_inspect_log(path: Path | str) -> bool:
    """Whether ``path`` is a file that names an Inspect log (``.eval``, or ``.json`` holding an
    ``"eval"`` header): what ``raleval view/compare/report/table/score`` accept beside runs."""
    path = Path(path)
    if not path.is_file():
        return False
    if path.suffix == ".eval":
        return True
    if path.suffix != ".json":
        return False
    with path.open("rb") as f:
        head = f.read(4096)
    return b'"eval"' in head and b'"status"' in head


def _text(value: Any) -> str:
    """A sample's input (a string or chat messages) or a tool result as text."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(_text(getattr(m, "text", m)) for m in value)
    return str(getattr(value, "text", value))


def _targets(target: Any) -> list[str]:
    if isinstance(target, str):
        return [target] if target.strip() else []
    return [str(x) for x in target if str(x).strip()]


def _float_scores(scores: dict[str, Any] | None) -> dict[str, float]:
    """Inspect's scores as numbers: ``inspect_<scorer>`` (C/I/P/N as 1/0/0.5/0, a dict's
    entries as ``inspect_<scorer>_<key>``); values that are no number are left out."""
    from inspect_ai.scorer import value_to_float

    to_float = value_to_float()
    out: dict[str, float] = {}
    for name, score in (scores or {}).items():
        value = score.value
        items = value.items() if isinstance(value, dict) else [(None, value)]
        for key, v in items:
            try:
                number = to_float(v)
            except (ValueError, TypeError):
                continue
            out[f"{INSPECT_SCORE}{name}" + (f"_{key}" if key else "")] = float(number)
    return out


def _family(eval_task: str, metadata: dict[str, Any]) -> str:
    return str(metadata.get("family") or eval_task)


def sample_task(eval_task: str, sample: Any) -> Task | None:
    """The raleval task of an Inspect sample: its input and target (no target: None, and the
    sample is not graded). Inspect has no levels: KS unless the sample's metadata says."""
    answers = _targets(sample.target)
    if not answers:
        return None
    meta = sample.metadata or {}
    level = meta.get("level") if meta.get("level") in ("KS", "KU", "KA") else "KS"
    return Task(
        id=str(sample.id),
        domain=str(meta.get("domain") or eval_task),
        level=level,
        family=_family(eval_task, meta),
        question=_text(sample.input),
        answers=answers,
        metadata={"inspect": True},
    )


_LIMIT_TERMINATION = {
    "message": Termination.step_limit,
    "turn": Termination.step_limit,
    "time": Termination.timeout,
    "working": Termination.timeout,
    "token": Termination.cost_limit,
    "cost": Termination.cost_limit,
    "context": Termination.context_limit,
}


def sample_trajectory(spec: Any, sample: Any) -> Trajectory:
    """An Inspect sample as a raleval episode: each tool event a step, each model event a call,
    the output's completion the answer, a sample error an infrastructure failure (not scored),
    a limit a budget stop."""
    from inspect_ai.event import ModelEvent, ToolEvent

    steps: list[Step] = []
    calls: list[LLMCall] = []
    model_time = tool_time = 0.0
    for event in sample.events or []:
        if isinstance(event, ModelEvent):
            out = event.output
            usage = out.usage if out else None
            message = out.choices[0].message if out and out.choices else None
            calls.append(
                LLMCall(
                    prompt=_text(event.input[-1:]) if event.input else "",
                    output=out.completion if out else "",
                    prompt_tokens=usage.input_tokens if usage else None,
                    completion_tokens=usage.output_tokens if usage else None,
                    latency_s=event.working_time or 0.0,
                    error=event.error,
                    tool_calls=[
                        {"tool": c.function, "arguments": dict(c.arguments)}
                        for c in (getattr(message, "tool_calls", None) or [])
                    ],
                )
            )
            model_time += event.working_time or 0.0
        elif isinstance(event, ToolEvent):
            error = event.error
            kind = OutcomeKind.ok
            if error is not None:
                kind = OutcomeKind.misuse if error.type == "parsing" else OutcomeKind.tool_fault
            steps.append(
                Step(
                    index=len(steps),
                    tool=event.function,
                    arguments=dict(event.arguments),
                    observation=error.message if error else _text(event.result),
                    kind=kind,
                    cause=f"{'TE' if kind is OutcomeKind.misuse else 'tool'}:{error.type}"
                    if error
                    else None,
                    latency_s=event.working_time or 0.0,
                )
            )
            tool_time += event.working_time or 0.0
    termination, cause, failure = Termination.finished, None, None
    if sample.error is not None:
        termination, cause = Termination.harness_error, "inspect_error"
        failure = f"inspect_error: {sample.error.message[:200]}"
    elif sample.limit is not None:
        termination = _LIMIT_TERMINATION.get(sample.limit.type, Termination.step_limit)
        cause = f"inspect_limit:{sample.limit.type}"
    usage = list((sample.model_usage or {}).values())
    started = sample.started_at or spec.created
    answer = sample.output.completion if sample.output is not None else None
    meta = sample.metadata or {}
    return Trajectory(
        task_id=str(sample.id),
        epoch=max(0, int(sample.epoch) - 1),
        agent=AgentSpec(
            workflow=str(spec.solver or "inspect"),
            model=str((spec.metadata or {}).get("raleval_model") or spec.model),
            env=str((spec.metadata or {}).get("raleval_env") or spec.task),
        ),
        steps=steps,
        llm_calls=calls,
        answer=answer if answer or sample.error is None else None,
        termination=termination,
        termination_cause=cause,
        started_at=started,
        wall_time_s=float(sample.total_time or 0.0),
        model_time_s=model_time,
        tool_time_s=tool_time,
        n_llm_calls=len(calls),
        prompt_tokens=sum(u.input_tokens for u in usage),
        completion_tokens=sum(u.output_tokens for u in usage),
        scores=_float_scores(sample.scores),
        failure=failure,
        attempt=int(meta.get("attempt") or 0) if str(meta.get("attempt", "0")).isdigit() else 0,
        extra={"inspect_uuid": sample.uuid} if sample.uuid else {},
    )


def inspect_header(path: Path, spec: Any, n_tasks: int) -> RunHeader:
    """A run header for an Inspect log: its task, solver and model as the run's config."""
    meta = spec.metadata or {}
    config = dict(meta.get("raleval_config") or {})
    config.setdefault("env", meta.get("raleval_env") or spec.task)
    config.setdefault("tasks", spec.task)
    config.setdefault("workflow", spec.solver or "inspect")
    config.setdefault("model", meta.get("raleval_model") or spec.model)
    config["inspect_log"] = str(path)
    return RunHeader(
        raleval_version=f"inspect_ai {spec.packages.get('inspect_ai', '?')}",
        created_at=spec.created,
        config=config,
        fingerprint=spec.eval_id,
        dataset_hash=spec.dataset.name or "-",
        n_tasks=n_tasks,
        python="-",
        platform="-",
        prompts=dict(meta.get("raleval_prompts") or {}),
    )


def grade(traj: Trajectory, task: Task | None) -> Trajectory:
    """raleval's grading and label for an episode whose sample has a target (in place)."""
    if task is not None:
        from raleval.analysis.scoring import score_trajectory

        kept = {k: v for k, v in traj.scores.items() if k.startswith(INSPECT_SCORE)}
        score_trajectory(traj, task)
        traj.scores.update(kept)
    return traj


def _read_header(path: Path) -> Any:
    """The log's header; a file Inspect cannot read is a RecordFileError naming it."""
    from inspect_ai.log import read_eval_log

    from raleval.store import RecordFileError

    try:
        return read_eval_log(str(path), header_only=True)
    except Exception as exc:  # Inspect's reader raises many kinds: one clear error for all
        raise RecordFileError(f"{path}: not a readable Inspect log ({exc})") from exc


def read_inspect_run(path: Path | str) -> tuple[RunHeader, dict[str, Task], list[Trajectory]]:
    """An Inspect log (``.eval`` or ``.json``) as a run's header, tasks and episodes (one per
    sample and epoch), read one sample at a time from an ``.eval`` file, graded where the
    sample has a target."""
    require_inspect()
    from inspect_ai.log import read_eval_log_samples

    path = Path(path)
    spec = _read_header(path).eval
    tasks: dict[str, Task] = {}
    results: list[Trajectory] = []
    for sample in read_eval_log_samples(str(path), all_samples_required=False):
        task = sample_task(spec.task, sample)
        if task is not None:
            tasks.setdefault(task.id, task)
        results.append(grade(sample_trajectory(spec, sample), task))
    return inspect_header(path, spec, len({t.task_id for t in results})), tasks, results


class Fields(dict):  # type: ignore[type-arg]
    """A JSON object read without Inspect's models, its fields also as attributes (nested
    objects too), as the viewer's list reads a validated summary's."""

    def __getattr__(self, name: str) -> Any:
        return _fields(self.get(name))


def _fields(value: Any) -> Any:
    if isinstance(value, dict) and not isinstance(value, Fields):
        return Fields(value)
    if isinstance(value, list):
        return [_fields(v) for v in value]
    return value


def _journal_number(name: str) -> int:
    stem = name.rsplit("/", 1)[-1].split(".", 1)[0]
    return int(stem) if stem.isdigit() else 0


def raw_summaries(path: Path) -> tuple[Any, list[Any]] | None:
    """An ``.eval`` file's header and sample summaries as plain JSON from its zip, or None
    where the file is not laid out as expected (Inspect's reader then reads it). A finished log
    holds ``header.json`` and ``summaries.json``; one still being written, its journal."""
    if path.suffix != ".eval":
        return None
    import zipfile

    import orjson

    with contextlib.suppress(ImportError):  # Inspect's zstd members, before Python 3.14
        import zipfile_zstd  # noqa: F401
    try:
        with zipfile.ZipFile(path) as z:
            names = set(z.namelist())
            head_name = "header.json" if "header.json" in names else "_journal/start.json"
            head = orjson.loads(z.read(head_name))
            if "summaries.json" in names:
                summaries = orjson.loads(z.read("summaries.json"))
            else:
                chunks = sorted(
                    (n for n in names if n.startswith("_journal/summaries/")),
                    key=_journal_number,
                )
                summaries = [s for n in chunks for s in orjson.loads(z.read(n))]
    except (KeyError, OSError, ValueError, RuntimeError, NotImplementedError, zipfile.BadZipFile):
        return None
    if not isinstance(head, dict) or not isinstance(head.get("eval"), dict):
        return None
    if not isinstance(summaries, list) or not all(isinstance(s, dict) for s in summaries):
        return None
    return Fields(head), [Fields(s) for s in summaries]


def inspect_summaries(path: Path | str) -> tuple[Any, list[Any]]:
    """The log's header and its sample summaries (no messages or events): what a list of the
    samples needs, read without the samples themselves. An ``.eval`` file's are read from its
    zip as plain JSON, fields as attributes: Inspect's reader validates every summary (16 s for
    10,000 on this project's machine, and 4 s to import), which the list need not wait for."""
    path = Path(path)
    raw = raw_summaries(path)
    if raw is not None:
        return raw
    require_inspect()
    from inspect_ai.log import read_eval_log_sample_summaries

    head = _read_header(path)
    return head, list(read_eval_log_sample_summaries(str(path)))


def read_inspect_sample(
    path: Path | str, sample_id: str, epoch: int
) -> tuple[Trajectory, Task | None]:
    """One sample (raleval epoch ``epoch``) as a graded episode and its task."""
    require_inspect()
    from inspect_ai.log import read_eval_log_sample

    spec = _read_header(Path(path)).eval
    try:
        sample = read_eval_log_sample(str(path), id=sample_id, epoch=epoch + 1)
    except (IndexError, KeyError, ValueError):
        if not sample_id.lstrip("-").isdigit():
            raise
        # an integer id, listed as text
        sample = read_eval_log_sample(str(path), id=int(sample_id), epoch=epoch + 1)
    task = sample_task(spec.task, sample)
    return grade(sample_trajectory(spec, sample), task), task
