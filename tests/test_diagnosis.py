"""``raleval diagnose``: counterfactual replays of failed episodes (docs/diagnosis.md).

Scripted models with one known defect each must get the cause that defect is; a model written
here, which the repo's providers never saw, must never be found beyond reach when the gold
value reaches its view; a replay is an ordinary episode of the runner, with its prefix."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from raleval import registry
from raleval.analysis.diagnosis import (
    Cause,
    cause_tables,
    evidence_prefix,
    read_diagnoses,
)
from raleval.app.cli import app
from raleval.app.diagnose import diagnose_sync, set_aside
from raleval.app.episodes import run_episode
from raleval.app.plan import build_env
from raleval.app.runner import run_sync
from raleval.config import ConfigError, RunConfig
from raleval.model import Capabilities, GenerateRequest, Generation, ModelBase
from raleval.records import AgentSpec, OutcomeKind, ToolCall
from raleval.store import RESULTS, TASKS, ResultsFile, read_tasks
from raleval.text import contains_tokens, normalize_answer
from raleval.workflow import GoldPlan

ENVS = {"scholar": {"size": "tiny"}, "crag": {"size": "tiny"}}


def _run(tmp_path: Path, env: str, model: str, workflow: str = "react", limit: int = 12) -> Path:
    config = RunConfig(
        env=env,
        env_options=ENVS[env],
        workflow=workflow,
        model=model,
        limit=limit,
        log_dir=tmp_path / f"{env}-{workflow}-{model.replace('/', '_')}",
    )
    return run_sync(config).run_dir


DEFECTS = [
    ("scripted/wrong-tool", Cause.retrieval),
    ("scripted/constant", Cause.beyond_reach),
    ("scripted/misspelled-arg", Cause.interface),
]


# ReAct on both environments; function calling (whose prefix is chat messages) on scholar
CELLS = [("scholar", "react"), ("crag", "react"), ("scholar", "function_calling")]


@pytest.mark.parametrize(("env", "workflow"), CELLS, ids=[f"{e}-{w}" for e, w in CELLS])
@pytest.mark.parametrize(("model", "expected"), DEFECTS, ids=[m for m, _ in DEFECTS])
def test_each_defect_gets_its_cause_on_every_failed_episode(
    tmp_path: Path, env: str, workflow: str, model: str, expected: Cause
) -> None:
    run_dir = _run(tmp_path, env, model, workflow)
    summary = diagnose_sync(run_dir)
    diagnoses = read_diagnoses(run_dir)
    assert summary.diagnosed == len(diagnoses) == 12
    failed = [d for d in diagnoses if not d.correct]
    assert len(failed) >= 10, [d.label for d in diagnoses]  # the defect makes them fail
    assert {d.task_id: d.cause for d in failed} == {d.task_id: expected for d in failed}
    assert all(d.cause is Cause.not_needed for d in diagnoses if d.correct)
    # a replay is recorded as an ordinary, scored episode
    for d in failed:
        for r in d.replays:
            assert r.trajectory.task_id == d.task_id
            assert r.trajectory.extra.get("prefix_steps", 0) == r.prefix_steps
            assert "correct" in r.trajectory.scores
            assert r.correct == bool(r.trajectory.scores["correct"])


def test_the_wrong_tool_is_a_valid_call_and_the_misspelling_is_misuse(tmp_path: Path) -> None:
    """The defects are what they say: the wrong tool's call succeeds (RE, not TE), the
    misspelled argument name is refused by the tool (TE)."""
    wrong = list(ResultsFile(_run(tmp_path, "crag", "scripted/wrong-tool") / RESULTS))
    assert all(t.steps[0].kind is OutcomeKind.ok for t in wrong)
    assert {t.error_type.value for t in wrong if t.error_type} <= {"RE", "GE"}
    bent = list(ResultsFile(_run(tmp_path, "crag", "scripted/misspelled-arg") / RESULTS))
    assert all(t.steps[0].kind is OutcomeKind.misuse for t in bent)
    assert all(t.steps[0].cause == "bad_arguments" for t in bent)


# -- a model the repo never saw ---------------------------------------------------------------


def _view(request: GenerateRequest, question: str) -> str:
    text = " ".join(
        [m.content for m in request.messages]
        + [f"{c.tool} {c.arguments}" for m in request.messages for c in m.tool_calls]
    )
    at = text.rfind(question)
    return text[at + len(question) :] if at >= 0 else ""


class GoldInView(ModelBase):
    """Answers a task's gold answer once it is in its view, and only then; before that it
    searches once for the question's first words and then says it does not know."""

    capabilities = Capabilities(cacheable=True)
    endpoint = "test"
    generated = 0  # requests that reached the model (not the cache), all instances

    def __init__(self, task: Any = None, env: Any = None, workflow: Any = None) -> None:
        self.name = "gold-in-view/reader"
        self.task, self.env, self.workflow = task, env, workflow

    def for_episode(self, task: Any, env: Any, workflow: Any) -> GoldInView:
        return GoldInView(task, env, workflow)

    def decoy(self) -> ToolCall:
        spec = next(t for t in self.env.tools if t.matching == "fuzzy")
        words = " ".join(self.task.question.split()[:3])
        return ToolCall(tool=spec.name, arguments={spec.param_names[0]: words})

    async def generate(self, request: GenerateRequest) -> Generation:
        type(self).generated += 1
        view = normalize_answer(_view(request, self.task.question)).split()
        seen = any(contains_tokens(view, normalize_answer(a).split()) for a in self.task.answers)
        plan = GoldPlan([], self.task.answers[0]) if seen else GoldPlan([self.decoy()], "no idea")
        text, calls = self.workflow.gold_reply(request, plan, self.env)
        for stop in request.stop:
            text = text.split(stop)[0] if stop and stop in text else text
        return Generation(text=text, tool_calls=calls)


registry.register_model_provider("gold-in-view")(lambda name, run_dir=None, **_: GoldInView())


def _gold_value_returned(env: Any, task: Any) -> bool:
    """The gold solution's observations show the gold answer (else no view ever holds it)."""
    observations = " ".join(env.call_sync(c.tool, c.arguments).observation for c in task.solution)
    tokens = normalize_answer(observations).split()
    return any(contains_tokens(tokens, normalize_answer(a).split()) for a in task.answers)


@pytest.mark.parametrize("env", ["scholar", "crag"])
def test_a_reader_of_its_view_is_never_beyond_reach(tmp_path: Path, env: str) -> None:
    run_dir = _run(tmp_path, env, "gold-in-view/reader", limit=16)
    environment = build_env(env, ENVS[env])
    tasks = {t.id: t for t in read_tasks(run_dir / TASKS)}
    reachable = {i for i, t in tasks.items() if t.solution and _gold_value_returned(environment, t)}
    assert len(reachable) >= 6
    diagnose_sync(run_dir)
    failed = [d for d in read_diagnoses(run_dir) if not d.correct and d.task_id in reachable]
    assert len(failed) >= 4
    causes = {d.cause for d in failed}
    assert causes <= {Cause.retrieval, Cause.grounding}, causes
    if env == "scholar":  # gold retrieval gives the rest of the gold path (issue 63)
        assert causes == {Cause.retrieval}

    # a second diagnose (the old file set aside) asks the model nothing: the cache answers
    before = GoldInView.generated
    result = CliRunner().invoke(app, ["diagnose", str(run_dir), "--fresh"])
    assert result.exit_code == 0, result.output
    assert GoldInView.generated == before
    again = read_diagnoses(run_dir)
    assert sum(d.llm_calls for d in again) == sum(d.cache_hits for d in again) > 0
    assert "0 sent to the model" in result.output
    assert [d.cause for d in again] == [d.cause for d in read_diagnoses(run_dir)]
    # issue 50: each episode says when its replays start, not only when they end
    total = len(again)
    starts = [line for line in result.output.splitlines() if line.endswith(": replaying ...")]
    assert len(starts) == total and starts[0].startswith(f"[1/{total}] ")
    if env == "scholar":  # one gold call suffices for some tasks, others need all of them
        set_aside(run_dir)
        diagnose_sync(run_dir, whole_path=False)
        one = [d for d in read_diagnoses(run_dir) if not d.correct and d.task_id in reachable]
        assert {d.cause for d in one} == {Cause.retrieval, Cause.grounding}


# -- the replay is a run ----------------------------------------------------------------------


@pytest.mark.parametrize("workflow", ["react", "function_calling"])
def test_an_episode_given_the_gold_calls_starts_from_their_real_observations(
    workflow: str,
) -> None:
    env = build_env("scholar", ENVS["scholar"])
    from raleval.tasks.catalog import load_tasks

    task = next(t for t in load_tasks("scholar", env, "scholar", 2, 0) if len(t.solution) > 1)
    prefix, _ = evidence_prefix(task)
    wf = registry.workflows.get(workflow).configure({"shots": 0})
    model = registry.models.get("scripted")("constant")
    agent = AgentSpec(workflow=workflow, model="scripted/constant", env="scholar")
    traj = asyncio.run(run_episode(task, model, env, wf, agent, prefix=prefix))
    k = len(task.solution)
    assert traj.extra["prefix_steps"] == k
    assert [(s.tool, s.arguments) for s in traj.steps[:k]] == [
        (c.tool, c.arguments) for c in task.solution
    ]
    for step, call in zip(traj.steps[:k], task.solution, strict=True):
        assert step.observation == env.call_sync(call.tool, call.arguments).observation
    # the model continued from there: it saw k results and answered at once
    assert traj.answer == "a constant answer"
    assert len(traj.steps) == k + 1


def test_a_workflow_without_prefixes_is_refused_plainly(tmp_path: Path) -> None:
    run_dir = _run(tmp_path, "scholar", "scripted/abstain", workflow="direct", limit=2)
    with pytest.raises(ConfigError, match="does not support workflow 'direct' yet"):
        diagnose_sync(run_dir)


def test_diagnose_resumes_and_tables_cross_the_labels(tmp_path: Path) -> None:
    run_dir = _run(tmp_path, "scholar", "scripted/wrong-tool")
    first = diagnose_sync(run_dir, limit=5)
    assert first.diagnosed == 5
    partial = CliRunner().invoke(app, ["table", str(run_dir), "--diagnosis", "--format", "csv"])
    assert f"{run_dir}: 5 of 12 episodes diagnosed; the tables leave out the other 7" in " ".join(
        partial.output.split()
    )
    second = diagnose_sync(run_dir)
    assert (second.skipped, second.diagnosed) == (5, 7)
    lines = (run_dir / "diagnosis.jsonl").read_text().splitlines()
    assert len(lines) == 12 and all(json.loads(x)["cause"] == "retrieval" for x in lines)
    tables = {title: (head, rows) for title, head, rows in cause_tables(read_diagnoses(run_dir))}
    head, rows = tables["R-Eval label by cause"]
    by_label = {r[1]: dict(zip(head, r, strict=True)) for r in rows}
    assert sum(r["n"] for r in by_label.values()) == 12
    assert all(r["retrieval"] == r["n"] for r in by_label.values())
    result = CliRunner().invoke(app, ["table", str(run_dir), "--diagnosis", "--format", "csv"])
    assert result.exit_code == 0, result.output
    assert "# R-Eval label by cause" in result.output
    assert "the tables leave out" not in result.output  # all 12 diagnosed
    header = (
        "system,label,n,interface,retrieval,grounding,beyond_reach,not_needed,harness_limit,"
        "unstable"
    )
    assert header in result.output
    from raleval.analysis.report import build_report
    from raleval.analysis.runs import load_run

    page = build_report([load_run(run_dir)])
    assert "Why episodes failed (counterfactual replay)" in page
    assert "<h3>R-Eval label by cause</h3>" in page
    for label, row in by_label.items():  # n, then interface 0, then retrieval n
        assert f"<td>{label}</td><td>{row['n']}</td><td>0</td><td>{row['n']}</td>" in page


def test_an_episode_stopped_by_the_wall_clock_gets_no_cause_and_no_replay(tmp_path: Path) -> None:
    """A wall-clock stop measures the machine, not the agent: replaying it would too."""
    config = RunConfig(
        env="scholar",
        env_options=ENVS["scholar"],
        model="scripted/wrong-tool",
        model_options={"latency_s": 0.5},
        workflow_options={"time_limit_s": 0.2},
        limit=3,
        log_dir=tmp_path,
    )
    run_dir = run_sync(config).run_dir
    assert {t.stop_reason.value for t in ResultsFile(run_dir / RESULTS)} == {"time_budget"}
    summary = diagnose_sync(run_dir)
    assert summary.causes == {"harness_limit": 3}
    assert all(d.replays == [] for d in read_diagnoses(run_dir))
    # with a longer clock the replays run, and tell the cause
    again = CliRunner().invoke(app, ["diagnose", str(run_dir), "--fresh", "--time-limit", "60"])
    assert again.exit_code == 0, again.output
    assert {d.cause for d in read_diagnoses(run_dir)} == {Cause.retrieval}


@pytest.mark.parametrize("workflow", ["react", "function_calling"])
def test_a_replay_of_the_agents_own_first_step_asks_what_the_episode_asked(
    workflow: str,
) -> None:
    """Given the episode's own first step as recorded, the replay's first request is the
    episode's second request: the prefix is rendered as the workflow rendered it."""
    from raleval.tasks.catalog import load_tasks

    env = build_env("scholar", ENVS["scholar"])
    task = next(t for t in load_tasks("scholar", env, "scholar", 2, 0) if len(t.solution) > 1)
    wf = registry.workflows.get(workflow).configure({"shots": 1})
    agent = AgentSpec(workflow=workflow, model="scripted/oracle", env="scholar")
    seen: list[GenerateRequest] = []
    oracle = registry.models.get("scripted")("oracle")

    class Recording(type(oracle)):  # type: ignore[misc]
        def for_episode(self, task: Any, env: Any, workflow: Any) -> Any:
            bound = Recording(task, env, workflow, "oracle")
            return bound

        async def generate(self, request: GenerateRequest) -> Generation:
            seen.append(request)
            return await super().generate(request)

    def asked(request: GenerateRequest) -> list[tuple[str, str, list[Any]]]:
        return [
            (m.role, m.content, [(c.tool, c.arguments) for c in m.tool_calls])
            for m in request.messages
        ]

    original = asyncio.run(run_episode(task, Recording(), env, wf, agent))
    assert original.scores == {} and len(original.steps) == len(task.solution) + 1
    second = asked(seen[1])
    seen.clear()
    replay = asyncio.run(run_episode(task, Recording(), env, wf, agent, prefix=original.steps[:1]))
    assert asked(seen[0]) == second
    assert replay.steps[0] == original.steps[0]  # as recorded
    assert replay.answer == original.answer


def test_a_misspelled_argument_the_gold_path_cannot_mend_is_mended_by_name() -> None:
    """A call of a real tool whose gold call's values the model never saw: its argument names
    are mended (``nmae`` -> ``name``), keeping its own values (the embedded model's CRAG run
    crashed here: ``param_names`` is a property, not a method)."""
    from raleval.analysis.diagnosis import intended_call
    from raleval.records import Step
    from raleval.tasks.catalog import load_tasks

    env = build_env("scholar", {"size": "tiny"})
    task = next(t for t in load_tasks("scholar", env, "scholar", 2, 0) if t.solution)
    spec = env.tool("searchPerson")
    step = Step(
        index=0, tool="searchPerson", arguments={"nmae": "Someone Unseen"}, kind=OutcomeKind.misuse
    )
    call = intended_call(step, [], task.model_copy(update={"question": "?"}), [spec])
    assert call == ToolCall(tool="searchPerson", arguments={"name": "Someone Unseen"})
