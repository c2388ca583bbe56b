"""The oracle reaches F1 = 1.0 through every workflow on every environment's generated tasks.

``direct`` has no tools, so its oracle answers from "memory" and is labelled AM; every other
workflow retrieves the answer and is labelled EM.
"""

import pytest

from raleval import registry
from raleval.workflows.sandbox import check_isolation

from .conftest import run_config

# environment -> (its options for a small test world, its generated task set)
ENV_TASKS = {
    "scholar": ({"size": "tiny"}, "scholar-ks"),
    "wiki": ({"size": "tiny"}, "wiki-ks"),
    "crag": ({"size": "tiny"}, "crag-kg-simple"),
}


def test_every_registered_env_is_covered():
    # "remote" is a served copy of another env: tests/test_serve.py runs the oracle through it
    assert set(registry.envs.names()) - {"remote"} == set(ENV_TASKS)


@pytest.mark.parametrize("env", sorted(ENV_TASKS))
@pytest.mark.parametrize("workflow", sorted(registry.workflows.names()))
def test_oracle_f1_is_one(tmp_path, env, workflow):
    if workflow == "pal" and check_isolation() is not None:
        pytest.skip(check_isolation())
    options, tasks = ENV_TASKS[env]
    summary, results = run_config(
        tmp_path, env=env, env_options=options, workflow=workflow, tasks=tasks, limit=8
    )
    assert summary.ran == 8 and summary.mean_f1 == 1.0
    expected = "AM" if workflow == "direct" else "EM"
    assert {r.error_type.value for r in results} == {expected}
