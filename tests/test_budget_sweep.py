"""A budget sweep (issue 62): a design declares its budgets, a run config's ``budgets`` expands
each block into one arm per budget, the analysis reads each arm as ``generated @ N tokens``,
and the tables give each system's F1 against the budget; the third study's design and config
agree with each other."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

from raleval.analysis.design import load_design
from raleval.app.plan import build_env, run_tasks
from raleval.config import ConfigError, RunConfig, load_matrix

ROOT = Path(__file__).resolve().parents[1]


def test_budgets_expand_a_block_into_one_arm_per_budget(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text(
        "env: scholar\nworkflows: [react, pal]\nbudgets: [2000, 1000]\n"
        "workflow_options: {time_limit_s: 60, react: {max_steps: 50}}\n",
        encoding="utf-8",
    )
    cells = load_matrix(config, {})
    got = sorted((c.arm, c.workflow, c.workflow_options["max_episode_tokens"]) for c in cells)
    assert got == [
        ("budget-1000", "pal", 1000), ("budget-1000", "react", 1000),
        ("budget-2000", "pal", 2000), ("budget-2000", "react", 2000),
    ]  # fmt: skip
    react = next(c for c in cells if c.workflow == "react")
    assert (
        react.workflow_options["max_steps"] == 50 and react.workflow_options["time_limit_s"] == 60
    )
    assert len({c.run_dir for c in cells}) == 4  # each arm's cells apart
    for bad in ("[0]", "[1000, 1000]", "[abc]", "[true]"):
        config.write_text(f"env: scholar\nbudgets: {bad}\n", encoding="utf-8")
        with pytest.raises(ConfigError, match="budget"):
            load_matrix(config, {})


def test_a_design_declares_budgets_family_and_estimand(tmp_path):
    design = tmp_path / "d.yaml"
    design.write_text(
        "sample: {seed: 1, per_family: 2}\nbudgets: [4000, 1000]\nfamily: arm\n"
        "estimand: {weights: environment}\ncomparisons: [[react/m, direct/m]]\n",
        encoding="utf-8",
    )
    got = load_design(design)
    assert got.budgets == [1000, 4000] and got.family == "arm"
    assert got.estimand.weights == "environment" and got.default_arm
    for bad in (
        "budgets: [0]", "family: everything", "estimand: {weights: popularity}",
        "default_arm: false",
    ):  # fmt: skip
        design.write_text(
            f"sample: {{seed: 1, per_family: 2}}\n{bad}\ncomparisons: [[react/m, direct/m]]\n",
            encoding="utf-8",
        )
        with pytest.raises(ConfigError):
            load_design(design)


def test_the_third_study_s_config_runs_what_its_design_declares():
    """studies/local-models-3.yaml: every budget of the design as an arm, both models on all
    six workflows in each, every cell of an environment on the same seeded sample of
    ``per_family`` tasks per family, and every declared comparison's systems in every arm."""
    design = load_design(ROOT / "studies" / "local-models-3.design.yaml")
    configs = load_matrix(ROOT / "studies" / "local-models-3.yaml", {})
    assert len(design.budgets) >= 4 and not design.default_arm
    arms: dict[str, set] = defaultdict(set)
    samples: dict[str, set] = defaultdict(set)
    for c in configs:
        budget = c.workflow_options["max_episode_tokens"]
        assert c.arm == f"budget-{budget}"
        arms[budget].add((c.workflow, c.model))
        samples[c.env].add((c.with_defaults().tasks, c.tasks_per_family, c.sample_seed, c.limit))
    assert sorted(arms) == design.budgets
    workflows = {"react", "pal", "dfsdt", "function_calling", "direct", "planned"}
    for systems in arms.values():
        for model in ("local/qwen2.5-0.5b", "local/qwen2.5-1.5b"):
            assert {w for w, m in systems if m == model} == workflows
        for comparison in design.comparisons:
            assert set(comparison.systems) <= systems, comparison
    assert set(samples) == {"scholar", "wiki", "crag"}
    for env, drawn in samples.items():
        assert len(drawn) == 1, f"{env}: cells draw {drawn}"
        tasks, per_family, seed, limit = drawn.pop()
        assert seed == design.sample.seed
        config = RunConfig(env=env, tasks=tasks, tasks_per_family=per_family)
        families = {t.family for t in run_tasks(config, build_env(env, {}))[0]}
        assert limit == design.sample.per_family * len(families), env
