"""The scripted oracle executes: it runs a task's solution against the episode's environment
and answers from what the tools returned, never the stored gold on faith; tasks run only on
the environment and world they were made for."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from raleval import registry
from raleval.agents.scripted import NOT_RETURNED, answer_from_results, built_solution
from raleval.app.runner import run_sync
from raleval.config import ConfigError, RunConfig
from raleval.environment import OutcomeKind, ToolResult
from raleval.envs.wiki.loaders import build_store
from raleval.records import Level, Task, ToolCall
from raleval.store import write_tasks
from raleval.tasks.catalog import load_tasks
from raleval.tasks.loaders import load_hotpot
from raleval.text import contains_tokens, normalize_answer

from .conftest import run_config

HOTPOT = Path(__file__).parent / "data" / "hotpot_dev_distractor_v1_head.json"


def _task(**fields) -> Task:
    base = {
        "id": "t",
        "domain": "scholar",
        "level": Level.KS,
        "family": "x",
        "question": "Who?",
        "answers": ["Ada Lovelace"],
    }
    return Task(**{**base, **fields})


def _ok(observation: str, data=None) -> ToolResult:
    return ToolResult(observation, OutcomeKind.ok, data=data)


def test_answer_is_read_from_the_observations_not_the_gold():
    task = _task()
    assert answer_from_results(task, [_ok("Ada Lovelace wrote notes")]) == "Ada Lovelace"
    assert answer_from_results(task, [_ok("Charles Babbage")]) == NOT_RETURNED
    failed = ToolResult("boom", OutcomeKind.tool_fault, "backend_exception:X")
    assert answer_from_results(task, [failed]) == NOT_RETURNED


def test_answer_expression_is_evaluated_over_the_returned_data():
    task = _task(answers=["3"], metadata={"answer_expr": "str(len(r0))"})
    assert answer_from_results(task, [_ok("[..]", data=[1, 2, 3])]) == "3"
    # another world returns other data: the oracle's answer follows the data, and is wrong
    assert answer_from_results(task, [_ok("[..]", data=[1, 2])]) == "2"
    assert answer_from_results(task, [_ok("none", data=None)]) == NOT_RETURNED


def test_evidence_must_be_seen_for_a_yes_no_answer():
    task = _task(answers=["yes"], evidence=["1815"])
    assert answer_from_results(task, [_ok("born 1815 in London")]) == "yes"
    assert answer_from_results(task, [_ok("born 1816 in London")]) == NOT_RETURNED


def test_hotpot_solution_is_built_from_supporting_titles():
    task = _task(answers=["Chicago"], metadata={"supporting_titles": ["Tunnels &amp; Trolls", "B"]})
    assert built_solution(task) == [
        ToolCall(tool="Search", arguments={"entity": "Tunnels & Trolls"}),
        ToolCall(tool="Search", arguments={"entity": "B"}),
        ToolCall(tool="Lookup", arguments={"keyword": "Chicago"}),
    ]
    assert built_solution(_task()) is None


def test_oracle_on_real_hotpotqa_answers_what_the_corpus_shows(tmp_path):
    store = tmp_path / "store.sqlite"
    build_store(store, [HOTPOT], progress=False)
    tasks = load_hotpot(HOTPOT).tasks
    path = tmp_path / "hotpot.jsonl"
    write_tasks(path, tasks)
    _, results = run_config(
        tmp_path,
        env="wiki",
        env_options={"backend": "offline", "path": str(store), "max_obs_tokens": "none"},
        tasks=str(path),
    )
    assert len(results) == len(tasks) == 53
    answers = {r.task_id: r.answer for r in results}
    gold = {t.id: t.answers[0] for t in tasks}
    right = {i for i in gold if answers[i] == gold[i]}
    assert all(answers[i] in (gold[i], NOT_RETURNED) for i in gold)
    # what the supporting paragraphs show, read from the raw file: every answer that stands
    # in them (43), never a yes/no (9 of them), nor the one answer they do not hold
    shown = set()
    for q in json.loads(HOTPOT.read_text(encoding="utf-8")):
        if normalize_answer(q["answer"]) in ("yes", "no"):
            continue
        titles = {title for title, _ in q["supporting_facts"]}
        text = " ".join(" ".join(s) for title, s in q["context"] if title in titles)
        if contains_tokens(normalize_answer(text).split(), normalize_answer(q["answer"]).split()):
            shown.add(f"3-1-{q['_id']}")
    assert len(shown) == 43
    assert right == shown
    assert {r.task_id for r in results if r.scores["f1"] == 1.0} >= right


def test_loaded_task_without_solution_is_refused_with_a_message(tmp_path):
    task = _task(id="kq-1", family="kqa", domain="wiki")
    path = tmp_path / "t.jsonl"
    write_tasks(path, [task])
    _, results = run_config(tmp_path, env="wiki", env_options={"size": "tiny"}, tasks=str(path))
    [r] = results
    assert r.answer is None
    assert r.termination.value == "llm_error"
    assert r.termination_cause == "no_solution"
    [call] = r.llm_calls
    assert "has no solution to execute for task kq-1" in call.error


def _wiki_file(tmp_path: Path, size: str = "tiny") -> Path:
    env = registry.envs.get("wiki")(size=size)
    tasks = load_tasks("wiki", env, "wiki", 2, 0)
    path = tmp_path / "wiki.jsonl"
    write_tasks(path, tasks)
    return path


def test_tasks_record_the_environment_and_world_they_were_made_for(tmp_path):
    lines = _wiki_file(tmp_path).read_text().splitlines()
    made_for = {json.loads(line)["metadata"]["made_for"] for line in lines}
    assert made_for == {"wiki:backend=generated,seed=0,size=tiny,world=scholar"}


def test_wiki_tasks_on_scholar_are_refused_before_any_episode(tmp_path):
    path = _wiki_file(tmp_path)
    config = RunConfig(
        env="scholar",
        env_options={"size": "tiny"},
        model="scripted/oracle",
        tasks=str(path),
        log_dir=tmp_path / "runs",
    )
    with pytest.raises(ConfigError, match="made for env 'wiki', not 'scholar'"):
        run_sync(config)
    assert not (tmp_path / "runs").exists()  # refused before the run directory was made


def test_tasks_of_another_world_are_refused(tmp_path):
    path = _wiki_file(tmp_path, size="tiny")
    config = RunConfig(
        env="wiki",
        env_options={"size": "small"},
        model="scripted/oracle",
        tasks=str(path),
        log_dir=tmp_path / "runs",
    )
    with pytest.raises(ConfigError, match=r"size=tiny.*this environment is.*size=small"):
        run_sync(config)


def test_foreign_tasks_run_on_purpose_and_the_oracle_is_wrong_there(tmp_path):
    path = _wiki_file(tmp_path)
    summary, results = run_config(
        tmp_path, env="scholar", tasks=str(path), allow_foreign_tasks=True
    )
    assert summary.ran == len(results) > 0
    # scholar has no Search/Lookup: nothing the oracle reads holds the answer
    assert {r.answer for r in results} == {NOT_RETURNED}
    assert {r.scores["f1"] for r in results} == {0.0}
