"""Which sentence segmenter Lookup uses: agreement with HotpotQA's own sentence splits and with
abbreviation-heavy pairs (the table in envs/wiki/page.py comes from this script).

    pip install pysbd syntok sentencex nupunkt blingfire
    python benchmarks/sentence_segmenters.py

Each HotpotQA context paragraph of tests/data/hotpot_dev_distractor_v1_head.json is joined and
re-split; a gold sentence counts when it comes back exactly. Segmenters not installed are skipped.
"""

from __future__ import annotations

import html
import importlib.util
import json
import time
from collections.abc import Callable
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "hotpot_dev_distractor_v1_head.json"
PAIRS = [
    ["Edward Davis Wood Jr. (October 10, 1924 – 1978) was an American filmmaker.", "He acted."],
    ["Dr. Robotnik is a character.", "He appears in games."],
    ["The church of St. Mary is old.", "It was rebuilt in 1900."],
    ["The U.S. Army fought there.", "It lost."],
    ["It was written by K. A. Applegate.", "It sold well."],
    ["Gerald R. Ford was president.", "He was born in Omaha."],
    ["J. R. R. Tolkien wrote it.", "It was published in 1954."],
    ["He moved to Washington, D.C. in 1990.", "He later left."],
    ["Mr. Smith and Mrs. Jones met at 5 p.m. on Friday.", "They talked."],
    ["The population was 2.3 million (est. 2010).", "It grew."],
    ["It is located in St. Louis, Missouri.", "The city is large."],
    ["She studied at the U.K. branch of M.I.T. for a year.", "Then she left."],
]


def segmenters() -> dict[str, Callable[[str], list[str]]]:
    out: dict[str, Callable[[str], list[str]]] = {
        'ReAct ". " split': lambda t: [s if s.endswith(".") else s + "." for s in t.split(". ")],
    }
    have = lambda name: importlib.util.find_spec(name) is not None  # noqa: E731
    if have("sentencex"):
        import sentencex

        out["sentencex"] = lambda t: list(sentencex.segment("en", t))
    if have("pysbd"):
        import pysbd

        seg = pysbd.Segmenter(language="en", clean=False)
        out["pysbd"] = seg.segment
    if have("syntok"):
        import syntok.segmenter as syn

        out["syntok"] = lambda t: [
            "".join(tok.spacing + tok.value for tok in sent).strip()
            for para in syn.process(t)
            for sent in para
        ]
    if have("nupunkt"):
        from nupunkt import sent_tokenize

        out["nupunkt"] = sent_tokenize
    if have("blingfire"):
        import blingfire

        out["blingfire"] = lambda t: blingfire.text_to_sentences(t).split("\n")
    return out


def _split(f: Callable[[str], list[str]], text: str) -> list[str]:
    return [s for s in (" ".join(x.split()) for x in f(text)) if s]


def main() -> None:
    paragraphs = {}
    for q in json.loads(DATA.read_text(encoding="utf-8")):
        for title, sentences in q["context"]:
            gold = [" ".join(html.unescape(s).split()) for s in sentences]
            paragraphs[title] = [s for s in gold if s]
    n_gold = sum(map(len, paragraphs.values()))
    for name, f in segmenters().items():
        t0 = time.perf_counter()
        kept = exact = 0
        for gold in paragraphs.values():
            got = _split(f, " ".join(gold))
            kept += len(set(gold) & set(got))
            exact += got == gold
        pairs = sum(_split(f, " ".join(p)) == p for p in PAIRS)
        print(
            f"{name:18s} gold sentences kept {kept}/{n_gold} = {kept / n_gold:.1%}  "
            f"paragraphs exact {exact}/{len(paragraphs)}  abbreviation pairs {pairs}/{len(PAIRS)}  "
            f"{time.perf_counter() - t0:.2f} s"
        )


if __name__ == "__main__":
    main()
