"""Fuzzy search over millions of strings: token blocking in front of rapidfuzz.

A linear scan (rapidfuzz over every string, or BM25 over every document as CRAG's mock API does)
costs hundreds of milliseconds at a million names. This index first finds candidates through
token postings: each query token is expanded to near-identical vocabulary tokens (typos,
case), a token running two words together ("ofvalokator") is also read as the two words, the
strings holding the most of the query's words are kept (usually those holding all of them),
and only those candidates are scored with rapidfuzz.

Everything the index holds is a few flat arrays (the strings and the sorted vocabulary packed as
UTF-8 buffers with offsets, postings as one int32 array with offsets), so :meth:`FuzzyIndex.save`
writes it to a folder and :meth:`FuzzyIndex.load` maps it back in milliseconds: a world opens
without re-tokenising its millions of strings, and processes that open it share the pages. The
first misspelt query decodes the vocabulary once (tens of milliseconds, ~60 bytes per token).

The trade-off: a typo'd token is matched within buckets of a similar length that share its
first or last three letters (failing that two, failing that both its first and its last
letter), so a *different* string that a full scan would score slightly higher can be missed.
The string the user meant is found whenever a full scan finds it with one character typed
wrong, space included (property tests check this), unless the typo spells another word and
the query's words still all occur together in some string ("Kamiro Season" finds "The Season
of Kamiro", not "Kamipo Season"): 42 of 228,710 such queries over the test's titles (every
fifth title, every position, every letter), 25 of 179,021 over its names. With two or more
typos the name can be lost: typos at both ends of a token ("Rovoldra" -> "aovoldua") leave no
blocking key, and a bucket's closest eight tokens can crowd the intended one out.
"""

from __future__ import annotations

import bisect
import contextlib
import hashlib
import itertools
import json
import mmap
import os
import re
import shutil
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from rapidfuzz import fuzz, process

_TOKEN = re.compile(r"[a-z0-9]+")
_SEP = "\x00"
_TOKEN_OR_SEP = re.compile(r"[a-z0-9]+|\x00")
MAX_CANDIDATES = 20_000
# Tokens are [a-z0-9]+, so every token with a given prefix sorts before prefix + "{".
_AFTER_Z = "{"
INDEX_FORMAT = 2
# A bucket of vocabulary tokens: their ids and the tokens, in the same order.
_Bucket = tuple[np.ndarray, tuple[str, ...]]
MAX_HELD = 1 << 21  # tokens held in memoised buckets (~32 MB: a reference and an id each)


def _hash64(token: str) -> int:
    """A stable, non-negative 63-bit hash (Python's str hash changes per process)."""
    return int.from_bytes(hashlib.blake2b(token.encode(), digest_size=8).digest(), "little") >> 1


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def _mapped(path: Path) -> np.ndarray:
    """A read-only memory map of a .npy file, as a plain array (np.memmap slices are slow)."""
    return np.load(path, mmap_mode="r").view(np.ndarray)


class StringTable(Sequence[str]):
    """Strings packed in one UTF-8 buffer with offsets: millions of titles cost their bytes,
    not millions of Python objects, and the buffer can be a read-only memory map."""

    def __init__(self, data: bytes | mmap.mmap, offsets: np.ndarray) -> None:
        self._data = data
        self.offsets = offsets
        self._n = len(offsets) - 1

    @classmethod
    def pack(cls, strings: Iterable[str]) -> StringTable:
        strings = strings if isinstance(strings, list) else list(strings)
        joined = "".join(strings)
        if joined.isascii():  # one character, one byte: no string encoded on its own
            sizes = np.fromiter(map(len, strings), np.int64, len(strings))
            data = joined.encode()
        else:
            encoded = list(map(str.encode, strings))
            sizes = np.fromiter(map(len, encoded), np.int64, len(encoded))
            data = b"".join(encoded)
        offsets = np.zeros(len(strings) + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        return cls(data, offsets)

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self._n))]
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError(i)
        return self._data[int(self.offsets[i]) : int(self.offsets[i + 1])].decode()

    def __iter__(self) -> Iterator[str]:
        data, offs = self._data, self.offsets.tolist()
        for a, b in itertools.pairwise(offs):
            yield data[a:b].decode()

    def lower_bound(self, key: str, lo: int = 0) -> int:
        """The first position whose string is not below ``key`` (the table must be sorted;
        UTF-8 byte order is code point order)."""
        data, offsets, target = self._data, self.offsets, key.encode()
        hi = self._n
        while lo < hi:
            mid = (lo + hi) // 2
            if data[offsets[mid] : offsets[mid + 1]] < target:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def between(self, lo: int, hi: int) -> list[str]:
        """The strings at positions lo..hi-1, with one decode of the bytes they occupy
        together (a decode per string is several times slower)."""
        if hi <= lo:
            return []
        start, end = int(self.offsets[lo]), int(self.offsets[hi])
        text = self._data[start:end].decode()
        if len(text) != end - start:  # not ASCII: byte offsets are not character offsets
            return self[lo:hi]
        cuts = (self.offsets[lo : hi + 1] - start).tolist()
        return [text[x:y] for x, y in itertools.pairwise(cuts)]

    def take(self, ids: np.ndarray) -> list[str]:
        """The strings at ``ids``, in that order."""
        data = self._data
        starts, ends = self.offsets[ids].tolist(), self.offsets[ids + 1].tolist()
        return [data[a:b].decode() for a, b in zip(starts, ends, strict=True)]

    def save(self, folder: Path, name: str) -> None:
        (folder / f"{name}.utf8").write_bytes(self._data)
        np.save(folder / f"{name}.offsets.npy", self.offsets)

    @classmethod
    def load(cls, folder: Path, name: str) -> StringTable:
        offsets = _mapped(folder / f"{name}.offsets.npy")
        path = folder / f"{name}.utf8"
        if path.stat().st_size == 0:
            return cls(b"", offsets)
        with open(path, "rb") as fh:
            data = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        return cls(data, offsets)


# Bytes that are token characters ([a-z0-9]) or the separator stay; every other byte becomes a
# space. Text is lower-cased before it is encoded, and every byte of a non-ASCII character is
# >= 0x80, so splitting the translated UTF-8 on spaces finds exactly the tokens ``_TOKEN``
# finds in the lower-cased text, at a fraction of a regex's cost.
_KEEP = bytes(c if (48 <= c <= 57 or 97 <= c <= 122 or c == 0) else 32 for c in range(256))


class TokenisedStrings:
    """Postings of every token of ``strings``: (sorted vocabulary, offsets, string ids).

    A chunk of strings is joined with the separator as a token of its own, and split by one
    byte translation; tokens become integer codes through a dict lookup mapped in C, and the
    string ids come from counting separators, so no Python code runs per string or per token:
    three million titles take seconds."""

    def __init__(self, strings: Sequence[str], chunk: int = 200_000) -> None:
        sep = _SEP.encode()
        # a new token gets the next code as it is looked up, without a pass of its own
        ids: defaultdict[bytes, int] = defaultdict(itertools.count().__next__)
        ids[sep]  # code 0
        codes, owners, done = [], [], 0
        it = iter(strings)
        while True:
            part = list(itertools.islice(it, chunk))
            if not part:
                break
            text = f" {_SEP} ".join(part).lower()
            if text.count(_SEP) != len(part) - 1:  # a string holds the separator itself
                text = f" {_SEP} ".join(s.replace(_SEP, " ") for s in part).lower()
            found = text.encode().translate(_KEEP).split()
            code = np.fromiter(map(ids.__getitem__, found), np.int64, len(found))
            is_sep = code == 0
            owner = done + np.cumsum(is_sep) - is_sep
            codes.append(code[~is_sep])
            owners.append(owner[~is_sep])
            done += len(part)
        del ids[sep]
        words = sorted(ids)  # ASCII: byte order is the strings' order
        self.vocab = [w.decode() for w in words]
        rank = np.zeros(len(words) + 1, dtype=np.int64)
        rank[np.fromiter(map(ids.__getitem__, words), np.int64, len(words))] = np.arange(len(words))
        # One sort of (token, string id) packed in an int64 (ids fit in 32 bits) orders the
        # postings by token and string id; a token twice in one string is then two equal
        # neighbours, of which one is kept.
        keys = (rank[np.concatenate(codes)] << 32) if codes else np.empty(0, np.int64)
        if codes:
            keys |= np.concatenate(owners)
        keys.sort()
        first = np.ones(len(keys), dtype=bool)
        first[1:] = keys[1:] != keys[:-1]
        keys = keys[first]
        self.postings = (keys & 0xFFFFFFFF).astype(np.int32)
        self.offsets = np.searchsorted(keys >> 32, np.arange(len(words) + 1)).astype(np.int64)


class FuzzyIndex:
    """Maps strings to integer ids and answers fuzzy queries in milliseconds."""

    def __init__(self, strings: Sequence[str], token_cutoff: float = 70.0) -> None:
        self.token_cutoff = token_cutoff
        self.strings = strings if isinstance(strings, StringTable) else StringTable.pack(strings)
        built = TokenisedStrings(strings)
        vocab = StringTable.pack(built.vocab)
        backwards = [w[::-1] for w in built.vocab]
        reverse = sorted(range(len(backwards)), key=backwards.__getitem__)
        hashes = np.fromiter(map(_hash64, built.vocab), np.int64, len(built.vocab))
        by_hash = np.argsort(hashes, kind="stable").astype(np.int32)
        self._set_arrays(
            vocab,
            built.offsets,
            built.postings,
            StringTable.pack(map(backwards.__getitem__, reverse)),
            np.asarray(reverse, dtype=np.int32),
            hashes[by_hash],
            by_hash,
        )

    def _set_arrays(
        self,
        vocab: StringTable,
        post_offsets: np.ndarray,
        postings: np.ndarray,
        reversed_vocab: StringTable,
        reversed_ids: np.ndarray,
        hashes: np.ndarray,
        hash_ids: np.ndarray,
    ) -> None:
        self.vocab = vocab  # sorted
        self._post_offsets = post_offsets
        self._postings = postings
        self._rvocab = reversed_vocab  # every token spelt backwards, sorted
        self._rvocab_ids = reversed_ids  # ... and its position in ``vocab``
        # Exact token lookup: one searchsorted over sorted token hashes per query, where a
        # binary search in Python over the mapped vocabulary cost ~10 us per token.
        self._hashes = hashes  # sorted
        self._hash_ids = hash_ids  # ... and each one's position in ``vocab``
        self._buckets: dict[tuple[Any, ...], _Bucket] = {}
        self._held = 0  # tokens the buckets hold
        self._words: tuple[tuple[str, ...], tuple[str, ...], np.ndarray, np.ndarray] | None = None
        self._seen: dict[str, int | None] = {}

    # --- persistence ---------------------------------------------------------------------------
    def save(self, folder: Path, stamp: dict[str, str] | None = None) -> None:
        """Write the index to ``folder`` (replacing what is there), with ``stamp`` (what it
        was built from) for :func:`cached_index` to compare."""
        folder = Path(folder)
        tmp = folder.with_name(f".{folder.name}.{os.getpid()}.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        self.strings.save(tmp, "strings")
        self.vocab.save(tmp, "vocab")
        self._rvocab.save(tmp, "rvocab")
        np.save(tmp / "rvocab_ids.npy", self._rvocab_ids)
        np.save(tmp / "hashes.npy", self._hashes)
        np.save(tmp / "hash_ids.npy", self._hash_ids)
        np.save(tmp / "post_offsets.npy", self._post_offsets)
        np.save(tmp / "postings.npy", self._postings)
        meta = {
            "format": INDEX_FORMAT,
            "strings": len(self),
            "cutoff": self.token_cutoff,
            "stamp": stamp or {},
        }
        (tmp / "index.json").write_text(json.dumps(meta))
        shutil.rmtree(folder, ignore_errors=True)
        os.replace(tmp, folder)

    @classmethod
    def load(cls, folder: Path) -> FuzzyIndex:
        """Map an index written by :meth:`save` (read-only; pages load on first touch)."""
        folder = Path(folder)
        meta = json.loads((folder / "index.json").read_text())
        if meta.get("format") != INDEX_FORMAT:
            raise ValueError(f"{folder}: index format {meta.get('format')}, want {INDEX_FORMAT}")
        index = cls.__new__(cls)
        index.token_cutoff = float(meta["cutoff"])
        index.strings = StringTable.load(folder, "strings")
        index._set_arrays(
            StringTable.load(folder, "vocab"),
            _mapped(folder / "post_offsets.npy"),
            _mapped(folder / "postings.npy"),
            StringTable.load(folder, "rvocab"),
            _mapped(folder / "rvocab_ids.npy"),
            _mapped(folder / "hashes.npy"),
            _mapped(folder / "hash_ids.npy"),
        )
        if len(index) != meta["strings"]:
            raise ValueError(f"{folder}: {len(index)} strings, index.json says {meta['strings']}")
        return index

    def __len__(self) -> int:
        return len(self.strings)

    # --- lookup --------------------------------------------------------------------------------
    def _token_ids(self, toks: list[str]) -> list[int | None]:
        """Vocabulary ids of ``toks`` (None for a token not in the vocabulary)."""
        # Queries repeat their words: a bounded memo answers most of them. It is only ever a
        # cache (answers come from ``known``), so threads sharing the index cannot lose one.
        seen = self._seen
        known = {t: seen[t] for t in toks if t in seen}
        new = [t for t in toks if t not in known]
        if new and len(self._hashes):
            hashes, n = self._hashes, len(self._hashes)
            for tok in new:
                # bisect over the mapped array: a few tokens per query cost less this way
                # than numpy's per-call overhead
                h = _hash64(tok)
                p = bisect.bisect_left(hashes, h)
                tid = int(self._hash_ids[p]) if p < n and hashes[p] == h else None
                if tid is not None and self.vocab[tid] != tok:  # a 63-bit collision
                    i = self.vocab.lower_bound(tok)
                    tid = i if i < len(self.vocab) and self.vocab[i] == tok else None
                known[tok] = tid
            if len(seen) + len(new) > 1 << 16:
                seen.clear()
            seen.update((t, known[t]) for t in new)
        return [known.get(t) for t in toks]

    def _posting(self, tid: int) -> np.ndarray:
        return self._postings[self._post_offsets[tid] : self._post_offsets[tid + 1]]

    def _spellings(self) -> tuple[tuple[str, ...], tuple[str, ...], np.ndarray, np.ndarray]:
        """Every vocabulary token as a Python string, in vocabulary order and in reversed-
        spelling order (spelt forwards), with their lengths: made once, on the first misspelt
        query (tens of milliseconds and ~60 bytes per token), so that a bucket is a slice of
        a list. Decoding each bucket from the mapped table instead cost 5-8 ms per cold
        bucket at CRAG's large size (30,000 tokens end in "or"), most of a misspelt query."""
        if self._words is None:
            # tuples of strings: the garbage collector stops tracking them after one pass,
            # where it would walk a list's hundreds of thousands of items at every collection
            words = tuple(self.vocab.between(0, len(self.vocab)))
            lengths = np.diff(self.vocab.offsets)
            backwards = tuple(map(words.__getitem__, self._rvocab_ids.tolist()))
            self._words = (words, backwards, lengths, lengths[self._rvocab_ids])
        return self._words

    def _bucket(self, forward: bool, prefix: str, lo_len: int, hi_len: int) -> _Bucket:
        """Vocabulary tokens of length lo..hi that start with ``prefix`` (or, not ``forward``,
        end with it spelt backwards), in a fixed order. Memoised: queries share buckets."""
        key = (forward, prefix, lo_len)
        found = self._buckets.get(key)
        if found is None:
            words, backwards, lengths, rlengths = self._spellings()
            table = self.vocab if forward else self._rvocab
            lo = table.lower_bound(prefix)
            hi = table.lower_bound(prefix + _AFTER_Z, lo)
            size = (lengths if forward else rlengths)[lo:hi]
            keep = (size >= lo_len) & (size <= hi_len)
            # forward in vocabulary order; backward in reversed-spelling order, not by id:
            # one fixed order either way, so ties among equal scores are deterministic
            ids = np.flatnonzero(keep) + lo if forward else self._rvocab_ids[lo:hi][keep]
            found = (ids, tuple(itertools.compress((words if forward else backwards)[lo:hi], keep)))
            self._memo(key, found)
        return found

    def _memo(self, key: tuple[Any, ...], bucket: _Bucket) -> None:
        # bounded by the tokens held (a large world's bucket can hold 30,000), not by count
        self._held += len(bucket[0])
        if self._held > MAX_HELD:
            self._buckets.clear()
            self._held = len(bucket[0])
        self._buckets[key] = bucket

    def _ends(self, first: str, last: str, lo_len: int, hi_len: int) -> _Bucket:
        """Vocabulary tokens of length lo..hi that start with ``first`` and end with
        ``last``, in vocabulary order; memoised with the buckets."""
        key = ("ends", first, last, lo_len)
        found = self._buckets.get(key)
        if found is None:
            ids, words = self._bucket(True, first, lo_len, hi_len)
            keep = np.isin(ids, self._bucket(False, last, lo_len, hi_len)[0])
            found = (ids[keep], tuple(itertools.compress(words, keep)))
            self._memo(key, found)
        return found

    def _near(self, tok: str, last_resort: bool = True) -> list[int]:
        """Vocabulary ids of the tokens spelt most like ``tok`` (at most eight, closest first;
        ``tok`` itself among them when it is in the vocabulary); without ``last_resort``,
        not among the tokens that share only its first and last letter."""
        if len(tok) <= 2:
            return []
        # Out-of-vocabulary tokens (typos) are matched within buckets of similar length that
        # share the first or last three letters (one edit in a token of six or more letters
        # always leaves one of the two intact), failing that two (four or more letters), and
        # only when those hold nothing close, among the tokens that share both the first and
        # the last letter (an edit inside a token keeps both). A large world's vocabulary is
        # hundreds of thousands of tokens: scoring every token that shares either first or
        # last letter took ~20 ms per typo (the p99 of CRAG's name searches at large), every
        # one sharing two letters 2-4 ms (30,000 song-title tokens end in "or").
        lo_len, hi_len = len(tok) - 2, len(tok) + 2
        for k in ((3, 2) if len(tok) >= 6 else (2,)) + ((1,) if last_resort else ()):
            if k > 1:
                pools = [
                    self._bucket(True, tok[:k], lo_len, hi_len),
                    self._bucket(False, tok[: -k - 1 : -1], lo_len, hi_len),
                ]
            else:
                pools = [self._ends(tok[0], tok[-1], lo_len, hi_len)]
            # Each pool scored on its own (a token in both scores the same in both); the
            # closest eight overall, ties in the pools' fixed orders, then by id.
            scored = {
                int(ids[j]): score
                for ids, words in pools
                for _, score, j in process.extract(
                    tok, words, scorer=fuzz.ratio, score_cutoff=self.token_cutoff, limit=8
                )
            }
            if scored:
                return sorted(scored, key=lambda i: (-scored[i], i))[:8]
        return []

    def _splits(self, tok: str) -> list[int]:
        """Vocabulary ids of two words that ``tok`` runs together, its space dropped
        ("ofvalokator") or typed as another character ("ofxvalokator"); each word at least
        two letters."""
        pairs = []
        for i in range(2, len(tok) - 1):
            pairs.append((tok[:i], tok[i:]))
            if i < len(tok) - 2:
                pairs.append((tok[:i], tok[i + 1 :]))
        words = list(dict.fromkeys(w for pair in pairs for w in pair))
        ids = dict(zip(words, self._token_ids(words), strict=True))
        found: dict[int, None] = {}
        for a, b in pairs:
            first, second = ids[a], ids[b]
            if first is not None and second is not None:
                found[first] = found[second] = None
        return list(found)

    def _group(self, ids: list[int]) -> list[np.ndarray]:
        """The postings of ``ids``: a union kept as its parts (the near spellings of "the"
        hold hundreds of thousands of strings; merging them cost more than the search)."""
        return [self._posting(t) for t in ids]

    def candidates(self, query: str) -> np.ndarray:
        """Ids of the strings worth scoring against ``query``: those holding every query
        token's word (or a near spelling of it) that can be held together."""
        toks = list(dict.fromkeys(tokens(query)))
        groups: list[list[np.ndarray]] = []
        known: list[tuple[int, str, int]] = []  # (group, token, id) of in-vocabulary tokens
        run_together: list[int] = []
        for tok, tid in zip(toks, self._token_ids(toks), strict=True):
            if tid is not None:
                known.append((len(groups), tok, tid))
                groups.append([self._posting(tid)])
                continue
            # two words run together ("ofvalokator") are looked up as the two words; the
            # expensive last resort for a misspelt word is then not needed
            split = self._splits(tok) if len(tok) >= 5 else []
            run_together += split
            near = self._near(tok, last_resort=not split)
            if near:
                groups.append(self._group(near))
        have = {tid for _, _, tid in known}
        groups += [[self._posting(t)] for t in dict.fromkeys(run_together) if t not in have]
        if not groups:
            return np.empty(0, dtype=np.int32)
        result, skipped = _narrow(groups)
        if skipped:
            # A word that no string shares with the others may be a typo that spells another
            # word ("Duncorzor" for "Dunzorzor"), and so may the rarest word, which decided
            # what the others were checked against: look again with their near spellings too.
            rarest = min(known, key=lambda k: _size(groups[k[0]]), default=None)
            again = False
            for g, tok, tid in known:
                if g in skipped or (g, tok, tid) == rarest:
                    near = [t for t in self._near(tok) if t != tid]
                    if near:
                        groups[g] = self._group([tid, *near])
                        again = True
            if again:
                result, skipped = _narrow(groups)
        return result

    def search(
        self, query: str, limit: int = 10, cutoff: float = 60.0, scorer=fuzz.WRatio
    ) -> list[tuple[int, float]]:
        """(id, score) of the best matches, best first; ties keep the lower id first."""
        cand = self.candidates(query)
        if len(cand) == 0:
            return []
        choices = self.strings.take(cand)
        hits = process.extract(
            query, choices, scorer=scorer, score_cutoff=cutoff, limit=limit if limit else None
        )
        out = [(int(cand[j]), float(score)) for _, score, j in hits]
        out.sort(key=lambda h: (-h[1], h[0]))
        return out

    def exact(self, query: str) -> list[int]:
        """Ids whose string equals ``query`` case-insensitively."""
        q = query.strip().lower()
        cand = self.candidates(query)
        return [
            int(i) for i, s in zip(cand, self.strings.take(cand), strict=True) if s.lower() == q
        ]


def _size(parts: list[np.ndarray]) -> int:
    return sum(map(len, parts))


def _member(ids: np.ndarray, group: list[np.ndarray]) -> np.ndarray:
    """Which of ``ids`` are in ``group`` (a union of sorted id arrays): a binary search per
    id, so common words ("for", "the") cost O(candidates), not O(postings)."""
    found = np.zeros(len(ids), dtype=bool)
    for g in group:
        if len(g):
            pos = np.searchsorted(g, ids)
            pos[pos == len(g)] = 0
            found |= g[pos] == ids
    return found


def _within(parts: list[np.ndarray], group: list[np.ndarray]) -> list[np.ndarray]:
    """``parts`` (sorted id arrays) narrowed to the ids in ``group``."""
    out = []
    for part in parts:
        keep = _member(part, group)
        if keep.any():
            out.append(part[keep])
    return out


def _lowest(parts: list[np.ndarray], limit: int) -> np.ndarray:
    """The ``limit`` lowest distinct ids of a union (each part sorted)."""
    if len(parts) == 1:
        return np.asarray(parts[0][:limit])
    if not parts:
        return np.empty(0, dtype=np.int32)
    return np.unique(np.concatenate([p[:limit] for p in parts]))[:limit]


def _narrow(groups: list[list[np.ndarray]]) -> tuple[np.ndarray, set[int]]:
    """The strings that hold the most groups (each group a union of sorted id arrays, one per
    query word), at most MAX_CANDIDATES of them, and the groups they miss.

    Usually one string holds every group: the rarest group narrowed by each other one finds
    it. When none does (a typo expanded to the wrong words, or spelt another word), each
    group small enough to score in turn seeds an intersection with every other group, rarest
    first, that skips a group sharing nothing with what is left; the seeds that hold the
    most groups together win, and their results are joined when they tie. A wrong word must
    neither empty the result nor, when it is the rarest, decide it, and what the other words
    share must be kept (the index once added back every small group instead: all 15,000
    titles holding "hearts" for "Tde Hearts of Nixmelka" at CRAG's large size, 15-20 ms of
    scoring)."""
    sizes = [_size(g) for g in groups]
    order = sorted(range(len(groups)), key=sizes.__getitem__)
    best, tied, missed = -1, [], set()
    for seed in order:
        if best >= 0 and sizes[seed] > MAX_CANDIDATES:
            break
        result, skipped = groups[seed], []
        for i in order:
            if i != seed:
                both = _within(result, groups[i])
                if both:
                    result = both
                else:
                    skipped.append(i)
        if not skipped:
            return _lowest(result, MAX_CANDIDATES), set()
        held = len(groups) - len(skipped)
        if held > best:
            best, tied, missed = held, list(result), set(skipped)
        elif held == best:
            tied += result
            missed.update(skipped)
    return _lowest(tied, MAX_CANDIDATES), missed


def linear_scan(
    query: str, strings: Iterable[str], limit: int = 10, cutoff: float = 60.0
) -> list[tuple[int, float]]:
    """Reference: rapidfuzz over every string (what the index must agree with)."""
    hits = process.extract(
        query, list(strings), scorer=fuzz.WRatio, score_cutoff=cutoff, limit=limit
    )
    return sorted(((j, float(s)) for _, s, j in hits), key=lambda h: (-h[1], h[0]))


def _stamp_matches(folder: Path, stamp: dict[str, str]) -> bool:
    try:
        return json.loads((folder / "index.json").read_text()).get("stamp") == stamp
    except (OSError, ValueError):
        return False


def stamp_index(folder: Path, stamp: dict[str, str]) -> None:
    """Record in an index saved by :meth:`FuzzyIndex.save` what it was built from, after the
    fact (a world's indexes are built while the world itself is still being written)."""
    path = Path(folder) / "index.json"
    meta = json.loads(path.read_text())
    meta["stamp"] = stamp
    tmp = path.with_name(f".index.json.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(meta))
    os.replace(tmp, path)


def cached_strings(
    folder: Path, stamp: dict[str, str], strings: Callable[[], Iterable[str]]
) -> StringTable:
    """Like :func:`cached_index`, for a plain :class:`StringTable` (saved as ``strings``)."""
    folder = Path(folder)
    if _stamp_matches(folder, stamp):
        with contextlib.suppress(OSError, ValueError):
            return StringTable.load(folder, "strings")
    table = StringTable.pack(strings())
    with contextlib.suppress(OSError):
        tmp = folder.with_name(f".{folder.name}.{os.getpid()}.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        table.save(tmp, "strings")
        (tmp / "index.json").write_text(json.dumps({"stamp": stamp}))
        shutil.rmtree(folder, ignore_errors=True)
        os.replace(tmp, folder)
    return table


def cached_index(
    folder: Path, stamp: dict[str, str], strings: Callable[[], Sequence[str]]
) -> FuzzyIndex:
    """The index saved in ``folder`` if it was saved with ``stamp`` (what it was built from),
    else one built from ``strings()`` and saved there for the next process (when the folder
    is writable: a read-only world still opens, only slower)."""
    folder = Path(folder)
    if _stamp_matches(folder, stamp):
        with contextlib.suppress(OSError, ValueError, KeyError):
            return FuzzyIndex.load(folder)
    index = FuzzyIndex(strings())
    with contextlib.suppress(OSError):
        index.save(folder, stamp)
    return index
