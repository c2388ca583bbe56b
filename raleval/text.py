"""Answer text as every layer compares it: SQuAD normalisation and token-aligned containment,
with the tokenizer chosen by the text's script.

Task generators (checking that an answer shows in a tool result), the metrics and the taxonomy
(checking that evidence shows in an observation) must agree on what "appears" means, so the
one definition lives here, below all of them.

Text without a CJK character is treated exactly as before (SQuAD's English normalisation,
whitespace tokens). Text with one is Chinese (or mixed): punctuation of every script is dropped
(``，`` and ``。`` as well as ``,``), and

- :func:`normalize_answer` writes each Han character as a token of its own, so "appears" (a
  contiguous run of whole tokens) does not depend on how a word segmenter cuts the text around
  it ("西安市" in "在陕西西安市召开" and alone are cut differently by jieba);
- :func:`words` cuts it into words with jieba, the segmenter CRUD-RAG and RGB use, for the
  metrics that count words (token F1, ROUGE-L, BLEU).
"""

from __future__ import annotations

import re
import string
import unicodedata
from functools import lru_cache

_DROP_PUNCT = str.maketrans("", "", string.punctuation)
_ASCII_PUNCT = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")
# CJK ideographs (unified, extension A, compatibility), kana and Hangul: scripts written without
# spaces between words
_CJK_CHARS = (
    "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0002fa1f"
)
# CJK punctuation (、。《》) and full-width forms (，１２６) mark Chinese text too, though they are
# no words of their own
_CJK = re.compile(f"[{_CJK_CHARS}\u3000-\u303f\uff00-\uffef]")
_CJK_RUN = re.compile(f"([{_CJK_CHARS}])")


def ascii_fold(text: str) -> str:
    """``text`` with accents removed (NFKD, combining marks dropped): ``Zürich`` -> ``Zurich``,
    what rouge-score's ASCII tokenizer and token-based fuzzy search can read."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def has_cjk(text: str) -> bool:
    """Whether ``text`` holds a character of a script written without spaces (Chinese, ...)."""
    return _CJK.search(text) is not None


def _drop_all_punctuation(text: str) -> str:
    """``text`` without punctuation or symbols: ASCII ones deleted, as SQuAD's normalisation
    deletes them (``1,234`` -> ``1234``, ``20.7%`` -> ``207`` in either script, so an English
    gold and a Chinese answer agree), every other one (``，`` ``。`` ``、`` ``《``) made a space,
    since in Chinese it separates what it stands between."""
    out = []
    for c in text:
        if c in _ASCII_PUNCT:
            continue
        out.append(" " if unicodedata.category(c)[0] in "PS" else c)
    return "".join(out)


@lru_cache(maxsize=4096)
def normalize_answer(text: str) -> str:
    """SQuAD normalisation: lower case, no punctuation, no articles, single spaces; in text
    with CJK characters also no full-width punctuation, and each CJK character a token.

    Cached: scoring one episode normalises the same observations and golds for its label,
    its evidence, its progress and its call scores (22 calls an episode on scholar)."""
    text = text.lower()
    if has_cjk(text):
        text = unicodedata.normalize("NFKC", text)  # full-width digits and letters
        text = _drop_all_punctuation(text)
        text = _CJK_RUN.sub(r" \1 ", text)
    else:
        text = text.translate(_DROP_PUNCT)  # a C loop; scoring normalises every observation
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


@lru_cache(maxsize=1)
def _jieba():
    try:
        import jieba
    except ImportError as exc:  # a core dependency; say so if an install lost it
        raise RuntimeError(f"Chinese text needs jieba (pip install jieba): {exc}") from exc
    jieba.setLogLevel(60)  # its dictionary-loading messages go to stderr otherwise
    return jieba


def segment(text: str) -> list[str]:
    """jieba's words of ``text`` exactly as it cuts them (spaces and punctuation included, as
    CRUD-RAG's metric code passes them on); plain ``str.split`` for text without CJK would
    differ, so callers choose."""
    return list(_jieba().cut(text))


def words(text: str) -> list[str]:
    """The normalised words of ``text`` that word-counting metrics compare: for text without
    CJK characters ``normalize_answer(text).split()``; otherwise jieba's words of the text
    lower-cased, without punctuation, spaces or English articles."""
    if not has_cjk(text):
        return normalize_answer(text).split()
    text = _drop_all_punctuation(unicodedata.normalize("NFKC", text.lower()))
    out = []
    for chunk in text.split():
        if not has_cjk(chunk):
            out.extend(w for w in _ARTICLES.sub(" ", chunk).split())
            continue
        out.extend(w for w in (s.strip() for s in _jieba().cut(chunk)) if w)
    return out


def spaced(text: str) -> str:
    """``text`` with a space either side of every CJK character, so patterns written for
    space-separated words find numbers and words inside Chinese ("发放500万元" ->
    "发 放 500 万 元"); text without CJK characters is returned unchanged."""
    if not has_cjk(text):
        return text
    return _CJK_RUN.sub(r" \1 ", text)


def contains_tokens(haystack: list[str], needle: list[str]) -> bool:
    """Whether ``needle`` occurs in ``haystack`` as a contiguous run of whole tokens."""
    n = len(needle)
    if n == 0:
        return False
    first = needle[0]
    return any(tok == first and haystack[i : i + n] == needle for i, tok in enumerate(haystack))
