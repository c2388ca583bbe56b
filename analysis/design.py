"""A study's design, declared before it runs (issue 48): the tasks every cell of an environment
draws, the cluster level of its intervals, and the comparisons its tables test.

A design file (YAML, ``studies/<study>.design.yaml``)::

    sample: {seed: 7, per_family: 5}   # seeded random tasks per family, shared by every cell
    cluster: family                    # the default for generated task sets
    epochs: 1
    parallel: 2                        # episodes at once, for the machine-time estimate
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator

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

    @property
    def machine_hours(self) -> float:
        """Wall-clock hours of the cells with a pilot, ``parallel`` episodes at once."""
        total = sum(
            n * self.seconds_per_episode[s]
            for s, n in self.episodes.items()
            if s in self.seconds_per_episode
        )
        return total / self.parallel / 3600


def _level_of(run: Run, task_id: str) -> str | None:
    task = run.tasks.get(task_id)
    return task.level.value if task is not None else None


def plan_design(design: StudyDesign, pilot: dict[tuple[str, str], Run]) -> DesignPlan:
    """Each declared comparison's MDD at the planned size, from the pilot's paired differences.

    The planned size is ``per_family`` tasks of every family the pilot's tasks come from. Per
    comparison: the sd of the per-task difference s_d on the tasks both pilot systems ran, the
    pilot's design effect at the declared cluster level turned into an intra-cluster
    correlation ``rho = (DEFF - 1) / (m0 - 1)`` (Kish) and back into the planned cluster size
    m, ``DEFF = 1 + (m - 1) rho``; then ``SE = s_d sqrt(DEFF / n)`` and ``MDD = (t_{1-a/2} +
    t_power) SE`` with C - 1 degrees of freedom (Miller 2024, section 5) at Bonferroni's
    ``alpha / m`` over the declared comparisons, a bound for Holm's. Machine time: each
    system's planned episodes x its pilot seconds per episode, ``parallel`` at once."""
    m = len(design.comparisons)
    alpha = design.alpha / m
    planned: list[PlannedComparison] = []
    episodes: dict[tuple[str, str], int] = {}
    seconds: dict[tuple[str, str], float] = {}
    for key, run in pilot.items():
        scored = run.scored
        if scored:
            seconds[key] = sum(t.wall_time_s for t in scored) / len(scored)
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
    return DesignPlan(planned, episodes, seconds, design.parallel)


def render_plan(plan: DesignPlan, design: StudyDesign) -> str:
    """The plan as Markdown: a row per declared comparison, then the machine time."""
    m = len(design.comparisons)
    out = [
        f"declared comparisons: {m}; MDD at {100 * design.power:g}% power, alpha "
        f"{design.alpha:g} / {m} (Bonferroni, a bound for Holm), clusters by {design.cluster}",
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
    out += [
        "",
        "| system | planned episodes | pilot s/episode | episode-hours |",
        "|---|---:|---:|---:|",
    ]
    for s, n in sorted(plan.episodes.items()):
        sec = plan.seconds_per_episode.get(s, float("nan"))
        out.append(f"| {'/'.join(s)} | {n} | {num(sec, '.1f')} | {num(n * sec / 3600, '.2f')} |")
    out += [
        "",
        f"machine time: {plan.machine_hours:.1f} h with {plan.parallel} episodes at once "
        "(pilot seconds per episode; they vary with the machine's load)",
    ]
    return "\n".join(out) + "\n"
