"""docs/study.md shows the study as its stored cells say: the headline tables are recomputed
from ``studies/local-models`` (no model run) and must equal the copy in the docs."""

from __future__ import annotations

from pathlib import Path

from raleval.analysis.study import study_tables

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
