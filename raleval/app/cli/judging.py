"""``raleval judge validate`` and the judging step of ``raleval score --judge``."""

from __future__ import annotations

import asyncio
import json
from typing import Annotated, Any

import typer

from raleval.app.cli.base import app, fail, user_errors

judge_app = typer.Typer(help="Validate answer judges against known truth.", no_args_is_help=True)
app.add_typer(judge_app, name="judge")


def _agreement_table(spec: str, result: Any, first: str, rows: list[tuple[str, Any]]) -> Any:
    """A judge's agreement with the truth per ``first`` (answer type, language) and overall:
    n, accuracy, false accept, false reject and kappa."""
    from rich.table import Table

    table = Table(
        title=f"{spec} (prompt {result.prompt_version}; {result.elapsed_s:.1f} s)",
        title_justify="left",
    )
    for col in (first, "n", "accuracy", "false accept", "false reject", "kappa"):
        table.add_column(col, justify="left" if col == first else "right")
    for name, a in [*rows, ("all", result.overall)]:
        table.add_row(
            name, str(a.n), _fmt(a.accuracy), _fmt(a.false_accept), _fmt(a.false_reject),
            _fmt(a.kappa),
        )  # fmt: skip
    return table


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


@judge_app.command("validate")
def validate_cmd(
    judge: Annotated[
        list[str],
        typer.Option(help="judge spec (scripted/rules, local/qwen2.5-0.5b, ...); repeatable"),
    ],
    seed: Annotated[int, typer.Option(help="seed of the tasks and the answers written")] = 0,
    per_type: Annotated[int, typer.Option(help="items per answer type")] = 40,
    concurrency: Annotated[int, typer.Option(help="items judged at once")] = 2,
    as_json: Annotated[bool, typer.Option("--json", help="print the results as JSON")] = False,
    model_option: Annotated[
        list[str] | None,
        typer.Option("-M", "--model-option", help="judge model option key=value (threads=1)"),
    ] = None,
    keypoints: Annotated[
        bool,
        typer.Option(
            "--keypoints",
            help="validate the free-text key-point judge (RAGEval's relevant / irrelevant / "
            "wrong) on hand-labelled key points of real model answers instead",
        ),
    ] = False,
    which: Annotated[
        str,
        typer.Option(
            "--set",
            help="generated: answers raleval writes (truth by construction); real: real model "
            "answers labelled by hand (grading/real_answers.jsonl), shown beside the generated "
            "set's accuracy",
        ),
    ] = "generated",
) -> None:
    """Grade a seeded set of reworded right answers and near misses with each judge; print
    accuracy, false-accept and false-reject rates and Cohen's kappa against the truth, per
    answer type, and store them beside the judge's cached verdicts. ``--set real``: the hand-
    labelled real answers instead; ``--keypoints``: the key-point judge on its hand-labelled
    set, per language."""
    from raleval.config import parse_key_values

    options = parse_key_values(model_option, "-M") if model_option else {}
    if keypoints:
        _validate_keypoints(judge, concurrency, as_json, options)
        return
    if which == "real":
        validate_real_cmd(judge, seed, per_type, concurrency, as_json)
        return
    if which != "generated":
        fail(f"--set takes generated or real, not {which!r}")
    from rich.console import Console

    from raleval.cache import default_cache_path
    from raleval.grading.agreement import cohen_kappa
    from raleval.grading.judge import resolve_judge
    from raleval.grading.judge_validation import build_set, counts, store_result, validate

    console = Console(stderr=as_json)
    try:
        items = build_set(seed=seed, per_type=per_type)
    except user_errors() as exc:
        fail(str(exc))
    scored = sum(not i.rule_gap for i in items)
    kinds = ", ".join(f"{k} {sum(c.values())}" for k, c in sorted(counts(items).items()))
    console.print(f"{scored} items ({kinds}); {len(items) - scored} rule-gap items apart")
    cache_path = default_cache_path()
    all_verdicts: dict[str, list[str]] = {}
    out: list[dict[str, Any]] = []
    for spec in judge:
        try:
            j = resolve_judge([spec], cache_path=cache_path, **options)
        except user_errors() as exc:
            fail(str(exc))
        try:
            result, verdicts = validate(j, items, seed=seed, concurrency=concurrency)
        finally:
            j.close()
        stored = store_result(result, cache_path)
        all_verdicts[spec] = verdicts
        out.append(result.model_dump())
        if as_json:
            continue
        console.print(_agreement_table(spec, result, "answer type", [*result.per_type.items()]))
        if result.rule_gaps is not None:
            g = result.rule_gaps
            console.print(
                f"rule gaps (answers raleval's rules grade wrong, not counted above): "
                f"{g.n} items, this judge right on {round(g.accuracy * g.n)}"
            )
        console.print(
            f"{result.by_rule} of the {result.n} items were decided by rule before the judge "
            "was asked (abstentions; 'invalid question' on a false premise)"
        )
        if result.unreadable:
            console.print(f"unreadable judge replies (counted hallucinated): {result.unreadable}")
        console.print(f"stored in {stored}")
    if len(all_verdicts) > 1:
        specs = list(all_verdicts)
        for k, a in enumerate(specs):
            for b in specs[k + 1 :]:
                kappa = cohen_kappa(all_verdicts[a], all_verdicts[b])
                console.print(f"inter-judge kappa {a} vs {b}: {_fmt(kappa)}")
    if as_json:
        typer.echo(json.dumps(out))


def validate_real_cmd(
    judge: list[str], seed: int, per_type: int, concurrency: int, as_json: bool
) -> None:
    """``raleval judge validate --set real``: each judge on the hand-labelled real answers,
    per answer type, beside its accuracy on the generated set (measured now for the rules,
    read from the stored validation for a model judge)."""
    from rich.console import Console
    from rich.table import Table

    from raleval.cache import default_cache_path
    from raleval.grading.judge import RULES_SPEC, resolve_judge
    from raleval.grading.judge_validation import build_set, measured, validate
    from raleval.grading.real_validation import load_real_set, validate_real

    console = Console(stderr=as_json)
    try:
        items = load_real_set()
    except user_errors() as exc:
        fail(str(exc))
    right = sum(i.label == "right" for i in items)
    console.print(
        f"{len(items)} real answers ({right} labelled right, {len(items) - right} wrong; "
        f"{len({i.run for i in items})} stored cells)"
    )
    cache_path = default_cache_path()
    out = []
    for spec in judge:
        try:
            j = resolve_judge([spec], cache_path=cache_path)
        except user_errors() as exc:
            fail(str(exc))
        try:
            result, _ = validate_real(j, items, concurrency=concurrency)
            if spec == RULES_SPEC:
                generated, _ = validate(j, build_set(seed=seed, per_type=per_type), seed=seed)
            else:
                generated = measured(j.spec, j.prompt_version, cache_path)
        finally:
            j.close()
        out.append(result.model_dump())
        if as_json:
            continue
        table = Table(
            title=f"{spec} on real answers (set {result.set_id}; {result.elapsed_s:.1f} s)",
            title_justify="left",
        )
        cols = ("type", "n", "right", "accuracy", "false acc.", "false rej.", "ungraded")
        for col in (*cols, "kappa", "generated"):
            table.add_column(col, justify="left" if col == "type" else "right")
        rows = [
            *result.per_type.items(),
            ("short", result.short_answer),
            ("all", result.overall),
        ]
        for name, a in rows:
            gen = None
            if generated is not None:
                gen = generated.per_type.get(name) if name in generated.per_type else None
                if name == "all":
                    gen = generated.overall
            table.add_row(
                name,
                str(a.n),
                str(a.right),
                _fmt(a.accuracy),
                _fmt(a.false_accept),
                _fmt(a.false_reject),
                str(a.ungraded),
                _fmt(a.kappa),
                _fmt(gen.accuracy if gen is not None else None),
            )
        console.print(table)
        if generated is None:
            console.print(
                f"generated set: not measured for {spec}: run raleval judge validate --judge {spec}"
            )
        console.print(
            "short: every type but free_text and long_form, pooled; ungraded: answers the "
            "rules could not decide (not accepted); generated: accuracy on the generated set"
        )
    if as_json:
        typer.echo(json.dumps(out))


def _validate_keypoints(
    specs: list[str], concurrency: int, as_json: bool, options: dict[str, Any]
) -> None:
    from rich.console import Console

    from raleval.grading.keypoint_judge import KeyPointJudge
    from raleval.grading.keypoint_validation import load_items, validate_keypoints

    console = Console(stderr=as_json)
    items = load_items()
    console.print(f"{len(items)} hand-labelled key points of real model answers")
    out = []
    for spec in specs:
        try:
            judge = KeyPointJudge([spec], **options)
        except user_errors() as exc:
            fail(str(exc))
        try:
            result, _ = validate_keypoints(judge, items, concurrency)
        finally:
            judge.close()
        out.append(result.model_dump())
        if as_json:
            continue
        console.print(_agreement_table(spec, result, "language", [*result.per_language.items()]))
        labels = ", ".join(f"{k} {v}" for k, v in result.labels.items())
        console.print(
            f"labels: {labels}; {result.by_rule} decided by rule (abstentions are irrelevant)"
        )
        if result.unreadable:
            console.print(f"unreadable judge replies (counted irrelevant): {result.unreadable}")
    if as_json:
        typer.echo(json.dumps(out))


def judge_run_verdicts(run: Any, specs: list[str]) -> tuple[dict[str, Any], list[dict | None]]:
    """The judge's verdict on every episode of a loaded, re-scored ``run`` (None where it
    does not judge: a task that is missing or has no answer in the environment), and what
    names the judge: spec, prompt version and the kappa measured by ``judge validate``."""
    from raleval.analysis.judging import rule_verdict
    from raleval.cache import default_cache_path
    from raleval.grading.judge import judge_answer, resolve_judge
    from raleval.grading.judge_validation import measured

    cache_path = default_cache_path()
    judge = resolve_judge(specs, cache_path=cache_path)
    validation = measured(judge.spec, judge.prompt_version, cache_path)
    about = {
        "spec": judge.spec,
        "prompt_version": judge.prompt_version,
        "kappa": validation.overall.kappa if validation else None,
        "validation_set": validation.set_id if validation else None,
    }

    async def one(t: Any) -> dict | None:
        task = run.tasks.get(t.task_id)
        if task is None or not task.tags.answerable:
            return None  # declining is the right answer there: the rules grade it
        verdict = await judge_answer(
            judge, task.question, task.answers, t.answer, task.answer_type, task.elements
        )
        return {**about, "verdict": verdict, "rule_verdict": rule_verdict(t.scores.get("crag"))}

    async def everything() -> list[dict | None]:
        return [await one(t) for t in run.results]

    try:
        return about, asyncio.run(everything())
    finally:
        judge.close()


def judge_free_key_points(run: Any, specs: list[str]) -> tuple[int, int]:
    """RAGEval's key-point shares of every episode whose task has free-text key points (a
    loaded DragonBall or CRUD-RAG task), judged by the model panel ``specs`` and written into
    the episode's scores in place; returns (episodes judged, unreadable replies)."""
    from raleval.analysis.scoring import (
        KP_COMPLETENESS,
        KP_HALLUCINATION,
        KP_IRRELEVANCE,
        free_key_points,
    )
    from raleval.grading.keypoint_judge import KeyPointJudge

    episodes = [
        (t, task)
        for t in run.results
        if (task := run.tasks.get(t.task_id)) is not None and free_key_points(task)
    ]
    if not episodes:
        return 0, 0
    judge = KeyPointJudge(specs)

    async def everything() -> None:
        for t, task in episodes:
            language = task.metadata.get("language") if isinstance(task.metadata, dict) else None
            shares = await judge.judge(task.question, t.answer, free_key_points(task), language)
            t.scores.update(
                {
                    KP_COMPLETENESS: shares.completeness,
                    KP_HALLUCINATION: shares.hallucination,
                    KP_IRRELEVANCE: shares.irrelevance,
                }
            )

    try:
        asyncio.run(everything())
    finally:
        judge.close()
    return len(episodes), judge.unreadable


def agreement_line(rows: list[dict | None]) -> str:
    """One line: how often the judge agreed with the rules on this run."""
    from raleval.grading.agreement import cohen_kappa

    pairs = [(r["rule_verdict"], r["verdict"]) for r in rows if r and r.get("rule_verdict")]
    if not pairs:
        return "judge: no episode to compare with the rules"
    same = sum(a == b for a, b in pairs)
    kappa = cohen_kappa([a for a, _ in pairs], [b for _, b in pairs])
    return (
        f"judge agrees with the rules on {same}/{len(pairs)} episode(s) "
        f"({same / len(pairs):.1%}); kappa {_fmt(kappa)}"
    )
