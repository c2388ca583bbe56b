"""A CRAG world written to disk and reopened answers every API, builds the same graph and
generates the same tasks as the world it was written from."""

from __future__ import annotations

import random
import sqlite3
import threading

import pytest

from raleval import registry
from raleval.envs.crag import CragEnv
from raleval.envs.crag import store as crag_store
from raleval.envs.crag.store import (
    WorldFile,
    build_world,
    encode,
    open_world,
    save_indexes,
    save_world,
)
from raleval.envs.crag.world import generate_world


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    made = generate_world("tiny", 5)
    path = save_world(made, tmp_path_factory.mktemp("crag") / "tiny.sqlite")
    save_indexes(path)
    return made, WorldFile(path).world()


def _typo(rng: random.Random, text: str) -> str:
    i = rng.randrange(1, len(text) - 1)
    return text[:i] + "x" + text[i + 1 :]


def _calls(w, rng: random.Random) -> list[tuple[str, dict]]:
    """Arguments for every API: real keys of core and noise entities, typos, unknown keys."""

    def some(store, k=4):
        keys = list(store)
        return rng.sample(keys, k)

    names = {
        "company": [c["name"] for c in w.companies.values()],
        "movie": [m["title"] for m in w.movies.values()],
        "person": [p["name"] for p in w.people.values()],
    }
    queries = {kind: rng.sample(v, 4) for kind, v in names.items()}
    calls: list[tuple[str, dict]] = []
    for kind, tool in (
        ("company", "finance_get_company_name"),
        ("movie", "movie_get_movie_info"),
        ("person", "movie_get_person_info"),
    ):
        calls += [(tool, {"query": q}) for q in queries[kind]]
        calls += [(tool, {"query": _typo(rng, q)}) for q in queries[kind]]
    for q in queries["company"] + ["No Such Company"]:
        calls.append(("finance_get_ticker_by_name", {"query": q}))
    for a in [*some(w.artists), "Nobody"]:
        calls.append(("music_search_artist_entity_by_name", {"query": a}))
        for tool in (
            "music_get_artist_birth_place",
            "music_get_artist_birth_date",
            "music_get_lifespan",
            "music_grammy_get_award_count_by_artist",
            "music_grammy_get_award_date_by_artist",
            "music_get_artist_all_works",
        ):
            calls.append((tool, {"artist_name": a}))
        calls.append(("music_get_members", {"band_name": a}))
    for s in [*some(w.songs), "No Song"]:
        calls.append(("music_search_song_entity_by_name", {"query": s}))
        for tool in (
            "music_get_song_author",
            "music_get_song_release_country",
            "music_get_song_release_date",
            "music_grammy_get_award_count_by_song",
        ):
            calls.append((tool, {"song_name": s}))
    for o in [*some(w.open_entities), "Nowhere"]:
        calls += [("open_search_entity_by_name", {"query": o}), ("open_get_entity", {"query": o})]
    for t in [*some(w.companies), "ZZZZZ"]:
        for tool in (
            "finance_get_price_history",
            "finance_get_detailed_price_history",
            "finance_get_dividends_history",
            "finance_get_market_capitalization",
            "finance_get_eps",
            "finance_get_pe_ratio",
            "finance_get_info",
        ):
            calls.append((tool, {"ticker": t}))
    for i in [*some(w.movies), 999_999_999]:
        calls.append(("movie_get_movie_info_by_id", {"id": i}))
    for i in [*some(w.people), 999_999_999]:
        calls.append(("movie_get_person_info_by_id", {"id": i}))
    for year in (1995, 2010, 2021, 2023, 2031):
        calls.append(("movie_get_year_info", {"year": year}))
        for tool in (
            "music_grammy_get_best_artist_by_year",
            "music_grammy_get_best_song_by_year",
            "music_grammy_get_best_album_by_year",
        ):
            calls.append((tool, {"year": year}))
    calls.append(("music_grammy_get_all_awarded_artists", {}))
    week = sorted(w.charts)[len(w.charts) // 2]
    calls.append(("music_get_billboard_rank_date", {"rank": 2, "date": week.isoformat()}))
    calls.append(
        (
            "music_get_billboard_attributes",
            {"date": week.isoformat(), "attribute": "rank", "song_name": w.charts[week][0]["song"]},
        )
    )
    game = w.nba[len(w.nba) // 2]
    calls += [
        ("sports_nba_get_games_on_date", {"date": game["game_date"]}),
        ("sports_nba_get_play_by_play_data_by_game_ids", {"game_ids": [game["game_id"]]}),
        ("sports_soccer_get_games_on_date", {"date": w.soccer[3]["date"][:7]}),
    ]
    return calls


@pytest.mark.parametrize("as_of", ["2023-02-01", "2024-03-15", "2024-11-30"])
def test_reopened_world_answers_every_api_as_the_generated_one(pair, as_of):
    made, reopened = pair
    a, b = CragEnv(made).at(as_of), CragEnv(reopened).at(as_of)
    calls = _calls(made, random.Random(as_of))
    assert {t for t, _ in calls} == {t.name for t in a.tools}  # all 38 APIs
    found = 0
    for tool, args in calls:
        ra, rb = a.call_sync(tool, args), b.call_sync(tool, args)
        assert (ra.kind, ra.observation) == (rb.kind, rb.observation), (tool, args)
        found += ra.data not in (None, [], {})
    assert found > len(calls) // 2  # the comparison is not between empty answers


def test_reopened_world_holds_the_same_records_graph_and_core(pair):
    made, reopened = pair
    assert reopened.n_entities() == made.n_entities()  # read without loading the graph
    assert reopened._graph is None
    for kind in ("company", "movie", "person", "artist", "song", "open", "nba_team"):
        assert reopened.core(kind) == made.core(kind)
    for name in ("companies", "movies", "people", "artists", "songs", "open_entities"):
        a, b = getattr(made, name), getattr(reopened, name)
        assert len(a) == len(b) and list(a) == list(b)  # generation order kept
        assert [encode(v) for v in a.values()] == [encode(v) for v in b.values()]
    for name in ("oscars", "charts", "grammys", "soccer", "nba"):
        assert getattr(reopened, name) == getattr(made, name)
    g, h = made.graph, reopened.graph
    assert list(h.nodes(data=True)) == list(g.nodes(data=True))
    assert sorted(h.edges(keys=True)) == sorted(g.edges(keys=True))
    ticker = made.core("company")[0].split(":")[1]
    assert reopened.prices(ticker) == made.prices(ticker)


def test_reopened_world_generates_the_same_tasks(pair):
    made, reopened = pair
    for family in ("crag-simple", "crag-comparison", "crag-false-premise"):
        fam = registry.task_families.get(family)
        a = fam.generate(CragEnv(made), 12, 0)
        b = fam.generate(CragEnv(reopened), 12, 0)
        assert [t.model_dump() for t in a] == [t.model_dump() for t in b]


def test_record_store_is_a_read_only_mapping_with_exact_keys(pair):
    _, w = pair
    mid = next(iter(w.movies))
    assert mid in w.movies and str(mid) not in w.movies  # keys keep their type, as in a dict
    assert w.movies.get(str(mid)) is None and w.movies.get([1]) is None
    with pytest.raises(KeyError):
        w.companies["NOPE"]
    assert len(w.songs) == len(list(w.songs))
    assert w.movies.column("release_date")[0] == (mid, w.movies[mid]["release_date"])


def test_reads_from_many_threads_agree(pair):
    made, reopened = pair
    keys = list(made.people)
    out: dict[int, list] = {}

    def read(n: int) -> None:
        fresh = WorldFile(reopened.backing.path).world()
        out[n] = [encode(fresh.people[k]) for k in keys]

    threads = [threading.Thread(target=read, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    want = [encode(made.people[k]) for k in keys]
    assert all(v == want for v in out.values()) and len(out) == 4


def test_open_world_generates_once_then_reopens(tmp_path, monkeypatch):
    path = tmp_path / "w.sqlite"
    first = open_world("tiny", 2, 0.5, path)
    assert path.exists() and not list(tmp_path.glob(".*.tmp"))  # written atomically
    monkeypatch.setattr(
        crag_store, "generate_domains", lambda *a: pytest.fail("regenerated a saved world")
    )
    again = open_world("tiny", 2, 0.5, path)
    assert list(again.companies) == list(first.companies)


def test_a_file_from_another_generator_version_is_refused(tmp_path):
    path = save_world(generate_world("tiny", 1, 0.5), tmp_path / "w.sqlite")
    db = sqlite3.connect(path)
    db.execute("UPDATE meta SET value = '1' WHERE key = 'generator_version'")
    db.commit()
    db.close()
    with pytest.raises(ValueError, match=r"generator v1.*delete it"):
        WorldFile(path)
    with pytest.raises(FileNotFoundError):
        WorldFile(tmp_path / "missing.sqlite")


def test_a_stored_world_opens_its_saved_indexes_and_looks_up_names_in_sqlite(pair):
    made, reopened = pair
    assert reopened.backing.indexes is not None  # built by save_indexes: nothing is rebuilt
    index, names = reopened.song_index
    assert type(index.strings).__name__ == "StringTable" and list(names) == sorted(made.songs)
    assert reopened.movie_index[1] == sorted(made.movies)
    for fold, key in made.company_by_name.items():
        assert reopened.company_by_name[fold] == key
    assert reopened.artist_key.get("no such artist") is None
    assert len(reopened.song_key) == len(made.song_key)


def test_a_world_built_domain_by_domain_is_the_file_of_the_whole_world(tmp_path):
    whole = save_world(generate_world("tiny", 4), tmp_path / "whole.sqlite")
    streamed = build_world("tiny", 4, 1 / 30, tmp_path / "streamed.sqlite")
    a, b = sqlite3.connect(whole), sqlite3.connect(streamed)
    tables = [t for (t,) in a.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    assert "companies_fold" in tables and len(tables) == 1 + 6 + 4 + 2
    for table in tables:
        order = "fold" if table.endswith("_fold") else "rowid"  # WITHOUT ROWID: by key
        rows = f"SELECT * FROM {table} ORDER BY {order}"
        assert a.execute(rows).fetchall() == b.execute(rows).fetchall(), table


def test_song_search_filters_hits_by_saved_release_dates_without_reading_records(pair, monkeypatch):
    """A stored world's song search drops songs not yet out by the release dates saved with
    its index (at the large size reading each hit's record was a disk read per hit while the
    page cache was cold); the hits are those of the records' own dates, on either world."""
    from datetime import date

    from raleval.envs.crag.api.common import search

    made, reopened = pair
    assert (reopened.backing.indexes / "song" / "released.npy").is_file()
    reopened.warm()
    rng = random.Random(3)
    queries = rng.sample(sorted(made.songs), 12)
    queries += [_typo(rng, q) for q in queries if len(q) > 3]
    dates = sorted({s["release_date"] for s in made.songs.values()})
    cuts = [date.fromisoformat(d) for d in (dates[len(dates) // 4], dates[len(dates) // 2])]
    cuts.append(date(2024, 3, 1))
    reads = []
    real_query = WorldFile.query
    monkeypatch.setattr(
        WorldFile, "query", lambda self, *a: reads.append(a) or real_query(self, *a)
    )
    dropped = 0
    for as_of in cuts:
        envs = [CragEnv(w, as_of=as_of) for w in (made, reopened)]
        for q in queries:
            hits = search(made.song_index, q)
            expected = [s for s in hits if made.songs[s]["release_date"] <= as_of.isoformat()]
            dropped += len(hits) - len(expected)
            for env in envs:
                result = env.call_sync("music_search_song_entity_by_name", {"query": q})
                assert result.data == expected, (as_of, q)
    assert dropped > 0  # some hits were not out yet at the earlier dates
    assert reads == []  # no record, no SQLite page: the index and its dates answered


def test_opening_a_stored_world_reads_its_files_ahead_once(tmp_path, monkeypatch):
    """Opening a stored world reads its index files and then its SQLite file, front to back,
    in a background thread (records are otherwise read at random, a disk read each while the
    page cache is cold); a second open of the same file in the process reads nothing."""
    path = save_world(generate_world("tiny", 6), tmp_path / "w.sqlite")
    folder = save_indexes(path)

    def join() -> None:
        for thread in threading.enumerate():
            if thread.name == f"read-ahead {path.name}":
                thread.join(10)

    join()  # the indexes' build opened the file without them: read ahead already
    opened: list = []
    real_open = open
    monkeypatch.setattr(
        crag_store,
        "open",
        lambda f, *a, **k: opened.append(f) or real_open(f, *a, **k),
        raising=False,
    )
    for _ in range(2):
        WorldFile(path).world()
    join()
    files = sorted(f for f in folder.rglob("*") if f.is_file())
    assert len(files) > 10 and opened == [*files, path]


def test_song_search_in_an_index_folder_saved_without_release_dates_reads_the_records(
    tmp_path, monkeypatch
):
    """An index folder saved before release dates were kept still answers song searches as
    the generated world does: it reads each hit's record for its date instead."""
    from datetime import date

    made = generate_world("tiny", 6)
    path = save_world(made, tmp_path / "w.sqlite")
    (save_indexes(path) / "song" / "released.npy").unlink()
    old = WorldFile(path).world()
    assert old.song_released is None
    reads = []
    real_query = WorldFile.query
    monkeypatch.setattr(
        WorldFile, "query", lambda self, *a: reads.append(a) or real_query(self, *a)
    )
    dates = sorted(s["release_date"] for s in made.songs.values())
    as_of = date.fromisoformat(dates[len(dates) // 2])
    envs = [CragEnv(w, as_of=as_of) for w in (made, old)]
    for q in random.Random(4).sample(sorted(made.songs), 12):
        first, second = (
            env.call_sync("music_search_song_entity_by_name", {"query": q}).data for env in envs
        )
        assert first == second, q
    assert reads  # the records answered
