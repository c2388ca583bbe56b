"""Prose from data (issue 48): every number in docs/study.md's account of the generated arm is
found in what the stored cells regenerate, at the precision the prose prints it; the comparison
with R-Eval quotes the paper's table model by model; the design's plan block is what `raleval
study plan` prints now."""

from __future__ import annotations

import csv
import re
from decimal import ROUND_HALF_UP, Decimal
from itertools import combinations
from pathlib import Path

from raleval.analysis.compare import run_units
from raleval.analysis.stats import paired_difference
from raleval.analysis.study import load_study, study_tables

from .conftest import SHARED, doc_block, needs_shared

ROOT = Path(__file__).resolve().parents[1]
STUDY = ROOT / "studies" / "local-models"
DOC = ROOT / "docs" / "study.md"
REVAL = SHARED / "reference" / "reval_table3_table5.csv"
NUMBER = re.compile(r"(?<![\w.])[+-]?\d+(?:,\d{3})*(?:\.\d+)?(?![\w.])")
# names and labels that carry digits but are no measurement
NAMES = re.compile(
    r"Qwen2\.5[-\w.]*|SmolLM2[-\w]*|\b\d+(?:\.\d+)?[BM]\b|gpt-[\d.]+[-\w]*|Tables? \d+(?: and \d+)?"
    r"|RQ\d+|issue \d+|\b\d-\d\b(?=[ /])|two-core|2-core"
)


def _section(text: str, title: str) -> str:
    return text.split(f"\n## {title}", 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]


def _matched_numbers() -> str:
    """What the prose quotes beyond the tables: ReAct minus direct of every model on the 40
    tasks the 1.5B model ran (template clusters, unadjusted)."""
    arm = load_study(STUDY)["generated"]
    ids = sorted(run_units(arm[("react", "local/qwen2.5-1.5b")]).samples)
    out = []
    for model in ("local/smollm2-135m", "local/qwen2.5-0.5b", "local/qwen2.5-1.5b"):
        react, direct = run_units(arm[("react", model)]), run_units(arm[("direct", model)])
        res = paired_difference(
            [react.means[k] for k in ids], [direct.means[k] for k in ids],
            [react.clusters[k] for k in ids],
        )  # fmt: skip
        out.append(f"{res.diff.estimate:+.3f} [{res.diff.low:+.3f}, {res.diff.high:+.3f}]")
    return " ".join(out)


def _cause_sums(tables: str) -> str:
    """The counterfactual table summed over failed episodes (labels other than EM and AM) for
    every group of systems: the prose counts "the small models' failed episodes"."""
    block = tables.split("#### why episodes failed", 1)[1]
    rows = [r.strip("|").split(" | ") for r in block.splitlines() if r.startswith("| ")][1:]
    failed = [r for r in rows if r[2].strip() not in ("EM", "AM")]
    systems = sorted({r[1] for r in failed})
    out = []
    for size in range(1, len(systems) + 1):
        for group in combinations(systems, size):
            chosen = [r for r in failed if r[1] in group]
            out += [str(sum(int(r[c]) for r in chosen)) for c in range(3, len(rows[0]))]
            out.append(str(sum(int(r[c]) for r in chosen for c in range(4, 7))))  # fixed
    return " ".join(out)


def _suffix(text: str, end: int) -> str:
    """What follows a number: "%" for a percentage, "t" for "... thousand", else ""."""
    rest = text[end : end + 40]
    if rest.startswith("%"):
        return "%"
    return "t" if re.match(r"(?:-\d+)? thousand", rest) else ""


def _pool(text: str) -> set[float]:
    return {float(n.replace(",", "")) for n in NUMBER.findall(text)}


def _found(token: str, suffix: str, pool: set[float]) -> bool:
    """``token`` is some pooled value at the token's precision, rounded half up as people do
    (128.5 s is "129 s"); a percentage may be a share x 100, "4 thousand" a count / 1000."""
    places = len(token.split(".", 1)[1]) if "." in token else 0
    value = Decimal(token.replace(",", "").lstrip("+-"))
    scale = Decimal(100) if suffix == "%" else Decimal("0.001") if suffix == "t" else None
    quantum = Decimal(1).scaleb(-places)
    for v in pool:
        base = abs(Decimal(repr(v)))
        for candidate in (base, base * scale) if scale else (base,):
            if candidate.quantize(quantum, rounding=ROUND_HALF_UP) == value:
                return True
    return False


def _crag_protocol_scores() -> str:
    """CRAG's own protocol (exact match, then the rules) on every CRAG real-data cell, as
    `raleval score CELL --protocol crag` computes it: the prose quotes the range of its
    scores."""
    from raleval.app.cli.grading import crag_protocol_verdicts
    from raleval.grading.crag_protocol import protocol_summary

    out = []
    for run in load_study(STUDY)["crag-dev"].values():
        verdicts = [v for v in crag_protocol_verdicts(run, None) if v is not None]
        out.append(f"{protocol_summary(verdicts)['score']:+.3f}")
    return " ".join(out)


def _missing(prose: str, pool: set[float]) -> list[str]:
    """The numbers of ``prose`` (names taken out) that no pooled value gives."""
    prose = NAMES.sub(" ", prose)
    return [
        m.group(0)
        for m in NUMBER.finditer(prose)
        if not _found(m.group(0), _suffix(prose, m.end()), pool)
    ]


QUOTED = re.compile(r'"[^"]*"')  # a gold or an answer quoted as written: text, not a measure


def test_every_number_of_the_generated_arms_account_is_in_the_regenerated_data():
    tables = study_tables(STUDY)
    pool = _pool(tables) | _pool(_matched_numbers()) | _pool(_cause_sums(tables))
    pool |= _pool(_crag_protocol_scores())
    text = DOC.read_text(encoding="utf-8")
    real = text.split("\n### Real data with the embedded models", 1)[1].split("\n## ", 1)[0]
    missing = _missing(_section(text, "What the study shows") + QUOTED.sub(" ", real), pool)
    assert not missing, f"numbers in docs/study.md's prose not in the stored cells: {missing}"


def test_every_number_of_the_re_run_s_account_is_in_its_regenerated_data():
    """The re-run's prose quotes its tables (under the design, with the timing pass's), its
    claims, and the first study's tables where it compares the two; nothing else."""
    from raleval.analysis.claims import study_claims
    from raleval.analysis.design import load_design

    design = load_design(ROOT / "studies" / "local-models-2.design.yaml")
    rerun = ROOT / "studies" / "local-models-2"
    timing = ROOT / "studies" / "local-models-2-timing"
    pool = (
        _pool(study_tables(rerun, design.declared, design.cluster, timing=timing))
        | _pool(study_claims(rerun, design, "design"))
        | _pool(study_tables(STUDY))
    )
    text = DOC.read_text(encoding="utf-8")
    prose = _section(text, "What the re-run shows")
    assert "ReAct" in prose and len(NUMBER.findall(NAMES.sub(" ", prose))) > 30
    missing = _missing(prose, pool)
    assert not missing, f"numbers in the re-run's prose not in its stored cells: {missing}"


@needs_shared(REVAL)
def test_the_r_eval_block_quotes_the_paper_model_by_model():
    with open(REVAL, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    by = {(r["workflow"], r["llm"]): float(r["avg_all"]) for r in rows}
    models = [m for (w, m) in by if w == "ReAct" and ("PAL", m) in by]
    text = DOC.read_text(encoding="utf-8")
    block = doc_block(text, "reval-react-pal")
    quoted = [r.strip("|").split(" | ") for r in block.splitlines() if r.startswith("| ")][1:]
    assert sorted(q[0].strip() for q in quoted) == sorted(models)
    for model, react, pal, higher in quoted:
        key = model.strip()
        assert (float(react), float(pal)) == (by[("ReAct", key)], by[("PAL", key)])
        assert higher.strip() == ("ReAct" if by[("ReAct", key)] > by[("PAL", key)] else "PAL")
    pal_wins = sum(by[("PAL", m)] > by[("ReAct", m)] for m in models)
    assert f"of the {len(models)} that ran both ReAct and PAL, PAL has the higher" in " ".join(
        text.split()
    )
    assert f"avg_all for {pal_wins}" in " ".join(text.split())


def test_the_design_plan_block_is_what_study_plan_prints():
    from raleval.analysis.design import load_design, plan_design, render_plan

    design = load_design(ROOT / "studies" / "local-models-2.design.yaml")
    plan = render_plan(plan_design(design, load_study(STUDY)["generated"]), design)
    text = DOC.read_text(encoding="utf-8")
    assert doc_block(text, "study-plan") == plan


def _cell_times() -> str:
    """Per stored cell of the re-run and of the first study's generated arm (the plan's pilot),
    as the re-run's account of its machine time quotes them: episodes, mean seconds per
    episode, mean generated tokens per episode, seconds per generated token, and episodes that
    ended at their first model call."""
    from raleval.analysis.runs import find_runs, load_run
    from raleval.analysis.study import GENERATED, arm_of

    out = []
    for path in find_runs([STUDY, ROOT / "studies" / "local-models-2"]):
        run = load_run(path)
        if path.parent.name == STUDY.name and arm_of(run) != GENERATED:
            continue  # the first study's real-data cells were no part of the pilot
        eps = run.results
        seconds, tokens = sum(t.wall_time_s for t in eps), sum(t.completion_tokens for t in eps)
        out.append(f"{len(eps)} {seconds / len(eps):.1f} {tokens / len(eps):.0f}")
        out.append(f"{seconds / tokens:.3f} {sum(t.n_llm_calls == 1 for t in eps)}")
    return " ".join(out)


def _chunk_hours(table: str) -> dict[int, str]:
    """The progress table's chunk -> the machine time of chunks 1..it, "H h M min"."""
    total, out = 0, {}
    for row in (r.strip("|").split(" | ") for r in table.splitlines() if r.startswith("| ")):
        if not row[0].strip().isdigit():
            continue
        times = re.findall(r"(\d\d):(\d\d)", row[1])
        (h0, m0), (h1, m1) = times[0], times[-1]
        total += ((int(h1) * 60 + int(m1)) - (int(h0) * 60 + int(m0))) % (24 * 60)
        out[int(row[0])] = f"{total // 60} h {total % 60} min"
    return out


def test_the_re_run_s_time_account_quotes_its_cells_and_its_chunk_table():
    """The account of where the time goes explains the plan's overrun with measurements:
    each cell's seconds, tokens and seconds per token (both studies' stored cells), the plan
    block's pilot figures, and the machine time the chunk table adds up to. A number after
    "about" is a forecast."""
    text = DOC.read_text(encoding="utf-8")
    progress = _section(text, "The re-run: progress")
    account = progress.split("**Where the time goes.**", 1)[1].split("\n\n", 1)[0]
    hours = _chunk_hours(progress)
    used = re.compile(r"After chunk (\d+) the re-run has used (\d+ h \d+\s+min)")
    for chunk, total in used.findall(account):
        assert " ".join(total.split()) == hours[int(chunk)], (chunk, total, hours)
    account = used.sub(" ", account)
    account = re.sub(r"about \d+(?:-\d+)?", " ", account)
    missing = _missing(account, _pool(_cell_times()) | _pool(doc_block(text, "study-plan")))
    assert not missing, f"numbers in the re-run's time account not in its cells: {missing}"


def test_the_third_study_s_plan_block_is_what_study_plan_prints():
    """docs/study.md's plan of the third study (issue 62) is `raleval study plan` on its design
    with the second study as the pilot, and it fits the issue's ~10 hours."""
    from raleval.analysis.design import load_design, plan_design, render_plan

    design = load_design(ROOT / "studies" / "local-models-3.design.yaml")
    plan = plan_design(design, load_study(ROOT / "studies" / "local-models-2")["generated"])
    text = DOC.read_text(encoding="utf-8")
    assert doc_block(text, "study-plan-3") == render_plan(plan, design)
    assert plan.machine_hours <= 10.5


@needs_shared(REVAL)
def test_the_r_eval_tools_block_quotes_the_paper():
    """R-Eval's function calling and DFSDT rows (issue 62's fair comparison), every number
    against the file, every model that ran either."""
    with open(REVAL, newline="", encoding="utf-8") as fh:
        rows = {(r["workflow"], r["llm"]): r for r in csv.DictReader(fh)}
    block = doc_block(DOC.read_text(encoding="utf-8"), "reval-tools")
    quoted = [r.strip("|").split(" | ") for r in block.splitlines() if r.startswith("| ")][1:]
    assert sorted((q[1].strip(), q[0].strip()) for q in quoted) == sorted(
        k for k in rows if k[0] in ("FC", "DFSDT")
    )
    for model, workflow, wiki, aminer, pooled, react in quoted:
        row = rows[(workflow.strip(), model.strip())]
        assert (float(wiki), float(aminer), float(pooled)) == (
            float(row["avg_wiki"]),
            float(row["avg_aminer"]),
            float(row["avg_all"]),
        )
        assert float(react) == float(rows[("ReAct", model.strip())]["avg_aminer"])
    gpt4 = [q for q in quoted if q[0].strip() == "gpt-4-1106"]
    assert all(float(q[3]) > 10 for q in gpt4) and len(gpt4) == 2


def test_every_number_of_the_third_study_s_account_is_in_its_regenerated_data():
    """The third study's prose quotes its tables (its timing pass's too) and claims (sentences
    and table), the second study's claims where it compares them, and R-Eval's Table 3 and 5;
    nothing else. A number that the next chunk's cells change fails here until the prose is
    updated."""
    from raleval.analysis.claims import study_claims, study_claims_table
    from raleval.analysis.design import load_design

    design = load_design(ROOT / "studies" / "local-models-3.design.yaml")
    third = ROOT / "studies" / "local-models-3"
    timing = ROOT / "studies" / "local-models-3-timing"  # the prose on where the time goes
    pool = (
        _pool(study_tables(third, design.declared, design.cluster, timing, weights="environment"))
        | _pool(study_claims(third, design, "design"))
        | _pool(study_claims_table(third, design, "design"))
    )
    # where it sets the third against the second study: the second's claims
    second = ROOT / "studies" / "local-models-2"
    pool |= _pool(
        study_claims(second, load_design(ROOT / "studies" / "local-models-2.design.yaml"), "d")
    )
    if REVAL.exists():
        pool |= _pool(REVAL.read_text(encoding="utf-8"))
    text = DOC.read_text(encoding="utf-8")
    prose = text.split("\n### What the third study shows\n", 1)[1].split("\n### ", 1)[0]
    assert "ReAct" in prose and len(NUMBER.findall(NAMES.sub(" ", prose))) > 30
    if not REVAL.exists():  # CI without ../shared: R-Eval's numbers cannot be checked
        prose = prose.split("**R-Eval's own findings.**", 1)[0]
    missing = _missing(prose, pool)
    assert not missing, f"numbers in the third study's prose not in its stored cells: {missing}"
