"""Loaded task files get demonstrations as generated seasons do: ``raleval tasks load ...
--examples k`` sets k items of the same file aside, disjoint from the tasks; a run shows those
the scripted oracle solves on its environment. A loaded CRAG file runs on crag-pages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from raleval import registry
from raleval.app.cli import app
from raleval.envs.wiki.loaders import build_store
from raleval.records import ToolCall
from raleval.store import HEADER, read_tasks
from raleval.tasks.catalog import foreign_tasks
from raleval.tasks.demonstrations import pool_path, set_aside, solve
from raleval.tasks.loaders import load_file

from .conftest import run_config

DATA = Path(__file__).parent / "data"
CRAG_DEV = DATA / "crag_dev_data_head.jsonl"
HOTPOT = DATA / "hotpot_dev_distractor_v1_head.json"


def _load(tmp_path: Path, *args: str) -> tuple[list, list]:
    out = tmp_path / "tasks.jsonl"
    result = CliRunner().invoke(app, ["tasks", "load", *args, "--out", str(out)])
    assert result.exit_code == 0, result.output
    return read_tasks(out), read_tasks(pool_path(out))


def test_examples_are_set_aside_disjoint_and_solved_on_the_pages(tmp_path):
    tasks, pool = _load(tmp_path, "crag", str(CRAG_DEV), "--examples", "2", "--env", "crag-pages")
    # 10 records, one skipped (its gold is the string 'nan'), 2 set aside
    assert len(tasks) == 7 and len(pool) == 2
    assert not {t.id for t in tasks} & {t.id for t in pool}
    assert not {t.question for t in tasks} & {t.question for t in pool}
    env = registry.envs.get("crag-pages")()
    # only items whose own pages show their answer are shown, taken family by family
    assert [t.family for t in pool] == ["crag-multihop", "crag-false-premise"]
    solved = solve(pool[0], env)
    assert solved is not None and pool[0].answers[0] == "salesforce"
    assert solved.solution == [ToolCall(tool="search_pages", arguments={"query": pool[0].question})]


def test_without_an_environment_items_with_calls_are_set_aside_in_file_order():
    tasks = load_file("crag", CRAG_DEV)  # line 8, gold 'nan', skipped
    rest, pool = set_aside(tasks, 3)
    # families in turn, in the order they first appear in the file
    assert [t.family for t in pool] == ["crag-comparison", "crag-multihop", "crag-set"]
    assert len(rest) == 6 and set_aside(tasks, 0) == (tasks, [])


def test_a_loaded_crag_file_runs_on_crag_pages_not_on_the_crag_world():
    tasks = load_file("crag", CRAG_DEV)  # line 8, gold 'nan', skipped
    assert foreign_tasks(tasks, registry.envs.get("crag-pages")(), "crag-pages") is None
    crag = registry.envs.get("crag")(size="tiny")
    assert "made for env 'crag-pages', not 'crag'" in foreign_tasks(tasks, crag, "crag")


def test_crag_pages_run_shows_a_solved_example_of_the_same_file(tmp_path):
    tasks, pool = _load(tmp_path, "crag", str(CRAG_DEV), "--examples", "2", "--env", "crag-pages")
    summary, results = run_config(
        tmp_path, env="crag-pages", env_options={}, tasks=str(tmp_path / "tasks.jsonl")
    )
    assert summary.ran == 7  # the file's 10 records less the 'nan' gold and 2 examples
    prompts = json.loads((summary.run_dir / HEADER).read_text())["prompts"]
    # every family under test is shown the pool's first solved item (shots: 1)
    assert set(prompts["demonstrations"]) == {t.family for t in tasks}
    assert {tuple(ids) for ids in prompts["demonstrations"].values()} == {(pool[0].id,)}
    [shown] = prompts["rendered"]["crag-set"]
    assert f'Action 1: search_pages(query="{pool[0].question}")' in shown
    assert shown.endswith("Finish[salesforce]")
    first = results[0].llm_calls[0].prompt
    assert "Here is an example." in first and pool[0].question in first


@pytest.fixture(scope="module")
def hotpot_store(tmp_path_factory) -> Path:
    store = tmp_path_factory.mktemp("wiki") / "store.sqlite"
    build_store(store, [HOTPOT], progress=False)
    return store


def test_hotpotqa_run_shows_a_solved_example_without_needless_lookup(tmp_path, hotpot_store):
    options = ["-E", "backend=offline", "-E", f"path={hotpot_store}"]
    tasks, pool = _load(tmp_path, "hotpotqa", str(HOTPOT), "--examples", "2", "--env", "wiki",
                        *options)  # fmt: skip
    assert len(tasks) == 51 and len(pool) == 2
    summary, results = run_config(
        tmp_path,
        env="wiki",
        env_options={"backend": "offline", "path": str(hotpot_store)},
        tasks=str(tmp_path / "tasks.jsonl"),
        limit=2,
    )
    prompts = json.loads((summary.run_dir / HEADER).read_text())["prompts"]
    assert prompts["demonstrations"] == {"3-1": [pool[0].id]}
    [shown] = prompts["rendered"]["3-1"]
    # Corliss Archer: the answer stands in Shirley Temple's first paragraph, so the
    # oracle's Lookup of the answer is dropped from the example
    assert "Search[Kiss and Tell (1945 film)]" in shown and "Search[Shirley Temple]" in shown
    assert "Lookup[" not in shown and "Finish[Chief of Protocol]" in shown
    assert "Here is an example." in results[0].llm_calls[0].prompt


def test_a_task_file_without_a_pool_gets_no_demonstrations(tmp_path, hotpot_store):
    _load(tmp_path, "hotpotqa", str(HOTPOT), "--examples", "1")
    pool_path(tmp_path / "tasks.jsonl").unlink()
    summary, _ = run_config(
        tmp_path,
        env="wiki",
        env_options={"backend": "offline", "path": str(hotpot_store)},
        tasks=str(tmp_path / "tasks.jsonl"),
        limit=1,
    )
    prompts = json.loads((summary.run_dir / HEADER).read_text())["prompts"]
    assert prompts["demonstrations"] == {}
