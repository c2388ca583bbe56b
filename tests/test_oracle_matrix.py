"""The oracle reaches F1 = 1.0 through every workflow on every environment's generated tasks.

``direct`` has no tools, so its oracle answers from "memory" and is labelled AM; every other
workflow retrieves the answer and is labelled EM.
"""

from collections import Counter

import pytest

from raleval import registry
from raleval.workflows.sandbox import check_isolation

from .conftest import run_config, standalone_workflows

# every registered environment that has a default task set, on a tiny world
ENV_TASKS = {
    name: ({"size": "tiny"}, plugin.default_tasks)
    for name, plugin in registry.envs.load_all().items()
    if plugin.default_tasks and name in ("scholar", "wiki", "crag")
}


# opt-in sets outside the defaults: the long-form families (issue 39), graded by key points;
# their oracle runs are in tests/test_longform_families.py
OPT_IN_SETS = {"scholar": "scholar-longform", "wiki": "wiki-longform"}


def test_built_in_envs_have_default_sets():
    # "remote" and "mcp" evaluate another server's tools: tests/test_serve.py and
    # tests/test_mcp.py run the oracle through them; "crag-pages" answers loaded CRAG tasks
    # from their own pages (tests/test_crag_pages.py); "docs" answers the seeds' loaded
    # benchmarks over their collections (tests/test_collection_loaders.py)
    assert set(ENV_TASKS) == {"scholar", "wiki", "crag"}
    assert set(registry.envs.names()) == {
        "scholar", "wiki", "crag", "crag-pages", "remote", "mcp", "docs"
    }  # fmt: skip
    assert registry.envs.get("remote").default_tasks is None
    assert registry.envs.get("crag-pages").default_tasks is None


def test_each_default_set_holds_every_family_of_its_env():
    for env, (_, spec) in ENV_TASKS.items():
        own = {
            f for f in registry.task_families.names() if registry.task_families.get(f).env == env
        }
        extra = set(registry.task_sets.get(OPT_IN_SETS[env])) if env in OPT_IN_SETS else set()
        assert not extra & set(registry.task_sets.get(spec)), env
        assert own == set(registry.task_sets.get(spec)) | extra, env


def test_every_family_is_in_a_covered_set():
    covered = {f for _, spec in ENV_TASKS.values() for f in registry.task_sets.get(spec)}
    covered |= {f for spec in OPT_IN_SETS.values() for f in registry.task_sets.get(spec)}
    assert set(registry.task_families.names()) == covered


@pytest.mark.parametrize("env", sorted(ENV_TASKS))
@pytest.mark.parametrize("workflow", standalone_workflows())
def test_oracle_f1_is_one(tmp_path, env, workflow):
    if workflow == "pal" and check_isolation() is not None:
        pytest.skip(check_isolation())
    options, tasks = ENV_TASKS[env]
    summary, results = run_config(
        tmp_path, env=env, env_options=options, workflow=workflow, tasks=tasks, tasks_per_family=3
    )
    families = {r.task_id.rsplit("-s", 1)[0] for r in results}
    assert summary.ran == len(results) >= 3 * len(families) - 2
    # every default task fits the default context, observations and tool schemas included:
    # no episode may end in context_limit (a year of CRAG's daily prices once did)
    ends = Counter(r.termination.value for r in results)
    assert ends == {"finished": len(results)}, ends
    assert [r.task_id for r in results if r.scores["f1"] != 1.0] == []
    assert [r.task_id for r in results if r.scores["em"] != 1.0] == []
    expected = "AM" if workflow == "direct" else "EM"
    for r in results:
        # answers computed from tool results (a sum, a comparison) never appear in an
        # observation; their tasks' evidence (the values the answer reads) grounds them
        if r.error_cause == "EM:correct_rejection":
            continue
        assert r.error_type.value == expected, (r.task_id, r.error_cause)
