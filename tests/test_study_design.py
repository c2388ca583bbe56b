"""A study declares its design before it runs (issue 48): one seeded random sample of tasks per
family shared by every cell of an environment, its cluster level, and its comparisons; the plan
prints each comparison's MDD and the machine time; the tables test exactly what was declared."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from raleval.analysis.design import load_design, plan_design
from raleval.app.cli import app
from raleval.app.plan import build_env, run_tasks
from raleval.config import ConfigError, RunConfig
from raleval.records import Level, Task
from raleval.tasks.sampling import stratified

ROOT = Path(__file__).resolve().parents[1]
STUDY = ROOT / "studies" / "local-models"
runner = CliRunner()

DESIGN = """\
sample: {seed: 7, per_family: 5}
cluster: family
comparisons:
  - [react/local/qwen2.5-0.5b, direct/local/qwen2.5-0.5b]
  - [react/local/qwen2.5-0.5b, pal/local/qwen2.5-0.5b]
  - {a: react/local/qwen2.5-0.5b, b: direct/local/qwen2.5-0.5b, level: KU}
  - [react/local/qwen2.5-0.5b, react/local/qwen2.5-7b]
"""


def _task(family: str, i: int) -> Task:
    return Task(
        id=f"{family}-{i:02d}", family=family, domain="d", level=Level.KS, question="q",
        answers=["a"],
    )  # fmt: skip


def test_the_seeded_sample_is_random_within_each_family_and_never_first_k():
    pool = [_task(f, i) for f in ("a", "b") for i in range(20)]
    first = stratified(pool, 6)
    seeded = stratified(pool, 6, sample_seed=7)
    assert [t.id for t in first] == ["a-00", "b-00", "a-01", "b-01", "a-02", "b-02"]
    assert sorted(t.family for t in seeded) == ["a"] * 3 + ["b"] * 3  # stratified
    assert {t.id for t in seeded} != {t.id for t in first}
    # which tasks depends on seed, family and ids only: not on the pool's order
    assert {t.id for t in stratified(pool[::-1], 6, sample_seed=7)} == {t.id for t in seeded}
    assert [t.id for t in stratified(pool, 6, sample_seed=8)] != [t.id for t in seeded]
    # a larger sample extends a smaller one, as --limit does
    assert [t.id for t in stratified(pool, 10, sample_seed=7)][:6] == [t.id for t in seeded]


def test_every_cell_of_an_environment_gets_the_same_task_ids(tmp_path):
    """What the first study lacked: function calling and DFSDT ran the first task of each
    family, the 1.5B model the first two, the rest five. Cells of one environment that share a
    design's sample draw the same ids whatever their workflow or model."""
    env = build_env("scholar", {"size": "tiny"})
    chosen = {}
    for workflow, model in [
        ("react", "scripted/oracle"),
        ("dfsdt", "scripted/oracle"),
        ("function_calling", "local/qwen2.5-0.5b"),
        ("direct", "local/qwen2.5-1.5b"),
    ]:
        config = RunConfig(
            env="scholar", env_options={"size": "tiny"}, workflow=workflow, model=model,
            tasks_per_family=6, limit=12, sample_seed=7, log_dir=tmp_path,
        )  # fmt: skip
        tasks, _ = run_tasks(config.with_defaults(), env)
        chosen[(workflow, model)] = [t.id for t in tasks]
    ids = list(chosen.values())
    assert len(ids[0]) == 12 and all(i == ids[0] for i in ids), chosen
    first_k, _ = run_tasks(
        RunConfig(
            env="scholar", env_options={"size": "tiny"}, tasks_per_family=6, limit=12,
            log_dir=tmp_path,
        ).with_defaults(),
        env,
    )  # fmt: skip
    assert [t.id for t in first_k] != ids[0]  # not the generator's first tasks


def test_a_design_file_is_validated(tmp_path):
    path = tmp_path / "d.yaml"
    path.write_text(DESIGN, encoding="utf-8")
    design = load_design(path)
    assert (design.sample.seed, design.sample.per_family, design.cluster) == (7, 5, "family")
    assert str(design.comparisons[2]) == (
        "react/local/qwen2.5-0.5b vs direct/local/qwen2.5-0.5b (KU)"
    )
    for bad, message in [
        (DESIGN.replace("level: KU", "level: XX"), "level 'XX'"),
        (DESIGN.replace("[react/local/qwen2.5-0.5b, pal", "[react, pal"), "not 'workflow/model'"),
        ("sample: {seed: 7, per_family: 5}\ncomparisons: []\n", "comparisons"),
        ("sample: {seed: 7}\ncomparisons: [[a/b, c/d]]\n", "per_family"),
        ("comparisons: [[a/b, c/d]]\nsample: {seed: 1, per_family: 2}\nwho: me\n", "who"),
    ]:
        path.write_text(bad, encoding="utf-8")
        with pytest.raises(ConfigError, match=message):
            load_design(path)


def test_the_plan_gives_each_declared_comparison_an_mdd_and_the_machine_time(tmp_path):
    from raleval.analysis.study import load_study

    path = tmp_path / "d.yaml"
    path.write_text(DESIGN, encoding="utf-8")
    design = load_design(path)
    plan = plan_design(design, load_study(STUDY)["generated"])
    rows = {str(p.comparison): p for p in plan.comparisons}
    whole = rows["react/local/qwen2.5-0.5b vs direct/local/qwen2.5-0.5b"]
    assert (whole.pilot_tasks, whole.planned_tasks, whole.planned_clusters) == (100, 100, 20)
    assert 0.05 < whole.mdd < 0.5
    ku = rows["react/local/qwen2.5-0.5b vs direct/local/qwen2.5-0.5b (KU)"]
    assert ku.planned_tasks < whole.planned_tasks and ku.mdd > whole.mdd  # a subgroup is weaker
    assert rows["react/local/qwen2.5-0.5b vs react/local/qwen2.5-7b"].note.startswith("no pilot")
    # react 0.5B ran 100 episodes at 21.9 s, two at once
    assert plan.seconds_per_episode[("react", "local/qwen2.5-0.5b")] == pytest.approx(21.9, 0.01)
    assert plan.machine_hours > 0
    result = runner.invoke(app, ["study", "plan", str(path), "--pilot", str(STUDY)])
    assert result.exit_code == 0, result.output
    assert f"| {whole.mdd:.3f} |" in result.output and "machine time:" in result.output


def test_tables_test_exactly_the_declared_comparisons(tmp_path):
    path = tmp_path / "d.yaml"
    path.write_text(DESIGN, encoding="utf-8")
    result = runner.invoke(app, ["study", "tables", str(STUDY), "--design", str(path)])
    assert result.exit_code == 0, result.output
    block = result.output.split("#### generated task sets: paired comparisons\n", 1)[1]
    block = block.split("####", 1)[0]
    rows = [r for r in block.splitlines() if r.startswith("| ") and " / " in r]
    rows = [r for r in rows if not r.startswith("| A | B |")]  # the header
    # the verdict cell, before any note on the sides' format failures
    verdicts = {r: r.rstrip(" |").rsplit(" | ", 1)[1].split(";")[0] for r in rows}
    tested = [r for r in rows if verdicts[r] in ("differ", "inside")]
    assert len(tested) == 3  # the 7B has no cell: nothing to test
    assert sum("(KU)" in r for r in tested) == 1
    assert all(verdicts[r] == "exploratory" for r in rows if r not in tested)
    assert len(rows) > len(tested) + 10
    # clustered by family, as declared: 20 clusters over the 100 tasks
    assert "| 100 | 20 |" in tested[0]


def test_under_a_design_wall_time_comes_only_from_the_timing_pass(tmp_path):
    """Issue 48: the cells ran two at once under nice on a shared machine, so a study under
    a design compares tokens and calls, not their seconds; a timing pass's episodes (one at
    a time, interleaved, load recorded) make the only time table."""
    import json

    path = tmp_path / "d.yaml"
    path.write_text(DESIGN, encoding="utf-8")
    timing = tmp_path / "timing" / "scholar"
    timing.mkdir(parents=True)
    rows = [
        ("react", 30.0, 1.1), ("react", 50.0, 1.3), ("react", 34.0, 0.9),
        ("direct", 1.0, 1.0), ("direct", None, 1.0),  # an episode that failed to run
    ]  # fmt: skip
    (timing / "timing.jsonl").write_text(
        "".join(
            json.dumps(
                {"cell": f"timing-{w}", "workflow": w, "model": "local/qwen2.5-0.5b",
                 "task_id": f"t{i}", "wall_time_s": s, "load_before": load}
            ) + "\n"
            for i, (w, s, load) in enumerate(rows)
        )
    )  # fmt: skip
    args = ["study", "tables", str(STUDY), "--timing", str(tmp_path / "timing")]
    result = runner.invoke(app, [*args, "--design", str(path)])
    assert result.exit_code == 0, result.output
    header = next(r for r in result.output.splitlines() if r.startswith("| workflow | model |"))
    assert "| s/ep |" not in header and "| tokens/ep |" in header and "| calls/ep |" in header
    assert "wall time comes from a timing pass" in result.output
    # episodes, families (none recorded), median and range, median and highest load, waits
    # that timed out, answers that differ from the scored ones ("-": not checked)
    assert (
        "| scholar | react | local/qwen2.5-0.5b | 3 | - | 34.0 | 30.0-50.0 | 1.10 | 1.30 | 0 | - |"
        in result.output
    )
    assert (
        "| scholar | direct | local/qwen2.5-0.5b | 1 | - | 1.0 | 1.0-1.0 | 1.00 | 1.00 | 0 | - |"
        in result.output
    )
    # without a design (the first study's tables), the cells' own seconds stay
    plain = runner.invoke(app, ["study", "tables", str(STUDY)])
    assert "| s/ep |" in next(r for r in plain.output.splitlines() if r.startswith("| workflow |"))


@pytest.mark.parametrize(
    "design", sorted((ROOT / "studies").glob("*.design.yaml")), ids=lambda p: p.name
)
def test_a_stored_study_with_a_design_ran_the_same_tasks_in_every_cell(design):
    """The acceptance line for the re-run: once its cells are stored beside its design, every
    generated-arm cell of an environment holds the same task ids."""
    from raleval.analysis.runs import find_runs, load_run
    from raleval.analysis.study import GENERATED, arm_of

    folder = design.with_name(design.name.removesuffix(".design.yaml"))
    if not folder.is_dir():
        pytest.skip(f"{folder.name} has not run yet")
    by_env: dict[str, dict[str, set[str]]] = {}
    for path in find_runs([folder]):
        run = load_run(path)
        if not arm_of(run).startswith(GENERATED):
            continue
        env = str(run.header.config.get("env")) if run.header else "?"
        by_env.setdefault(env, {})[path.name] = set(run.tasks)
    assert by_env, f"{folder} has no generated-arm cell"
    for env, cells in by_env.items():
        first = next(iter(cells.values()))
        differ = [name for name, ids in cells.items() if ids != first]
        assert not differ, f"{env}: {differ} ran other tasks than the rest"


def test_the_re_run_s_config_draws_the_design_s_sample_in_every_cell():
    """studies/local-models-2.yaml as declared by its design: every cell of an environment (all
    three arms) takes the same seeded sample, ``per_family`` tasks of each of the environment's
    families, and every system a declared comparison names runs in the default arm."""
    from collections import defaultdict

    from raleval.config import load_matrix

    design = load_design(ROOT / "studies" / "local-models-2.design.yaml")
    configs = load_matrix(ROOT / "studies" / "local-models-2.yaml", {})
    by_env: dict[str, set[tuple]] = defaultdict(set)
    for c in configs:
        sample = (c.with_defaults().tasks, c.tasks_per_family, c.seed, c.sample_seed, c.limit)
        by_env[c.env].add(sample)
    assert set(by_env) == {"scholar", "wiki", "crag"}
    for env, samples in by_env.items():
        assert len(samples) == 1, f"{env}: cells draw {samples}"
        tasks, per_family, seed, sample_seed, limit = samples.pop()
        assert sample_seed == design.sample.seed
        config = RunConfig(env=env, tasks=tasks, tasks_per_family=per_family, seed=seed)
        families = {t.family for t in run_tasks(config, build_env(env, {}))[0]}
        assert limit == design.sample.per_family * len(families), env
    default_arm = {(c.workflow, c.model) for c in configs if c.arm is None}
    for comparison in design.comparisons:
        assert set(comparison.systems) <= default_arm, comparison


def test_the_re_run_s_comparisons_were_declared_before_its_cells_ran():
    """Every stored cell of the re-run records the commit it ran from (its header's
    ``git_revision``); that commit's design file already declared today's comparisons and
    cluster level, so none was chosen after seeing a cell."""
    import json
    import subprocess

    import yaml

    from raleval.analysis.design import StudyDesign

    design_file = "studies/local-models-2.design.yaml"
    now = load_design(ROOT / design_file)
    revisions = {
        json.loads(h.read_text(encoding="utf-8"))["git_revision"]
        for h in (ROOT / "studies" / "local-models-2").glob("*/header.json")
    }
    assert revisions and None not in revisions
    for rev in sorted(revisions):
        known = subprocess.run(["git", "cat-file", "-e", f"{rev}^{{commit}}"], cwd=ROOT)
        if known.returncode != 0:
            pytest.skip(f"this clone lacks the history of {rev} (a shallow clone)")
        shown = subprocess.run(
            ["git", "show", f"{rev}:{design_file}"], cwd=ROOT, capture_output=True, text=True
        )
        assert shown.returncode == 0, f"{rev} has no {design_file}: {shown.stderr}"
        then = StudyDesign.model_validate(yaml.safe_load(shown.stdout))
        assert then.declared == now.declared and then.cluster == now.cluster, rev


def test_the_timing_pass_times_the_default_arm_s_cells_on_the_study_s_sample():
    """studies/local-models-2.timing.yaml holds exactly the default arm's cells (environment,
    workflow, model, options), drawing the same seeded sample, so its seconds are theirs."""
    from raleval.config import load_matrix

    def cells(path: Path, arm_only: bool) -> set[tuple]:
        out = set()
        for c in load_matrix(path, {}):
            if arm_only and c.arm is not None:
                continue
            sample = (c.with_defaults().tasks, c.tasks_per_family, c.sample_seed, c.limit)
            out.add((c.env, c.workflow, c.model, sample, repr(c.workflow_options)))
        return out

    study = cells(ROOT / "studies" / "local-models-2.yaml", arm_only=True)
    timing = cells(ROOT / "studies" / "local-models-2.timing.yaml", arm_only=False)
    assert timing == study and len(timing) == 30


def test_an_arm_names_its_cells_and_leaves_the_fingerprint_alone(tmp_path):
    """Two arms of one system (other budgets, sampling) keep apart in one log directory; a cell
    without an arm keeps the name and fingerprint it had before arms existed."""
    plain = RunConfig(env="scholar", workflow="react", log_dir=tmp_path)
    armed = plain.model_copy(update={"arm": "matched-4000"})
    assert armed.slug() == "matched-4000__" + plain.slug()
    assert armed.run_dir != plain.run_dir and armed.fingerprint() == plain.fingerprint()
    with pytest.raises(Exception, match="arm"):
        RunConfig(arm="../elsewhere")
