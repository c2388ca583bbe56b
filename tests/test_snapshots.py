"""Exact prompt and observation strings for one ReAct episode and one DFSDT tree.

A change to a prompt template, an observation format or the search must show up here. To accept
an intended change: RALEVAL_UPDATE_SNAPSHOTS=1 python -m pytest tests/test_snapshots.py
"""

from __future__ import annotations

import asyncio
import json
import os

from raleval.model import Generation, ModelBase
from raleval.records import ToolCall
from raleval.workflows.common import EpisodeRecord
from raleval.workflows.dfsdt import build_dfsdt_graph

from .conftest import REPO, run_config

SNAPSHOTS = REPO / "tests" / "snapshots"


def check_snapshot(name: str, text: str) -> None:
    path = SNAPSHOTS / name
    if os.environ.get("RALEVAL_UPDATE_SNAPSHOTS") or not path.exists():
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"{name} changed"


def test_react_episode_snapshot(tmp_path):
    _, results = run_config(tmp_path, limit=1)
    r = results[0]
    lines = []
    for i, call in enumerate(r.llm_calls):
        lines.append(f"=== call {i} prompt ({'delta' if call.prompt_is_delta else 'full'}) ===")
        lines.append(call.prompt)
        lines.append(f"=== call {i} output ===")
        lines.append(call.output)
    for s in r.steps:
        lines.append(f"=== step {s.index}: {s.tool} {json.dumps(s.arguments)} [{s.kind.value}]")
        lines.append(s.observation or "")
    check_snapshot("react_episode.txt", "\n".join(lines) + "\n")


class Scripted(ModelBase):
    name = "scripted-dfsdt"

    def __init__(self, outputs):
        self.outputs, self.requests = list(outputs), []

    async def generate(self, request):
        self.requests.append(request)
        return self.outputs.pop(0)


def test_dfsdt_tree_snapshot(scholar_env):
    person = scholar_env.store.persons_by_rowid([1])[1]
    outputs = [
        Generation(
            "Look the person up.",
            [ToolCall(tool="searchPerson", arguments={"name": person["name"]})],
        ),
        Generation(
            "This is going nowhere.",
            [ToolCall(tool="Finish", arguments={"return_type": "give_up_and_restart"})],
        ),
        Generation(
            "Try with the organization.",
            [
                ToolCall(
                    tool="searchPerson",
                    arguments={"name": person["name"], "organization": person["organization"]},
                )
            ],
        ),
        Generation(
            "",
            [
                ToolCall(
                    tool="Finish",
                    arguments={"return_type": "give_answer", "final_answer": str(person["n_pubs"])},
                )
            ],
        ),
    ]
    model = Scripted(outputs)
    rec = EpisodeRecord()
    asyncio.run(
        build_dfsdt_graph(model, scholar_env).ainvoke(
            {"question": "How many papers?", "rec": rec}, {"recursion_limit": 50}
        )
    )
    assert rec.answer == str(person["n_pubs"]) and rec.termination.value == "finished"
    tree = rec.extra["tree"]
    assert [(n["id"], n["parent"], n["status"]) for n in tree] == [
        (0, None, "root"),
        (1, 0, "open"),
        (2, 1, "give_up"),
        (3, 0, "open"),
        (4, 3, "answer"),
    ]
    diversity = model.requests[2].messages[-1]
    assert diversity.role == "user" and "searchPerson" in diversity.content
    text = json.dumps(tree, indent=1) + "\n=== diversity message ===\n" + diversity.content + "\n"
    check_snapshot("dfsdt_tree.txt", text)
