"""The gold self-check on a whole benchmark file: each question's gold, given as the answer to
its own question, must be graded correct. Prints how many are not, by question type, with
each one's question, gold and the rule's last word.

    python benchmarks/gold_selfcheck.py PATH [--kind hotpotqa] [--out results.json]

PATH is a file the ``--kind`` loader reads (raleval's task-file kinds: hotpotqa, 2wiki,
musique, kqapro, crag, soay, reval), such as HotpotQA's dev questions in ReAct's repository
(``data/hotpot_dev_v1_simplified.json``: question, answer, type; 7,405 questions) or CRAG's
dev file. Nothing is downloaded; opt-in, as the file is not in this repository.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import write_json

from raleval.grading.rules import grade_task
from raleval.tasks.loaders import LOADERS, load_report


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("path", type=Path)
    ap.add_argument("--kind", default="hotpotqa", choices=sorted(LOADERS))
    ap.add_argument("--out", type=Path, default=None, help="also write the counts as JSON")
    args = ap.parse_args()
    start = time.perf_counter()
    report = load_report(args.kind, args.path)
    by_type: Counter[str] = Counter()
    wrong: Counter[str] = Counter()
    failures = []
    for task in report.tasks:
        kind = task.tags.question_type or task.answer_type.value
        by_type[kind] += 1
        verdict = grade_task(task, task.answers[0])
        if not verdict.correct:
            wrong[kind] += 1
            failures.append((task.id, kind, task.question, task.answers[0], verdict))
    took = time.perf_counter() - start
    for task_id, kind, question, gold, verdict in failures:
        print(f"{task_id} [{kind}] {question!r} gold {gold!r}: {verdict.explanation[-1]}")
    for kind in sorted(by_type):
        print(f"{kind}: {wrong[kind]} of {by_type[kind]} golds not correct")
    print(f"skipped records (the loader's): {len(report.skipped)}")
    print(
        f"{sum(wrong.values())} of {len(report.tasks)} golds not correct for their own question "
        f"({args.path.name}, loader {args.kind}; {took:.1f} s)"
    )
    if args.out:
        write_json(
            "gold_selfcheck",
            {
                "file": args.path.name,
                "kind": args.kind,
                "questions": len(report.tasks),
                "skipped": len(report.skipped),
                "not_correct": sum(wrong.values()),
                "by_type": {k: [wrong[k], n] for k, n in sorted(by_type.items())},
                "failures": [[t, k, q, g] for t, k, q, g, _ in failures],
            },
            args.out,
        )
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
