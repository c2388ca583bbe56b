"""A self-contained static HTML report over one or more run directories.

Tables (R-Eval's per-task table with averages and ranks; per-run F1 and costs with their
intervals, each run named by its system, environment and task set; R-Eval labels; CRAG slices
when tasks carry the tags), figures (radar per workflow, F1 by domain x level, error mix, time
and cost versus F1 with their Pareto fronts) and a trajectory viewer (filter by system, task,
error type; open any episode to read every step and why it got its label). Sections fold.
Everything is inlined: the file opens without a network.
"""

from __future__ import annotations

import html
import json
import os
import re
from collections import defaultdict
from collections.abc import Collection, Sequence
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path
from typing import Any

from raleval.analysis import plots
from raleval.analysis.calls import CALL_SCORES
from raleval.analysis.format_failures import FormatFailures, format_failures
from raleval.analysis.judging import JudgedRun, judge_section, load_judged
from raleval.analysis.runs import (
    Run,
    crag_slices,
    domain_level_counts,
    domain_level_f1,
    load_run,
    long_form_rows,
    pareto_front,
    per_task_intervals,
    per_task_table,
    progress_rows,
    robustness,
    robustness_rates,
    summarize_system,
    untouched_rates,
)
from raleval.analysis.stats import MEAN_INTERVAL, SCORE_INTERVAL
from raleval.analysis.summary import LABELS
from raleval.analysis.taxonomy import DEFAULT_THRESHOLD, evidence_found
from raleval.records import Trajectory

MAX_OBSERVATION = 2000
# Above this many episodes the page holds its tables and figures and sends the reader to
# `raleval view` for the trajectories (about 7 KB an episode: 100,000 would make 0.7 GB).
MAX_EMBEDDED_EPISODES = 10_000
MAX_TEXT = 20_000  # questions, answers, thoughts, arguments: a page must stay openable

# Text that cannot be written as UTF-8 (lone surrogates, as a JSON "\\ud800" loads) or that an
# HTML parser treats as an error (NUL) is shown as U+FFFD, never dropped silently.
_UNWRITABLE = re.compile("[\x00\ud800-\udfff]")
# Inside <script type="application/json">, the characters that let data end the element
# (</script>), re-open one (<!--<script> puts the parser in its double-escaped state, which
# swallows the real </script>) or start an entity are written as JSON unicode escapes, which
# JSON.parse reads back unchanged; so are U+2028/2029 (line ends to older JS parsers).
_SCRIPT_ESCAPES = {
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}
_SCRIPT_UNSAFE = re.compile("[<>&\u2028\u2029]")
_FIELD = re.compile(r"@@(\w+)@@")


def _text(value: Any) -> str:
    """``value`` as HTML text: escaped, quotes included, and writable as UTF-8."""
    return html.escape(_UNWRITABLE.sub("\ufffd", str(value)), quote=True)


def script_json(value: Any) -> str:
    """``value`` as JSON that is safe as the whole content of a ``<script>`` element: no
    sequence in any string can close it, open a comment or another script. Lone surrogates
    (which no UTF-8 page can hold) become U+FFFD; json.dumps escapes every control character."""
    data = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    data = _UNWRITABLE.sub("\ufffd", data)
    return _SCRIPT_UNSAFE.sub(lambda m: _SCRIPT_ESCAPES[m.group()], data)


def report_asset(name: str) -> str:
    """A file of the report's own (the page template, its scripts), as text."""
    return resources.files("raleval.analysis").joinpath("report", name).read_text("utf-8")


def cell_name(run: Run) -> str:
    """A run as a reader tells it apart from the others: system, environment and task set."""
    return f"{run.system} ({run.environment}, {run.task_set})"


def section(title: str, body: str, *, open_: bool = True) -> str:
    """A report section that a reader can fold (``title`` is trusted markup-free text)."""
    state = " open" if open_ else ""
    return (
        f'<details class="section"{state}><summary><h2>{html.escape(title)}</h2></summary>'
        f"{body}</details>"
    )


def _table(header: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{_text(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{_text(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def label_reason(t: Trajectory, golds: list[str], threshold: float, task: Any = None) -> str:
    f1 = t.scores.get("f1", 0.0)
    # read as the label reads it: the task's evidence values, and not a name the question asks
    # about (a comparison's winner)
    evidence, question = (task.evidence, task.question) if task is not None else (None, "")
    useful = evidence_found(t, golds, evidence, question)
    ended = t.termination.value + (f" ({t.termination_cause})" if t.termination_cause else "")
    return (
        f"F1 {f1:.2f} {'>=' if f1 >= threshold else '<'} threshold {threshold}; a gold "
        f"answer {'appears' if useful else 'does not appear'} in the tools' observations; "
        f"the episode ended: {ended}. Cause: {t.error_cause or '-'}."
    )


def episode_view(
    i: int, run: Run, t: Trajectory, threshold: float, judged: JudgedRun | None = None
) -> dict[str, Any]:
    from raleval.analysis.keypoint_view import key_point_rows, long_form_reason

    task = run.tasks.get(t.task_id)
    verdicts = judged.verdicts.get((t.task_id, t.epoch)) if judged else None
    golds = task.answers if task else []
    points = key_point_rows(task, t.answer)
    reason = (
        long_form_reason(points, t.error_cause)
        if task is not None and task.key_points
        else label_reason(t, golds, threshold, task)
    )
    return {
        "i": i,
        "system": run.system,
        "task_id": _clip(t.task_id, MAX_TEXT),
        "family": task.family if task else "?",
        "question": _clip(task.question, MAX_TEXT) if task else "",
        "gold": _clip(" | ".join(golds), MAX_TEXT),
        "answer": _clip(t.answer, MAX_TEXT),
        "f1": t.scores.get("f1", 0.0),
        "label": t.error_type.value if t.error_type else "-",
        "cause": _clip(t.error_cause, MAX_TEXT),
        "reason": reason,
        # each key point of a long-form answer: its verdict and the words that decided it
        "key_points": [{k: _clip(v, MAX_TEXT) for k, v in row.items()} for row in points],
        # the judge's verdict beside the rules' (raleval score --judge), when there is one
        "judge": (
            f"{verdicts['judge']} (rules: {verdicts['rule']}; judge {judged.spec})"
            if judged and verdicts and verdicts.get("judge")
            else None
        ),
        "termination": t.termination.value,
        "wall": t.wall_time_s,
        "model": t.model_time_s,
        "tool": t.tool_time_s,
        "calls": t.n_llm_calls,
        "call_scores": {k: t.scores[k] for k in CALL_SCORES if k in t.scores},
        "tokens": t.prompt_tokens + t.completion_tokens,
        "steps": [
            {
                "tool": s.tool,
                "thought": _clip(s.thought, MAX_TEXT) or None,
                "args": _clip(json.dumps(s.arguments, ensure_ascii=False), MAX_TEXT)
                if s.arguments
                else None,
                "obs": (s.observation or "")[:MAX_OBSERVATION]
                if s.observation is not None
                else None,
                "raw": _clip(s.raw_action, MAX_TEXT) if s.tool is None else None,
                "kind": s.kind.value,
                "cause": _clip(s.cause, MAX_TEXT) or None,
                "latency": s.latency_s,
            }
            for s in t.steps
        ],
        # every model call: the first prompt is whole (system prompt, demonstrations and the
        # question); later ones hold what was added since the previous call
        "llm": [
            {
                "prompt": _clip(c.prompt, MAX_PROMPT if k == 0 else MAX_OBSERVATION),
                "delta": c.prompt_is_delta,
                "output": _clip(c.output, MAX_OBSERVATION),
                "tool_calls": [f"{tc.tool}({json.dumps(tc.arguments)})" for tc in c.tool_calls],
                "error": c.error,
                "latency": c.latency_s,
                "tokens": [c.prompt_tokens, c.completion_tokens, c.cached_tokens],
            }
            for k, c in enumerate(t.llm_calls)
        ],
        "tree": _tree(t.extra.get("tree")),
    }


def diagnosis_section(runs: list[Run]) -> str:
    """The causes of failure found by ``raleval diagnose`` (docs/diagnosis.md): per system,
    family and level, and the R-Eval label by cause; empty when no run was diagnosed."""
    from raleval.analysis.diagnosis import cause_tables, read_diagnoses, replay_calls

    diagnoses = [d for run in runs for d in read_diagnoses(run.path)]
    if not diagnoses:
        return ""
    parts = []
    for title, header, rows in cause_tables(diagnoses):
        parts.append(f"<h3>{html.escape(title)}</h3>" + _table(header, rows))
    calls, hits = replay_calls(diagnoses)
    parts.append(
        f'<p class="muted">{len(diagnoses)} episodes diagnosed; the replays made {calls} '
        f"model calls, {hits} of them answered by the response cache.</p>"
    )
    return section("Why episodes failed (counterfactual replay)", "".join(parts))


def _run_prompts(run: Run) -> dict[str, Any]:
    """The run's stored prompts (template, demonstration ids and texts), empty without a header."""
    return (run.header.prompts if run.header else None) or {}


def prompts_section(runs: list[Run]) -> str:
    """Each run's exact prompt: its template and the demonstrations every episode of a family
    was shown (from the run header), so a comparison of workflows shows what each one saw."""
    parts = []
    for run in runs:
        prompts = _run_prompts(run)
        if not prompts:
            continue
        demos = prompts.get("demonstrations") or {}
        ids = "; ".join(f"{family}: {', '.join(group)}" for family, group in demos.items())
        body = [
            f"<p>shots: {_text(str(prompts.get('shots')))}; demonstration tasks: "
            f"{_text(ids) or 'none'}</p>",
            f"<details><summary>template</summary><pre>"
            f"{_text(prompts.get('template') or '(none)')}</pre></details>",
        ]
        for family, texts in (prompts.get("rendered") or {}).items():
            for text in texts:
                body.append(
                    f"<details><summary>demonstration ({_text(family)})</summary>"
                    f"<pre>{_text(text)}</pre></details>"
                )
        parts.append(f"<h3>{_text(cell_name(run))}</h3>" + "".join(body))
    return section("Prompts and demonstrations", "".join(parts), open_=False) if parts else ""


MAX_PROMPT = 30_000


def _clip(text: Any, limit: int) -> str:
    text = "" if text is None else str(text)
    return text if len(text) <= limit else text[:limit] + f"\n... [{len(text) - limit} more]"


def _int(value: Any) -> int | None:
    """``value`` if it is a whole number (not a bool), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _tree(nodes: Any) -> list[dict[str, Any]] | None:
    """DFSDT's search tree (``extra["tree"]``) as the viewer draws it: one entry per node."""
    if not isinstance(nodes, list) or not nodes:
        return None
    out = []
    for n in nodes:
        if not isinstance(n, dict):
            continue
        out.append(
            {
                # the viewer writes these three into markup: numbers or nothing
                "id": _int(n.get("id")),
                "parent": _int(n.get("parent")),
                "depth": _int(n.get("depth")) or 0,
                "status": _clip(n.get("status"), 200) or None,
                "tool": _clip(n.get("tool"), 200) or None,
                "args": json.dumps(n.get("arguments"), ensure_ascii=False)
                if n.get("arguments")
                else None,
                "thought": _clip(n.get("thought"), 500) or None,
                "obs": _clip(n.get("observation"), 500) or None,
            }
        )
    return out


def _formats(counts: FormatFailures) -> str:
    """A cell's format failures: the rate, then each kind's count of its model calls."""
    if not counts.calls:
        return "-"
    return (
        f"{counts.text()}: {counts.cut} cut at max_tokens, {counts.unparseable} unparseable, "
        f"{counts.repeated} repeated, of {counts.calls}"
    )


def _usd(interval: Any) -> str:
    """Dollars per query with their interval, to the millionth; '-' when unknown."""
    if interval is None:
        return "-"
    return f"{interval.estimate:.6f} [{interval.low:.6f}, {interval.high:.6f}]"


def build_report(runs: list[Run], threshold: float = DEFAULT_THRESHOLD) -> str:
    """The report's HTML text."""
    table = per_task_table(runs)
    header, body = table.rows(ci=True)  # mean ±half-width of its clustered 95% interval
    reval_html = _table(header, body)

    intervals = per_task_intervals(runs)
    ci_rows = [
        [system, family, str(ci)]
        for system, fams in intervals.items()
        for family, ci in fams.items()
    ]
    reval_html = section("Per-task F1 (x100), averages and ranks", reval_html) + section(
        "Per-task F1 intervals",
        f'<p class="muted">[low, high]: the {SCORE_INTERVAL} of F1 (docs/statistics.md).</p>'
        + _table(["system", "task family", "F1 [95% interval]"], ci_rows),
        open_=False,
    )  # fmt: skip

    summaries = [summarize_system(r) for r in runs]
    formats = [format_failures(r.scored, r.header) for r in runs]
    _, front, _, cost_front = time_and_cost(summaries)
    cells = [(r.environment, r.task_set) for r in runs]
    sys_rows = [
        [
            s.system,
            *cell,
            s.n,
            str(s.f1),
            str(s.em),
            str(s.wall_s),
            f"{s.model_s:.3f}",
            f"{s.tool_s:.4f}",
            f"{s.tokens:.0f}",
            f"{s.calls:.1f}",
            f"{s.steps:.1f}",
            "yes" if s.system in front else "",
            _usd(s.cost_usd),
            "-" if s.compute_s is None else f"{s.compute_s:.3f}",
            "yes" if s.system in cost_front else "",
            _formats(f),
        ]
        for s, cell, f in zip(summaries, cells, formats, strict=True)
    ]
    systems_html = _table(
        [
            "system",
            "environment",
            "task set",
            "episodes",
            "F1",
            "exact match",
            "s/query (wall)",
            "model s",
            "tool s",
            "tokens/query",
            "LLM calls/query",
            "steps/query",
            "Pareto (time vs F1)",
            "USD/query [95% interval]",
            "compute s/query",
            "Pareto (cost vs F1)",
            "format failures (model calls)",
        ],
        sys_rows,
    )
    err_rows = [
        [
            s.system,
            *cell,
            *(s.labels.get(lb, 0) for lb in LABELS),
            s.copied,
            ", ".join(f"{c} ({n})" for c, n in s.causes.most_common(4)),
        ]
        for s, cell in zip(summaries, cells, strict=True)
    ]
    errors_html = _table(
        ["system", "environment", "task set", *(f"label {lb}" for lb in LABELS),
         "copied demonstration", "most frequent causes"],
        err_rows,
    )  # fmt: skip

    crag_parts = []
    for run in runs:
        slices = crag_slices(run)
        rows = [
            [
                f"{name}={value}",
                v["n"],
                f"{v['accuracy']:.3f}",
                f"{v['hallucination']:.3f}",
                f"{v['missing']:.3f}",
                f"{v['score']:.3f}",
            ]
            for name, values in slices.items()
            for value, v in values.items()
            if name != "domain" or len(values) > 1
        ]
        if rows:
            crag_parts.append(
                f"<h3>{_text(cell_name(run))}</h3>"
                + _table(["slice", "n", "accuracy", "hallucination", "missing", "score"], rows)
            )
    crag_html = (
        section("CRAG-style slices (accurate / missing / hallucinated)", "".join(crag_parts))
        if crag_parts
        else ""
    )

    bed_parts = []
    for run in runs:
        beds = robustness_rates(run)
        rows = [
            [label, int(v["n"]), ", ".join(f"{k} {x:.3f}" for k, x in v.items() if k != "n")]
            for label, v in beds.items()
        ]
        # the same system on the set without the testbed (a run given, or one beside it)
        untouched = (
            untouched_rates(run, [r for r in runs if r is not run] or None) if rows else None
        )
        if untouched:
            shown = ", ".join(f"{k} {x:.3f}" for k, x in untouched.items() if k != "n")
            rows.append(["untouched set", int(untouched["n"]), shown])
        if rows:
            bed_parts.append(
                f"<h3>{_text(cell_name(run))}</h3>" + _table(["testbed", "n", "rates"], rows)
            )
    crag_html += section("Robustness testbeds", "".join(bed_parts)) if bed_parts else ""
    progress = progress_rows(runs)
    if any(row[-1] != "-" for row in progress):
        crag_html += section(
            "Progress rate (AgentBoard: share of gold subgoals reached)",
            _table(["system / set", "family", "level", "n", "F1", "progress"], progress),
        )

    long_form = long_form_rows(runs)
    if long_form:
        crag_html += section("Long-form answers (RAGEval key points; CRUD-RAG overlap)", _table(
            [
                "system",
                "family",
                "n",
                "correct",
                "completeness",
                "hallucination",
                "irrelevance",
                "F1",
                "ROUGE-L",
                "BLEU",
            ],
            long_form,
        ))  # fmt: skip
    crag_html += diagnosis_section(runs)
    crag_html += judge_section(runs)
    crag_html += prompts_section(runs)

    if plots.available():
        figures = [(kind, f) for kind, _, f in report_figures(runs, summaries)]
    else:
        figures = [
            ("none", '<p class="muted">Figures need matplotlib: pip install "raleval[plots]".</p>')
        ]

    judged = {id(run): load_judged(run.path) for run in runs}
    n_all = sum(len(r.results) for r in runs)
    embedded = n_all <= MAX_EMBEDDED_EPISODES
    episodes = [
        episode_view(i, run, t, threshold, judged[id(run)])
        for i, (run, t) in enumerate((r, t) for r in runs for t in r.results)
        if embedded
    ]
    paths = [str(r.path) for r in runs]
    trajectories_note = (
        ""
        if embedded
        else '<p class="muted">'
        + _text(
            f"{n_all} episodes: more than this page embeds ({MAX_EMBEDDED_EPISODES}). Read "
            f"them, filtered, paired and side by side, with: raleval view {' '.join(paths)}"
        )
        + "</p>"
    )
    # each run's system prompt and demonstrations once, not once per episode: the viewer
    # shows the ones of the opened episode's run and family
    prompts = {}
    for run in runs:
        stored = _run_prompts(run)
        prompts[run.system] = {
            "template": stored.get("template") or "",
            "rendered": stored.get("rendered") or {},
            "ids": stored.get("demonstrations") or {},
        }
    data = script_json({"episodes": episodes, "prompts": prompts})
    template = report_asset("template.html")
    n_eps = n_all
    common = os.path.commonpath(paths) if paths else ""
    fields = {
        "title": "raleval report",
        "subtitle": _text(
            f"{len(runs)} run(s) under {common}, {n_eps} episodes; match threshold F1 >= "
            f"{threshold}; generated {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC"
        )
        + "<details><summary>run directories</summary><ul>"
        + "".join(f"<li>{_text(p)}</li>" for p in paths)
        + "</ul></details>",
        "reval_table": reval_html,
        "systems_table": (
            f'<p class="muted">F1 and exact match [low, high]: the {SCORE_INTERVAL}; seconds, '
            f"tokens and USD: the {MEAN_INTERVAL} (docs/statistics.md).</p>" + systems_html
        ),
        "errors_table": errors_html,
        "crag_section": crag_html,
        "plots": "".join(f'<div data-figure="{kind}">{f}</div>' for kind, f in figures),
        "data": data,
        "episode_js": report_asset("episode.js"),
        "trajectories_note": trajectories_note,
    }
    # Plain markers, not string.Template: the page's JavaScript is full of ${...}. One pass
    # over the template, so a marker inside a field's text (a run path, a question) stays text.
    return _FIELD.sub(lambda m: fields[m.group(1)], template)


Points = dict[str, tuple[float, float, float, float]]


def time_and_cost(summaries: list[Any]) -> tuple[Points, list[str], Points, list[str]]:
    """Seconds per query versus F1 (system -> (seconds, low, high, F1)) and its Pareto front;
    the same in US dollars, for the systems whose every episode has a price (0 for local
    models)."""
    # seconds and dollars are never negative: a t interval over few clusters can pass 0 (the
    # study's 3-episode DFSDT cell reached -100 s and the axis grew negative ticks), clipped
    points = {
        s.system: (s.wall_s.estimate, max(0.0, s.wall_s.low), s.wall_s.high, s.f1.estimate)
        for s in summaries
        if s.wall_s and s.n
    }
    front = pareto_front({k: (v[0], v[3]) for k, v in points.items()})
    cost_points = {
        s.system: (s.cost_usd.estimate, max(0.0, s.cost_usd.low), s.cost_usd.high, s.f1.estimate)
        for s in summaries
        if s.cost_usd is not None and s.n
    }
    cost_front = pareto_front({k: (v[0], v[3]) for k, v in cost_points.items()})
    return points, front, cost_points, cost_front


def token_points(summaries: list[Any]) -> tuple[Points, list[str]]:
    """Tokens per episode versus F1 (system -> (tokens, low, high, F1)) and its Pareto front,
    for the systems whose episodes counted tokens."""
    points = {
        s.system: (s.tokens_ci.estimate, max(0.0, s.tokens_ci.low), s.tokens_ci.high, s.f1.estimate)
        for s in summaries
        if s.tokens_ci is not None and s.n and s.tokens > 0
    }
    return points, pareto_front({k: (v[0], v[3]) for k, v in points.items()})


def report_figures(
    runs: list[Run], summaries: list[Any] | None = None, only: Collection[str] = ()
) -> list[tuple[str, str, Any]]:
    """The report's figures as (kind, name, figure): a radar per workflow (F1 by domain and
    level, one polygon per model), F1 and progress bars by domain x level, the error-type mix
    per system, tokens per episode, seconds (and dollars) per query versus F1 with the Pareto
    front, robustness.
    Each figure is SVG text, or PNG bytes inside ``plots.rendered_as("png")``; ``only`` those
    names when given (the others are not drawn)."""

    def wanted(name: str) -> bool:
        return not only or name in only

    summaries = summaries if summaries is not None else [summarize_system(r) for r in runs]
    points, front, cost_points, cost_front = time_and_cost(summaries)
    figures: list[tuple[str, str, Any]] = []
    by_level = domain_level_f1(runs)
    n_level = domain_level_counts(runs)
    by_workflow: dict[str, dict[str, dict[str, float]]] = defaultdict(dict)
    n_workflow: dict[str, dict[str, dict[str, int]]] = defaultdict(dict)
    for system, values in by_level.items():
        workflow, _, model = system.partition("/")
        by_workflow[workflow][model] = values
        n_workflow[workflow][model] = n_level.get(system, {})
    for workflow, series in sorted(by_workflow.items()):
        # a radar needs three axes; with fewer, the bars below show the same numbers
        if wanted(f"radar-{workflow}") and len({a for v in series.values() for a in v}) >= 3:
            title = f"{workflow}: F1 by domain and level"
            figure = plots.radar(title, series, n_workflow[workflow])
            figures.append(("radar", f"radar-{workflow}", figure))
    if by_level and wanted("bars"):  # no empty panels
        figure = plots.level_bars("F1 by domain x level", by_level, counts=n_level)
        figures.append(("bars", "bars", figure))
    by_progress = domain_level_f1(runs, "progress") if wanted("progress") else {}
    if by_progress:
        title = "Progress rate by domain x level"
        n_progress = domain_level_counts(runs, "progress")
        figure = plots.level_bars(title, by_progress, "progress rate", n_progress)
        figures.append(("progress", "progress", figure))
    labels = {s.system: dict(s.labels) for s in summaries if sum(s.labels.values())}
    if labels and wanted("errors"):
        figures.append(("errors", "errors", plots.error_bars(labels)))
    # F1's interval and n on every point of the time and cost figures
    extras = {s.system: (s.f1.low, s.f1.high, s.n) for s in summaries if s.n}
    if wanted("tokens"):
        by_tokens, tokens_front = token_points(summaries)
        if by_tokens:
            figure = plots.tokens(by_tokens, tokens_front, extras)
            figures.append(("tokens", "tokens", figure))
    if points and wanted("deployment"):
        figures.append(("deployment", "deployment", plots.deployment(points, front, extras)))
    # beside time versus F1, when some system's tokens cost money (all at 0 says nothing)
    if any(v[0] > 0 for v in cost_points.values()) and wanted("cost"):
        figures.append(("cost", "cost", plots.cost(cost_points, cost_front, extras)))
    noise = robustness(runs) if wanted("robustness") else None
    if noise:
        figures.append(("robustness", "robustness", plots.robustness(noise)))
    return figures


def save_figures(runs: list[Run], folder: Path, only: Sequence[str] = ()) -> list[Path]:
    """Write the report's figures as PNG files into ``folder`` (``<name>.png``, names from
    :func:`report_figures`; ``only`` those names when given), for a README or a paper;
    returns the paths written."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    with plots.rendered_as("png"):
        for _, name, figure in report_figures(runs, only=only):
            path = folder / f"{_file_safe(name)}.png"
            tmp = path.with_name(f".{path.name}.tmp")
            tmp.write_bytes(figure)
            tmp.replace(path)
            written.append(path)
    return written


def _file_safe(name: str) -> str:
    """A figure name as a file name: workflow names are registered names, but say so."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def save_report(runs: list[Run], path: Path, threshold: float = DEFAULT_THRESHOLD) -> Path:
    """Write the report for loaded runs; labels follow ``threshold`` (recomputed in place)."""
    for run in runs:
        run.rescore(threshold)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(build_report(runs, threshold), encoding="utf-8")
    tmp.replace(path)
    return path


def default_report_path(run_dirs: list[Path], folder: Path | None = None) -> Path:
    """``report-<run>[-and-N-more].html`` in ``folder`` (default: beside the first run, in the
    folder that holds it), numbered so that an existing file is never overwritten."""
    folder = folder or Path(run_dirs[0]).resolve().parent
    stem = "report-" + Path(run_dirs[0]).resolve().name
    if len(run_dirs) > 1:
        stem += f"-and-{len(run_dirs) - 1}-more"
    path, n = folder / f"{stem}.html", 1
    while path.exists():
        n += 1
        path = folder / f"{stem}-{n}.html"
    return path


def write_report(
    run_dirs: list[Path],
    out: Path | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    png_dir: Path | None = None,
    replace: bool = False,
) -> Path:
    """Write the report for ``run_dirs`` to ``out`` (default: a new file beside the first run,
    :func:`default_report_path`). Never into a run directory: a run's own ``report.html`` is
    written by ``raleval run`` and left alone here. An existing ``out`` is replaced only with
    ``replace``. With ``png_dir``, its figures also go there as PNG files
    (:func:`save_figures`)."""
    from raleval.analysis.runs import find_runs

    run_dirs = find_runs(run_dirs)  # a log directory stands for every run below it
    target = (out or default_report_path(run_dirs)).resolve()
    if (target.parent / "results.jsonl").exists() or (target.parent / "header.json").exists():
        raise ValueError(
            f"--out {out} is inside the run {target.parent}; reports of runs go outside any run"
        )
    if out is not None and target.exists() and not replace:
        raise FileExistsError(f"{out} exists; pass --force to replace it")
    runs = [load_run(p) for p in run_dirs]
    path = save_report(runs, target, threshold)
    if png_dir is not None:
        if not plots.available():
            raise ValueError('PNG figures need matplotlib: pip install "raleval[plots]"')
        save_figures(runs, png_dir)
    return path
