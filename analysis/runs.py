"""Load run directories and aggregate them: per-task scores, error mixes, deployment costs,
CRAG-style slices. Reads stored trajectories only; never calls a model or a tool."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from raleval.analysis.stats import Interval, bootstrap_ci
from raleval.analysis.tables import REVAL_TASKS, RevalTable
from raleval.failures import failure_cause, latest_attempts
from raleval.records import RunHeader, Task, Trajectory
from raleval.store import RESULTS, TASKS, ResultsFile, read_header, read_tasks, stored_file


@dataclass
class Run:
    """One run directory: its header, tasks and trajectories."""

    path: Path
    header: RunHeader | None
    tasks: dict[str, Task]
    results: list[Trajectory]  # the last attempt per (task, epoch)
    attempts: list[Trajectory] = field(default_factory=list)  # every line, retries included

    def rescore(self, threshold: float | None = None) -> list[str]:
        """Recompute every trajectory's scores and label in place from its task; returns the
        ids of trajectories whose task is missing (left as stored)."""
        from raleval.analysis.scoring import score_trajectory

        missing = []
        for t in self.results:
            task = self.tasks.get(t.task_id)
            if task is None:
                missing.append(t.task_id)
            else:
                score_trajectory(t, task, threshold)
        return missing

    @property
    def scored(self) -> list[Trajectory]:
        """The episodes that count in scores: infrastructure failures left out."""
        return [t for t in self.results if failure_cause(t) is None]

    @property
    def system(self) -> str:
        if self.results:
            a = self.results[0].agent
            return f"{a.workflow}/{a.model}"
        return self.path.name


def verdict_changes(
    before: list[tuple[object, str | None, float | None]], after: list[Trajectory]
) -> list[str]:
    """One line per episode whose label or correctness differs between ``before`` (stored
    ``(error_type, error_cause, scores["correct"])`` per episode, in order) and the re-graded
    ``after``. A run scored before answer types has no stored ``correct``: EM and AM were its
    correct labels."""
    lines = []
    for (label, cause, correct), t in zip(before, after, strict=True):
        old_label = getattr(label, "value", label)
        was = bool(correct) if correct is not None else old_label in ("EM", "AM")
        now = bool(t.scores.get("correct"))
        new_label = t.error_type.value if t.error_type else None
        if old_label != new_label or was != now:
            lines.append(
                f"{t.task_id} epoch {t.epoch}: {old_label} ({cause}) -> {new_label} "
                f"({t.error_cause}); correct {was} -> {now}; answer {t.answer!r:.60}"
            )
    return lines


def load_run(path: Path) -> Run:
    """A run directory, or a stored copy of one with its files gzip-compressed."""
    results, task_file = stored_file(path, RESULTS), stored_file(path, TASKS)
    if not results.exists():
        raise FileNotFoundError(f"{path} has no {RESULTS}; is it a run directory?")
    tasks = {t.id: t for t in read_tasks(task_file)} if task_file.exists() else {}
    lines = list(ResultsFile(results))
    return Run(path, read_header(path), tasks, latest_attempts(lines), lines)


def task_key(run: Run, traj: Trajectory) -> str:
    task = run.tasks.get(traj.task_id)
    return task.family if task else "?"


def per_task_table(runs: Iterable[Run]) -> RevalTable:
    """F1 x 100 per system per task family; families outside R-Eval's 12 keep their domain."""
    scores: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    tasks_meta = dict(REVAL_TASKS)
    for run in runs:
        for t in run.scored:
            task = run.tasks.get(t.task_id)
            family = task.family if task else "?"
            if task:  # a run's own tasks say their domain (scholar, not R-Eval's "aminer")
                tasks_meta[family] = (task.domain, task.level.value)
            scores[run.system][family].append(100 * t.scores.get("f1", 0.0))
    return RevalTable(
        {s: {f: sum(v) / len(v) for f, v in fams.items()} for s, fams in scores.items()},
        tasks=tasks_meta,
    )


def per_task_intervals(runs: Iterable[Run], seed: int = 0) -> dict[str, dict[str, Interval]]:
    """system -> task family -> mean F1 with its 95% bootstrap interval."""
    values: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for run in runs:
        for t in run.scored:
            values[run.system][task_key(run, t)].append(t.scores.get("f1", 0.0))
    return {
        s: {f: bootstrap_ci(v, seed=seed) for f, v in sorted(fams.items())}
        for s, fams in values.items()
    }


def robustness(runs: Iterable[Run]) -> dict[str, dict[float, float]]:
    """system -> noise ratio -> mean F1, for tasks that carry ``metadata["noise_ratio"]``."""
    values: dict[str, dict[float, list[float]]] = defaultdict(lambda: defaultdict(list))
    for run in runs:
        for t in run.results:
            task = run.tasks.get(t.task_id)
            ratio = task.metadata.get("noise_ratio") if task else None
            if isinstance(ratio, (int, float)):
                values[run.system][float(ratio)].append(t.scores.get("f1", 0.0))
    return {s: {r: sum(v) / len(v) for r, v in sorted(d.items())} for s, d in values.items()}


# RGB: an answer that says the retrieved facts are wrong has detected the counterfactual
_DETECTS = re.compile(
    r"\b(factual errors?|incorrect|contradict\w*|inconsistent|misinformation|wrong"
    r"|not (correct|true))\b",
    re.IGNORECASE,
)


def robustness_rates(run: Run) -> dict[str, dict[str, float]]:
    """Per robustness testbed (``task.metadata["testbed"]``), what the agent did.

    - negative: ``rejection_rate`` (RGB) and ``hallucination`` (answered anyway);
    - false-premise: ``invalid`` (said the question is invalid), ``missing``, ``hallucination``;
    - counterfactual: ``trusts_tools`` (answered the tools' value), ``from_memory`` (answered the
      real world's), ``error_detection`` and ``error_correction`` (RGB: flagged the facts as wrong,
      and gave the real answer);
    - noise=R: mean ``f1`` at that ratio.
    """
    from raleval.tasks.metrics import f1_score, is_abstention, rejection_rate, says_invalid

    groups: dict[str, list[tuple[Task, Trajectory]]] = defaultdict(list)
    for t in run.results:
        task = run.tasks.get(t.task_id)
        spec = task.metadata.get("testbed") if task else None
        if task is not None and isinstance(spec, dict):
            kind = spec.get("kind", "?")
            label = f"noise={float(spec.get('ratio', 0)):g}" if kind == "noise" else kind
            groups[label].append((task, t))
    out: dict[str, dict[str, float]] = {}
    for label, pairs in sorted(groups.items()):
        n = len(pairs)
        answers = [t.answer for _, t in pairs]
        row: dict[str, float] = {"n": float(n)}
        if label == "negative":
            row["rejection_rate"] = rejection_rate(answers)
            row["hallucination"] = 1.0 - row["rejection_rate"]
        elif label == "false-premise":
            invalid = [says_invalid(a) for a in answers]
            missing = [is_abstention(a) and not i for a, i in zip(answers, invalid, strict=True)]
            row["invalid"] = sum(invalid) / n
            row["missing"] = sum(missing) / n
            row["hallucination"] = 1.0 - row["invalid"] - row["missing"]
        elif label == "counterfactual":
            tools = [f1_score(t.answer, task.answers) >= 0.5 for task, t in pairs]
            memory = [
                f1_score(t.answer, task.metadata.get("original_answers", [])) >= 0.5
                for task, t in pairs
            ]
            detected = [bool(_DETECTS.search(a or "")) for a in answers]
            row["trusts_tools"] = sum(tools) / n
            row["from_memory"] = sum(memory) / n
            row["error_detection"] = sum(detected) / n
            row["error_correction"] = (
                sum(d and m for d, m in zip(detected, memory, strict=True)) / n
            )
        else:
            row["f1"] = sum(t.scores.get("f1", 0.0) for _, t in pairs) / n
        out[label] = row
    return out


@dataclass
class SystemSummary:
    system: str
    n: int
    f1: Interval
    em: Interval
    labels: Counter[str] = field(default_factory=Counter)
    causes: Counter[str] = field(default_factory=Counter)
    wall_s: Interval | None = None
    model_s: float = 0.0
    tool_s: float = 0.0
    tokens: float = 0.0
    calls: float = 0.0
    steps: float = 0.0


def summarize_system(run: Run, seed: int = 0) -> SystemSummary:
    r = run.scored
    n = max(1, len(r))
    return SystemSummary(
        system=run.system,
        n=len(r),
        f1=bootstrap_ci([t.scores.get("f1", 0.0) for t in r], seed=seed),
        em=bootstrap_ci([t.scores.get("em", 0.0) for t in r], seed=seed),
        labels=Counter(t.error_type.value for t in r if t.error_type),
        causes=Counter(t.error_cause for t in r if t.error_cause),
        wall_s=bootstrap_ci([t.wall_time_s for t in r], seed=seed),
        model_s=sum(t.model_time_s for t in r) / n,
        tool_s=sum(t.tool_time_s for t in r) / n,
        tokens=sum(t.prompt_tokens + t.completion_tokens for t in r) / n,
        calls=sum(t.n_llm_calls for t in r) / n,
        steps=sum(len(t.steps) for t in r) / n,
    )


def pareto_front(points: dict[str, tuple[float, float]]) -> list[str]:
    """Systems not dominated in (lower time, higher F1), fastest first."""
    front = []
    for name, (time_s, f1) in points.items():
        dominated = any(
            t2 <= time_s and f2 >= f1 and (t2, f2) != (time_s, f1)
            for other, (t2, f2) in points.items()
            if other != name
        )
        if not dominated:
            front.append(name)
    return sorted(front, key=lambda s: points[s][0])


def domain_level_f1(runs: Iterable[Run]) -> dict[str, dict[str, float]]:
    """system -> '<domain> <level>' -> mean F1 over tasks (for radars and bars)."""
    out: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for run in runs:
        for t in run.results:
            task = run.tasks.get(t.task_id)
            if task:
                out[run.system][f"{task.domain} {task.level.value}"].append(t.scores.get("f1", 0.0))
    return {s: {k: sum(v) / len(v) for k, v in d.items()} for s, d in out.items()}


CRAG_SLICES = ("domain", "question_type", "popularity", "dynamism")


def crag_slices(run: Run) -> dict[str, dict[str, dict[str, float]]]:
    """slice -> value -> {accuracy, hallucination, missing, score, n} (CRAG's three-way).

    Read from each episode's stored verdict (``scores["crag"]``, graded by the task's answer
    type in ``raleval.analysis.scoring``), the same one the overall score uses, so every
    slicing adds back up to it.
    """
    from raleval.analysis.scoring import aggregate

    def slicer(s: str):
        def key(t: Trajectory) -> str | None:
            task = run.tasks.get(t.task_id)
            if task is None:
                return None
            return {
                "domain": task.domain,
                "question_type": task.tags.question_type,
                "popularity": task.tags.popularity,
                "dynamism": task.tags.dynamism,
            }[s]

        return key

    result: dict[str, dict[str, dict[str, float]]] = {}
    for s in CRAG_SLICES:
        result[s] = {
            v: {
                "n": a.n,
                "accuracy": a.correct,
                "hallucination": a.hallucination,
                "missing": a.missing,
                "score": a.crag_score,
            }
            for v, a in aggregate(run.results, slicer(s)).items()
        }
    return result


def pass_at_k(run: Run) -> dict[str, float] | None:
    """pass@k (some epoch correct) and pass^k (every epoch correct) over tasks, where k is the
    number of epochs each task ran; ``None`` for a single-epoch run. Correct is the stored
    per-episode verdict."""
    by_task: dict[str, list[bool]] = defaultdict(list)
    for t in run.results:
        by_task[t.task_id].append(t.scores.get("correct", 0.0) >= 1.0)
    if not by_task:
        return None
    k = min(len(v) for v in by_task.values())
    if k < 2:
        return None
    n = len(by_task)
    return {
        "k": float(k),
        "pass@k": sum(any(v) for v in by_task.values()) / n,
        "pass^k": sum(all(v) for v in by_task.values()) / n,
    }
