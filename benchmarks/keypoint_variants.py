"""Key-point rules against one changed fact: the share of long-form oracle answers with a
replaced entity, two swapped numbers or a year far from its cue in which the rules contradict
every changed key point, per long-form family; the share of word-shuffled references graded
correct; and, as a control, the unchanged oracle answers' completeness and hallucination.

    python benchmarks/keypoint_variants.py [--size small] [--n 30]

The variants are made by tests/keypoint_variants.py (one per kind per task).
"""

from __future__ import annotations

import argparse
import random
import sys
from collections import defaultdict
from pathlib import Path

from _common import write_json

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from raleval import registry
from raleval.grading.rules import grade_task
from raleval.keypoints import judge_key_points, score_key_points
from tests.keypoint_variants import oracle_answer, shuffled, variants

SETS = {"scholar": "scholar-longform", "wiki": "wiki-longform"}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default="small")
    ap.add_argument("--n", type=int, default=30)
    args = ap.parse_args()
    rows: dict[str, dict] = {}
    for env_name, spec in SETS.items():
        env = registry.envs.get(env_name)(size=args.size)
        for family in registry.task_sets.get(spec):
            tasks = registry.task_families.get(family).generate(env, args.n, 0)
            kinds: dict[str, list[int]] = defaultdict(lambda: [0, 0])
            misses: list[dict] = []
            control = [score_key_points(oracle_answer(t.key_points), t.key_points) for t in tasks]
            shuffled_correct = 0
            for t in tasks:
                for v in variants(t):
                    verdicts = judge_key_points(v.answer, t.key_points)
                    caught = all(verdicts[i] == "contradicted" for i in v.changed)
                    kinds[v.kind][0] += caught
                    kinds[v.kind][1] += 1
                    if not caught and len(misses) < 3:
                        misses.append({"kind": v.kind, "answer": v.answer, "verdicts": verdicts})
                text = shuffled(t.answers[0], random.Random(t.id))
                shuffled_correct += grade_task(t, text).correct
            rows[family] = {
                "tasks": len(tasks),
                **{
                    k: {"contradicted": c, "variants": n, "share": c / n if n else None}
                    for k, (c, n) in sorted(kinds.items())
                },
                "shuffled_reference_correct": shuffled_correct,
                "oracle_completeness": sum(s.completeness for s in control) / len(control),
                "oracle_hallucination": sum(s.hallucination for s in control) / len(control),
                "misses": misses,
            }
            print(family, {k: v for k, v in rows[family].items() if k != "misses"}, flush=True)
    write_json("keypoint_variants", {"size": args.size, "n": args.n, "families": rows})


if __name__ == "__main__":
    main()
