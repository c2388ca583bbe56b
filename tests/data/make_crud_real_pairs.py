"""Pick tests/data/crud_real_metric_pairs.jsonl's 200 (reference, answer) pairs from CRUD-RAG's
released data, deterministically (file order, no sampling):

- 100 summary pairs: the first 100 complete records of CRUD-RAG's ``event_summary.json``; the
  reference is the record's ``summary`` (what CRUD-RAG scores a generated summary against), the
  answer its ``event`` (a one-sentence account of the same event, as a short summary would be).
- 100 key-information pairs: RAGQuestEval's saved ground truth
  (``src/quest_eval/QuestAnswer{1Doc,2Docs,3Docs}_quest_gt_save.json``), one pair per record
  whose key_info, question and answers lists have the same length, taken in turn from the three
  files: the reference is a key fact (``key_info[i]``), the answer the extracted answer to its
  question (``answers[i]``, sometimes the generator's "无法推断").

    python tests/data/make_crud_real_pairs.py EVENT_SUMMARY_JSON QUEST_EVAL_DIR > /tmp/pairs.jsonl

The stored file adds the scores CRUD-RAG's and RAGEval's own metric code give each pair
(benchmarks/crud_metric_reference.py); sources and commits are in tests/data/README.md.
"""

from __future__ import annotations

import json
import sys
from itertools import zip_longest
from pathlib import Path

SUMMARY_PAIRS = 100
KEY_INFO_PAIRS = 100
QA_FILES = ("QuestAnswer1Doc", "QuestAnswer2Docs", "QuestAnswer3Docs")


def complete_records(text: str) -> list[dict]:
    """The JSON objects of a list, up to the first one that does not parse (the stored copy of
    event_summary.json is cut short)."""
    decoder = json.JSONDecoder()
    records: list[dict] = []
    i = text.find("{")
    while i >= 0:
        try:
            obj, end = decoder.raw_decode(text, i)
        except json.JSONDecodeError:
            break
        records.append(obj)
        i = text.find("{", end)
    return records


def summary_pairs(path: Path) -> list[dict]:
    records = complete_records(path.read_text(encoding="utf-8"))[:SUMMARY_PAIRS]
    return [
        {"kind": "summary", "source": f"event_summary.json:{r['ID']}",
         "reference": r["summary"], "answer": r["event"]}
        for r in records
    ]  # fmt: skip


def key_info_pairs(quest_eval: Path) -> list[dict]:
    per_file = []
    for name in QA_FILES:
        data = json.loads((quest_eval / f"{name}_quest_gt_save.json").read_text(encoding="utf-8"))
        rows = []
        for n, (rid, rec) in enumerate(data.items()):
            keys, questions, answers = rec["key_info"], rec["question"], rec["answers"]
            if not keys or not (len(keys) == len(questions) == len(answers)):
                continue
            i = n % len(keys)  # vary which fact of a record is taken
            rows.append(
                {"kind": "key_info", "source": f"{name}_quest_gt_save.json:{rid}[{i}]",
                 "reference": keys[i], "answer": answers[i]}
            )  # fmt: skip
        per_file.append(rows)
    interleaved = [r for group in zip_longest(*per_file) for r in group if r is not None]
    return interleaved[:KEY_INFO_PAIRS]


def main() -> None:
    pairs = summary_pairs(Path(sys.argv[1])) + key_info_pairs(Path(sys.argv[2]))
    for pair in pairs:
        print(json.dumps(pair, ensure_ascii=False))


if __name__ == "__main__":
    main()
