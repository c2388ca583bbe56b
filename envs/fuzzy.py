"""Fuzzy search over millions of strings: token blocking in front of rapidfuzz.

A linear scan (rapidfuzz over every string, or BM25 over every document as CRAG's mock API does)
costs hundreds of milliseconds at a million names. This index first finds candidates through
token postings: each query token is expanded to near-identical vocabulary tokens (typos,
case), the rarest tokens' postings are intersected (or united when the intersection is empty),
and only those candidates are scored with rapidfuzz. Postings are int32 numpy arrays.

The trade-off: a typo'd token is matched within buckets of a similar length that share its
first or last two letters (failing that, its first or last letter), so a *different* string
that a full scan would score slightly higher can be missed; the string the user meant is
found whenever a full scan finds it with one typo (a property test checks this; 0 misses in
5,455 random single typos). With two or more it can be lost: typos at both ends of a token
("Rovoldra" -> "aovoldua") leave no blocking key, and a bucket's closest eight tokens can
crowd the intended one out.
"""

from __future__ import annotations

import mmap
import pickle
import re
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from rapidfuzz import fuzz, process

_TOKEN = re.compile(r"[a-z0-9]+")
MAX_CANDIDATES = 20_000


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


class FuzzyIndex:
    """Maps strings to integer ids and answers fuzzy queries in milliseconds."""

    def __init__(self, strings: Sequence[str], token_cutoff: float = 70.0) -> None:
        self.strings = list(strings)
        self.token_cutoff = token_cutoff
        postings: dict[str, list[int]] = {}
        for i, s in enumerate(self.strings):
            for tok in set(tokens(s)):
                postings.setdefault(tok, []).append(i)
        self.vocab = sorted(postings)
        # Postings are built in id order, so every array is sorted (binary search below).
        self._postings = {t: np.asarray(postings[t], dtype=np.int32) for t in self.vocab}
        # Out-of-vocabulary tokens (typos) are matched within buckets of similar length that
        # share the first or last two letters (one substitution in a token of four or more
        # letters always leaves one of the two intact), and only when those hold nothing
        # close, within the wider first- or last-letter buckets: a large world's vocabulary
        # has tens of thousands of tokens per first letter and length, scoring them all
        # took ~20 ms per typo.
        self._buckets: dict[tuple[str, str, int], list[str]] = {}
        for t in self.vocab:
            for key in (("first", t[0]), ("last", t[-1]), ("p2", t[:2]), ("s2", t[-2:])):
                self._buckets.setdefault((*key, len(t)), []).append(t)

    def __len__(self) -> int:
        return len(self.strings)

    # --- on disk: built once, reopened memory-mapped -------------------------------------
    def save(self, folder: Path) -> None:
        """Write the index into ``folder``; :meth:`load` reopens it without rebuilding."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        save_texts(folder / "strings", self.strings)
        lengths = np.fromiter((len(self._postings[t]) for t in self.vocab), np.int64)
        arrays = [self._postings[t] for t in self.vocab]
        np.save(folder / "postings.npy", np.concatenate(arrays) if arrays else _EMPTY)
        np.save(folder / "postings_at.npy", np.concatenate(([0], np.cumsum(lengths))))
        vocab_id = {t: i for i, t in enumerate(self.vocab)}
        ranges: dict[tuple[str, str, int], tuple[int, int]] = {}
        ids: list[int] = []
        for key, toks in self._buckets.items():
            ranges[key] = (len(ids), len(ids) + len(toks))
            ids.extend(vocab_id[t] for t in toks)
        np.save(folder / "buckets.npy", np.asarray(ids, dtype=np.int32))
        meta = {"token_cutoff": self.token_cutoff, "vocab": self.vocab, "buckets": ranges}
        (folder / "meta.pkl").write_bytes(pickle.dumps(meta, protocol=pickle.HIGHEST_PROTOCOL))

    @classmethod
    def load(cls, folder: Path) -> FuzzyIndex:
        """The index :meth:`save` wrote: strings and postings stay on disk (memory-mapped),
        the vocabulary (a few hundred thousand tokens) is read into memory."""
        folder = Path(folder)
        meta = pickle.loads((folder / "meta.pkl").read_bytes())
        index = cls.__new__(cls)
        index.token_cutoff = meta["token_cutoff"]
        index.strings = Texts(folder / "strings")  # type: ignore[assignment]
        index.vocab = meta["vocab"]
        index._postings = _Postings(  # type: ignore[assignment]
            index.vocab,
            np.load(folder / "postings.npy", mmap_mode="r"),
            np.load(folder / "postings_at.npy", mmap_mode="r"),
        )
        index._buckets = _Buckets(  # type: ignore[assignment]
            np.array(index.vocab, dtype=object),
            np.load(folder / "buckets.npy", mmap_mode="r"),
            meta["buckets"],
        )
        return index

    def _expand(self, tok: str) -> list[str]:
        """Vocabulary tokens standing for ``tok``: itself if known, else its near spellings."""
        if tok in self._postings:
            return [tok]
        if len(tok) <= 2:
            return []
        for keys in ((("p2", tok[:2]), ("s2", tok[-2:])), (("first", tok[0]), ("last", tok[-1]))):
            pool: set[str] = set()
            for n in range(len(tok) - 2, len(tok) + 3):
                for key in keys:
                    pool.update(self._buckets.get((*key, n), ()))
            close = process.extract(
                tok, pool, scorer=fuzz.ratio, score_cutoff=self.token_cutoff, limit=8
            )
            if close:
                return [c for c, _, _ in close]
        return []

    def candidates(self, query: str) -> np.ndarray:
        groups: list[np.ndarray] = []
        for tok in dict.fromkeys(tokens(query)):
            expanded = self._expand(tok)
            if not expanded:
                continue
            arrays = [self._postings[t] for t in expanded]
            groups.append(np.unique(np.concatenate(arrays)) if len(arrays) > 1 else arrays[0])
        if not groups:
            return np.empty(0, dtype=np.int32)
        groups.sort(key=len)
        # Narrow the rarest group by each other group it agrees with; membership is a binary
        # search, so common words ("for", "the") cost O(candidates), not O(postings).
        result, disagreed = groups[0], False
        for g in groups[1:]:
            pos = np.searchsorted(g, result)
            pos[pos == len(g)] = 0
            both = result[g[pos] == result]
            if len(both):
                result = both
            else:
                disagreed = True
        if disagreed:
            # Some token shares no string with the others (a typo expanded to the wrong words):
            # add the small groups back, so the string the user meant stays a candidate.
            small = [result, *(g for g in groups if len(g) <= MAX_CANDIDATES)]
            result = np.unique(np.concatenate(small))
        if len(result) > MAX_CANDIDATES:
            result = result[:MAX_CANDIDATES]
        return result

    def search(
        self, query: str, limit: int = 10, cutoff: float = 60.0, scorer=fuzz.WRatio
    ) -> list[tuple[int, float]]:
        """(id, score) of the best matches, best first; ties keep the lower id first."""
        cand = self.candidates(query)
        if len(cand) == 0:
            return []
        choices = [self.strings[i] for i in cand.tolist()]
        hits = process.extract(
            query, choices, scorer=scorer, score_cutoff=cutoff, limit=limit if limit else None
        )
        out = [(int(cand[j]), float(score)) for _, score, j in hits]
        out.sort(key=lambda h: (-h[1], h[0]))
        return out

    def exact(self, query: str) -> list[int]:
        """Ids whose string equals ``query`` case-insensitively."""
        q = query.strip().lower()
        return [i for i in self.candidates(query).tolist() if self.strings[i].lower() == q]


_EMPTY = np.empty(0, dtype=np.int32)


def save_texts(path: Path, texts: Iterable[str]) -> None:
    """Strings as one UTF-8 file (``path``.bin) and their byte offsets (``path``.at.npy)."""
    encoded = [t.encode() for t in texts]
    Path(f"{path}.bin").write_bytes(b"".join(encoded))
    at = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in encoded], out=at[1:])
    np.save(f"{path}.at.npy", at)


class Texts(Sequence[str]):
    """A read-only sequence of strings that :func:`save_texts` wrote, memory-mapped: opening
    costs nothing, each item is decoded when it is read."""

    def __init__(self, path: Path) -> None:
        self._at = np.load(f"{path}.at.npy", mmap_mode="r")
        blob = Path(f"{path}.bin")
        self._blob: Any = b""
        if blob.stat().st_size:  # mmap cannot map an empty file
            with open(blob, "rb") as f:
                self._blob = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)

    def __len__(self) -> int:
        return len(self._at) - 1

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        return self._blob[int(self._at[i]) : int(self._at[i + 1])].decode()


class _Postings:
    """Token -> sorted int32 ids, read from one memory-mapped array (a loaded index's)."""

    def __init__(self, vocab: list[str], ids: np.ndarray, at: np.ndarray) -> None:
        self.vocab, self.ids, self.at = vocab, ids, at

    def _find(self, tok: str) -> int:
        i = bisect_left(self.vocab, tok)
        return i if i < len(self.vocab) and self.vocab[i] == tok else -1

    def __contains__(self, tok: object) -> bool:
        return isinstance(tok, str) and self._find(tok) >= 0

    def __getitem__(self, tok: str) -> np.ndarray:
        i = self._find(tok)
        if i < 0:
            raise KeyError(tok)
        return np.asarray(self.ids[self.at[i] : self.at[i + 1]])


class _Buckets:
    """Blocking key -> vocabulary tokens, read from one memory-mapped id array."""

    def __init__(self, vocab: np.ndarray, ids: np.ndarray, ranges: dict) -> None:
        self.vocab, self.ids, self.ranges = vocab, ids, ranges

    def get(self, key: tuple[str, str, int], default: Any = ()) -> Any:
        span = self.ranges.get(key)
        return default if span is None else self.vocab[self.ids[span[0] : span[1]]]


def linear_scan(
    query: str, strings: Iterable[str], limit: int = 10, cutoff: float = 60.0
) -> list[tuple[int, float]]:
    """Reference: rapidfuzz over every string (what the index must agree with)."""
    hits = process.extract(
        query, list(strings), scorer=fuzz.WRatio, score_cutoff=cutoff, limit=limit
    )
    return sorted(((j, float(s)) for _, s, j in hits), key=lambda h: (-h[1], h[0]))
