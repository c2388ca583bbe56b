"""Draw, render and write ``taxonomy_fresh.jsonl``: real study episodes raleval's labels were
never tuned on, labelled by hand (issue 45).

1. ``python tests/data/build_taxonomy_fresh.py sample`` draws the episodes: from the stored
   study cells (``studies/local-models``; only episodes that count in scores), seed 1445,
   10 per workflow, taken in turn from each of the workflow's sources (the generated scholar,
   wiki and CRAG sets, HotpotQA dev, CRAG dev pages) so every source a workflow ran on is
   drawn; episodes already in a labelled set (``grading/real_answers.jsonl`` by cell, task and
   epoch; ``taxonomy_real.jsonl`` by model, workflow, environment and task) are left out, and
   so are tasks whose gold is not an answer (CRAG dev's 'nan', which the loaders now refuse).
2. ``... render`` prints each drawn episode for labelling: task, golds, every step (thought,
   call, observation, kind, cause), termination and answer; never raleval's scores or label.
3. Labels and reasons were written by hand in :data:`HAND` from the rendering alone;
   ``... write`` stores ``taxonomy_fresh.jsonl`` (task, trajectory without its stored scores,
   label, reason, cell) for ``tests/test_taxonomy_fresh.py``.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STUDY = ROOT / "studies" / "local-models"
SEED = 1445
PER_WORKFLOW = 10
WORKFLOWS = ("direct", "planned", "react", "function_calling", "pal", "dfsdt")
OUT = Path(__file__).with_name("taxonomy_fresh.jsonl")


def _source(cell: str) -> str:
    env, _, _, tasks = cell.split("__")
    return f"{env}:{tasks}"


def _excluded() -> tuple[set, set]:
    answers = ROOT / "grading" / "real_answers.jsonl"
    by_cell = {
        (r["run"], r["task_id"], r["epoch"])
        for r in map(json.loads, answers.read_text().splitlines())
    }
    real = Path(__file__).with_name("taxonomy_real.jsonl")
    by_agent = set()
    for line in real.read_text().splitlines():
        t = json.loads(line)["trajectory"]
        a = t["agent"]
        by_agent.add((a["model"], a["workflow"], a["env"], t["task_id"]))
    return by_cell, by_agent


def sample() -> list[tuple[str, str, int]]:
    """(cell, task id, epoch) of the drawn episodes, in a fixed order."""
    from raleval.analysis.runs import find_runs, load_run
    from raleval.grading.freetext import is_answer

    by_cell, by_agent = _excluded()
    pools: dict[str, dict[str, list]] = {w: {} for w in WORKFLOWS}
    for path in find_runs([STUDY]):
        run = load_run(path)
        for t in run.scored:
            a = t.agent
            if not all(is_answer(g) for g in run.tasks[t.task_id].answers):
                continue
            if (path.name, t.task_id, t.epoch) in by_cell:
                continue
            if (a.model, a.workflow, a.env, t.task_id) in by_agent:
                continue
            src = _source(path.name)
            pools[a.workflow].setdefault(src, []).append((path.name, t.task_id, t.epoch))
    rng = random.Random(SEED)
    drawn = []
    for w in WORKFLOWS:
        queues = []
        for src in sorted(pools[w]):
            items = sorted(pools[w][src])
            rng.shuffle(items)
            queues.append(items)
        picked: list = []
        while len(picked) < PER_WORKFLOW and any(queues):
            for q in queues:
                if q and len(picked) < PER_WORKFLOW:
                    picked.append(q.pop())
        drawn.extend(picked)
    return drawn


def _episodes():
    from raleval.analysis.runs import load_run

    runs: dict = {}
    for cell, task_id, epoch in sample():
        run = runs.get(cell) or runs.setdefault(cell, load_run(STUDY / cell))
        traj = next(t for t in run.results if t.task_id == task_id and t.epoch == epoch)
        yield cell, run.tasks[task_id], traj


def render(limit: int = 1500) -> None:
    for n, (cell, task, traj) in enumerate(_episodes()):
        print(f"==== #{n} {cell} {task.id} e{traj.epoch}")
        print(f"Q: {task.question}")
        print(f"GOLD: {task.answers} type={task.answer_type} elements={task.elements}")
        print(f"EVIDENCE: {task.evidence} answerable={task.tags.answerable}")
        for s in traj.steps:
            print(f"  [{s.index}] kind={s.kind.value} cause={s.cause} tool={s.tool}")
            if s.thought:
                print(f"      thought: {s.thought[:limit]!r}")
            if s.arguments:
                print(f"      args: {json.dumps(s.arguments)[:limit]}")
            if s.observation:
                print(f"      obs: {s.observation[:limit]!r}")
        print(f"  END {traj.termination.value} cause={traj.termination_cause}")
        print(f"  ANSWER: {traj.answer!r}")


# cell/task/epoch -> (label, reason), written from the rendering before raleval's labels were read
HAND: dict[str, tuple[str, str]] = {}


def write() -> None:
    out = []
    for cell, task, traj in _episodes():
        key = f"{cell}/{task.id}/{traj.epoch}"
        label, reason = HAND[key]
        data = traj.model_dump(mode="json")
        data["llm_calls"] = []
        for k in ("scores", "error_type", "error_cause", "stop_reason", "error_subcause"):
            data.pop(k, None)
        out.append(
            {
                "cell": cell,
                "task": task.model_dump(mode="json"),
                "trajectory": data,
                "label": label,
                "reason": reason,
            }
        )
    OUT.write_text("".join(json.dumps(c, sort_keys=True) + "\n" for c in out), encoding="utf-8")
    print(f"{len(out)} hand-labelled trajectories -> {OUT}")


if __name__ == "__main__":
    {"sample": lambda: print(*sample(), sep="\n"), "render": render, "write": write}[sys.argv[1]]()
