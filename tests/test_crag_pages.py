"""CRAG task 1 ("retrieve from pages"): a loaded CRAG task's own pages behind search_pages."""

from __future__ import annotations

import json
from pathlib import Path

from raleval import registry
from raleval.envs.crag.pages import page_text, passages
from raleval.records import OutcomeKind
from raleval.tasks.loaders import load_file

CRAG_DEV = Path(__file__).parent / "data" / "crag_dev_data_head.jsonl"


def test_page_text_keeps_visible_blocks_only():
    html = (
        "<html><head><title>T</title><style>p{}</style></head><body>"
        "<script>var x = 1;</script><p>First &amp; block</p><div>second <b>block</b></div>"
        "</body></html>"
    )
    assert page_text(html) == "First & block\nsecond block"


def test_passages_are_the_snippet_then_cut_text():
    text = " ".join(f"w{i}" for i in range(170))
    page = {"page_snippet": "A short snippet.", "page_result": f"<p>{text}</p>"}
    got = passages(page)
    assert got[0] == "A short snippet." and [len(p.split()) for p in got[1:]] == [80, 80, 10]


def test_each_real_task_searches_its_own_pages():
    tasks = load_file("crag", CRAG_DEV)  # its line 8 (gold 'nan') is skipped
    env = registry.envs.get("crag-pages")()
    for task in tasks:
        urls = {p["page_url"] for p in task.metadata["search_results"]}
        result = env.session(task).call_sync("search_pages", {"query": task.question})
        assert result.kind is OutcomeKind.ok
        assert 1 <= len(result.data) <= 3 and {r["page_url"] for r in result.data} <= urls
    first = env.session(tasks[0]).call_sync("search_pages", {"query": "Office 2019 languages"})
    top = [r["passage"] for r in first.data]
    assert top[0].startswith("Additional languages can be downloaded") and len(set(top)) == 3
    assert json.loads(first.observation)[0]["passage"] == first.data[0]["passage"]


def test_without_pages_nothing_is_found():
    env = registry.envs.get("crag-pages")()
    result = env.call_sync("search_pages", {"query": "anything"})
    assert result.kind is OutcomeKind.ok and result.data == []
    assert result.observation == "No passage of this question's pages matches."
