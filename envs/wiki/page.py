"""A Wikipedia page as the tools see it, and the text rules every backend shares.

Text rules (ReAct's and R-Eval's contracts): paragraphs are separated by blank lines, the
abstract is the first non-empty paragraph (or its first sentences), observations are
whitespace-normalised and cut to a token budget with a visible marker.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from functools import cached_property

_BLANK_LINE = re.compile(r"\n\s*\n")
_SPACE = re.compile(r"\s+")
# A sentence ends at . ! or ? followed by space and an upper-case letter, digit or quote;
# ``e.g. foo`` and ``3.5 m`` therefore stay inside their sentence.
_SENTENCE_END = re.compile(
    r"(?<=[.!?])\s+(?=[\"'(\[A-Z0-9\u00C0-\u024F\u0370-\u03FF\u0400-\u04FF])"
)
_DISAMBIGUATION = re.compile(r"\bmay (also )?refer to\b", re.IGNORECASE)
TRUNCATION_MARKER = "[... truncated]"


def clean(text: str) -> str:
    """Collapse every run of whitespace (newlines included) to one space."""
    return _SPACE.sub(" ", text).strip()


def title_key(title: str) -> str:
    """How titles are compared: NFKC, case-folded, underscores as spaces, single spaces."""
    return clean(unicodedata.normalize("NFKC", title).replace("_", " ")).casefold()


def ascii_fold(text: str) -> str:
    """``Zürich`` -> ``Zurich``: lets token-based fuzzy search see accented titles."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def split_paragraphs(text: str) -> list[str]:
    return [p for p in (clean(block) for block in _BLANK_LINE.split(text)) if p]


def split_sentences(paragraph: str) -> list[str]:
    return [s for s in (clean(x) for x in _SENTENCE_END.split(paragraph)) if s]


def truncate(text: str, max_tokens: int | None) -> str:
    """Cut ``text`` to ``max_tokens`` whitespace tokens, marking the cut."""
    if not max_tokens:
        return text
    words = text.split(" ")
    if len(words) <= max_tokens:
        return text
    return " ".join(words[:max_tokens]) + " " + TRUNCATION_MARKER


@dataclass(frozen=True)
class Page:
    """One page: its canonical title and its plain text (paragraphs separated by blank lines)."""

    title: str
    text: str
    redirected_from: str | None = field(default=None, compare=False)

    @cached_property
    def paragraphs(self) -> list[str]:
        return split_paragraphs(self.text)

    @cached_property
    def sentences(self) -> list[str]:
        return [s for p in self.paragraphs for s in split_sentences(p)]

    @property
    def is_disambiguation(self) -> bool:
        return bool(self.paragraphs) and bool(_DISAMBIGUATION.search(self.paragraphs[0]))

    def abstract(self, mode: str = "paragraph", n_sentences: int = 5) -> str:
        """The first paragraph, or the first ``n_sentences`` sentences of the page."""
        if not self.paragraphs:
            return ""
        if mode == "sentences":
            return " ".join(self.sentences[:n_sentences])
        return self.paragraphs[0]

    def passages(self, unit: str = "sentence") -> list[str]:
        return self.sentences if unit == "sentence" else self.paragraphs
