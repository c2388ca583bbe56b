"""Wikipedia environment: every Search / Lookup branch on a fixture corpus in each format, the
loaders' error messages, and the live backend against replayed MediaWiki responses."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import httpx
import pytest

from raleval.envs.wiki import OfflineBackend, WikiEnv, WikiOptions, WikiStore
from raleval.envs.wiki.live import LiveBackend
from raleval.envs.wiki.loaders import CorpusFormatError, build_store, detect_format
from raleval.envs.wiki.store import StoreWriter
from raleval.envs.wiki.tools import NO_MORE_RESULTS, NO_PAGE_AFTER_MISS, NO_PAGE_YET
from raleval.records import OutcomeKind

FIXTURES = Path(__file__).parent / "fixtures" / "wiki"


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> WikiStore:
    path = tmp_path_factory.mktemp("wiki") / "store.sqlite"
    sources = sorted(p for p in FIXTURES.iterdir() if p.name != "live_responses.json")
    counts = build_store(path, sources, progress=False)
    assert counts == {"pages": 12, "merged": 3}
    return WikiStore(path)


def session(store: WikiStore, **options):
    return WikiEnv(OfflineBackend(store), WikiOptions(**options)).session()


def obs(sess, tool: str, arg: str) -> str:
    key = "entity" if tool == "Search" else "keyword"
    result = sess.call_sync(tool, {key: arg})
    return result.observation


def test_formats_are_detected():
    assert {
        p.name: detect_format(p) for p in FIXTURES.iterdir() if p.name != "live_responses.json"
    } == {
        "pages.jsonl": "pages",
        "hotpot.json": "hotpotqa",
        "2wiki.json": "hotpotqa",
        "musique.jsonl": "musique",
        "dump.xml": "xml",
    }


def test_search_found_returns_the_first_paragraph(store):
    s = session(store)
    assert obs(s, "Search", "Mercury (planet)") == (
        "Mercury is the first planet from the Sun and the smallest in the Solar System. "
        "It has no moons. Its orbit takes 88 days."
    )
    # case, underscores and extra spaces do not matter
    assert obs(s, "Search", "mercury_(PLANET) ").startswith("Mercury is the first planet")


def test_search_abstract_can_be_the_first_sentences(store):
    s = session(store, abstract="sentences", sentences=4)
    assert obs(s, "Search", "Mercury (planet)") == (
        "Mercury is the first planet from the Sun and the smallest in the Solar System. "
        "It has no moons. Its orbit takes 88 days. Mercury has a large iron core."
    )


def test_search_miss_lists_similar_titles_best_first(store):
    s = session(store)
    assert obs(s, "Search", "Mercuri") == (
        "Could not find Mercuri. Similar: ['Mercury', 'Mercury (planet)', 'Mercury (element)']."
    )
    assert obs(s, "Search", "Qwxyz") == "Could not find Qwxyz. Similar: []."


def test_disambiguation_page_is_a_near_miss_listing_its_meanings(store):
    s = session(store)
    assert obs(s, "Search", "Mercury") == (
        "Could not find Mercury. Similar: ['Mercury (planet)', 'Mercury (element)']."
    )
    assert s.page is None


def test_reval_observation_strings_on_request(store):
    # the LangChain docstore wording R-Eval's agent saw, for comparisons with its numbers
    s = session(store, observations="reval")
    assert obs(s, "Search", "Zurich") == "Could not find [Zurich]. Similar: ['Zürich']"


def test_similar_titles_are_capped(store):
    s = session(store, max_similar=1)
    assert obs(s, "Search", "Mercuri") == "Could not find Mercuri. Similar: ['Mercury']."


def test_unicode_titles(store):
    s = session(store)
    assert obs(s, "Search", "ZÜRICH").startswith("Zürich is the largest city in Switzerland and")
    assert obs(s, "Search", "Zurich") == "Could not find Zurich. Similar: ['Zürich']."
    assert obs(s, "Search", "東京") == "東京は日本の首都である。"


def test_observations_are_whitespace_normalised(store):
    # the page has a newline and a tab inside its first paragraph
    assert obs(session(store), "Search", "Zürich") == (
        "Zürich is the largest city in Switzerland and the capital of the canton of Zürich. "
        "It lies at the north-western tip of Lake Zürich."
    )


def test_empty_page(store):
    s = session(store)
    assert obs(s, "Search", "Empty Page") == "The page Empty Page exists but has no text."
    assert obs(s, "Lookup", "anything") == NO_MORE_RESULTS


def test_lookup_walks_matches_then_restarts_on_a_new_keyword(store):
    s = session(store)
    obs(s, "Search", "Milhouse Van Houten")
    assert obs(s, "Lookup", "nixon") == (
        "(Result 1 / 1) Milhouse was named after U.S. president Richard Nixon, whose middle name "
        "was Milhous."
    )
    assert obs(s, "Lookup", "Nixon") == NO_MORE_RESULTS
    assert obs(s, "Lookup", "groening") == (
        "(Result 1 / 2) He is voiced by Pamela Hayden and created by Matt Groening."
    )
    assert obs(s, "Lookup", "GROENING") == (
        "(Result 2 / 2) Groening chose the name because it was the most unfortunate name he "
        "could think of for a kid."
    )
    assert obs(s, "Lookup", "groening") == NO_MORE_RESULTS
    assert obs(s, "Lookup", "Nixon").startswith("(Result 1 / 1)")  # new keyword: restart


def test_lookup_by_paragraph(store):
    s = session(store, lookup_unit="paragraph")
    obs(s, "Search", "Mercury (planet)")
    assert obs(s, "Lookup", "core") == (
        "(Result 1 / 1) Mercury has a large iron core. The core makes up about 85% of the "
        "planet's radius."
    )


def test_search_resets_the_lookup_cursor(store):
    s = session(store)
    obs(s, "Search", "Mercury (planet)")
    assert obs(s, "Lookup", "core").startswith("(Result 1 / 2)")
    obs(s, "Search", "Mercury (planet)")
    assert obs(s, "Lookup", "core").startswith("(Result 1 / 2)")


def test_lookup_without_a_page_is_misuse(store):
    s = session(store)
    first = s.call_sync("Lookup", {"keyword": "x"})
    assert (first.observation, first.kind, first.cause) == (
        NO_PAGE_YET,
        OutcomeKind.misuse,
        "no_current_page",
    )
    obs(s, "Search", "Qwxyz")
    assert obs(s, "Lookup", "x") == NO_PAGE_AFTER_MISS


def test_observations_are_truncated_with_a_marker(store):
    s = session(store, max_obs_tokens=5)
    assert obs(s, "Search", "Mercury (planet)") == "Mercury is the first planet [... truncated]"


def test_bad_arguments_are_misuse(store):
    s = session(store)
    result = s.call_sync("Search", {"entity": ""})
    assert result.kind is OutcomeKind.misuse and "Usage: Search[entity]" in result.observation
    assert s.call_sync("Search", {"query": "x"}).kind is OutcomeKind.misuse


def test_sessions_do_not_share_state(store):
    env = WikiEnv(OfflineBackend(store))
    a, b = env.session(), env.session()
    obs(a, "Search", "Mercury (planet)")
    assert obs(b, "Lookup", "core") == NO_PAGE_YET


def test_hotpot_pages_are_merged_by_title_across_questions(store):
    page = store.get("Nirvana (band)")
    assert page.paragraphs == [
        "Nirvana was an American rock band formed in Aberdeen, Washington, in 1987.",
        "The band was founded by Kurt Cobain and Krist Novoselic.",
    ]
    # HotpotQA sentences carry their leading space, 2Wiki's do not: both read naturally
    assert (
        store.get("Nevermind")
        .paragraphs[0]
        .endswith("Nirvana. It was released on September 24, 1991.")
    )
    assert "actor. He appeared" in store.get("Alexander Kerst").paragraphs[0]


def test_musique_paragraphs_become_one_page(store):
    assert store.get("DGC Records").paragraphs == [
        "DGC Records is an American record label founded by David Geffen in 1990.",
        "Its first release was in 1990.",
    ]


def test_xml_dump_pages_redirects_and_markup(store):
    s = session(store)
    assert obs(s, "Search", "UK") == (
        "The United Kingdom is a country in north-western Europe. Its capital is London."
    )
    assert store.get("United Kingdom").paragraphs[1:] == [
        "History",
        "The Acts of Union 1707 joined England and Scotland.",
    ]
    assert store.get("Talk:United Kingdom") is None  # other namespaces are skipped


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        (
            "bad.jsonl",
            '{"title": "A", "text": "x"}\n{"title": 3, "text": "y"}\n',
            r"bad.jsonl:2: field 'title': expected str",
        ),
        (
            "bad2.jsonl",
            '{"title": "A", "text": "x"}\n{not json\n',
            r"bad2.jsonl:2: field '<json>': invalid JSON",
        ),
        (
            "hp.json",
            '[{"context": [["T", "not a list"]]}]',
            r"hp.json:record 0: field 'context\[0\]'",
        ),
        (
            "mu.jsonl",
            '{"paragraphs": [{"title": "T"}]}\n',
            r"mu.jsonl:1: paragraphs\[0\]: field 'paragraph_text': missing",
        ),
        (
            "d.xml",
            "<mediawiki><page><title>A</title></mediawiki>",
            r"d.xml:1: field '<xml>': malformed XML",
        ),
    ],
)
def test_malformed_files_name_path_line_and_field(tmp_path, name, content, expected):
    src = tmp_path / name
    src.write_text(content, encoding="utf-8")
    fmt = {"hp.json": "hotpotqa", "mu.jsonl": "musique"}.get(name)
    with pytest.raises(CorpusFormatError, match=expected):
        build_store(tmp_path / "out.sqlite", [src], fmt=fmt, progress=False)


def test_registered_env_builds_the_generated_encyclopedia():
    from raleval import registry

    env = registry.envs.get("wiki")(size="tiny")
    assert [t.react_signature() for t in env.tools] == ["Search[entity]", "Lookup[keyword]"]
    assert len(env.backend.store) > 400
    with pytest.raises(ValueError, match="needs -E path"):
        registry.envs.get("wiki")(backend="offline")


def test_generated_pages_disambiguate_namesakes():
    from raleval.envs.scholar.store import load_world
    from raleval.envs.wiki.generated import person_titles, scholar_pages

    store = load_world("tiny", 0)
    pages = dict(scholar_pages(store))
    titles = person_titles(store)
    qualified = [t for t in titles.values() if "(" in t]
    assert qualified, "the tiny world has namesakes"
    bare = qualified[0].split(" (")[0]
    assert pages[bare].startswith(f"{bare} may refer to:")
    assert len(pages) == len({k.casefold() for k in pages})  # titles are unique


# --- live backend, replayed ---------------------------------------------------------------


class ReplayTransport(httpx.AsyncBaseTransport):
    """Answers MediaWiki API requests from recorded responses; never touches the network."""

    def __init__(self) -> None:
        data = json.loads((FIXTURES / "live_responses.json").read_text())
        self.recordings = {tuple(r["key"]): list(r["responses"]) for r in data["recordings"]}
        self.requests: list[dict[str, str]] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        params = dict(request.url.params)
        self.requests.append(params)
        assert request.headers["User-Agent"].startswith("raleval/")
        key = (
            ("search", params["srsearch"])
            if params.get("list") == "search"
            else (params.get("prop"), params.get("titles"))
        )
        queue = self.recordings[key]
        response = queue.pop(0) if len(queue) > 1 else queue[0]
        if response.get("timeout"):
            raise httpx.ReadTimeout("timed out", request=request)
        return httpx.Response(
            response["status"], headers=response.get("headers"), json=response["json"]
        )


def live_env(transport, **kwargs) -> WikiEnv:
    kwargs.setdefault("retry_wait_s", 0.01)
    kwargs.setdefault("requests_per_second", 0)
    return WikiEnv(LiveBackend(transport=transport, cache_path=None, **kwargs))


def run(coro):
    return asyncio.run(coro)


def test_live_found_and_lookup():
    s = live_env(ReplayTransport()).session()

    async def go():
        first = await s.call("Search", {"entity": "Albert Einstein"})
        look = await s.call("Lookup", {"keyword": "ulm"})
        return first, look

    first, look = run(go())
    assert (first.kind, first.observation) == (
        OutcomeKind.ok,
        "Albert Einstein was a German-born theoretical physicist. "
        "He developed the theory of relativity.",
    )
    assert look.observation == "(Result 1 / 1) Einstein was born in Ulm in 1879."


def test_live_not_found_lists_search_results():
    s = live_env(ReplayTransport()).session()
    result = run(s.call("Search", {"entity": "Albert Einsten"}))
    assert result.kind is OutcomeKind.ok
    assert result.observation == (
        "Could not find Albert Einsten. Similar: "
        "['Albert Einstein', 'Einstein family', 'Hans Albert Einstein']."
    )


def test_live_redirect_is_followed():
    s = live_env(ReplayTransport()).session()
    result = run(s.call("Search", {"entity": "UK"}))
    assert result.observation == "The United Kingdom is a country in north-western Europe."
    assert s.page.title == "United Kingdom"


def test_live_429_waits_for_retry_after_then_succeeds():
    transport = ReplayTransport()
    s = live_env(transport).session()
    start = time.monotonic()
    result = run(s.call("Search", {"entity": "Busy Page"}))
    assert result.observation == "Busy Page answered after the rate limit lifted."
    assert time.monotonic() - start >= 1.0  # Retry-After: 1, not the 0.01 s backoff
    assert [r.get("titles") for r in transport.requests] == ["Busy Page", "Busy Page"]


def test_live_timeout_is_a_tool_fault_not_a_miss():
    transport = ReplayTransport()
    s = live_env(transport, max_retries=2).session()
    result = run(s.call("Search", {"entity": "Slow Page"}))
    assert (result.kind, result.cause) == (OutcomeKind.tool_fault, "timeout")
    assert "Could not find" not in result.observation
    assert len(transport.requests) == 3  # the first try and two retries


def test_live_server_error_is_a_tool_fault():
    s = live_env(ReplayTransport(), max_retries=1).session()
    result = run(s.call("Search", {"entity": "Broken Page"}))
    assert (result.kind, result.cause) == (OutcomeKind.tool_fault, "http_error")


def test_live_rate_limit_spaces_requests():
    transport = ReplayTransport()
    env = live_env(transport, requests_per_second=20)

    async def go():
        await asyncio.gather(
            *(env.session().call("Search", {"entity": "Albert Einstein"}) for _ in range(5))
        )

    start = time.monotonic()
    run(go())
    assert time.monotonic() - start >= 0.19  # five requests at 20/s: four gaps of 50 ms


def test_live_http_cache_makes_a_repeat_free(tmp_path):
    transport = ReplayTransport()
    env = WikiEnv(
        LiveBackend(transport=transport, cache_path=tmp_path / "http.sqlite", requests_per_second=0)
    )

    async def go():
        a = await env.session().call("Search", {"entity": "Albert Einstein"})
        b = await env.session().call("Search", {"entity": "Albert Einstein"})
        return a, b

    a, b = run(go())
    assert a.observation == b.observation
    assert len(transport.requests) == 1
    # a new backend (a new run) reads the same cache file
    transport2 = ReplayTransport()
    env2 = WikiEnv(
        LiveBackend(
            transport=transport2, cache_path=tmp_path / "http.sqlite", requests_per_second=0
        )
    )
    run(env2.session().call("Search", {"entity": "Albert Einstein"}))
    assert transport2.requests == []


def test_saved_title_index_and_vocabulary_agree_with_the_store(store):
    folder = store.path.with_name(f"{store.path.stem}.index")
    assert {p.name for p in folder.iterdir()} == {"titles", "title_text", "vocab", "vocab_docs.npy"}
    reopened = WikiStore(store.path)
    in_sqlite = [r[0] for r in reopened._query("SELECT title FROM pages ORDER BY id")]
    assert reopened.titles() == in_sqlite
    vocab = dict(reopened._query("SELECT term, doc FROM pages_vocab"))
    assert reopened._doc_counts([*vocab, "zzznotaword"]) == vocab


def test_an_extended_store_is_indexed_again(tmp_path):
    path = tmp_path / "grow.sqlite"
    with StoreWriter(path) as w:
        w.add_page("First Page", "Lone text.")
    WikiStore(path).warm()
    with StoreWriter(path) as w:  # extending the store changes what the index was built from
        w.add_page("Second Page", "Lone again, with more text.")
    grown = WikiStore(path)
    assert grown.titles() == ["First Page", "Second Page"]
    assert grown._doc_counts(["lone", "more", "nope"]) == {"lone": 2, "more": 1}
    assert grown.similar("Secnd Page", 1) == ["Second Page"]
