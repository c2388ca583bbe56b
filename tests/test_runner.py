"""The runner end to end with scripted models: scores, recorded failures, resume, crash repair."""

import json

import pytest

from raleval.config import ConfigError
from raleval.model import Capabilities, ModelBase
from raleval.records import ErrorType, OutcomeKind, Termination
from raleval.store import RESULTS, TASKS, ResultsFile, read_header, read_tasks

from .conftest import run_config


def test_oracle_reaches_f1_one(tmp_path):
    summary, results = run_config(tmp_path)
    assert summary.ran == 12 and summary.mean_f1 == 1.0
    assert all(r.termination is Termination.finished for r in results)
    assert all(r.error_type is ErrorType.EM for r in results)
    first = results[0]
    assert first.steps[0].tool == "searchPerson" and first.steps[0].kind is OutcomeKind.ok
    assert first.steps[-1].tool == "Finish"
    assert first.n_llm_calls == len(first.llm_calls) == 2
    assert first.llm_calls[1].prompt_is_delta
    assert first.llm_calls[1].prompt.startswith("\nObservation 1: [{")
    assert "How many" not in first.llm_calls[1].prompt  # the header is stored once
    assert first.prompt_tokens > 0 and first.model_time_s >= 0 and first.tool_time_s > 0


def test_function_calling_oracle_reaches_f1_one(tmp_path):
    summary, results = run_config(tmp_path, workflow="function_calling")
    assert summary.mean_f1 == 1.0
    r = results[0]
    assert [s.tool for s in r.steps] == ["searchPerson", "Finish"]
    assert r.llm_calls[0].tool_calls[0].tool == "searchPerson"
    assert r.error_type is ErrorType.EM


class CapturingModel(ModelBase):
    """A model that records each request and answers from a fixed list."""

    name = "capture"

    def __init__(self, replies, prefill):
        self.replies, self.requests = list(replies), []
        self.capabilities = Capabilities(prefill=prefill)

    async def generate(self, request):
        from raleval.model import Generation

        self.requests.append(request)
        return Generation(text=self.replies.pop(0))


@pytest.mark.parametrize("prefill", [True, False])
def test_react_layouts(scholar_env, prefill):
    import asyncio

    from raleval.workflows.common import EpisodeRecord
    from raleval.workflows.react import build_react_graph

    model = CapturingModel(
        [" look\nAction 1: getCoauthors(p1)", " done\nAction 2: Finish[x]"], prefill
    )
    rec = EpisodeRecord()
    graph = build_react_graph(model, scholar_env)
    asyncio.run(graph.ainvoke({"question": "Who?", "rec": rec}))
    first, second = model.requests
    if prefill:
        assert [m.role for m in second.messages] == ["user", "assistant"]
        assert first.messages[0].content.endswith("Question: Who?")
        assert first.messages[1].content == "Thought 1:"
        assert second.messages[1].content.startswith("Thought 1: look\nAction 1: getCoauthors(p1)")
        assert second.messages[1].content.endswith("\nThought 2:")
    else:
        assert [m.role for m in second.messages] == ["user"]
        assert second.messages[0].content.endswith("No coauthors found.\nThought 2:")
    assert rec.answer == "x" and rec.termination is Termination.finished


def test_two_call_style_also_reaches_f1_one(tmp_path):
    summary, results = run_config(tmp_path, workflow_options={"react_style": "two_call"})
    assert summary.mean_f1 == 1.0
    assert results[0].n_llm_calls == 4  # thought + action per step, two steps


def test_malformed_actions_are_recorded_not_crashes(tmp_path):
    summary, results = run_config(tmp_path, model="scripted/malformed", limit=3)
    assert summary.ran == 3
    for r in results:
        assert r.termination is Termination.invalid_format
        assert [s.kind for s in r.steps] == [OutcomeKind.parse_error] * 3
        assert r.steps[0].observation.startswith("Invalid Action. Valid Actions are searchPerson(")
        assert (r.error_type, r.error_cause) == (
            ErrorType.TE,
            "TE:unparseable_output:invalid_format",
        )


def test_unknown_tool_is_misuse_then_step_limit(tmp_path):
    _, results = run_config(
        tmp_path, model="scripted/unknown-tool", limit=1, workflow_options={"max_steps": 4}
    )
    r = results[0]
    assert r.termination is Termination.step_limit
    assert len(r.steps) == 4 and all(s.cause == "unknown_tool" for s in r.steps)
    assert r.error_cause == "TE:step_budget:unknown_tool"


@pytest.mark.parametrize(
    ("model", "cause"),
    [("error", "ME:model_failure:backend_error"), ("empty", "ME:model_failure:empty_response")],
)
def test_model_failures_are_model_errors(tmp_path, model, cause):
    _, results = run_config(tmp_path, model=f"scripted/{model}", limit=2)
    for r in results:
        assert r.termination is Termination.llm_error
        assert r.answer is None and r.scores["f1"] == 0.0
        assert r.steps[-1].kind is OutcomeKind.llm_error
        assert r.error_cause == cause


def test_resume_skips_finished_and_never_duplicates(tmp_path):
    s1, _ = run_config(tmp_path, limit=5)
    s2, results = run_config(tmp_path, limit=9)
    assert (s1.ran, s2.ran, s2.skipped) == (5, 4, 5)
    s3, results = run_config(tmp_path, limit=9)
    assert s3.ran == 0
    ids = [r.task_id for r in results]
    assert len(ids) == len(set(ids)) == 9


def test_resuming_a_finished_run_loads_no_model(tmp_path, monkeypatch):
    """Nothing left to run: no model is resolved (a local model would start its server)."""
    from raleval.app import episodes

    run_config(tmp_path, limit=3)

    def no_model(*args, **kwargs):
        raise AssertionError("a finished run resolved its model")

    monkeypatch.setattr(episodes, "resolve_model", no_model)
    monkeypatch.setattr("raleval.app.local_backend.resolve_model", no_model)
    again, results = run_config(tmp_path, limit=3)
    assert (again.ran, again.skipped, len(results)) == (0, 3, 3)
    with pytest.raises(AssertionError, match="resolved its model"):
        run_config(tmp_path, limit=4)  # one episode to run: the model is needed


def test_torn_last_line_is_repaired_on_resume(tmp_path):
    s1, _ = run_config(tmp_path, limit=4)
    path = s1.run_dir / RESULTS
    data = path.read_bytes()
    # Simulate a crash in the middle of writing the 4th line.
    cut = data.rstrip(b"\n").rfind(b"\n") + 1 + 50
    path.write_bytes(data[:cut])
    s2, results = run_config(tmp_path, limit=4)
    assert s2.ran == 1
    assert sorted(r.task_id for r in results) == sorted(
        json.loads(x)["task_id"] for x in data.splitlines()
    )


def test_changed_config_refuses_to_mix_into_old_run(tmp_path):
    run_config(tmp_path, limit=2)
    with pytest.raises(ConfigError, match="holds a run with config workflow_options"):
        run_config(
            tmp_path,
            limit=2,
            workflow_options={"max_steps": 3},
            run_name="scholar__react__scripted_oracle__scholar-ks",
        )


def test_a_start_that_failed_before_any_episode_does_not_block_the_corrected_command(tmp_path):
    """A mistyped ``-M`` failed at model loading, after the run directory got its header and
    tasks; the corrected command (other model options) was then refused as "holds a run with
    config model_options=...". A directory with no episode is taken over, its left-overs set
    aside; one with episodes is still refused. A directory the failed start made itself is
    removed again (issue 50: failed starts left directories with a stale lock behind)."""
    name = "scholar__react__scripted_oracle__scholar-ks"
    fresh = tmp_path / "fresh"
    with pytest.raises(ValueError, match="take only latency_s"):
        run_config(fresh, limit=2, model_options={"nope": 1}, run_name=name)
    assert not fresh.exists()  # neither the run directory nor the log directory it made
    run_dir = tmp_path / name
    run_dir.mkdir()  # a directory that was there before: its left-overs stay, set aside later
    with pytest.raises(ValueError, match="take only latency_s"):
        run_config(tmp_path, limit=2, model_options={"nope": 1}, run_name=name)
    assert (run_dir / "header.json").exists() and not (run_dir / RESULTS).exists()
    summary, results = run_config(tmp_path, limit=2, run_name=name)
    assert summary.run_dir == run_dir and summary.ran == 2 and len(results) == 2
    assert read_header(run_dir).config["model_options"] == {}
    (aside,) = run_dir.glob("superseded-*")
    assert json.loads((aside / "header.json").read_text())["config"]["model_options"] == {"nope": 1}
    with pytest.raises(ConfigError, match="holds a run with config model_options"):
        run_config(tmp_path, limit=2, model_options={"latency_s": 0.01}, run_name=name)


def test_run_dir_is_self_contained(tmp_path):
    summary, _ = run_config(tmp_path, limit=3)
    header = json.loads((summary.run_dir / "header.json").read_text())
    assert header["config"]["model"] == "scripted/oracle"
    decoding = header["decoding"]
    assert {k: decoding[k] for k in ("temperature", "max_tokens")} == {
        "temperature": 0.0,
        "max_tokens": 256,
    }
    assert "Observation" in decoding["actions"]  # the workflow's decoding, said for the model
    assert len(header["dataset_hash"]) == 64
    # tasks.jsonl holds exactly the tasks the run ran (--limit 3 of 12 generated)
    recorded = read_tasks(summary.run_dir / TASKS)
    ran = [json.loads(x)["task_id"] for x in (summary.run_dir / RESULTS).read_text().splitlines()]
    assert sorted(t.id for t in recorded) == sorted(ran) and len(ran) == 3


def test_harness_bug_is_recorded_not_swallowed(tmp_path, monkeypatch):
    from raleval.envs import scholar

    opened: dict[str, int] = {}
    session = scholar.ScholarEnv.session

    def explode(self, task=None):
        # preparing a task opens two sessions (its progress subgoals and the check of its
        # evidence against the world each run the gold calls); the episode's own is the third
        opened[task.id] = opened.get(task.id, 0) + 1
        if opened[task.id] > 2:
            raise RuntimeError("session setup broke")
        return session(self, task)

    monkeypatch.setattr(scholar.ScholarEnv, "session", explode)
    # no demonstrations: they are solved through a session before any episode runs
    summary, results = run_config(tmp_path, limit=2, workflow_options={"shots": 0})
    assert summary.ran == 2
    assert all(r.termination is Termination.harness_error for r in results)
    assert results[0].termination_cause == "RuntimeError: session setup broke"
    assert results[0].error_type is ErrorType.ME
    # a harness bug is the harness's failure, not the model's: recorded as such, retryable
    assert all(r.failure == "harness_error" for r in results)
    assert summary.failures == {"harness_error": 2}


def test_an_episode_that_never_ends_is_stopped_by_the_safety_net(scholar_env, monkeypatch):
    """A workflow that hangs past its own time limit is stopped (timeout, episode_wall_clock);
    a cancellation from outside (Ctrl-C) is still an interruption, not a timeout."""
    import asyncio

    from raleval.agents.agent import resolve_model
    from raleval.app import episodes as runner
    from raleval.records import AgentSpec
    from raleval.registry import workflows
    from raleval.tasks.catalog import load_tasks

    class Hangs:
        async def ainvoke(self, state, config):
            await asyncio.sleep(3600)

    workflow = workflows.get("react").configure({"time_limit_s": 1.0})
    monkeypatch.setattr(runner, "SAFETY_NET_S", -0.95)  # stopped after 0.05 s
    task = load_tasks("scholar-ks", scholar_env, "scholar", 1, 0)[0]
    agent = AgentSpec(workflow="react", model="scripted/oracle", env="scholar")
    model = resolve_model("scripted/oracle")

    async def run_one():
        return await runner.run_episode(task, model, scholar_env, workflow, agent, graph=Hangs())

    traj = asyncio.run(asyncio.wait_for(run_one(), 10))  # a broken net fails, never hangs
    assert (traj.termination, traj.termination_cause) == (Termination.timeout, "episode_wall_clock")

    async def cancelled():
        episode = asyncio.ensure_future(run_one())
        await asyncio.sleep(0.01)
        episode.cancel()
        with pytest.raises(asyncio.CancelledError):
            await episode

    monkeypatch.setattr(runner, "SAFETY_NET_S", 30.0)
    asyncio.run(cancelled())


def test_results_file_lines_are_complete_json(tmp_path):
    summary, _ = run_config(tmp_path, limit=3)
    lines = (summary.run_dir / RESULTS).read_text().splitlines()
    assert len(lines) == 3 and all(json.loads(line)["task_id"] for line in lines)
    assert len(list(ResultsFile(summary.run_dir / RESULTS))) == 3


@pytest.mark.parametrize("workflow", ["react", "function_calling", "pal", "dfsdt"])
def test_k_shot_examples_come_from_a_disjoint_pool(tmp_path, workflow):
    from raleval.workflows.sandbox import check_isolation

    if workflow == "pal" and check_isolation() is not None:
        pytest.skip("no sandbox here")
    summary, results = run_config(
        tmp_path, workflow=workflow, limit=3, workflow_options={"shots": 3}
    )
    assert summary.mean_f1 == 1.0
    first = results[0].llm_calls[0].prompt
    chunks = first.split("Here is an example.")[1:]
    assert len(chunks) == 3
    assert "Ilsa Maroundberg" not in first  # no hand-written example beside them
    tasks = {t.question: t for t in read_tasks(summary.run_dir / TASKS)}
    examples = [chunk.split("\n", 2)[1] for chunk in chunks]
    assert all(q.startswith("Question: ") and q[len("Question: ") :] not in tasks for q in examples)
    header = read_header(summary.run_dir)
    family = next(iter(tasks.values())).family
    # the task's own family, three items of it, recorded with the prompt in the header
    assert list(header.prompts["demonstrations"]) == [family]
    assert len(header.prompts["demonstrations"][family]) == 3
    assert all(f"-{family}-s7919-" in i for i in header.prompts["demonstrations"][family])
    assert header.prompts["rendered"][family][0] in first
    if workflow == "pal":
        finals = [ln for ln in first.splitlines() if ln.startswith("final_result = ")]
        # the generated examples compute their answer from r0
        assert len(finals) == 3 and all("r0[0][" in ln for ln in finals)
    elif workflow == "react":
        assert "\nObservation 1: [{" in chunks[0]


def test_epochs_repeat_tasks_and_give_pass_at_k(tmp_path):
    from raleval.analysis.runs import load_run, pass_at_k

    summary, results = run_config(tmp_path, model="scripted/alternating", limit=5, epochs=3)
    assert summary.ran == 15
    assert sorted((r.task_id, r.epoch) for r in results) == sorted(
        (t, e) for t in {r.task_id for r in results} for e in range(3)
    )
    assert pass_at_k(load_run(summary.run_dir)) == {"k": 3.0, "pass@k": 1.0, "pass^k": 0.0}
    again, _ = run_config(tmp_path, model="scripted/alternating", limit=5, epochs=3)
    assert again.ran == 0  # resume is per (task, epoch)
