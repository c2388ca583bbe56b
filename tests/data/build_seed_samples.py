"""Write the small samples of the seeds' released data under tests/data/seeds/*_real (RGB,
RAGEval's DragonBall), each record unchanged and in its file's order, from git checkouts of
the repositories (their sources, commits and licences are in tests/data/README.md):

    python tests/data/build_seed_samples.py RGB_DIR RAGEVAL_DIR WSM_RAG_DIR

- RGB (``data/*.json``, one question a line): the first 3 lines of ``en_fact.json`` and
  ``zh_fact.json``; the 3 shortest lines of ``zh_int.json`` and ``zh_refine.json`` (their
  first lines are 30-50 KB each, every passage kept).
- DragonBall: Chinese queries 0, 1, 8, 11 (one of each single-document type, document 5), the
  first lines of ``dragonball_queries.jsonl``; that file is too large for the stored
  snapshots, so they are taken from lixiangryan/WSM_RAG's ``test_queries_zh.jsonl``, which
  copies those lines (their text equals the lines of WSM_RAG's stored copy of
  ``dragonball_queries.jsonl``, the same git blob as RAGEval's, a386cc3b). English queries
  2134, 2142, 2158 (document 44) and 3205 (documents 59 and 47) from RAGEval's own
  ``rageval/evaluation/data/example_finance_en_gpt-4o.jsonl``, the same record format with
  GPT-4o's answer in ``prediction`` (kept). The documents they cite, unchanged, from
  ``dragonball_dataset/dragonball_docs.jsonl``.

CRUD-RAG's sample (tests/data/seeds/crud_real) is assembled as tests/data/README.md says.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

OUT = Path(__file__).parent / "seeds"
RGB_HEAD = ("en_fact", "zh_fact")
RGB_SHORTEST = ("zh_int", "zh_refine")
PER_FILE = 3
ZH_QUERIES = (0, 1, 8, 11)
EN_QUERIES = (2134, 2142, 2158, 3205)


def _lines(path: Path) -> list[str]:
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def rgb(src: Path) -> None:
    out = OUT / "rgb_real"
    out.mkdir(parents=True, exist_ok=True)
    for name in RGB_HEAD + RGB_SHORTEST:
        lines = _lines(src / "data" / f"{name}.json")
        if name in RGB_HEAD:
            keep = lines[:PER_FILE]
        else:
            shortest = sorted(range(len(lines)), key=lambda i: len(lines[i].encode()))
            keep = [lines[i] for i in sorted(shortest[:PER_FILE])]
        (out / f"{name}.json").write_text("\n".join(keep) + "\n", encoding="utf-8")


def dragonball(rageval: Path, wsm: Path) -> None:
    out = OUT / "dragonball_real"
    out.mkdir(parents=True, exist_ok=True)
    copied = wsm / "dragonball_dataset" / "test_queries_zh.jsonl"
    zh = {json.loads(x)["query"]["query_id"]: x for x in _lines(copied)}
    example = rageval / "rageval" / "evaluation" / "data" / "example_finance_en_gpt-4o.jsonl"
    en = {json.loads(x)["query"]["query_id"]: x for x in _lines(example)}
    queries = [zh[q] for q in ZH_QUERIES] + [en[q] for q in EN_QUERIES]
    wanted = {d for q in queries for d in json.loads(q)["ground_truth"]["doc_ids"]}
    docs = [
        x
        for x in _lines(rageval / "dragonball_dataset" / "dragonball_docs.jsonl")
        if json.loads(x)["doc_id"] in wanted
    ]
    (out / "dragonball_queries.jsonl").write_text("\n".join(queries) + "\n", encoding="utf-8")
    (out / "dragonball_docs.jsonl").write_text("\n".join(docs) + "\n", encoding="utf-8")


def main() -> None:
    rgb(Path(sys.argv[1]))
    dragonball(Path(sys.argv[2]), Path(sys.argv[3]))


if __name__ == "__main__":
    main()
