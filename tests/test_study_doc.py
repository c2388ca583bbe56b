"""docs/study.md and the README show the study as its stored cells say: the headline tables
are recomputed from ``studies/local-models`` (no model run) and must equal the copy in the
docs; the README's figures must be the ones the stored cells draw."""

from __future__ import annotations

import re
from pathlib import Path

from raleval.analysis.study import study_tables

from .conftest import doc_block

ROOT = Path(__file__).resolve().parents[1]
STUDY = ROOT / "studies" / "local-models"
DOC = ROOT / "docs" / "study.md"
START, END = "<!-- study-tables:start -->", "<!-- study-tables:end -->"


def test_headline_tables_in_the_docs_are_the_stored_results():
    text = DOC.read_text(encoding="utf-8")
    stored = text.split(START, 1)[1].split(END, 1)[0].strip()
    assert stored == study_tables(STUDY).strip(), (
        "docs/study.md's tables differ from the stored cells: regenerate them with "
        "`raleval study tables studies/local-models`"
    )


def test_every_arm_has_its_paired_comparisons_and_a_loaded_item_is_its_own_cluster():
    """Real data is compared too (is a workflow's lead on 8 CRAG questions more than noise?);
    a loaded file's items come from no template, so each is a cluster of its own."""
    text = study_tables(STUDY)
    arms = re.findall(r"^#### (real data: [\w-]+)$", text, flags=re.M)
    assert arms, "the study has a real-data arm"
    for arm in arms:
        block = text.split(f"#### {arm}: paired comparisons\n", 1)[1].split("####", 1)[0]
        # comparison rows name systems ("react / model"); the header names no system
        rows = [r.split(" | ") for r in block.splitlines() if r.startswith("| ") and " / " in r]
        rows = [r for r in rows if r[0] != "| A"]
        assert rows, f"{arm} has no paired comparisons"
        assert all(r[2] == r[3] for r in rows), f"{arm}: clusters are not the items"
    generated = text.split("#### generated task sets: paired comparisons\n", 1)[1]
    generated = generated.split("####", 1)[0]
    rows = [r.split(" | ") for r in generated.splitlines() if r.startswith("| ") and " / " in r]
    rows = [r for r in rows if r[0] != "| A"]
    assert any(int(r[3]) < int(r[2]) for r in rows), "templates cluster the generated tasks"


def test_tables_command_rewrites_only_the_marked_block(tmp_path):
    from typer.testing import CliRunner

    from raleval.app.cli import app

    page = tmp_path / "page.md"
    page.write_text(f"# title\n\n{START}\nold\n{END}\n\nafter\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["study", "tables", str(STUDY), "--into", str(page)])
    assert result.exit_code == 0, result.output
    text = page.read_text(encoding="utf-8")
    assert text.startswith("# title\n\n") and text.endswith(f"{END}\n\nafter\n")
    assert "old" not in text and study_tables(STUDY) in text
    page.write_text("no markers\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["study", "tables", str(STUDY), "--into", str(page)])
    assert result.exit_code != 0 and "needs one" in result.output


README = ROOT / "README.md"
FIGURE_REF = re.compile(r"!\[[^\]]+\]\((docs/study/[A-Za-z0-9_.-]+\.png)\)")


def _same_figures(
    refs: list[str], study: Path, arm: str, tmp_path: Path, timing: Path | None = None
) -> None:
    """Each of ``refs`` (paths under the repository) exists, is a PNG file, and is what
    ``raleval study figures`` draws from ``study``'s ``arm`` now (same size, the same pixels but
    for anti-aliasing: a figure left behind after the results changed fails); ``timing``, a
    timing pass's folder, gives the deployment figure its seconds."""
    from matplotlib import image
    from typer.testing import CliRunner

    from raleval.app.cli import app

    names = [f"--figure={Path(ref).stem}" for ref in refs]
    out = tmp_path / arm.replace(" ", "_")
    args = ["study", "figures", str(study), "--arm", arm, "--into", str(out), *names]
    if timing is not None:
        args += ["--timing", str(timing)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == sorted(Path(r).name for r in refs)
    for ref in refs:
        shown = ROOT / ref
        assert shown.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", ref
        fresh = out / shown.name
        assert fresh.exists(), f"{ref}: raleval study figures draws no such figure"
        a, b = image.imread(shown), image.imread(fresh)
        assert a.shape == b.shape, f"{ref} is not the figure the stored cells give"
        # pixels that changed visibly (anti-aliasing across library versions moves many pixels
        # a little; a point or a polygon vertex that moved changes hundreds a lot)
        changed = float((abs(a - b).max(axis=-1) > 0.1).mean())
        assert changed < 5e-4, (
            f"{ref} differs from the stored cells' figure ({changed:.2%} of its pixels): "
            f"regenerate with `raleval study figures {study.relative_to(ROOT)} --arm '{arm}'`"
        )


def test_readme_shows_study_figures_that_the_stored_cells_regenerate(tmp_path):
    refs = FIGURE_REF.findall(README.read_text(encoding="utf-8"))
    assert len(refs) >= 2, "the README shows fewer than two of the study's figures"
    assert "docs/study.md" in README.read_text(encoding="utf-8")
    _same_figures(refs, STUDY, "generated", tmp_path)


RERUN = ROOT / "studies" / "local-models-2"
RERUN_FIGURE = re.compile(r"!\[[^\]]+\]\((study2/[A-Za-z0-9_./-]+\.png)\)")


def test_the_re_run_s_tables_and_figures_in_the_docs_are_its_stored_cells(tmp_path):
    """docs/study.md's re-run block is `raleval study tables` under the design, its claims
    block the README's, and its figures what the stored cells draw (default and matched arm);
    `bash studies/regenerate.sh` rewrites them all."""
    from raleval.analysis.claims import study_claims
    from raleval.analysis.design import load_design

    text = DOC.read_text(encoding="utf-8")
    design = load_design(ROOT / "studies" / "local-models-2.design.yaml")
    block = doc_block(text, "study-rerun-tables")
    # the timing pass's lines, kept beside the study once it has run
    timing = ROOT / "studies" / "local-models-2-timing"
    timing_dir = timing if timing.is_dir() else None
    fresh = study_tables(RERUN, design.declared, design.cluster, timing_dir)
    assert block == fresh, "regenerate with `bash studies/regenerate.sh`"
    claims = study_claims(RERUN, design, "`studies/local-models-2.design.yaml`")
    assert doc_block(text, "study-claims") == claims
    refs = [f"docs/{r}" for r in RERUN_FIGURE.findall(text)]
    assert len(refs) == 5
    default = [r for r in refs if "/matched/" not in r]
    _same_figures(default, RERUN, "generated", tmp_path)
    matched = [r for r in refs if "/matched/" in r]
    _same_figures(matched, RERUN, "generated @ 4000 tokens", tmp_path)


def test_figures_name_the_arms_there_are(tmp_path):
    from typer.testing import CliRunner

    from raleval.app.cli import app

    result = CliRunner().invoke(
        app, ["study", "figures", str(STUDY), "--into", str(tmp_path), "--arm", "nope"]
    )
    assert result.exit_code != 0 and "has no arm 'nope'; it has: generated" in result.output
    assert not list(tmp_path.iterdir())
    result = CliRunner().invoke(
        app, ["study", "figures", str(STUDY), "--into", str(tmp_path), "--figure", "radar-nope"]
    )
    assert result.exit_code != 0 and "no figure named radar-nope" in result.output


THIRD = ROOT / "studies" / "local-models-3"
THIRD_TIMING = ROOT / "studies" / "local-models-3-timing"  # its timing pass's kept lines


def test_the_third_study_s_blocks_and_figure_are_its_stored_cells(tmp_path):
    """docs/study.md's third-study blocks are `raleval study tables` and `study claims` under
    its design, and its budget figure what the stored cells draw, as far as the cells go;
    `bash studies/regenerate.sh` rewrites them after each chunk."""
    import shutil

    from typer.testing import CliRunner

    from raleval.app.cli import app

    design = "studies/local-models-3.design.yaml"
    page = tmp_path / "page.md"
    for command, block in (("tables", "study3-tables"), ("claims", "study3-claims")):
        page.write_text(f"<!-- {block}:start -->\n<!-- {block}:end -->\n", encoding="utf-8")
        args = ["study", command, str(THIRD), "--design", design, "--into", str(page)]
        if command == "tables":
            args += ["--timing", str(THIRD_TIMING)]
        result = CliRunner().invoke(app, [*args, "--block", block])
        assert result.exit_code == 0, result.output
        fresh = doc_block(page.read_text(encoding="utf-8"), block)
        shown = doc_block(DOC.read_text(encoding="utf-8"), block)
        assert shown == fresh, f"{block}: regenerate with `bash studies/regenerate.sh`"
    assert "(study3/budgets.png)" in DOC.read_text(encoding="utf-8")
    shutil.rmtree(tmp_path / "generated", ignore_errors=True)
    _same_figures(["docs/study3/budgets.png"], THIRD, "generated", tmp_path)
    # with seconds per episode against F1, the seconds from the timing pass
    shown = ["docs/study3/errors.png", "docs/study3/radar-react.png", "docs/study3/deployment.png"]
    assert all(f"({r.removeprefix('docs/')})" in DOC.read_text(encoding="utf-8") for r in shown)
    _same_figures(shown, THIRD, "generated @ 8000 tokens", tmp_path, THIRD_TIMING)


def test_the_readme_s_figures_of_the_third_study_are_its_stored_cells(tmp_path):
    """The README's third-study figures: the budget sweep (every budget arm) and the
    8,000-token arm's error mix (and time against F1, its seconds from the timing pass), each
    what `raleval study figures` draws now."""
    refs = re.findall(r"!\[[^\]]+\]\((docs/study3/[A-Za-z0-9_.-]+\.png)\)",
                      README.read_text(encoding="utf-8"))  # fmt: skip
    assert "docs/study3/budgets.png" in refs and "docs/study3/errors.png" in refs
    _same_figures(["docs/study3/budgets.png"], THIRD, "generated", tmp_path)
    rest = [r for r in refs if not r.endswith("budgets.png")]
    _same_figures(rest, THIRD, "generated @ 8000 tokens", tmp_path, THIRD_TIMING)


def test_the_third_study_s_timing_pass_times_every_cell_alike_after_a_low_load(tmp_path):
    """Issue 62's timing line, from the lines kept in the repository: every cell of the
    8,000-token arm (both models, six workflows, three environments) timed on every family its
    stored cell ran and no other, at least 5 episodes a cell, the cells of an environment
    within one task of each other (rotated per task), each episode's load before it recorded
    and below the limit unless its wait timed out, each answer checked against the scored
    episode; and the README's time figure is this pass's."""
    import gzip
    import json
    from collections import defaultdict

    families: dict[tuple[str, str, str], set[str]] = {}
    for cell in THIRD.glob("budget-8000__*"):
        config = json.loads((cell / "header.json").read_text(encoding="utf-8"))["config"]
        with gzip.open(cell / "tasks.jsonl.gz", "rt", encoding="utf-8") as f:
            fams = {json.loads(line)["family"] for line in f if line.strip()}
        families[(config["env"], config["workflow"], config["model"])] = fams
    assert len(families) == 36, "the arm has 3 environments x 6 workflows x 2 models"
    timed: dict[tuple[str, str, str], list[dict]] = defaultdict(list)
    for log in THIRD_TIMING.glob("*/timing.jsonl"):
        for line in log.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            timed[(log.parent.name, row["workflow"], row["model"])].append(row)
    assert set(timed) == set(families)
    per_env: dict[str, list[int]] = defaultdict(list)
    for cell, rows in timed.items():
        tasks = [r["task_id"] for r in rows]
        assert len(tasks) == len(set(tasks)), f"{cell}: a task timed twice"
        assert {r["family"] for r in rows} == families[cell] and len(rows) >= 5, cell
        for r in rows:
            assert r["matches_scored"] is not None, cell
            assert r["load_before"] < r["max_load"] <= 1.5 or r["load_timed_out"], cell
        per_env[cell[0]].append(len(rows))
    for env, counts in per_env.items():
        assert len(counts) == 12 and max(counts) - min(counts) <= 1, env
    readme = README.read_text(encoding="utf-8")
    refs = re.findall(r"\((docs/study3/deployment\.png)\)", readme)
    assert refs and "(docs/study/deployment.png)" not in readme
    _same_figures(refs, THIRD, "generated @ 8000 tokens", tmp_path, THIRD_TIMING)
