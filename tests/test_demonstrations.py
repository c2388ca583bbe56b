"""Demonstration parity: every workflow on an environment is shown the same demonstration
tasks (the task's own family, disjoint from the tasks under test), each in its own format,
and the run header and report keep the exact prompt."""

from __future__ import annotations

from pathlib import Path

import pytest

from raleval import registry
from raleval.analysis.report import build_report
from raleval.analysis.runs import load_run
from raleval.store import TASKS, read_header, read_tasks

from .conftest import run_config

ROOT = Path(__file__).resolve().parents[1]

ENVS = {"scholar": "scholar", "wiki": "wiki", "crag": "crag-kg"}
WORKFLOWS = ["react", "function_calling", "pal", "dfsdt", "planned", "direct"]


@pytest.mark.parametrize("env", sorted(ENVS))
def test_every_workflow_gets_the_same_demonstration_tasks(tmp_path, env):
    seen: dict[str, dict[str, list[str]]] = {}
    for workflow in WORKFLOWS:
        options = {"shots": 2}
        if workflow == "pal":
            options["pal_unsafe"] = True  # no program runs: only the prompt is read here
        summary, results = run_config(
            tmp_path / workflow,
            env=env,
            env_options={"size": "tiny"},
            workflow=workflow,
            tasks=ENVS[env],
            tasks_per_family=1,
            limit=1 if workflow == "pal" else None,
            workflow_options=options,
        )
        header = read_header(summary.run_dir)
        demos = header.prompts["demonstrations"]
        seen[workflow] = demos
        # demonstrations are drawn for the families the run runs (pal runs one task)
        families = {t.family for t in read_tasks(summary.run_dir / TASKS)}
        assert families <= set(registry.task_sets.get(ENVS[env]))
        assert set(demos) <= families and len(demos) >= len(families) - 1
        # two where the pool has two with a solution (CRAG's false premises have fewer)
        assert sum(len(ids) == 2 for ids in demos.values()) >= len(demos) - 1
        assert all(1 <= len(ids) <= 2 for ids in demos.values())
        for family, ids in demos.items():
            assert all(f"{family}-s7919-" in i for i in ids)  # its own family's pool
        rendered = header.prompts["rendered"]
        assert set(rendered) == set(demos)
        # the demonstration is in the first prompt of an episode of its family
        first = results[0]
        family = {t.id: t.family for t in read_tasks(summary.run_dir / TASKS)}[first.task_id]
        if family in rendered:
            prompt = "\n".join(c.prompt for c in first.llm_calls[:1])
            assert rendered[family][0] in prompt, workflow
    # the same tasks for every workflow, family by family (pal ran one family's task)
    for demos in seen.values():
        assert demos == {f: seen["react"][f] for f in demos}, seen
    assert sum(len(d) for d in seen.values()) > len(seen["react"])


def test_zero_shots_means_no_demonstrations(tmp_path):
    summary, results = run_config(tmp_path, limit=1, workflow_options={"shots": 0})
    header = read_header(summary.run_dir)
    assert header.prompts["demonstrations"] == {} and header.prompts["shots"] == 0
    assert "Here is an example." not in results[0].llm_calls[0].prompt


def test_report_shows_the_prompt_and_demonstrations(tmp_path):
    summary, _ = run_config(tmp_path, limit=1, workflow="direct")
    page = build_report([load_run(summary.run_dir)])
    header = read_header(summary.run_dir)
    [ids] = header.prompts["demonstrations"].values()
    assert "<h2>Prompts and demonstrations</h2>" in page
    assert ids[0] in page
    assert "Answer the question as briefly as possible, with the answer only." in page


def test_a_second_demonstration_seed_draws_other_demonstrations_for_the_same_tasks(tmp_path):
    """``demonstration_seed`` (issue 62): the same tasks under test, shown other demonstrations
    of their families, still disjoint from them; the header records the seed, and a run that
    leaves it unset fingerprints as runs did before the option existed."""
    import json

    from raleval.config import RunConfig

    runs = {}
    for seed in (None, 5):
        summary, results = run_config(
            tmp_path / str(seed),
            tasks="scholar",
            tasks_per_family=3,
            demonstration_seed=seed,
            workflow_options={"shots": 1},
        )
        runs[seed] = (read_header(summary.run_dir), results)
    (first, results_a), (second, results_b) = runs[None], runs[5]
    assert first.seeds == {"tasks": 0}
    assert second.seeds == {"tasks": 0, "demonstrations": 5}
    assert sorted(t.task_id for t in results_a) == sorted(t.task_id for t in results_b)
    a, b = first.prompts["demonstrations"], second.prompts["demonstrations"]
    assert set(a) == set(b)
    assert all(set(a[f]).isdisjoint(b[f]) for f in a), (a, b)
    tested = {t.task_id for t in results_b}
    assert not tested & {i for ids in b.values() for i in ids}
    # an unset seed hashes as before: a second-study cell's stored header fingerprint
    # is its own config's
    cell = next((ROOT / "studies" / "local-models-2").glob("*__react__*/header.json"))
    stored = json.loads(cell.read_text())
    assert RunConfig(**stored["config"]).fingerprint() == stored["fingerprint"]
    assert second.fingerprint != first.fingerprint
