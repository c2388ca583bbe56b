"""A Wikipedia page as the tools see it, and the text rules every backend shares.

Text rules (ReAct's and R-Eval's contracts): paragraphs are separated by blank lines, the
abstract is the first non-empty paragraph (or its first sentences), observations are
whitespace-normalised and cut to a token budget with a visible marker.

One normalisation (:func:`normalize_text`: HTML entities decoded, Unicode NFC, whitespace runs
collapsed) is applied to every title and text a store takes in and to every title a query asks
for, so ``Tunnels &amp; Trolls`` in a HotpotQA context is found by "Tunnels & Trolls" and
``I&quot;s`` by 'I"s'.

Sentences. A line break inside a paragraph is a sentence boundary the source gave (HotpotQA and
2Wiki contexts come split into sentences; the loaders keep one per line, as ReAct's ``wikienv``
splits on newlines first). Within a line, sentences are found by sentencex (Wikimedia's
segmenter, maintained, rule-based, ~300 languages). Chosen by measurement on the HotpotQA dev
distractor excerpt in ``tests/data`` (521 paragraphs, 2,282 gold sentences, each paragraph's
sentences joined and re-split) and on 12 sentence pairs built around "Jr.", "Dr.", "St.",
"U.S.", "D.C.", "p.m.", "est." and initials ("K. A. Applegate", "J. R. R. Tolkien"):

    segmenter            gold sentences kept   paragraphs exact   abbreviation pairs
    regex (previous)     2037/2282  89.3 %      375/521            2/12   (removed)
    ReAct ". " split     1996/2282  87.5 %      355/521            0/12
    pysbd 0.3.4          2178/2282  95.4 %      477/521           12/12   (~100x slower)
    syntok 1.4.4         2160/2282  94.7 %      450/521           10/12
    sentencex 1.0.32     2190/2282  96.0 %      479/521           12/12
    nupunkt 0.8.0        2205/2282  96.6 %      482/521           11/12
    blingfire 0.1.8      2209/2282  96.8 %      485/521           12/12   (last release 2021)

Most of the remaining disagreements are HotpotQA's own splits ("84 Stat." / "1504, Dec. 24."
cut mid-citation, a closing quote left as its own sentence). sentencex ties blingfire on the
abbreviations, is maintained, and loses 0.8 points to it on HotpotQA: it is the choice.
(Script: ``benchmarks/sentence_segmenters.py``.)
"""

from __future__ import annotations

import html
import re
import unicodedata
from dataclasses import dataclass, field
from functools import cached_property

_BLANK_LINE = re.compile(r"\n\s*\n")
_SPACE = re.compile(r"\s+")
_LINE_SPACE = re.compile(r"[^\S\n]+")
_DISAMBIGUATION = re.compile(r"\bmay (also )?refer to\b", re.IGNORECASE)
TRUNCATION_MARKER = "[... truncated]"


def clean(text: str) -> str:
    """Collapse every run of whitespace (newlines included) to one space."""
    return _SPACE.sub(" ", text).strip()


def normalize_text(text: str) -> str:
    """HTML entities decoded, Unicode NFC, whitespace runs collapsed within each line, blank-line
    paragraph breaks and single line breaks (sentence boundaries) kept."""
    text = unicodedata.normalize("NFC", html.unescape(text)).replace("\r\n", "\n")
    paragraphs = []
    for block in _BLANK_LINE.split(text):
        lines = [ln for ln in (_LINE_SPACE.sub(" ", x).strip() for x in block.split("\n")) if ln]
        if lines:
            paragraphs.append("\n".join(lines))
    return "\n\n".join(paragraphs)


def normalize_title(title: str) -> str:
    """A title as stored and shown: :func:`normalize_text` on one line."""
    return clean(normalize_text(title))


def title_key(title: str) -> str:
    """How titles are compared: normalised, NFKC, case-folded, underscores as spaces."""
    text = unicodedata.normalize("NFKC", normalize_title(title))
    return clean(text.replace("_", " ")).casefold()


def split_paragraphs(text: str) -> list[str]:
    return [p for p in (clean(block) for block in _BLANK_LINE.split(text)) if p]


def split_blocks(text: str) -> list[str]:
    """Paragraphs with their line breaks (the source's sentence boundaries) kept."""
    return [b for b in (block.strip() for block in _BLANK_LINE.split(text)) if b.strip()]


def split_sentences(paragraph: str, language: str = "en") -> list[str]:
    """Sentences of a paragraph: each line, segmented by sentencex."""
    from sentencex import segment

    out = []
    for line in paragraph.split("\n"):
        line = clean(line)
        if line:
            out.extend(s for s in (clean(x) for x in segment(language, line)) if s)
    return out


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
        return [s for block in split_blocks(self.text) for s in split_sentences(block)]

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
