"""docs/study.md and the README show the study as its stored cells say: the headline tables are
recomputed from ``studies/local-models`` (no model run) and must equal the copy in the docs,
and every figure they show is a PNG in the repository."""

from __future__ import annotations

import re
from pathlib import Path

from raleval.analysis.study import study_tables

ROOT = Path(__file__).resolve().parents[1]
STUDY = ROOT / "studies" / "local-models"
DOC = ROOT / "docs" / "study.md"
START, END = "<!-- study-tables:start -->", "<!-- study-tables:end -->"
IMAGE = re.compile(r"!\[[^\]]*\]\(([^)]+\.png)\)")


def test_headline_tables_in_the_docs_are_the_stored_results():
    text = DOC.read_text(encoding="utf-8")
    stored = text.split(START, 1)[1].split(END, 1)[0].strip()
    assert stored == study_tables(STUDY).strip(), (
        "docs/study.md's tables differ from the stored cells: regenerate them with "
        "`raleval study tables studies/local-models`"
    )


def test_every_figure_shown_is_a_png_in_the_repository():
    for page in (ROOT / "README.md", DOC):
        shown = IMAGE.findall(page.read_text(encoding="utf-8"))
        assert shown, f"{page.name} shows no figure"
        for ref in shown:
            path = (page.parent / ref).resolve()
            assert path.is_file(), f"{page.name} shows {ref}, which is not in the repository"
            assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", f"{ref} is not a PNG"
    readme = IMAGE.findall((ROOT / "README.md").read_text(encoding="utf-8"))
    assert len(readme) >= 2
