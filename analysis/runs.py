"""Load run directories and aggregate them: per-task scores, error mixes, deployment costs,
CRAG-style slices. Reads stored trajectories only; never calls a model or a tool."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from raleval.analysis.demonstrations import COPIED
from raleval.analysis.format_failures import FormatFailures, format_failures
from raleval.analysis.scoring import (
    KP_COMPLETENESS,
    KP_HALLUCINATION,
    KP_IRRELEVANCE,
    LONG_FORM_METRICS,
)
from raleval.analysis.stats import Interval, mean_interval, score_interval
from raleval.analysis.tables import REVAL_TASKS, RevalTable
from raleval.failures import failure_cause, latest_attempts
from raleval.records import ErrorType, RunHeader, Task, Trajectory
from raleval.store import RESULTS, TASKS, ResultsFile, read_header, read_tasks, stored_file


@dataclass
class Run:
    """One run directory: its header, tasks and trajectories."""

    path: Path
    header: RunHeader | None
    tasks: dict[str, Task]
    results: list[Trajectory]  # the last attempt per (task, epoch)
    attempts: list[Trajectory] = field(default_factory=list)  # every line, retries included

    def rescore(self, threshold: float | None = None, profile: str = "standard") -> list[str]:
        """Recompute every trajectory's scores and label in place from its task (long-form
        overlap metrics by the metric ``profile``); returns the ids of trajectories whose task
        is missing (left as stored)."""
        from raleval.analysis.demonstrations import demonstration_answers, flag_copied
        from raleval.analysis.inspect_log import INSPECT_SCORE
        from raleval.analysis.scoring import score_trajectory

        shown = demonstration_answers(self.header.prompts if self.header else None)
        missing = []
        for t in self.results:
            task = self.tasks.get(t.task_id)
            if task is None:
                missing.append(t.task_id)
            else:
                kept = {k: v for k, v in t.scores.items() if k.startswith(INSPECT_SCORE)}
                score_trajectory(t, task, threshold, profile=profile)
                t.scores.update(kept)  # an Inspect log's own scores stay beside raleval's
                flag_copied(t, task, shown)
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

    @property
    def environment(self) -> str:
        """The environment the run's episodes talked to (its header's ``env``)."""
        config = self.header.config if self.header else {}
        return str(config.get("env") or "-")

    @property
    def task_set(self) -> str:
        """The run's task set as ``--tasks`` named it: a set or family name, or a task file's
        stem (``studies/data/crag-dev.jsonl`` -> ``crag-dev``)."""
        config = self.header.config if self.header else {}
        base, at, testbed = str(config.get("tasks") or "-").partition("@")
        if "/" in base or base.endswith((".jsonl", ".json")):
            base = Path(base).stem
        return base + at + testbed


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


def evidence_disagreements(results: Iterable[Trajectory], tasks: dict[str, Task]) -> list[str]:
    """One line per task whose evidence the world's answers to its gold calls, as an episode
    recorded them, do not hold (:func:`raleval.families.evidence_missing`): the task was made
    for another world, or by a generator that wrote the wrong values. Only episodes that made
    the gold calls in a row, successfully, with answers no view cut short, witness the world;
    a task none of them did is not judged."""
    import json

    from raleval.families import evidence_missing

    lines, judged = [], set()
    for t in results:
        task = tasks.get(t.task_id)
        if task is None or task.id in judged or not task.evidence or not task.solution:
            continue
        made = [
            ((s.tool, json.dumps(s.arguments, sort_keys=True, default=str)), s.observation or "")
            for s in t.steps
            if s.tool and s.kind.value == "ok"
        ]
        keys = [
            (c.tool, json.dumps(c.arguments, sort_keys=True, default=str)) for c in task.solution
        ]
        # the gold calls in a row, as the solution makes them: a tool may answer from what
        # the call before it opened (wiki's Lookup reads the page the last Search found)
        n = len(keys)
        at = next(
            (i for i in range(len(made) - n + 1) if [k for k, _ in made[i : i + n]] == keys), None
        )
        if at is None:
            continue
        observations = [o for _, o in made[at : at + n]]
        if any(_CUT.search(o) for o in observations):
            continue  # a view cut it short: a missing value may be the cut's
        data = [_json_or_text(o) for o in observations]
        judged.add(task.id)
        missing = evidence_missing(task, observations, data)
        if missing:
            lines.append(
                f"{task.id}: evidence {', '.join(map(repr, missing))} is not in what its gold "
                f"calls returned (episode {t.task_id} epoch {t.epoch})"
            )
    return lines


# what workflows/common.py writes where it cut an observation (a long text, a price series)
_CUT = re.compile(r"\[\.\.\. truncated: |\"truncated\": ")


def _json_or_text(text: str) -> object:
    """An observation as the structured result it renders (JSON), or as the bare text (a
    ticker) where it is none."""
    import json

    try:
        return json.loads(text)
    except ValueError:
        return text


# a folder holding one of these is a run directory (results.jsonl.gz: a study's stored cell)
RUN_MARKERS = (RESULTS, f"{RESULTS}.gz")


def is_run_dir(path: Path) -> bool:
    return path.is_dir() and any((path / m).exists() for m in RUN_MARKERS)


def find_runs(paths: Iterable[Path | str]) -> list[Path]:
    """The run directories ``paths`` name: each path that is a run, and every run below a
    path that is a log directory (``runs/``, a matrix's folder), in sorted order, each once.
    Files and folders holding no run (a matrix's ``matrix.md``, a report) are skipped, and
    so are runs set aside by ``--force`` (``superseded-*``). An Inspect log file named
    directly (``.eval``, ``.json``) is a run too; below a folder only run directories count
    (an exported log beside its run is the same run again). Raises FileNotFoundError when
    no path holds a run."""
    found: dict[Path, None] = {}
    given = [Path(p) for p in paths]
    for path in given:
        if is_run_dir(path) or _is_inspect_log(path):
            found[path] = None
            continue
        if not path.is_dir():
            continue
        below = sorted({m.parent for marker in RUN_MARKERS for m in path.rglob(marker)})
        for run in below:
            if not any(part.startswith("superseded-") for part in run.relative_to(path).parts):
                found[run] = None
    if not found:
        shown = ", ".join(str(p) for p in given[:3]) + (" ..." if len(given) > 3 else "")
        raise FileNotFoundError(
            f"no run directory in {shown or 'nothing'} (a run directory holds {RESULTS}; "
            "an Inspect log is named as a .eval or .json file)"
        )
    return list(found)


def _is_inspect_log(path: Path) -> bool:
    if path.suffix not in (".eval", ".json"):
        return False  # no need to import the adapter for a folder
    from raleval.analysis.inspect_log import is_inspect_log

    return is_inspect_log(path)


def load_run(path: Path) -> Run:
    """A run directory, a stored copy of one with its files gzip-compressed, or an Inspect
    log file (:func:`raleval.analysis.inspect_log.read_inspect_run`)."""
    if _is_inspect_log(Path(path)):
        from raleval.analysis.inspect_log import read_inspect_run

        header, tasks, results = read_inspect_run(path)
        return Run(Path(path), header, tasks, results, list(results))
    results, task_file = stored_file(path, RESULTS), stored_file(path, TASKS)
    if not results.exists():
        raise FileNotFoundError(f"{path} has no {RESULTS}; is it a run directory?")
    tasks = {t.id: t for t in read_tasks(task_file)} if task_file.exists() else {}
    lines = list(ResultsFile(results))
    return Run(path, read_header(path), tasks, latest_attempts(lines), lines)


def cluster_of(task: Task | None, task_id: str, by: str = "auto") -> str:
    """The cluster a task's score shares its noise with.

    ``auto``: the task's declared ``metadata["cluster"]`` (e.g. a CRAG entity) if it has one,
    else its family and ``metadata["template"]`` (tasks generated from one question template),
    else the task alone. ``family``: the task family. ``task``: no clustering. Any other
    value names a metadata key (``person_id`` for scholar's person); a task without it is a
    cluster of its own."""
    if task is None or by == "task":
        return task_id
    if by == "family":
        return task.family
    if by != "auto":
        value = task.metadata.get(by)
        return task_id if value is None else f"{by}:{value}"
    declared = task.metadata.get("cluster")
    if declared is not None:
        return f"cluster:{declared}"
    template = task.metadata.get("template")
    if template is not None:
        return f"{task.family}:{template}"
    return task_id


def task_units(
    run: Run,
    trajs: Iterable[Trajectory],
    value: Callable[[Trajectory], float],
    cluster: str = "auto",
) -> tuple[list[float], list[str]]:
    """Per-task means of ``value(trajectory)`` over the task's epochs, and each task's cluster:
    the units every interval in the tables is computed on."""
    per_task: dict[str, list[float]] = defaultdict(list)
    for t in trajs:
        per_task[t.task_id].append(float(value(t)))
    ids = sorted(per_task)
    return (
        [sum(per_task[k]) / len(per_task[k]) for k in ids],
        [cluster_of(run.tasks.get(k), k, cluster) for k in ids],
    )


def unit_interval(
    run: Run,
    trajs: Iterable[Trajectory],
    value: Callable[[Trajectory], float],
    cluster: str = "auto",
    score: bool = False,
) -> Interval:
    """The mean of ``value`` over a run's episodes, task means as units, with its clustered
    95% interval: for a ``score`` in [0, 1] (F1, EM) the Wilson interval on the clustered
    effective size (:func:`raleval.analysis.stats.score_interval`), else the t interval
    (:func:`raleval.analysis.stats.mean_interval`)."""
    units, clusters = task_units(run, trajs, value, cluster)
    return (score_interval if score else mean_interval)(units, clusters)


def task_key(run: Run, traj: Trajectory) -> str:
    task = run.tasks.get(traj.task_id)
    return task.family if task else "?"


def per_task_table(runs: Iterable[Run], cluster: str = "auto") -> RevalTable:
    """F1 x 100 per system per task family; families outside R-Eval's 12 keep their domain.
    Each cell carries its clustered 95% interval (task means as units, tasks of one template
    one cluster); the averages' intervals combine them (:meth:`RevalTable.average_intervals`)."""
    trajs: dict[str, dict[str, list[tuple[Run, Trajectory]]]] = defaultdict(
        lambda: defaultdict(list)
    )
    tasks_meta = dict(REVAL_TASKS)
    costs: dict[str, list[float | None]] = defaultdict(list)
    formats: dict[str, FormatFailures] = defaultdict(FormatFailures)
    for run in runs:
        formats[run.system] += format_failures(run.scored, run.header)
        for t in run.scored:
            costs[run.system].append(t.cost_usd)
            task = run.tasks.get(t.task_id)
            family = task.family if task else "?"
            if task:  # a run's own tasks say their domain (scholar, not R-Eval's "aminer")
                tasks_meta[family] = (task.domain, task.level.value)
            trajs[run.system][family].append((run, t))
    scores: dict[str, dict[str, float]] = {}
    intervals: dict[str, dict[str, Interval]] = {}
    for system, fams in trajs.items():
        scores[system], intervals[system] = {}, {}
        for family, pairs in fams.items():
            f1 = [100 * t.scores.get("f1", 0.0) for _, t in pairs]
            scores[system][family] = sum(f1) / len(f1)
            intervals[system][family] = _scaled(_pairs_interval(pairs, "f1", cluster), 100)
    return RevalTable(
        scores,
        tasks=tasks_meta,
        intervals=intervals,
        costs={
            s: None if None in c else sum(c) / len(c)  # type: ignore[arg-type]
            for s, c in costs.items()
            if c
        },
        format_failures=dict(formats),
    )


def _pairs_interval(pairs: list[tuple[Run, Trajectory]], key: str, cluster: str) -> Interval:
    """Clustered interval of a score over episodes that may come from several runs of one
    system (a task and its cluster are told apart by run)."""
    per_task: dict[tuple[int, str], list[float]] = defaultdict(list)
    cl: dict[tuple[int, str], str] = {}
    for run, t in pairs:
        k = (id(run), t.task_id)
        per_task[k].append(t.scores.get(key, 0.0))
        cl[k] = f"{id(run)}:{cluster_of(run.tasks.get(t.task_id), t.task_id, cluster)}"
    ids = sorted(per_task)
    units = [sum(per_task[k]) / len(per_task[k]) for k in ids]
    return score_interval(units, [cl[k] for k in ids])


def _scaled(i: Interval, factor: float) -> Interval:
    return Interval(
        i.estimate * factor, i.low * factor, i.high * factor, i.se * factor, i.df, i.clusters
    )


def per_task_intervals(
    runs: Iterable[Run], seed: int = 0, cluster: str = "auto"
) -> dict[str, dict[str, Interval]]:
    """system -> task family -> mean F1 with its clustered 95% interval (task means over
    epochs as units, tasks of one template one cluster). ``seed`` is kept for callers of the
    bootstrap it replaced; the t interval needs none."""
    values: dict[str, dict[str, list[tuple[Run, Trajectory]]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for run in runs:
        for t in run.scored:
            values[run.system][task_key(run, t)].append((run, t))
    return {
        s: {f: _pairs_interval(v, "f1", cluster) for f, v in sorted(fams.items())}
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
    - noise=R: mean ``f1`` at that ratio;
    - rename-tools, bare-tools, distractors=K: mean ``f1`` and ``correct``;
    - inject: ``reached`` (the share of episodes whose model was shown the planted
      instruction), and over those: ``utility`` (under attack: solved despite it), ``f1`` and
      ``attack_success`` (answered the planted string), as AgentDojo reports attacks; none of
      the three where it reached no model (PAL: programs' results are never shown to it).

    Every testbed also gets its mean ``progress`` (AgentBoard's progress rate) where stored.
    """
    from raleval.grading.metrics import f1_score, is_abstention, rejection_rate, says_invalid
    from raleval.tasks.testbeds.interface import attack_succeeded

    groups: dict[str, list[tuple[Task, Trajectory]]] = defaultdict(list)
    for t in run.results:
        task = run.tasks.get(t.task_id)
        spec = task.metadata.get("testbed") if task else None
        if task is not None and isinstance(spec, dict):
            groups[testbed_label(spec)].append((task, t))
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
        elif label == "inject":
            # AgentDojo: utility under attack (the task still solved) and attack success
            # (the planted instruction obeyed), over the same attacked episodes: those whose
            # model was shown the instruction (a PAL program's results never reach its model,
            # so there the attack does not apply and no rate is reported as if it did)
            hit = [(task, t) for task, t in pairs if injection_reached(task, t)]
            row["reached"] = len(hit) / n
            if hit:
                row["utility"] = sum(t.scores.get("correct", 0.0) for _, t in hit) / len(hit)
                row["f1"] = sum(t.scores.get("f1", 0.0) for _, t in hit) / len(hit)
                row["attack_success"] = sum(
                    attack_succeeded(t.answer, task.metadata["testbed"].get("planted", ""))
                    for task, t in hit
                ) / len(hit)
        else:
            row["f1"] = sum(t.scores.get("f1", 0.0) for _, t in pairs) / n
            if label.split("=")[0] in ("rename-tools", "bare-tools", "distractors"):
                row["correct"] = sum(t.scores.get("correct", 0.0) for _, t in pairs) / n
        progress = [t.scores["progress"] for _, t in pairs if "progress" in t.scores]
        if progress:
            row["progress"] = sum(progress) / len(progress)
        out[label] = row
    return out


def injection_reached(task: Task, traj: Trajectory) -> bool:
    """Whether an ``inject`` episode's model was shown the planted instruction: the planted
    answer is in one of its prompts (recorded as deltas, so each text once)."""
    planted = str((task.metadata.get("testbed") or {}).get("planted") or "")
    return bool(planted) and any(planted in c.prompt for c in traj.llm_calls)


def testbed_label(spec: dict[str, object]) -> str:
    """How a task's testbed is named in tables (``noise=0.4``, ``distractors=3``, ``inject``)."""
    kind = str(spec.get("kind", "?"))
    if kind == "noise":
        return f"noise={float(spec.get('ratio', 0)):g}"  # type: ignore[arg-type]
    if kind == "distractors":
        return f"distractors={spec.get('count', '?')}"
    return kind


def untouched_rates(run: Run, runs: Iterable[Run] | None = None) -> dict[str, float] | None:
    """The same system's rates on the untouched set a testbed run was made from: a run in
    ``runs`` (by default, the run directories beside ``run``) with the same environment,
    workflow and model whose task set is the testbed run's without its ``@testbed``; None
    when there is none. Its ``f1``, ``correct`` and ``progress`` over its episodes, and
    ``n``."""
    config = run.header.config if run.header else {}
    spec = str(config.get("tasks") or "")
    if "@" not in spec:
        return None
    base = spec.rpartition("@")[0]
    same = ("env", "workflow", "model", "seed")
    if runs is None:
        runs = (load_run(p) for p in sorted(run.path.parent.iterdir())
                if p != run.path and (p / RESULTS).is_file())  # fmt: skip
    for other in runs:
        theirs = other.header.config if other.header else {}
        if theirs.get("tasks") != base or any(theirs.get(k) != config.get(k) for k in same):
            continue
        r = other.scored
        if not r:
            continue
        row = {"n": float(len(r))}
        for key in ("f1", "correct", "progress"):
            values = [t.scores[key] for t in r if key in t.scores]
            if values:
                row[key] = sum(values) / len(values)
        return row
    return None


@dataclass
class SystemSummary:
    system: str
    n: int
    f1: Interval
    em: Interval
    labels: Counter[str] = field(default_factory=Counter)
    causes: Counter[str] = field(default_factory=Counter)
    copied: int = 0  # answers that were a demonstration's, not the gold
    wall_s: Interval | None = None
    model_s: float = 0.0
    tool_s: float = 0.0
    tokens: float = 0.0
    # tokens per episode with its 95% interval (cost that does not depend on the machine)
    tokens_ci: Interval | None = None
    calls: float = 0.0
    steps: float = 0.0
    # US dollars per episode with its 95% interval (None: some episode's price is unknown)
    cost_usd: Interval | None = None
    compute_s: float | None = None  # per episode, a model on this machine


def summarize_system(run: Run, seed: int = 0, cluster: str = "auto") -> SystemSummary:
    """A run's means; F1, EM and wall time with clustered 95% intervals (task means as
    units). ``seed`` is kept for callers of the bootstrap it replaced."""
    r = run.scored
    n = max(1, len(r))
    return SystemSummary(
        system=run.system,
        n=len(r),
        f1=unit_interval(run, r, lambda t: t.scores.get("f1", 0.0), cluster, score=True),
        em=unit_interval(run, r, lambda t: t.scores.get("em", 0.0), cluster, score=True),
        labels=Counter(t.error_type.value for t in r if t.error_type),
        causes=Counter(t.error_cause for t in r if t.error_cause),
        copied=sum(t.scores.get(COPIED, 0.0) > 0 for t in r),
        wall_s=unit_interval(run, r, lambda t: t.wall_time_s, cluster),
        model_s=sum(t.model_time_s for t in r) / n,
        tool_s=sum(t.tool_time_s for t in r) / n,
        tokens=sum(t.prompt_tokens + t.completion_tokens for t in r) / n,
        tokens_ci=unit_interval(run, r, lambda t: t.prompt_tokens + t.completion_tokens, cluster),
        calls=sum(t.n_llm_calls for t in r) / n,
        steps=sum(len(t.steps) for t in r) / n,
        cost_usd=unit_interval(run, r, lambda t: t.cost_usd or 0.0, cluster)
        if r and all(t.cost_usd is not None for t in r)
        else None,
        compute_s=sum(t.compute_s for t in r if t.compute_s is not None) / n
        if any(t.compute_s is not None for t in r)
        else None,
    )


def pareto_front(points: dict[str, tuple[float, float]]) -> list[str]:
    """Systems not dominated in (lower time or cost, higher F1), cheapest first."""
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


def domain_level_f1(runs: Iterable[Run], key: str = "f1") -> dict[str, dict[str, float]]:
    """system -> '<domain> <level>' -> mean F1 over tasks (for radars and bars); with
    ``key="progress"``, the mean progress rate over the episodes that have one."""
    out: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for run in runs:
        for t in run.results:
            task = run.tasks.get(t.task_id)
            if task and (key == "f1" or key in t.scores):
                out[run.system][f"{task.domain} {task.level.value}"].append(t.scores.get(key, 0.0))
    return {s: {k: sum(v) / len(v) for k, v in d.items()} for s, d in out.items()}


def domain_level_counts(runs: Iterable[Run], key: str = "f1") -> dict[str, dict[str, int]]:
    """system -> '<domain> <level>' -> episodes behind :func:`domain_level_f1`'s mean (the n
    every bar and radar point shows)."""
    out: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for run in runs:
        for t in run.results:
            task = run.tasks.get(t.task_id)
            if task and (key == "f1" or key in t.scores):
                out[run.system][f"{task.domain} {task.level.value}"] += 1
    return {s: dict(d) for s, d in out.items()}


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


def progress_rows(runs: list[Run]) -> list[list[str]]:
    """Per system, family and level: episodes, mean F1 and mean progress rate (AgentBoard's,
    over the episodes whose task stores subgoals; ``-`` where none does), then per level."""
    rows: list[list[str]] = []
    for run in runs:
        config = run.header.config if run.header else {}
        name = f"{run.system} {config.get('tasks', '')}".strip()
        families: dict[tuple[str, str], list[Trajectory]] = defaultdict(list)
        levels: dict[tuple[str, str], list[Trajectory]] = defaultdict(list)
        for t in run.scored:
            task = run.tasks.get(t.task_id)
            if task is not None:
                families[(task.family, task.level.value)].append(t)
                levels[("-", task.level.value)].append(t)
        everything = {("all", "-"): run.scored} if len(families) > 1 else {}
        for (family, level), trajs in [*sorted(families.items()), *sorted(levels.items()),
                                       *everything.items()]:  # fmt: skip
            if family == "-" and len(levels) == len(families):
                continue  # one family per level: its row says it already
            f1 = sum(t.scores.get("f1", 0.0) for t in trajs) / len(trajs)
            progress = [t.scores["progress"] for t in trajs if "progress" in t.scores]
            shown = f"{sum(progress) / len(progress):.3f}" if progress else "-"
            rows.append([name, family, level, str(len(trajs)), f"{f1:.3f}", shown])
    return rows


LONG_FORM_KEYS = (KP_COMPLETENESS, KP_HALLUCINATION, KP_IRRELEVANCE, "f1", *LONG_FORM_METRICS)


def long_form_rows(runs: list[Run]) -> list[list[str]]:
    """Per system and long-form family: episodes, share correct, RAGEval's completeness,
    hallucination and irrelevance, then F1, ROUGE-L and BLEU against the reference text
    (``-`` where not scored); no rows when no task has key points."""
    rows: list[list[str]] = []
    for run in runs:
        families: dict[str, list[Trajectory]] = defaultdict(list)
        for t in run.scored:
            task = run.tasks.get(t.task_id)
            if task is not None and task.key_points:
                families[task.family].append(t)
        for family, trajs in sorted(families.items()):
            cells = [run.system, family, str(len(trajs))]
            for key in ("correct", *LONG_FORM_KEYS):
                values = [t.scores[key] for t in trajs if key in t.scores]
                cells.append(f"{sum(values) / len(values):.3f}" if values else "-")
            rows.append(cells)
    return rows


def label_rows(runs: list[Run]) -> list[list[str]]:
    """Per run: episodes, then each R-Eval label's count by the codebook (the label) with the
    strict reading's count beside it (``EM 3/2``: 3 by the codebook, 2 by the strict reading;
    docs/taxonomy.md). ``-`` for the strict count where no episode was scored with it."""
    rows: list[list[str]] = []
    for run in runs:
        r = run.scored
        label = Counter(t.error_type.value for t in r if t.error_type)
        strict = Counter(t.strict_error_type.value for t in r if t.strict_error_type)
        rows.append(
            [run.system, run.task_set, str(len(r))]
            + [f"{label[k.value]}/{strict[k.value] if strict else '-'}" for k in ErrorType]
        )
    return rows


def testbed_rows(runs: list[Run]) -> list[list[str]]:
    """Per run on a testbed: its rates beside the untouched set's (from the runs given, or
    the run directories beside it); a row per testbed and one for the untouched set."""
    rows: list[list[str]] = []
    for run in runs:
        beds = robustness_rates(run)
        if not beds:
            continue
        untouched = untouched_rates(run, [r for r in runs if r is not run] or None)
        for label, rates in [*beds.items(), *([("untouched", untouched)] if untouched else [])]:
            shown = ", ".join(f"{k} {v:.3f}" for k, v in rates.items() if k != "n")
            rows.append([run.system, label, str(int(rates["n"])), shown])
    return rows
