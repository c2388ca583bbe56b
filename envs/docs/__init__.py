"""A document collection as an environment: ``search`` (BM25) and ``read`` (a document by id).

``raleval run --env docs -E corpus=collection.jsonl``: any JSON-lines corpus of ``{id, title?,
text}`` (``raleval tasks load crud|rageval|rgb`` writes one beside its tasks). The index is
built beside the corpus on first open and memory-mapped afterwards (``envs/docs/index.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from raleval.environment import Environment, ToolMisuse, ToolSpec
from raleval.envs.docs.index import CorpusError, CorpusIndex, Document, build_index, tokenize
from raleval.registry import register_env

TRUNCATED = " [... truncated]"


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)


class SearchParams(_Params):
    query: str = Field(min_length=1, description="words to look for in the collection")


class ReadParams(_Params):
    doc_id: str = Field(min_length=1, description="a doc_id from search")


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + TRUNCATED


class DocsEnv(Environment):
    """Search a document collection, then read what was found."""

    name = "docs"
    description = "A document collection: search (BM25) and read (a document by id)"

    def __init__(
        self, index: CorpusIndex, k: int = 5, snippet_chars: int = 200, read_chars: int = 4000
    ) -> None:
        self.index = index
        self.k, self.snippet_chars, self.read_chars = k, snippet_chars, read_chars
        super().__init__(
            [
                ToolSpec(
                    "search",
                    f"Search the document collection: the best {k} documents with their "
                    "doc_id, title and opening words.",
                    SearchParams,
                    "list[dict]",
                    self.search,
                    "fuzzy",
                    text_style="bracket",
                    empty_message="No document matches.",
                ),
                ToolSpec(
                    "read",
                    "Read a document by its doc_id: its title and text.",
                    ReadParams,
                    "dict",
                    self.read,
                    text_style="bracket",
                ),
            ]
        )

    def search(self, query: str) -> list[dict[str, str]]:
        out = []
        for row, _ in self.index.search(query, self.k):
            doc = self.index.document(row)
            snippet = " ".join(doc.text.split())
            out.append(
                {
                    "doc_id": doc.id,
                    "title": doc.title,
                    "snippet": _cut(snippet, self.snippet_chars),
                }
            )
        return out

    def read(self, doc_id: str) -> dict[str, str]:
        doc = self.index.get(doc_id)
        if doc is None:
            raise ToolMisuse(f"no document {doc_id!r}; use a doc_id from search", "unknown_id")
        return {"doc_id": doc.id, "title": doc.title, "text": _cut(doc.text, self.read_chars)}

    def example_calls(self) -> dict[str, dict[str, Any]]:
        first = self.index.document(0)
        words = first.title or " ".join(first.text.split()[:8]) or first.text[:20]
        return {"search": {"query": words}, "read": {"doc_id": first.id}}


@register_env("docs")
def make_docs_env(
    corpus: str | None = None,
    k: int = 5,
    snippet_chars: int = 200,
    read_chars: int = 4000,
    rebuild: bool = False,
) -> DocsEnv:
    """A document collection (``-E corpus=collection.jsonl``, lines of ``{id, title?, text}``):
    ``search`` returns the best ``k`` documents by BM25, ``read`` a document by id (cut at
    ``read_chars`` characters). The index is built beside the corpus once (``-E rebuild=true``
    forces it) and memory-mapped afterwards."""
    if not corpus:
        raise ValueError("the docs environment needs -E corpus=<collection.jsonl>")
    path = Path(corpus).expanduser().resolve()
    env = DocsEnv(
        CorpusIndex(path, rebuild=str(rebuild).lower() in ("1", "true", "yes")),
        int(k),
        int(snippet_chars),
        int(read_chars),
    )
    env.world_options = {"corpus": str(path)}
    return env


__all__ = [
    "CorpusError",
    "CorpusIndex",
    "DocsEnv",
    "Document",
    "build_index",
    "make_docs_env",
    "tokenize",
]
