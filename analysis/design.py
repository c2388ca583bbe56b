"""A study's design, declared before it runs (issue 48): the tasks every cell of an environment
draws, the cluster level of its intervals, and the comparisons its tables test.

A design file (YAML, ``studies/<study>.design.yaml``)::

    sample: {seed: 7, per_family: 5}   # seeded random tasks per family, shared by every cell
    cluster: family                    # the default for generated task sets
    epochs: 1
    parallel: 2                        # episodes at once, for the machine-time estimate
    family: study                      # one Holm family over every arm (or: arm)
    estimand: {weights: task}          # pooled over tasks (or: environment, each alike)
    budgets: [2000, 4000]              # a budget sweep: one arm per tokens-per-episode value
    comparisons:                       # "workflow/model"; a level makes it a subgroup
      - [react/local/qwen2.5-0.5b, direct/local/qwen2.5-0.5b]
      - {a: react/local/qwen2.5-0.5b, b: pal/local/qwen2.5-0.5b, level: KU}

``raleval study plan FILE --pilot DIR`` prints each declared comparison's minimum detectable
difference at the planned size, from the pilot's (or stored cells') paired differences, and the
machine time the cells take (:func:`plan_design`); ``raleval study tables --design FILE`` tests
exactly the declared comparisons, Holm over them, and marks every other one exploratory.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from raleval.analysis.compare import run_units
from raleval.analysis.runs import Run
from raleval.analysis.stats import design_effect, minimum_detectable_difference
from raleval.config import ConfigError

LEVELS = ("KS", "KU", "KA")


def parse_system(text: str) -> tuple[str, str]:
    """``react/local/qwen2.5-0.5b`` -> (workflow, model): a workflow name has no slash."""
    workflow, sep, model = str(text).partition("/")
    if not sep or not workflow or not model:
        raise ValueError(f"{text!r} is not 'workflow/model'")
    return workflow, model


class Comparison(BaseModel):
    """One declared comparison: A against B, on every shared task or on one R-Eval level."""

    model_config = ConfigDict(extra="forbid")

    a: str
    b: str
    level: str | None = None

    @field_validator("a", "b")
    @classmethod
    def _system(cls, v: str) -> str:
        parse_system(v)
        return v

    @field_validator("level")
    @classmethod
    def _level(cls, v: str | None) -> str | None:
        if v is not None and v not in LEVELS:
            raise ValueError(f"level {v!r} is not one of {', '.join(LEVELS)}")
        return v

    @property
    def systems(self) -> tuple[tuple[str, str], tuple[str, str]]:
        return parse_system(self.a), parse_system(self.b)

    def __str__(self) -> str:
        return f"{self.a} vs {self.b}" + (f" ({self.level})" if self.level else "")


class Sample(BaseModel):
    model_config = ConfigDict(extra="forbid")

    seed: int
    per_family: int = Field(ge=1)


class Estimand(BaseModel):
    """What a pooled difference averages: ``task`` weighs every sampled task alike (so an
    environment weighs by its number of families), ``environment`` each environment alike
    (the mean of the environments' mean differences)."""

    model_config = ConfigDict(extra="forbid")

    weights: Literal["task", "environment"] = "task"


class StudyDesign(BaseModel):
    """What a study declares before it runs."""

    model_config = ConfigDict(extra="forbid")

    sample: Sample
    cluster: str = "family"
    epochs: int = Field(1, ge=1)
    parallel: int = Field(2, ge=1)
    alpha: float = Field(0.05, gt=0, lt=1)
    power: float = Field(0.8, gt=0, lt=1)
    comparisons: list[Comparison] = Field(min_length=1)
    # which comparisons share one Holm correction: ``study``, the declared comparisons on every
    # arm that ran them (issue 62: an arm repeating another's comparison gets no fresh alpha);
    # ``arm``, one family per arm
    family: Literal["study", "arm"] = "study"
    estimand: Estimand = Field(default_factory=Estimand)
    # a budget sweep: tokens per episode, one arm per budget (the run config's ``budgets``)
    budgets: list[int] = Field(default_factory=list)
    # whether the cells also run at each workflow's default budgets (an arm of its own); a
    # sweep whose largest budget rarely binds can leave it out
    default_arm: bool = True

    @model_validator(mode="after")
    def _some_arm(self) -> StudyDesign:
        if not self.default_arm and not self.budgets:
            raise ValueError("a design without the default arm needs budgets")
        return self

    @field_validator("budgets")
    @classmethod
    def _budgets(cls, v: list[int]) -> list[int]:
        if any(b <= 0 for b in v) or len(set(v)) != len(v):
            raise ValueError(f"budgets must be distinct positive token counts: {v}")
        return sorted(v)

    @property
    def declared(self) -> list[tuple[tuple[str, str], tuple[str, str], str | None]]:
        """The comparisons as (A, B, level or None), as the study tables take them."""
        return [(*c.systems, c.level) for c in self.comparisons]

    @field_validator("comparisons", mode="before")
    @classmethod
    def _pairs(cls, v: Any) -> Any:
        if not isinstance(v, list):
            return v
        return [{"a": c[0], "b": c[1]} if isinstance(c, (list, tuple)) else c for c in v]


def load_design(path: Path) -> StudyDesign:
    """A design file, or a :class:`~raleval.config.ConfigError` saying what is wrong."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read design {path}: {exc}") from exc
    try:
        return StudyDesign.model_validate(data)
    except ValueError as exc:
        raise ConfigError(f"design {path}: {exc}") from exc


@dataclass
class PlannedComparison:
    comparison: Comparison
    pilot_tasks: int
    pilot_clusters: int
    planned_tasks: int
    planned_clusters: int
    sd: float  # sd of the per-task difference in the pilot
    deff: float  # design effect at the planned cluster size
    mdd: float  # at Bonferroni's alpha / m over the declared comparisons (Holm does better)
    note: str = ""


@dataclass
class DesignPlan:
    comparisons: list[PlannedComparison]
    episodes: dict[tuple[str, str], int]  # system -> planned episodes
    seconds_per_episode: dict[tuple[str, str], float]  # from the pilot; absent: no pilot
    parallel: int
    # a budget sweep: system -> the pilot's seconds per episode summed over the budget arms,
    # each at most the default's and scaled by budget / the pilot's tokens per episode
    budget_seconds: dict[tuple[str, str], float] = field(default_factory=dict)
    # system without a pilot -> the piloted system its seconds were scaled from
    borrowed: dict[tuple[str, str], str] = field(default_factory=dict)
    default_arm: bool = True
    # system -> the budgets its seconds were measured at (the study's own cells so far)
    measured: dict[tuple[str, str], list[int]] = field(default_factory=dict)

    def seconds_of(self, system: tuple[str, str]) -> float:
        """Planned seconds per task of ``system`` over its arms (NaN without a pilot)."""
        sec = self.seconds_per_episode.get(system, float("nan"))
        return (sec if self.default_arm else 0.0) + self.budget_seconds.get(system, 0.0)

    @property
    def machine_hours(self) -> float:
        """Wall-clock hours of the cells with a pilot, ``parallel`` episodes at once."""
        total = sum(
            n * self.seconds_of(s)
            for s, n in self.episodes.items()
            if s in self.seconds_per_episode
        )
        return total / self.parallel / 3600


def _level_of(run: Run, task_id: str) -> str | None:
    task = run.tasks.get(task_id)
    return task.level.value if task is not None else None


def plan_design(
    design: StudyDesign,
    pilot: dict[tuple[str, str], Run],
    measured: dict[int, dict[tuple[str, str], Run]] | None = None,
) -> DesignPlan:
    """Each declared comparison's MDD at the planned size, from the pilot's paired differences.

    The planned size is ``per_family`` tasks of every family the pilot's tasks come from. Per
    comparison: the sd of the per-task difference s_d on the tasks both pilot systems ran, the
    pilot's design effect at the declared cluster level turned into an intra-cluster
    correlation ``rho = (DEFF - 1) / (m0 - 1)`` (Kish) and back into the planned cluster size
    m, ``DEFF = 1 + (m - 1) rho``; then ``SE = s_d sqrt(DEFF / n)`` and ``MDD = (t_{1-a/2} +
    t_power) SE`` with C - 1 degrees of freedom (Miller 2024, section 5) at Bonferroni's
    ``alpha / m`` over the declared comparisons, a bound for Holm's. Machine time: each
    system's planned episodes x its pilot seconds per episode, ``parallel`` at once.

    ``measured``: a budget sweep's own finished cells, budget -> system -> run (re-planning a
    study under way): a system's seconds per episode at a budget it ran are taken as measured
    there instead of scaled from the pilot's."""
    m = len(design.comparisons) * (int(design.default_arm) + len(design.budgets))
    alpha = design.alpha / m
    planned: list[PlannedComparison] = []
    episodes: dict[tuple[str, str], int] = {}
    seconds: dict[tuple[str, str], float] = {}
    budget_seconds: dict[tuple[str, str], float] = {}
    for key, run in pilot.items():
        scored = run.scored
        if scored:
            seconds[key] = _seconds_per_episode(run)
            tokens = sum(t.prompt_tokens + t.completion_tokens for t in scored) / len(scored)
            # a capped episode spends at most its budget: time taken as proportional to tokens
            budget_seconds[key] = sum(
                seconds[key] * min(1.0, b / tokens) if tokens > 0 else seconds[key]
                for b in design.budgets
            )
    for c in design.comparisons:
        (a, b) = c.systems
        missing = [s for s in (a, b) if s not in pilot]
        if missing:
            names = ", ".join("/".join(s) for s in missing)
            planned.append(
                PlannedComparison(c, 0, 0, 0, 0, *([float("nan")] * 3), f"no pilot: {names}")
            )
            continue
        ua = run_units(pilot[a], cluster=design.cluster)
        ub = run_units(pilot[b], cluster=design.cluster)
        ids = sorted(set(ua.samples) & set(ub.samples))
        if c.level:
            ids = [k for k in ids if _level_of(pilot[a], k) == c.level]
        families = {pilot[a].tasks[k].family for k in ids if k in pilot[a].tasks}
        n = design.sample.per_family * len(families) if families else 0
        if len(ids) < 2 or n < 2:
            planned.append(
                PlannedComparison(c, len(ids), 0, n, 0, *([float("nan")] * 3), "too few tasks")
            )
            continue
        ma, mb = ua.means, ub.means
        d = np.asarray([ma[k] - mb[k] for k in ids])
        clusters = [ua.clusters[k] for k in ids]
        c0 = len(set(clusters))
        sd = float(d.std(ddof=1))
        deff0 = design_effect(d, clusters)
        m0 = len(ids) / c0
        if design.cluster == "task":
            c1, deff = n, 1.0
        else:
            c1 = len(families) if design.cluster == "family" else max(2, round(n / m0))
            m1 = n / c1
            # a negative estimate of the intra-cluster correlation is read as 0 (the usual
            # truncation); a pilot with one task per cluster cannot estimate it at all
            rho = max(0.0, (deff0 - 1) / (m0 - 1)) if m0 > 1 and deff0 == deff0 else 0.0
            deff = 1 + (m1 - 1) * rho
        se = sd * math.sqrt(deff / n) if sd > 0 else float("nan")
        note = "" if sd > 0 else "no spread in the pilot: no MDD"
        if sd > 0 and m0 <= 1 and design.cluster != "task":
            note = "one pilot task per cluster: correlation within clusters taken as 0"
        mdd = minimum_detectable_difference(se, c1 - 1, alpha, design.power)
        planned.append(PlannedComparison(c, len(ids), c0, n, c1, sd, deff, mdd, note))
        for s in (a, b):
            fam = {t.family for t in pilot[s].tasks.values()}
            episodes[s] = max(episodes.get(s, 0), design.sample.per_family * len(fam))
    for s in episodes:
        episodes[s] *= design.epochs
    # a system without a pilot: as many episodes as a piloted one of its model's families
    for c in design.comparisons:
        for s in c.systems:
            if s not in pilot and s not in episodes:
                same = [n for (w, m), n in episodes.items() if m == s[1] or w == s[0]]
                if same:
                    episodes[s] = max(same)
    borrowed = _borrowed_seconds(design, seconds, budget_seconds, pilot)
    ran = _measured_seconds(design, seconds, budget_seconds, measured or {})
    budget_seconds = {k: v for k, v in budget_seconds.items() if design.budgets}
    return DesignPlan(
        planned,
        episodes,
        seconds,
        design.parallel,
        budget_seconds,
        borrowed,
        design.default_arm,
        ran,
    )


def _seconds_per_episode(run: Run) -> float:
    """The mean wall time of ``run``'s scored episodes."""
    return sum(t.wall_time_s for t in run.scored) / len(run.scored)


def _measured_seconds(
    design: StudyDesign,
    seconds: dict[tuple[str, str], float],
    budget_seconds: dict[tuple[str, str], float],
    measured: dict[int, dict[tuple[str, str], Run]],
) -> dict[tuple[str, str], list[int]]:
    """A system's seconds per episode at each budget it has run at (``measured``) in place of
    the pilot's estimate; at a budget it has not run at yet, the estimate's average over the
    budgets, or without one the mean of its measured budgets. Fills ``budget_seconds`` (and
    ``seconds``, for a system the pilot lacks) in place."""
    took: dict[tuple[str, str], dict[int, float]] = {}
    for budget, systems in measured.items():
        if budget not in design.budgets:
            continue
        for key, run in systems.items():
            if run.scored:
                took.setdefault(key, {})[budget] = _seconds_per_episode(run)
    for key, by_budget in took.items():
        known = budget_seconds.get(key)
        fallback = (
            known / len(design.budgets)
            if known is not None
            else sum(by_budget.values()) / len(by_budget)
        )
        budget_seconds[key] = sum(by_budget.get(b, fallback) for b in design.budgets)
        seconds.setdefault(key, sum(by_budget.values()) / len(by_budget))
    return {key: sorted(by_budget) for key, by_budget in took.items()}


def _borrowed_seconds(
    design: StudyDesign,
    seconds: dict[tuple[str, str], float],
    budget_seconds: dict[tuple[str, str], float],
    pilot: dict[tuple[str, str], Run],
) -> dict[tuple[str, str], str]:
    """Seconds per episode for declared systems the pilot lacks (a model the pilot ran on
    fewer workflows): the same workflow on another piloted model, times the ratio of the two
    models' seconds on a workflow both ran (ReAct where it can). Fills ``seconds`` and
    ``budget_seconds`` in place; returns system -> what it was scaled from."""
    out = {}
    wanted = {s for c in design.comparisons for s in c.systems}
    for workflow, model in sorted(wanted - set(seconds)):
        for (w2, m2), sec in sorted(seconds.items()):
            if w2 != workflow or m2 == model:
                continue
            shared = [w for (w, m) in seconds if m == model and (w, m2) in seconds]
            if not shared:
                continue
            base = "react" if "react" in shared else shared[0]
            ratio = seconds[(base, model)] / seconds[(base, m2)]
            seconds[(workflow, model)] = sec * ratio
            if (w2, m2) in budget_seconds:
                budget_seconds[(workflow, model)] = budget_seconds[(w2, m2)] * ratio
            out[(workflow, model)] = f"{w2}/{m2} x {base} ratio {ratio:.2f}"
            break
    return out


def render_plan(plan: DesignPlan, design: StudyDesign) -> str:
    """The plan as Markdown: a row per declared comparison, then the machine time."""
    m = len(design.comparisons)
    arms = int(design.default_arm) + len(design.budgets)
    budgets = ", ".join(str(b) for b in design.budgets)
    where = "the default arm and each of " if design.default_arm else "each of "
    family = (
        f"{m}"
        if not design.budgets
        else f"{m * arms} ({m} on {where}{len(design.budgets)} budgets: {budgets} tokens)"
    )
    out = [
        f"declared comparisons: {family}; MDD at {100 * design.power:g}% power, alpha "
        f"{design.alpha:g} / {m * arms} (Bonferroni, a bound for Holm), clusters by "
        f"{design.cluster}",
        "",
        "| comparison | pilot tasks | pilot clusters | planned tasks | planned clusters "
        "| sd of difference | design effect | MDD |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]

    def num(x: float, fmt: str = ".3f") -> str:
        return "-" if x != x else format(x, fmt)

    for p in plan.comparisons:
        out.append(
            f"| {p.comparison} | {p.pilot_tasks} | {p.pilot_clusters} | {p.planned_tasks} "
            f"| {p.planned_clusters} | {num(p.sd)} | {num(p.deff, '.2f')} | "
            f"{num(p.mdd)}{' (' + p.note + ')' if p.note else ''} |"
        )
    if plan.budget_seconds:
        out += [
            "",
            "| system | planned episodes per arm | pilot s/episode | s/episode over the "
            f"{len(design.budgets)} budget arms | episode-hours"
            f"{'' if design.default_arm else ' (budget arms only)'} |",
            "|---|---:|---:|---:|---:|",
        ]
    else:
        out += [
            "",
            "| system | planned episodes | pilot s/episode | episode-hours |",
            "|---|---:|---:|---:|",
        ]
    for s, n in sorted(plan.episodes.items()):
        sec = plan.seconds_per_episode.get(s, float("nan"))
        name = "/".join(s) + (f" (no pilot: {plan.borrowed[s]})" if s in plan.borrowed else "")
        if s in plan.measured:
            ran = plan.measured[s]
            name += f" (measured at {len(ran)} of {len(design.budgets)} budgets)"
        if plan.budget_seconds:
            extra = plan.budget_seconds.get(s, float("nan"))
            hours = n * plan.seconds_of(s) / 3600
            out.append(
                f"| {name} | {n} | {num(sec, '.1f')} | {num(extra, '.1f')} | {num(hours, '.2f')} |"
            )
            continue
        out.append(f"| {name} | {n} | {num(sec, '.1f')} | {num(n * sec / 3600, '.2f')} |")
    out += [
        "",
        f"machine time: {plan.machine_hours:.1f} h with {plan.parallel} episodes at once "
        "(pilot seconds per episode; they vary with the machine's load)"
        + (
            "; measured: seconds per episode of the study's own stored cells, over the "
            "environments they have run so far"
            if plan.measured
            else ""
        ),
    ]
    return "\n".join(out) + "\n"
