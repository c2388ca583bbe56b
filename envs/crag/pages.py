"""CRAG task 1, "retrieve from pages": each question's own search-result pages as a search tool.

``raleval run --env crag-pages --tasks <loaded CRAG file>``: a loaded CRAG task keeps its five
pages in ``metadata["search_results"]`` (``raleval tasks load crag``); its episode gets a
session whose ``search_pages(query)`` ranks passages of those pages (the snippet, then the page
text cut into passages of at most ``PASSAGE_WORDS`` words) by BM25 (SQLite FTS5, in memory) and
returns the best ``TOP_K`` with their page name and URL. A task without pages finds nothing.
"""

from __future__ import annotations

import re
import sqlite3
from html.parser import HTMLParser
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from raleval.environment import Environment, ToolSpec
from raleval.registry import register_env

PASSAGE_WORDS = 80
TOP_K = 3
_SKIP = frozenset({"script", "style", "noscript", "template", "svg", "head"})
_BLOCK = frozenset(
    {"p", "div", "li", "ul", "ol", "br", "tr", "table", "section", "article", "h1", "h2", "h3",
     "h4", "h5", "h6", "title", "header", "footer", "blockquote", "pre", "td", "th"}
)  # fmt: skip
_WORD = re.compile(r"\w+", re.UNICODE)


class _Text(HTMLParser):
    """Visible text of an HTML page, one block per line."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skipping = 0

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag in _SKIP:
            self._skipping += 1
        elif tag in _BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP and self._skipping:
            self._skipping -= 1
        elif tag in _BLOCK:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self._skipping:
            self.parts.append(data)


def page_text(html: str) -> str:
    """The visible text of ``html``: blocks on their own lines, whitespace collapsed."""
    parser = _Text()
    parser.feed(html)
    parser.close()
    lines = (" ".join(line.split()) for line in "".join(parser.parts).splitlines())
    return "\n".join(line for line in lines if line)


def passages(page: dict[str, str]) -> list[str]:
    """A page's snippet, then its text in passages of at most ``PASSAGE_WORDS`` words
    (each passage once)."""
    out = [page_text(page.get("page_snippet", ""))] if page.get("page_snippet") else []
    for block in page_text(page.get("page_result", "")).splitlines():
        words = block.split()
        if len(words) < 5:
            continue
        out += [" ".join(words[i : i + PASSAGE_WORDS]) for i in range(0, len(words), PASSAGE_WORDS)]
    return [p for p in dict.fromkeys(out) if p]  # a snippet often repeats a passage


class SearchPagesParams(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)
    query: str = Field(min_length=1, description="words to look for in this question's pages")


class PageIndex:
    """BM25 over one task's passages (SQLite FTS5 in memory)."""

    def __init__(self, pages: list[dict[str, str]]) -> None:
        self.db = sqlite3.connect(":memory:", check_same_thread=False)
        self.db.execute("CREATE VIRTUAL TABLE p USING fts5(body, page UNINDEXED)")
        seen: set[str] = set()  # the same passage on two pages is indexed once
        rows = [
            (text, i)
            for i, page in enumerate(pages)
            for text in passages(page)
            if not (text in seen or seen.add(text))
        ]
        self.db.executemany("INSERT INTO p (body, page) VALUES (?, ?)", rows)
        self.pages = pages

    def search(self, query: str, k: int = TOP_K) -> list[dict[str, str]]:
        words = [w for w in _WORD.findall(query.lower()) if len(w) > 1]
        if not words:
            return []
        match = " OR ".join(f'"{w}"' for w in words)
        rows = self.db.execute(
            "SELECT body, page FROM p WHERE p MATCH ? ORDER BY bm25(p) LIMIT ?", (match, k)
        ).fetchall()
        return [
            {
                "page_name": self.pages[page].get("page_name", ""),
                "page_url": self.pages[page].get("page_url", ""),
                "passage": body,
            }
            for body, page in rows
        ]


class CragPagesEnv(Environment):
    """Per task: search that task's own search-result pages."""

    name = "crag-pages"
    description = "CRAG task 1: each question's five search-result pages behind search_pages"

    def __init__(self, pages: list[dict[str, str]] | None = None) -> None:
        self.index = PageIndex(pages or [])
        super().__init__(
            [
                ToolSpec(
                    "search_pages",
                    "Search this question's web pages: the best passages with their page "
                    "name and URL.",
                    SearchPagesParams,
                    "list[dict]",
                    self.search_pages,
                    "fuzzy",
                    empty_message="No passage of this question's pages matches.",
                )
            ]
        )

    def search_pages(self, query: str) -> list[dict[str, str]]:
        return self.index.search(query)

    def session(self, task: Any = None) -> CragPagesEnv:
        pages = (getattr(task, "metadata", None) or {}).get("search_results") or []
        return CragPagesEnv(pages)


@register_env("crag-pages")
def make_crag_pages_env() -> CragPagesEnv:
    """CRAG task 1: a loaded CRAG task's search-result pages as its search tool."""
    return CragPagesEnv()
