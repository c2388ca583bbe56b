"""Score (reference, answer) pairs with CRUD-RAG's and RAGEval's own metric code, for
tests/data/chinese_metric_pairs.jsonl (written pairs) and tests/data/crud_real_metric_pairs.jsonl
(CRUD-RAG's own; pairs from ``python tests/data/make_crud_real_pairs.py EVENT_SUMMARY_JSON
QUEST_EVAL_DIR``). Runs in a separate environment holding what that code
imports (evaluate, jieba, rouge_score, loguru, rouge_chinese), against a checkout of each
repository (their files are read where they are, never copied into raleval):

    python -m venv /tmp/crud && /tmp/crud/bin/pip install evaluate jieba rouge_score loguru \
        rouge_chinese rouge
    python tests/data/make_chinese_pairs.py > /tmp/pairs.jsonl
    /tmp/crud/bin/python benchmarks/crud_metric_reference.py CRUD_RAG_DIR RAGEVAL_DIR \
        < /tmp/pairs.jsonl > tests/data/chinese_metric_pairs.jsonl

CRUD_RAG_DIR holds CRUD-RAG's ``src/`` (``src/metric/common.py`` and the metric scripts under
``src/.cache/huggingface``); RAGEVAL_DIR holds RAGEval's ``rageval/`` package. Each output
line is the input pair with ``crud_rouge_l``, ``crud_bleu`` (``bleu_score``'s default: the
brevity penalty divided out), ``crud_bleu_penalty`` (``with_penalty=True``) and
``rageval_rouge_l`` (``ROUGELScore(language="zh")``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import types


def main() -> None:
    crud_dir, rageval_dir = sys.argv[1], sys.argv[2]
    # common.py imports text2vec for its embedding score, which these pairs do not use
    sys.modules.setdefault("text2vec", types.SimpleNamespace(Similarity=None))
    os.chdir(crud_dir)  # its metric scripts are loaded by paths relative to the checkout
    sys.path[:0] = [crud_dir, rageval_dir]
    from src.metric.common import bleu_score, rougeL_score

    path = os.path.join(
        rageval_dir, "rageval", "evaluation", "metrics", "rag_metrics", "generation", "rouge_l.py"
    )
    spec = importlib.util.spec_from_file_location("rageval_rouge_l", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rageval = module.ROUGELScore(language="zh")

    for line in sys.stdin:
        row = json.loads(line)
        ref, ans = row["reference"], row["answer"]
        bleu = bleu_score(ans, ref)
        bleu_bp = bleu_score(ans, ref, with_penalty=True)
        doc = {"prediction": {"content": ans}, "ground_truth": {"content": ref}}
        row.update(
            crud_rouge_l=rougeL_score(ans, ref),
            crud_bleu=None if bleu is None else bleu[0],
            crud_bleu_penalty=None if bleu_bp is None else bleu_bp[0],
            rageval_rouge_l=rageval(doc, None, None, language="zh"),
        )
        print(json.dumps(row, ensure_ascii=False), flush=True)


if __name__ == "__main__":
    main()
