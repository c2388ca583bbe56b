"""A study's claims come from its declared comparisons only (issue 48): `raleval study claims`
writes a sentence per declared comparison from the same numbers as the comparison table, never
an exploratory pair, and the README's claims are that block, regenerated from the stored cells."""

from __future__ import annotations

import re
from pathlib import Path

from typer.testing import CliRunner

from raleval.analysis.claims import study_claims, study_claims_table
from raleval.analysis.design import load_design
from raleval.app.cli import app

ROOT = Path(__file__).resolve().parents[1]
FIRST = ROOT / "studies" / "local-models"
RERUN = "studies/local-models-2"
RERUN_DESIGN = "studies/local-models-2.design.yaml"
NEWEST = "studies/local-models-3"
NEWEST_DESIGN = "studies/local-models-3.design.yaml"
README = ROOT / "README.md"
START, END = "<!-- study-claims:start -->", "<!-- study-claims:end -->"
runner = CliRunner()

DESIGN = """\
sample: {seed: 7, per_family: 5}
cluster: family
comparisons:
  - [react/local/qwen2.5-0.5b, direct/local/qwen2.5-0.5b]
  - [react/local/smollm2-135m, dfsdt/local/smollm2-135m]
  - [pal/local/smollm2-135m, react/local/smollm2-135m]
  - {a: react/local/qwen2.5-0.5b, b: direct/local/qwen2.5-0.5b, level: KU}
  - [react/local/qwen2.5-0.5b, react/local/qwen2.5-7b]
"""
ROW = re.compile(r"^\| (.+?) \| (.+?) \| (\d+) \| (\d+) \| ([+-][\d.]+) \| \[(.+?), (.+?)\] \| ")


def _tables(design: Path) -> dict[tuple[str, str], list[str]]:
    result = runner.invoke(app, ["study", "tables", str(FIRST), "--design", str(design)])
    assert result.exit_code == 0, result.output
    block = result.output.split("#### generated task sets: paired comparisons\n", 1)[1]
    rows = {}
    for line in block.split("####", 1)[0].splitlines():
        m = ROW.match(line)
        if m:
            # the verdict, before any note beside it (format failures that differ)
            verdict = line.rsplit(" | ", 1)[1].strip(" |").split(";")[0]
            rows[(m.group(1), m.group(2))] = [verdict, *m.groups()]
    return rows


def test_claims_are_the_declared_comparisons_with_the_table_s_numbers(tmp_path):
    design = tmp_path / "d.yaml"
    design.write_text(DESIGN, encoding="utf-8")
    rows = _tables(design)
    text = study_claims(FIRST, load_design(design), "d.yaml")
    claims = [line[2:] for line in text.splitlines() if line.startswith("- ")]
    assert len(claims) == 5  # four tested, the 7B not run
    assert claims[-1] == "Not yet run: ReAct on `local/qwen2.5-0.5b` against `local/qwen2.5-7b`."
    declared = [k for k, v in rows.items() if v[0] in ("differ", "inside")]
    assert len(declared) == 4
    for (a, b), claim in zip(declared, claims, strict=False):
        verdict, *_, tasks, clusters, diff, low, high = rows[(a, b)]
        assert f"({tasks} tasks, {clusters} clusters" in claim
        if verdict == "inside":
            assert claim.startswith("No difference detected between")
            assert f"F1 {diff} [{low}, {high}]" in claim
            continue
        # "differ": the system with the higher F1 comes first, the difference made positive
        value = float(diff)
        first = a if value > 0 else b
        workflow = first.split(" / ")[0]
        assert claim.split(" scores higher than ")[0].lower().startswith(workflow[:4].lower())
        lo, hi = sorted((float(low), float(high)) if value > 0 else (-float(high), -float(low)))
        assert f"F1 +{abs(value):.3f} [{lo:+.3f}, {hi:+.3f}]" in claim
    # an exploratory pair of the table is never claimed
    exploratory = [k for k, v in rows.items() if v[0] == "exploratory"]
    assert exploratory
    assert "PAL on `local/qwen2.5-0.5b`" not in text and "function calling" not in text
    # the level comparison says it is one level's tasks
    assert sum("KU tasks only" in c for c in claims) == 1


def test_a_system_still_running_says_how_far_its_cells_are(tmp_path):
    """A partial cell (stored with --partial), or a system whose other environments' cells have
    not run, makes its comparison run on fewer tasks; the claim says so instead of reading like
    the finished design."""
    import gzip
    import shutil

    study = tmp_path / "study"
    cells = [f"scholar__{w}__local_qwen2.5-0.5b__scholar" for w in ("react", "direct")]
    for name in cells:
        shutil.copytree(FIRST / name, study / name)
    direct = study / cells[1] / "results.jsonl.gz"

    lines = gzip.decompress(direct.read_bytes()).decode().splitlines(keepends=True)
    direct.write_bytes(gzip.compress("".join(lines[:9]).encode()))
    design = tmp_path / "d.yaml"
    design.write_text(DESIGN, encoding="utf-8")
    text = study_claims(study, load_design(design), "d.yaml")
    line = next(c for c in text.splitlines() if "`direct`" in c and "KU" not in c)
    assert "(9 tasks," in line
    assert "`direct` (no tools) on `local/qwen2.5-0.5b`: 9 of the arm's 15 tasks so far" in line
    # the README's table says it in the cell
    table = study_claims_table(study, load_design(design), "d.yaml")
    row = next(r for r in table.splitlines() if "`direct`" in r and "KU" not in r)
    assert row.endswith("; 9 of 15 tasks so far |"), row
    # a system whose other cells have not run yet: fewer tasks than the arm holds
    wiki = "wiki__react__local_qwen2.5-0.5b__wiki"
    shutil.copytree(FIRST / wiki, study / wiki)
    text = study_claims(study, load_design(design), "d.yaml")
    line = next(c for c in text.splitlines() if "`direct`" in c and "KU" not in c)
    assert "(9 tasks," in line
    assert "`direct` (no tools) on `local/qwen2.5-0.5b`: 9 of the arm's 60 tasks so far" in line


def test_the_readme_s_claims_are_the_newest_study_s_declared_comparisons_regenerated():
    """The README claims what the newest study's stored cells say, as `study claims --table`
    writes it, and nothing outside that block."""
    text = README.read_text(encoding="utf-8")
    block = text.split(START + "\n", 1)[1].split(END, 1)[0]
    fresh = study_claims_table(
        ROOT / NEWEST, load_design(ROOT / NEWEST_DESIGN), f"`{NEWEST_DESIGN}`"
    )
    assert block == fresh, (
        "the README's claims are not what the stored cells say: regenerate them with "
        f"`raleval study claims {NEWEST} --design {NEWEST_DESIGN} --table --into README.md`"
    )
    newest = max(
        (p for p in (ROOT / "studies").glob("local-models-*") if p.name.split("-")[-1].isdigit()),
        key=lambda p: int(p.name.split("-")[-1]),
    )
    assert newest.name == Path(NEWEST).name, "the README claims an older study than the newest"
    # the Studies section claims nothing outside the block: no F1, share or p of its own
    section = text.split("\n## Studies\n", 1)[1].split("\n## ", 1)[0]
    outside = re.sub(
        r"Qwen2\.5-(?:Coder-)?[\d.]+B|SmolLM2-135M|\b1\.5B", "MODEL", section.replace(block, "")
    )
    numbers = re.findall(r"\b\d+\.\d+|\d+(?:\.\d+)?\s?%", outside)
    assert not numbers, f"the README's Studies section claims numbers of its own: {numbers}"


def test_the_claims_command_rewrites_its_block_and_tables_take_a_block_name(tmp_path):
    design = tmp_path / "d.yaml"
    design.write_text(DESIGN, encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text(
        f"# t\n{START}\nold\n{END}\nmid\n<!-- two:start -->\nold\n<!-- two:end -->\n",
        encoding="utf-8",
    )
    args = ["study", "claims", str(FIRST), "--design", str(design), "--into", str(page)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    args = ["study", "tables", str(FIRST), "--into", str(page), "--block", "two"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    got = page.read_text(encoding="utf-8")
    assert "old" not in got and got.startswith(f"# t\n{START}\nThe 5 comparisons ")
    assert "\nmid\n<!-- two:start -->\n#### generated task sets\n" in got
    result = runner.invoke(app, [*args[:-1], "three"])
    assert result.exit_code != 0 and "needs one <!-- three:start -->" in result.output


def test_one_family_over_every_arm_with_the_sign_flip_p_where_clusters_are_few():
    """Issue 62 on the second study's cells: the claims end naming one family over both arms
    (12 + 8 = 20); every claim on fewer than 12 clusters quotes its exact sign-flip p, which a
    brute-force enumeration of the cluster signs recomputes from the episodes, and Holm's p is
    at least the larger raw p; a design weighing environments alike gets their mean."""
    import itertools

    from raleval.analysis.study import compare_study, load_study

    design = load_design(ROOT / RERUN_DESIGN)
    arms = load_study(ROOT / RERUN)
    text = study_claims(ROOT / RERUN, design, "d")
    assert (
        text.rstrip()
        .splitlines()[-1]
        .startswith(
            "One correction family: the 20 declared comparisons tested across 2 arm(s), Holm"
        )
    )
    family = compare_study(arms, design.declared, design.cluster)
    tested = [t for ts in family.values() for t in ts if not t.exploratory]
    assert len(tested) == 20 and {t.family for t in tested} == {20}
    claims = [line for line in text.splitlines() if line.startswith("- ")]
    few = [(arm, t) for arm, ts in family.items() for t in ts if t.diff.clusters < 12]
    assert len(few) == 6  # KS, KU, KA on each arm
    for arm, t in few:
        # the exact sign-flip p by brute force over the cluster sums of the stored cells
        sums: dict[str, float] = {}
        for d, cluster in level_differences(arms[arm], t).values():
            sums[cluster] = sums.get(cluster, 0.0) + d
        observed = abs(sum(sums.values()))
        hits = sum(
            abs(sum(s * v for s, v in zip(signs, sums.values(), strict=True))) >= observed - 1e-12
            for signs in itertools.product((1, -1), repeat=len(sums))
        )
        assert abs(t.p_flip - hits / 2 ** len(sums)) < 1e-12
        assert t.p >= min(1.0, max(t.p_t, t.p_flip))  # Holm only raises the verdict's p
        assert any(f"sign-flip p {t.p_flip:.4f}" in c and f"{t.level} tasks only" in c
                   for c in claims)  # fmt: skip
    assert all(" Without the " in c or "copied" not in c for c in claims)
    # the estimand that weighs each environment alike: the mean of the environment means
    weighted = compare_study(arms, design.declared, design.cluster, weights="environment")
    for t in (t for ts in weighted.values() for t in ts if not t.exploratory):
        means = [x for _, x in t.by_env]
        assert abs(t.diff.estimate - sum(means) / len(means)) < 1e-9


def level_differences(systems, t) -> dict[str, tuple[float, str]]:
    """task id -> (F1 of A - F1 of B, its family) on the tasks of ``t``'s level both ran, read
    from the episodes directly (one epoch)."""
    run_a, run_b = systems[t.a], systems[t.b]
    f1_a = {x.task_id: x.scores.get("f1", 0.0) for x in run_a.scored}
    f1_b = {x.task_id: x.scores.get("f1", 0.0) for x in run_b.scored}
    out = {}
    for k in sorted(set(f1_a) & set(f1_b)):
        task = run_a.tasks[k]
        if task.level.value == t.level:
            out[k] = (f1_a[k] - f1_b[k], task.family)
    return out


def test_the_claims_table_holds_the_sentences_numbers_and_bolds_only_what_differs(tmp_path):
    """`study claims --table` (the README's form) is the sentences' family in one table: each
    cell's difference and Holm p are the sentence's for that arm and comparison, a cell is bold
    exactly where the sentence says one scores higher, and the closing counts are recounted
    from the sentences (format cautions; verdicts that change without copied answers)."""
    design = tmp_path / "d.yaml"
    design.write_text(DESIGN, encoding="utf-8")
    for folder, declared, name in (
        (FIRST, load_design(design), "d.yaml"),
        (ROOT / RERUN, load_design(ROOT / RERUN_DESIGN), "r.yaml"),
    ):
        sentences = study_claims(folder, declared, name)
        table = study_claims_table(folder, declared, name)
        assert table.splitlines()[-1] == sentences.splitlines()[-1]  # the family line
        # the sentences' numbers, arm by arm, in declared order
        per_arm: list[list[str]] = []
        for line in sentences.splitlines():
            if line.startswith("At "):
                per_arm.append([])
            elif line.startswith("- ") and not line.startswith("- Not yet run"):
                per_arm[-1].append(line)
        rows = [r for r in table.splitlines() if r.startswith("| ") and "(A − B)" not in r]
        cells_by_arm = list(zip(*[[c.strip() for c in r.strip("|").split(" | ")[1:]]
                                  for r in rows], strict=True))  # fmt: skip
        assert len(cells_by_arm) == len(per_arm)
        cautions = flips = 0
        for cells, claims in zip(cells_by_arm, per_arm, strict=True):
            ran = [c for c in cells if c not in ("not run", "-")]
            assert len(ran) == len(claims)
            for cell, sentence in zip(ran, claims, strict=True):
                diff, p = re.match(r"\**([+-][\d.]+)\**, p ([\d.]+)", cell).groups()
                assert f"Holm p {p} (" in sentence
                higher = " scores higher than " in sentence.split(" Without ")[0]
                assert cell.startswith("**") == higher
                magnitude = f"F1 +{abs(float(diff)):.3f}" if higher else f"F1 {diff}"
                assert magnitude in sentence, (cell, sentence)
                cautions += " Caution: " in sentence
                verdict = "differ" if higher else "inside"
                after = re.search(r"Holm p [\d.]+, (differ|inside)\.$", sentence)
                flips += after is not None and after.group(1) != verdict
        counts = re.search(r"In (\d+) of the (\d+) claims .*?, (\d+) of the", table)
        assert counts.groups() == (str(cautions), str(sum(map(len, per_arm))), str(flips))
    assert "**" in study_claims_table(FIRST, load_design(design), "d.yaml")


def test_the_claims_command_writes_the_table_with_table(tmp_path):
    design = tmp_path / "d.yaml"
    design.write_text(DESIGN, encoding="utf-8")
    args = ["study", "claims", str(FIRST), "--design", str(design), "--table"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "| comparison (A − B) | default |" in result.output
    assert "| ReAct − `direct` (no tools) on `local/qwen2.5-0.5b`, KU tasks |" in result.output
