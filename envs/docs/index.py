"""A BM25 index over a JSON-lines document collection, built once and memory-mapped after.

The corpus is a JSON-lines file, one document a line: ``{"id", "text"}`` with an optional
``"title"`` (``doc_id`` / ``content`` are read as the same fields, so a DragonBall document file
is a corpus as it is). The index lives in a folder beside it, ``<corpus>.bm25/``: bm25s's sparse
score matrix (memory-mapped on open), the byte offset of every document's line (``read`` seeks
to it; the text is never held in memory) and a manifest with the corpus's size and modification
time, so an edited corpus is re-indexed rather than searched with a stale index.

Tokens: text with Chinese characters is segmented by jieba (as CRUD-RAG and RGB segment it);
other text is tokenised as ``bm25s.tokenize`` does by default (lower case, words of two or
more word characters, its English stop words). Tokenising is the cost of a build, so it runs
in worker processes, a chunk of documents at a time.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

INDEX_VERSION = 1
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_WORD = re.compile(r"(?u)\b\w\w+\b")  # bm25s.tokenize's default token_pattern
_HAS_WORD = re.compile(r"\w")
_CHUNK = 2000  # documents a worker tokenises per task


class CorpusError(ValueError):
    """A corpus file that cannot be indexed: ``path:line: why``."""


def _stopwords() -> frozenset[str]:
    from bm25s.stopwords import STOPWORDS_EN

    return frozenset(STOPWORDS_EN)


_STOP: frozenset[str] | None = None
_JIEBA_READY = False


def tokenize(text: str) -> list[str]:
    """The BM25 tokens of ``text``: jieba's words where it has Chinese characters (ASCII
    words among them filtered as bm25s filters them), else bm25s's default tokens."""
    global _STOP
    if _STOP is None:
        _STOP = _stopwords()
    lowered = text.lower()
    if not _CJK.search(lowered):
        return [w for w in _WORD.findall(lowered) if w not in _STOP]
    import jieba

    global _JIEBA_READY
    if not _JIEBA_READY:
        _quiet_jieba()  # its dictionary loads once, without a banner on stderr
        _JIEBA_READY = True
    out = []
    for word in jieba.lcut(lowered):
        word = word.strip()
        if not word or not _HAS_WORD.search(word):
            continue
        if word.isascii() and (len(word) < 2 or word in _STOP):
            continue
        out.append(word)
    return out


def _quiet_jieba() -> None:
    import logging

    import jieba

    jieba.setLogLevel(logging.WARNING)
    jieba.initialize()


def _tokenize_chunk(texts: list[str]) -> list[list[str]]:
    return [tokenize(t) for t in texts]


@dataclass(frozen=True)
class Document:
    id: str
    title: str
    text: str


def parse_document(obj: Any, line: int) -> Document:
    """One corpus line as a :class:`Document` (``id``/``doc_id``, ``text``/``content``)."""
    if not isinstance(obj, dict):
        raise CorpusError(f"line {line}: expected an object, got {type(obj).__name__}")
    doc_id = obj.get("id", obj.get("doc_id"))
    text = obj.get("text", obj.get("content"))
    if doc_id is None or isinstance(doc_id, (bool, dict, list)) or str(doc_id) == "":
        raise CorpusError(f"line {line}: field 'id': missing or not a string or number")
    if not isinstance(text, str):
        raise CorpusError(f"line {line}: field 'text': missing or not a string")
    title = obj.get("title") or ""
    return Document(str(doc_id), str(title), text)


def _scan(corpus: Path) -> Iterator[tuple[int, Document]]:
    """(byte offset, document) of every non-blank line."""
    with corpus.open("rb") as fh:
        offset, line = 0, 0
        for raw in fh:
            line += 1
            start, offset = offset, offset + len(raw)
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                raise CorpusError(f"{corpus}:{line}: not JSON: {exc}") from None
            try:
                yield start, parse_document(obj, line)
            except CorpusError as exc:
                raise CorpusError(f"{corpus}:{exc}") from None


def index_dir(corpus: Path) -> Path:
    return corpus.with_name(corpus.name + ".bm25")


def _stamp(corpus: Path) -> dict[str, Any]:
    stat = corpus.stat()
    return {"version": INDEX_VERSION, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def build_index(corpus: Path, workers: int | None = None) -> Path:
    """Index ``corpus`` into ``<corpus>.bm25/`` (replacing an older index) and return it."""
    import bm25s

    folder = index_dir(corpus)
    folder.mkdir(parents=True, exist_ok=True)
    offsets: list[int] = []
    ids: list[str] = []
    titles: list[str] = []
    seen: set[str] = set()
    chunks: list[list[str]] = [[]]
    for offset, doc in _scan(corpus):
        if doc.id in seen:
            raise CorpusError(f"{corpus}: document id {doc.id!r} appears twice")
        seen.add(doc.id)
        offsets.append(offset)
        ids.append(doc.id)
        titles.append(doc.title)
        if len(chunks[-1]) == _CHUNK:
            chunks.append([])
        chunks[-1].append(f"{doc.title}\n{doc.text}" if doc.title else doc.text)
    if not ids:
        raise CorpusError(f"{corpus}: no documents")
    vocab: dict[str, int] = {}
    token_ids: list[list[int]] = []

    def add(batch: list[list[str]]) -> None:
        for tokens in batch:
            token_ids.append([vocab.setdefault(t, len(vocab)) for t in tokens])

    n_workers = workers if workers is not None else min(len(chunks), os.cpu_count() or 1)
    if n_workers <= 1:
        _quiet_jieba()
        for chunk in chunks:
            add(_tokenize_chunk(chunk))
    else:
        with ProcessPoolExecutor(n_workers, initializer=_quiet_jieba) as pool:
            for batch in pool.map(_tokenize_chunk, chunks):
                add(batch)
    del chunks
    retriever = bm25s.BM25()
    retriever.index((token_ids, vocab), show_progress=False)
    retriever.save(str(folder), show_progress=False)
    np.save(folder / "offsets.npy", np.asarray(offsets, dtype=np.int64))
    (folder / "docs.json").write_text(
        json.dumps({"ids": ids, "titles": titles}, ensure_ascii=False), encoding="utf-8"
    )
    # written last: an index without a current manifest is rebuilt, never half read
    (folder / "manifest.json").write_text(json.dumps(_stamp(corpus)), encoding="utf-8")
    return folder


def _current(corpus: Path) -> bool:
    manifest = index_dir(corpus) / "manifest.json"
    try:
        return json.loads(manifest.read_text()) == _stamp(corpus)
    except (OSError, ValueError):
        return False


@contextmanager
def _build_lock(corpus: Path) -> Iterator[None]:
    """One builder at a time per corpus (processes opening it at once wait for the first)."""
    try:
        import fcntl
    except ImportError:  # Windows: no advisory locks; builds are rare, last one wins
        yield
        return
    with corpus.with_name(corpus.name + ".bm25.lock").open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


class CorpusIndex:
    """An opened collection: BM25 search over it and documents read by id."""

    def __init__(self, corpus: Path, rebuild: bool = False) -> None:
        import bm25s

        self.corpus = corpus
        if not corpus.is_file():
            raise FileNotFoundError(f"{corpus}: no such corpus file")
        folder = index_dir(corpus)
        if rebuild or not _current(corpus):
            with _build_lock(corpus):
                # another process (a worker of the same run) may have built it meanwhile
                if rebuild or not _current(corpus):
                    build_index(corpus)
        self.retriever = bm25s.BM25.load(str(folder), mmap=True, show_progress=False)
        self.offsets = np.load(folder / "offsets.npy", mmap_mode="r")
        docs = json.loads((folder / "docs.json").read_text(encoding="utf-8"))
        self.ids: list[str] = docs["ids"]
        self.titles: list[str] = docs["titles"]
        self.row = {doc_id: i for i, doc_id in enumerate(self.ids)}

    def __len__(self) -> int:
        return len(self.ids)

    def search(self, query: str, k: int) -> list[tuple[int, float]]:
        """(row, score) of the best ``k`` documents sharing a token with ``query``."""
        vocab = self.retriever.vocab_dict
        tokens = [t for t in tokenize(query) if t in vocab]
        if not tokens:
            return []
        k = min(k, len(self.ids))
        rows, scores = self.retriever.retrieve(
            [tokens], k=k, show_progress=False, n_threads=1, return_as="tuple"
        )
        return [(int(r), float(s)) for r, s in zip(rows[0], scores[0], strict=True) if s > 0]

    def document(self, row: int) -> Document:
        with self.corpus.open("rb") as fh:
            fh.seek(int(self.offsets[row]))
            return parse_document(json.loads(fh.readline()), row + 1)

    def get(self, doc_id: str) -> Document | None:
        row = self.row.get(doc_id)
        return None if row is None else self.document(row)
