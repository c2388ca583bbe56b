"""The offline wiki on real HotpotQA distractor items (tests/data/README.md): every supporting
title is found by its plain-text title and every supporting sentence is shown whole by Lookup."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from raleval.envs.wiki import OfflineBackend, WikiEnv, WikiOptions, WikiStore
from raleval.envs.wiki.loaders import build_store
from raleval.envs.wiki.page import normalize_title, split_sentences, title_key

HOTPOT = Path(__file__).parent / "data" / "hotpot_dev_distractor_v1_head.json"
_RESULT = re.compile(r"\(Result \d+ / \d+\) (.*)$", re.S)


@pytest.fixture(scope="module")
def items() -> list[dict]:
    return json.loads(HOTPOT.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> WikiEnv:
    path = tmp_path_factory.mktemp("hotpot") / "store.sqlite"
    counts = build_store(path, [HOTPOT], progress=False)
    assert counts == {"pages": 521, "merged": 1}  # 522 context entries, one title twice
    return WikiEnv(OfflineBackend(WikiStore(path)), WikiOptions(max_obs_tokens=None))


def _supporting(items):
    for q in items:
        context = dict((title, sentences) for title, sentences in q["context"])
        for title, i in q["supporting_facts"]:
            yield title, context[title][i] if i < len(context[title]) else None


def test_every_supporting_title_is_found_by_its_plain_text(items, env):
    titles = sorted({title for title, _ in _supporting(items)})
    assert len(titles) == 106
    missed = []
    for title in titles:
        plain = html.unescape(title)
        observation = env.session().call_sync("Search", {"entity": plain}).observation
        if observation.startswith("Could not find"):
            missed.append((plain, observation))
    assert missed == []


def test_supporting_sentences_are_shown_whole_by_lookup(items, env):
    shown = total = 0
    for title, sentence in _supporting(items):
        if sentence is None:  # HotpotQA points past the paragraph now and then
            continue
        total += 1
        session = env.session()
        session.call_sync("Search", {"entity": html.unescape(title)})
        want = " ".join(html.unescape(sentence).split())
        keyword = max(re.findall(r"\w+", want), key=len)
        for _ in range(100):
            m = _RESULT.match(session.call_sync("Lookup", {"keyword": keyword}).observation)
            if m is None:
                break
            if m.group(1) == want:
                shown += 1
                break
    assert total == 129
    assert shown / total >= 0.99, f"{shown}/{total}"


@pytest.mark.parametrize(
    ("escaped", "plain"),
    [
        ("Tunnels &amp; Trolls", "Tunnels & Trolls"),
        ("I&quot;s", 'I"s'),
        ("Chrome, Smoke &amp; BBQ", "Chrome, Smoke & BBQ"),
    ],
)
def test_titles_with_entities_are_searched_by_their_text(env, escaped, plain):
    for query in (plain, escaped):  # one normalisation on both sides
        observation = env.session().call_sync("Search", {"entity": query}).observation
        assert not observation.startswith("Could not find"), (query, observation)
    assert normalize_title(escaped) == plain
    assert title_key("Cafe\u0301") == title_key("Café")  # NFC


def test_react_miss_and_lookup_strings(env):
    s = env.session()
    assert s.call_sync("Search", {"entity": "Tunnels & Trolls"}).observation.startswith(
        'Tunnels & Trolls (abbreviated "T&T") is a fantasy role-playing game'
    )
    first = s.call_sync("Lookup", {"keyword": "Ken St. Andre"}).observation
    assert first.startswith("(Result 1 / ")
    miss = s.call_sync("Search", {"entity": "Tunnels & Trols"}).observation
    assert miss.startswith("Could not find Tunnels & Trols. Similar: [")
    assert "'Tunnels & Trolls'" in miss
    assert miss.endswith("].")


@pytest.mark.parametrize(
    "sentences",
    [
        ["Edward Davis Wood Jr. (October 10, 1924 – 1978) was a filmmaker.", "He directed films."],
        ["Dr. Robotnik is a character.", "He appears in games."],
        ["The church of St. Mary is old.", "It was rebuilt in 1900."],
        ["The U.S. Army fought there.", "It lost."],
        ["It was written by K. A. Applegate.", "It sold well."],
        ["J. R. R. Tolkien wrote it.", "It was published in 1954."],
        ["He moved to Washington, D.C. in 1990.", "He later left."],
    ],
)
def test_sentences_survive_abbreviations_and_initials(sentences):
    assert split_sentences(" ".join(sentences)) == sentences


def test_a_line_break_is_a_sentence_boundary_the_source_gave():
    assert split_sentences("A line the source ended\nwithout a full stop") == [
        "A line the source ended",
        "without a full stop",
    ]
