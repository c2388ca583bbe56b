"""``raleval questeval``: CRUD-RAG's metrics of a run's long-form answers.

RAGQuestEval needs a reader model (``--model``), whose replies go through the response cache;
ROUGE-L and BLEU need none, and BERTScore runs only when given a model directory on disk. The
per-episode results go to ``questeval.jsonl`` beside ``results.jsonl`` (rewritten whole, as
``scores.jsonl`` is: it is derived from the stored episodes, which are never changed).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated, Any

import typer

from raleval.app.cli.base import app, fail, user_errors

QUESTEVAL_FILE = "questeval.jsonl"


def _long_form(run: Any) -> list[tuple[Any, Any]]:
    """(trajectory, task) of each scored episode whose task has questions to ask: a
    long-form task's key points, or a loaded CRUD-RAG task's own questions."""
    from raleval.grading.questeval import questions_for

    out = []
    for t in run.scored:
        task = run.tasks.get(t.task_id)
        if task is not None and questions_for(task):
            out.append((t, task))
    return out


def questeval_rows(
    run: Any,
    model: str,
    bertscore_model: Path | None = None,
    bertscore_layers: int | None = None,
    check_reader: bool = False,
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """One row per long-form episode of ``run``: RAGQuestEval with ``model`` as the reader,
    ROUGE-L, BLEU and (given a model directory) BERTScore against the reference text; and the
    reader's call counts. ``check_reader``: the reader also reads each task's reference text,
    where every question has its answer (``reference_recall`` / ``reference_accuracy``: what
    the reader loses on its own, 1.0 for a reader that reads perfectly)."""
    from raleval.grading.longform import bert_score_f1, bleu, rouge_l
    from raleval.grading.questeval import PROMPT_VERSION, QuestEvalReader, quest_eval

    episodes = _long_form(run)
    bert: list[float | None] = [None] * len(episodes)
    if bertscore_model is not None:
        if bertscore_layers is None:
            raise ValueError("--bertscore-model needs --bertscore-layers (the layer to score)")
        bert = list(
            bert_score_f1(
                [t.answer for t, _ in episodes],
                [task.answers[0] for _, task in episodes],
                model_type=bertscore_model,
                num_layers=bertscore_layers,
            )
        )
    reader = QuestEvalReader(model)

    async def everything() -> tuple[list[Any], list[Any]]:
        try:
            own = [await quest_eval(reader, task, t.answer) for t, task in episodes]
            ref = [
                await quest_eval(reader, task, task.answers[0]) if check_reader else None
                for _, task in episodes
            ]
            return own, ref
        finally:
            await reader.aclose()

    try:
        scores, on_reference = asyncio.run(everything())
    finally:
        reader.close()
    rows = []
    for (t, task), s, b, r in zip(episodes, scores, bert, on_reference, strict=True):
        reference = task.answers[0]
        rows.append(
            {
                "task_id": t.task_id,
                "epoch": t.epoch,
                "family": task.family,
                "reader": reader.spec,
                "prompt_version": PROMPT_VERSION,
                "quest_recall": s.recall,
                "quest_f1": s.f1,
                "quest_accuracy": s.accuracy,
                "rouge_l": rouge_l(t.answer, [reference]),
                "bleu": bleu(t.answer, [reference]),
                "bertscore": b,
                "reference_recall": r.recall if r else None,
                "reference_accuracy": r.accuracy if r else None,
                "questions": [q.__dict__ for q in s.questions],
            }
        )
    return rows, {"calls": reader.calls, "cache_hits": reader.cache_hits, "failed": reader.failures}


_COLUMNS = ("quest_recall", "quest_f1", "quest_accuracy", "rouge_l", "bleu", "bertscore")
_READER = ("reference_recall", "reference_accuracy")


def family_means(rows: list[dict[str, Any]]) -> dict[str, dict[str, float | None]]:
    """Each column's mean per family and over all rows (None: not measured)."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault(r["family"], []).append(r)
    groups = dict(sorted(groups.items()))
    if len(groups) != 1:
        groups["all"] = rows
    out: dict[str, dict[str, float | None]] = {}
    for name, rs in groups.items():
        means: dict[str, float | None] = {"n": len(rs)}
        for col in (*_COLUMNS, *_READER):
            values = [r[col] for r in rs if r[col] is not None]
            means[col] = sum(values) / len(values) if values else None
        out[name] = means
    return out


@app.command("questeval")
def questeval_cmd(
    run_dir: Annotated[Path, typer.Argument(help="a run directory")],
    model: Annotated[
        str,
        typer.Option(
            "--model",
            "-m",
            envvar="RALEVAL_QUESTEVAL_MODEL",
            help="the reader that answers each key point's question from the answer text "
            "(provider/name: local/qwen2.5-0.5b, openai/gpt-4o-mini, ...)",
        ),
    ],
    bertscore_model: Annotated[
        Path | None,
        typer.Option(
            envvar="RALEVAL_BERTSCORE_MODEL",
            help="also BERTScore against a model directory on this machine (needs the "
            "bertscore extra; nothing is downloaded)",
        ),
    ] = None,
    bertscore_layers: Annotated[
        int | None,
        typer.Option(envvar="RALEVAL_BERTSCORE_LAYERS", help="the layer BERTScore reads"),
    ] = None,
    check_reader: Annotated[
        bool,
        typer.Option(
            help="also let the reader answer from each task's reference text, where every "
            "question has its answer: what the reader misses there is the reader's own error"
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print the table as JSON")] = False,
) -> None:
    """CRUD-RAG's metrics of a run's long-form answers: RAGQuestEval (questions from the key
    points, answered from each answer by --model, through the response cache), ROUGE-L, BLEU
    and optionally BERTScore; per-episode rows go to questeval.jsonl in the run directory."""
    from raleval.analysis.runs import load_run
    from raleval.app.console import make_console
    from raleval.grading.longform import BertScoreUnavailable
    from raleval.store import write_atomic

    try:
        run = load_run(run_dir)
        if not _long_form(run):
            fail(
                f"{run_dir} holds no long-form episode (a task with key points, or CRUD-RAG's "
                "questions) to score"
            )
        rows, calls = questeval_rows(
            run, model, bertscore_model, bertscore_layers, check_reader=check_reader
        )
    except (*user_errors(), BertScoreUnavailable) as exc:
        fail(str(exc))
    write_atomic(
        run_dir / QUESTEVAL_FILE, "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows)
    )
    means = family_means(rows)
    if as_json:
        typer.echo(json.dumps({"families": means, "reader_calls": calls}))
        return
    from rich.markup import escape
    from rich.table import Table

    # family names, paths and specs are data: never read as Rich markup
    title = escape(f"{run_dir}: CRUD-RAG metrics (reader {model})")
    table = Table(title=title, title_justify="left")
    table.add_column("family")
    for col in ("n", *_COLUMNS):
        table.add_column(col.replace("_", " "), justify="right")
    for name, m in means.items():
        cells = [str(m["n"])] + ["-" if m[c] is None else f"{m[c]:.3f}" for c in _COLUMNS]
        table.add_row(escape(name), *cells)
    console = make_console()
    console.print(table)
    if check_reader:
        every = means.get("all") or next(iter(means.values()))
        console.print(
            f"reader on the reference texts: quest recall {every['reference_recall']:.3f}, "
            f"quest accuracy {every['reference_accuracy']:.3f} (1.000 each for a reader that "
            "reads perfectly)",
            highlight=False,
            markup=False,
        )
    console.print(
        f"reader calls: {calls['calls']} (cache hits {calls['cache_hits']}, failed "
        f"{calls['failed']}); rows in {run_dir / QUESTEVAL_FILE}",
        highlight=False,
        markup=False,
    )
