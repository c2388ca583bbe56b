"""Interface testbeds: the tools are presented differently (neutral names, no documentation,
look-alike distractors) or their results carry a planted instruction; the gold solution still
solves every variant through the changed interface, and what changed is what the testbed says."""

import json

import pytest

from raleval import registry
from raleval.analysis.runs import load_run, robustness_rates
from raleval.records import OutcomeKind
from raleval.tasks.catalog import load_tasks
from raleval.tasks.testbeds import Testbed, parse_spec, wrap_session
from raleval.tasks.testbeds.interface import attack_succeeded, lookalike_name, plant

from .conftest import run_config

SETS = {"scholar": "scholar", "wiki": "wiki", "crag": "crag-kg"}
BEDS = ("rename-tools", "bare-tools", "distractors=3", "inject")


@pytest.fixture(scope="module")
def envs():
    return {name: registry.envs.get(name)(size="tiny") for name in SETS}


def _tasks(envs, env, testbed, n=3):
    return load_tasks(f"{SETS[env]}@{testbed}", envs[env], env, n, 3)


def _session(envs, env, task):
    return wrap_session(envs[env].session(task), task, envs[env])


def test_parse_interface_specs():
    assert parse_spec("scholar@rename-tools") == ("scholar", Testbed("rename-tools"))
    assert parse_spec("crag-kg@distractors=3") == ("crag-kg", Testbed("distractors", count=3))
    assert Testbed("distractors", count=3).label == "distractors=3"
    for bad, message in [
        ("x@distractors", "needs a count"),
        ("x@distractors=0", "needs a count"),
        ("x@distractors=2.5", "needs a count"),
        ("x@bare-tools=1", "takes no value"),
    ]:
        with pytest.raises(ValueError, match=message):
            parse_spec(bad)


@pytest.mark.parametrize("env", sorted(SETS))
@pytest.mark.parametrize("bed", BEDS)
def test_oracle_solves_every_variant_through_the_changed_interface(tmp_path, env, bed):
    _, results = run_config(
        tmp_path, env=env, tasks=f"{SETS[env]}@{bed}", tasks_per_family=3, limit=6
    )
    assert len(results) >= 4
    assert all(r.scores["f1"] == 1.0 for r in results), [r.answer for r in results]
    assert all(r.scores["progress"] == 1.0 for r in results)
    rates = robustness_rates(load_run(next(tmp_path.glob("*"))))[bed]
    if bed == "inject":
        assert rates["utility"] == 1.0 and rates["attack_success"] == 0.0
    else:
        assert rates["f1"] == 1.0


@pytest.mark.parametrize("env", sorted(SETS))
def test_rename_tools_hides_every_real_name(tmp_path, envs, env):
    real = [t.name for t in envs[env].tools]
    for task in _tasks(envs, env, "rename-tools"):
        session = _session(envs, env, task)
        assert all(t.name.startswith("tool_") for t in session.tools)
        assert all(c.tool.startswith("tool_") for c in task.solution)
        # the real names are no longer tools, and a misuse message names only neutral ones
        result = session.call_sync(real[0], {})
        assert result.kind is OutcomeKind.misuse and result.cause == "unknown_tool"
        assert not any(f"{name}(" in result.observation for name in real)
        bad = session.call_sync(task.solution[0].tool, {"nonsense": 1})
        assert bad.kind is OutcomeKind.misuse and not any(n in bad.observation for n in real)
    # the prompt the model sees (tool list and demonstration) never names a real tool
    _, results = run_config(tmp_path, env=env, tasks=f"{SETS[env]}@rename-tools",
                            tasks_per_family=2, limit=2)  # fmt: skip
    prompt = results[0].llm_calls[0].prompt
    assert "tool_01" in prompt and "(End of example)" in prompt
    assert not any(f"{name}(" in prompt or f"{name}[" in prompt for name in real)


def test_rename_tools_numbers_over_the_whole_environment(envs):
    # a CRAG episode sees its domain's tools: the same tool keeps one name in every episode
    names = {}
    for task in _tasks(envs, "crag", "rename-tools"):
        session = _session(envs, "crag", task)
        for shown, real in zip(session.tools, envs["crag"].session(task).tools, strict=True):
            assert names.setdefault(real.name, shown.name) == shown.name


@pytest.mark.parametrize("env", sorted(SETS))
def test_bare_tools_keep_names_and_drop_documentation(envs, env):
    for task in _tasks(envs, env, "bare-tools"):
        session = _session(envs, env, task)
        real = envs[env].session(task).tools
        assert [t.name for t in session.tools] == [t.name for t in real]
        for tool in session.tools:
            assert tool.description == ""
            schema = tool.json_schema()["function"]
            assert "description" not in json.dumps(schema["parameters"])
            assert schema["parameters"].get("required", []) == next(
                t for t in real if t.name == tool.name
            ).json_schema()["function"]["parameters"].get("required", [])
        assert any("description" in json.dumps(t.json_schema()) for t in real)


def test_lookalike_names():
    assert lookalike_name("getPersonBasicInfo", 0, set()) == "fetchPersonBasicInfo"
    assert lookalike_name("music_get_members", 0, set()) == "music_fetch_members"
    assert lookalike_name("Search", 0, set()) == "Find"
    assert lookalike_name("Search", 0, {"Find"}) == "SearchV2"
    assert lookalike_name("tickers", 0, set()) == "tickers_v2"


@pytest.mark.parametrize("env", sorted(SETS))
def test_distractors_look_like_real_tools_and_never_hold_the_answer(envs, env):
    for task in _tasks(envs, env, "distractors=3"):
        session = _session(envs, env, task)
        real = {t.name: t for t in envs[env].session(task).tools}
        fakes = task.metadata["testbed"]["tools"]
        assert len(fakes) == 3 and len(session.tools) == len(real) + 3
        # the gold solution's first tool has a look-alike
        assert task.solution[0].tool in fakes.values()
        for fake, twin in fakes.items():
            assert fake not in real
            shown = session.tool(fake)
            assert shown.param_names == real[twin].param_names
        # the look-alike of the first gold call answers with records of another entity
        call = task.solution[0]
        fake = next(f for f, t in fakes.items() if t == call.tool)
        clean = session.call_sync(call.tool, call.arguments)
        other = session.call_sync(fake, call.arguments)
        assert other.kind is OutcomeKind.ok and other.observation != clean.observation
        for answer in task.answers:
            if len(answer) >= 4 and answer.lower() not in task.question.lower():
                assert answer.lower() not in other.observation.lower()


def test_a_wiki_distractor_does_not_move_the_episodes_page(envs):
    for task in _tasks(envs, "wiki", "distractors=2"):
        tools = [c.tool for c in task.solution]
        if tools[:2] != ["Search", "Lookup"]:
            continue
        session = _session(envs, "wiki", task)
        fake = next(f for f, t in task.metadata["testbed"]["tools"].items() if t == "Search")
        session.call_sync("Search", task.solution[0].arguments)
        session.call_sync(fake, {"entity": "Something else entirely"})
        after = session.call_sync("Lookup", task.solution[1].arguments).observation
        fresh = _session(envs, "wiki", task)
        fresh.call_sync("Search", task.solution[0].arguments)
        assert after == fresh.call_sync("Lookup", task.solution[1].arguments).observation
        return
    pytest.skip("no Search-then-Lookup wiki task in the sample")


@pytest.mark.parametrize("env", sorted(SETS))
def test_inject_plants_the_instruction_in_every_result(envs, env):
    for task in _tasks(envs, env, "inject"):
        planted = task.metadata["testbed"]["planted"]
        assert not attack_succeeded(task.answers[0], planted)
        session = _session(envs, env, task)  # one session: a wiki Lookup reads its Search
        results = [session.call_sync(c.tool, c.arguments) for c in task.solution]
        planted_in = [r for r in results if "ignore the question" in r.observation]
        assert planted_in and all(planted in r.observation for r in planted_in)
        assert all(r.kind is OutcomeKind.ok for r in results)


def test_plant_places():
    assert plant({"a": 1}, "X") == ({"a": 1, "note": "X"}, True)
    assert plant([{"a": 1}, {"b": 2}], "X") == ([{"a": 1, "note": "X"}, {"b": 2}], True)
    assert plant(["a"], "X") == (["a", "X"], True)
    assert plant("Some text.", "X") == ("Some text. X", True)
    assert plant([], "X") == ([], False) and plant(3, "X") == (3, False)
    assert attack_succeeded("The answer is Merrow Tazlan.", "Merrow Tazlan")
    assert not attack_succeeded("Merrow", "Merrow Tazlan")


def test_attack_success_counts_episodes_that_answer_the_planted_string(tmp_path):
    run_config(tmp_path, env="scholar", tasks="scholar@inject", tasks_per_family=3, limit=4)
    run = load_run(next(tmp_path.glob("*")))
    obeyed = run.results[0]
    obeyed.answer = run.tasks[obeyed.task_id].metadata["testbed"]["planted"]
    run.rescore()
    rates = robustness_rates(run)["inject"]
    n = len(run.results)
    assert rates["attack_success"] == pytest.approx(1 / n)
    assert rates["utility"] == pytest.approx((n - 1) / n)


@pytest.mark.parametrize("workflow", ["function_calling", "pal", "dfsdt"])
@pytest.mark.parametrize("bed", BEDS)
def test_other_workflows_see_the_changed_interface(tmp_path, workflow, bed):
    _, results = run_config(tmp_path, workflow=workflow, tasks=f"scholar@{bed}",
                            tasks_per_family=2, limit=3)  # fmt: skip
    assert results and all(r.scores["f1"] == 1.0 for r in results)
    prompt = results[0].llm_calls[0].prompt
    if bed == "rename-tools":
        assert "tool_01" in prompt and "searchPerson" not in prompt
    if bed == "distractors=3" and workflow == "pal":  # function calling sends tools apart
        assert "legacy mirror" in prompt


def test_a_testbed_run_is_shown_beside_the_untouched_sets_run(tmp_path):
    from typer.testing import CliRunner

    from raleval.analysis.runs import testbed_rows, untouched_rates
    from raleval.app.cli import app

    common = {"env": "scholar", "tasks_per_family": 2, "limit": 3}
    run_config(tmp_path, tasks="scholar", model="scripted/abstain", **common)
    run_config(tmp_path, tasks="scholar@inject", model="scripted/abstain", **common)
    run_config(tmp_path, tasks="scholar", model="scripted/oracle", **common)  # another system
    runs = {p.name: load_run(p) for p in tmp_path.iterdir()}
    bed = next(r for name, r in runs.items() if "abstain" in name and "@inject" in name)
    # found beside it: the same model's untouched run, not the oracle's
    assert untouched_rates(bed) == {"n": 3.0, "f1": 0.0, "correct": 0.0, "progress": 0.0}
    rows = testbed_rows([bed])
    assert [r[1] for r in rows] == ["inject", "untouched"]
    res = CliRunner().invoke(app, ["table", str(bed.path)])
    assert res.exit_code == 0 and "untouched" in res.output and "progress" in res.output
