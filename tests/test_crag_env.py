"""CRAG mock KG: every one of the 38 APIs on the tiny world, hard negatives, unknown keys,
dates outside the data, and answers that change with the query time."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from raleval.envs.crag import CragEnv, make_crag_env
from raleval.envs.crag.world import generate_world
from raleval.records import OutcomeKind

CRAG_APIS = {
    "open_search_entity_by_name",
    "open_get_entity",
    "movie_get_person_info",
    "movie_get_movie_info",
    "movie_get_year_info",
    "movie_get_movie_info_by_id",
    "movie_get_person_info_by_id",
    "finance_get_company_name",
    "finance_get_ticker_by_name",
    "finance_get_price_history",
    "finance_get_detailed_price_history",
    "finance_get_dividends_history",
    "finance_get_market_capitalization",
    "finance_get_eps",
    "finance_get_pe_ratio",
    "finance_get_info",
    "music_search_artist_entity_by_name",
    "music_search_song_entity_by_name",
    "music_get_billboard_rank_date",
    "music_get_billboard_attributes",
    "music_grammy_get_best_artist_by_year",
    "music_grammy_get_award_count_by_artist",
    "music_grammy_get_award_count_by_song",
    "music_grammy_get_best_song_by_year",
    "music_grammy_get_award_date_by_artist",
    "music_grammy_get_best_album_by_year",
    "music_grammy_get_all_awarded_artists",
    "music_get_artist_birth_place",
    "music_get_artist_birth_date",
    "music_get_members",
    "music_get_lifespan",
    "music_get_song_author",
    "music_get_song_release_country",
    "music_get_song_release_date",
    "music_get_artist_all_works",
    "sports_soccer_get_games_on_date",
    "sports_nba_get_games_on_date",
    "sports_nba_get_play_by_play_data_by_game_ids",
}


@pytest.fixture(scope="module")
def env() -> CragEnv:
    return make_crag_env("tiny")


def data(env, name, **args):
    result = env.call_sync(name, args)
    assert result.kind is OutcomeKind.ok, result.observation
    return result.data


def core_name(env, kind):
    key = env.world.core(kind)[0]
    return env.world.graph.nodes[key]["name"], key


def test_all_38_apis_are_declared(env):
    assert {t.name for t in env.tools} == CRAG_APIS and len(CRAG_APIS) == 38


def test_world_is_seeded_and_has_the_requested_noise():
    a, b = generate_world("tiny", 3), generate_world("tiny", 3)
    assert sorted(a.companies) == sorted(b.companies)
    assert a.prices(next(iter(a.companies))) == b.prices(next(iter(b.companies)))
    assert sorted(a.movies[1].items()) == sorted(b.movies[1].items())
    core = sum(c["core"] for c in a.companies.values())
    assert len(a.companies) == 30 * core  # snr 1/30: 29 distractors per core company
    low_noise = generate_world("tiny", 3, snr=0.5)
    assert len(low_noise.companies) == 2 * core


def test_company_search_ranks_target_first_and_look_alikes_next(env):
    name, key = core_name(env, "company")
    hits = data(env, "finance_get_company_name", query=name)
    assert hits[0] == name
    assert {f"{name} Holdings", f"{name} Group", f"New {name}"} <= set(hits[1:5])
    ticker = data(env, "finance_get_ticker_by_name", query=name)
    assert ticker == key.split(":")[1]
    # the look-alike has its own ticker
    assert data(env, "finance_get_ticker_by_name", query=f"{name} Holdings") not in (None, ticker)


def test_finance_getters_answer_as_of_the_query_time(env):
    name, key = core_name(env, "company")
    ticker = key.split(":")[1]
    early, late = env.at("2023-02-01"), env.at("2024-06-03")
    h_early = data(early, "finance_get_price_history", ticker=ticker)
    h_late = data(late, "finance_get_price_history", ticker=ticker)
    assert max(h_early) <= "2023-02-01 00:00:00 EST" and max(h_late) == "2024-06-03 00:00:00 EST"
    bar = h_late["2024-06-03 00:00:00 EST"]
    assert set(bar) == {"Open", "High", "Low", "Close", "Volume"}
    assert (
        bar["Low"]
        <= min(bar["Open"], bar["Close"])
        <= max(bar["Open"], bar["Close"])
        <= bar["High"]
    )
    cap_early = data(early, "finance_get_market_capitalization", ticker=ticker)
    cap_late = data(late, "finance_get_market_capitalization", ticker=ticker)
    assert cap_early != cap_late
    shares = env.world.companies[ticker]["shares"]
    assert cap_late == round(bar["Close"] * shares, 2)
    info = data(late, "finance_get_info", ticker=ticker)
    assert info["marketCap"] == round(cap_late) and info["longName"] == name
    assert len(info) == 125 and info["currentPrice"] == bar["Close"]
    assert {"sector", "trailingPE", "dividendYield"} <= set(info)
    minutes = data(late, "finance_get_detailed_price_history", ticker=ticker)
    assert len(minutes) == 5 * 390 and max(minutes) == "2024-06-03 15:59:00 EST"
    assert minutes["2024-06-03 15:59:00 EST"]["Close"] == bar["Close"]
    eps = data(late, "finance_get_eps", ticker=ticker)
    pe = data(late, "finance_get_pe_ratio", ticker=ticker)
    assert pe is None if eps <= 0 else pe == round(bar["Close"] / eps, 2)
    # CRAG's get_eps / get_pe_ratio read the info record's forwardEps / forwardPE
    assert (info["forwardEps"], info["forwardPE"]) == (eps, pe)
    divs = data(late, "finance_get_dividends_history", ticker=ticker)
    assert all(k <= "2024-06-03 00:00:00 EST" for k in divs)


def test_unknown_keys_return_null_and_bad_arguments_are_misuse(env):
    for name, args in [
        ("finance_get_eps", {"ticker": "NOPE9"}),
        ("finance_get_ticker_by_name", {"query": "No Such Company"}),
        ("open_get_entity", {"query": "Nowhere At All"}),
        ("movie_get_movie_info_by_id", {"id": 99999999}),
        ("movie_get_person_info_by_id", {"id": 99999999}),
        ("music_get_members", {"band_name": "Nobody"}),
        ("music_get_song_author", {"song_name": "No Song"}),
        ("movie_get_year_info", {"year": 1850}),
    ]:
        result = env.call_sync(name, args)
        assert (result.kind, result.observation) == (OutcomeKind.ok, "null"), name
    assert env.call_sync("movie_get_movie_info", {"query": "qqqqqqqq"}).observation == "[]"
    bad = env.call_sync("sports_nba_get_games_on_date", {"date": "yesterday"})
    assert bad.kind is OutcomeKind.misuse and "YYYY-MM-DD" in bad.observation
    bad = env.call_sync("music_get_billboard_rank_date", {"rank": "first"})
    assert bad.kind is OutcomeKind.misuse
    bad = env.call_sync(
        "music_get_billboard_attributes",
        {"date": "2024-01-06", "attribute": "color", "song_name": "x"},
    )
    assert bad.kind is OutcomeKind.misuse and "rank_last_week" in bad.observation
    assert env.call_sync("movie_get_year_info", {"year": "nineteen"}).kind is OutcomeKind.misuse


def test_dates_outside_the_data(env):
    assert data(env, "sports_nba_get_games_on_date", date="1999-01-01") is None
    # a game after the query time has not happened yet
    late_game = env.world.nba[-1]
    assert (
        data(env.at("2023-10-01"), "sports_nba_get_games_on_date", date=late_game["game_date"])
        is None
    )
    # CRAG answers [None, None] for a rank no chart has (none has been published yet)
    assert data(env.at("2022-06-01"), "music_get_billboard_rank_date", rank=1) == [None, None]


def test_movie_apis(env):
    title, _ = core_name(env, "movie")
    movies = data(env, "movie_get_movie_info", query=title)
    m = movies[0]
    assert m["title"] == title and len(movies) <= 10
    assert set(m) == {
        "title",
        "id",
        "release_date",
        "original_title",
        "original_language",
        "budget",
        "revenue",
        "rating",
        "genres",
        "oscar_awards",
        "cast",
        "crew",
        "length",
    }
    assert any(x["title"] in (f"{title} II", f"The {title}") for x in movies[1:])
    assert data(env, "movie_get_movie_info_by_id", id=m["id"]) == m
    actor = m["cast"][0]
    person = data(env, "movie_get_person_info_by_id", id=actor["id"])
    assert m["id"] in person["acted_movies"]
    assert set(person) == {
        "name",
        "id",
        "acted_movies",
        "directed_movies",
        "birthday",
        "oscar_awards",
    }
    assert data(env, "movie_get_person_info", query=actor["name"])[0]["id"] == actor["id"]
    year = int(m["release_date"][:4])
    info = data(env, "movie_get_year_info", year=year)
    assert m["id"] in info["movie_list"]
    # the rating is a slow-changing fact
    world_movie = env.world.movies[m["id"]]
    (d0, r0), (d1, r1) = world_movie["rating_history"]
    assert data(env.at(d0), "movie_get_movie_info_by_id", id=m["id"])["rating"] == r0
    assert data(env.at(d1), "movie_get_movie_info_by_id", id=m["id"])["rating"] == r1


def test_music_apis(env):
    w = env.world
    artist, _ = core_name(env, "artist")
    assert data(env, "music_search_artist_entity_by_name", query=artist)[0] == artist
    a = w.artists[artist]
    assert data(env, "music_get_artist_birth_place", artist_name=artist) == a["birth_place"]
    assert data(env, "music_get_artist_birth_date", artist_name=artist) == a["birth_date"]
    assert data(env, "music_get_lifespan", artist_name=artist)[0] == a["lifespan"][0]
    works = data(env, "music_get_artist_all_works", artist_name=artist)
    assert works and set(works) <= set(a["works"])
    song = works[0]
    assert data(env, "music_search_song_entity_by_name", query=song)[0] == song
    s = w.songs[song]
    assert data(env, "music_get_song_author", song_name=song) == s["author"]
    assert data(env, "music_get_song_release_country", song_name=song) == s["release_country"]
    assert data(env, "music_get_song_release_date", song_name=song) == s["release_date"]
    bands = [n for n, v in w.artists.items() if v["members"]]
    band = w.artists[bands[0]]
    members = data(env, "music_get_members", band_name=bands[0])
    assert members == [m for j, left, m in band["members"] if left is None or left > "2024-03-15"]
    year = 2010
    g = w.grammys[year]
    assert data(env, "music_grammy_get_best_artist_by_year", year=year) == [g["best_new_artist"]]
    assert data(env, "music_grammy_get_best_song_by_year", year=str(year)) == [
        g["song_of_the_year"]
    ]
    assert data(env, "music_grammy_get_best_album_by_year", year=year) == [g["album_of_the_year"]]
    winner = g["best_new_artist"]
    years = data(env, "music_grammy_get_award_date_by_artist", artist_name=winner)
    assert year in years
    assert data(env, "music_grammy_get_award_count_by_artist", artist_name=winner) == len(years)
    assert data(env, "music_grammy_get_award_count_by_song", song_name=g["song_of_the_year"]) >= 1
    assert winner in data(env, "music_grammy_get_all_awarded_artists")
    # a Grammy in the future of the query time is unknown
    assert data(env.at("2015-06-01"), "music_grammy_get_best_artist_by_year", year=2020) is None


def test_billboard_changes_week_to_week(env):
    w = env.world
    weeks = sorted(w.charts)
    first = data(env, "music_get_billboard_rank_date", rank=1, date=weeks[0].isoformat())
    top = w.charts[weeks[0]][0]
    assert first == [[top["song"]], [top["artist"]]]
    # CRAG matches the chart date exactly: a day after it has no chart
    day_after = (weeks[0] + timedelta(days=1)).isoformat()
    assert data(env, "music_get_billboard_rank_date", rank=1, date=day_after) == [[], []]
    every = data(env, "music_get_billboard_rank_date", rank=1)
    assert every[0] == [w.charts[wk][0]["song"] for wk in weeks if wk <= env.as_of]
    tops = {w.charts[wk][0]["song"] for wk in weeks}
    assert len(tops) > 1  # fast-changing: number one is not always the same song
    entry = w.charts[weeks[3]][2]
    got = data(
        env,
        "music_get_billboard_attributes",
        date=weeks[3].isoformat(),
        attribute="weeks_in_chart",
        song_name=entry["song"],
    )
    assert got == str(entry["weeks_in_chart"])  # CRAG's chart values are strings


def test_sports_apis_are_column_oriented(env):
    game = env.world.nba[0]
    table = data(
        env,
        "sports_nba_get_games_on_date",
        date=game["game_date"],
        team_name=game["team_name_home"],
    )
    # CRAG's NBA table: counting stats are floats, the date has a time
    assert table["game_id"] == {"0": game["game_id"]} and table["pts_home"] == {
        "0": float(game["pts_home"])
    }
    assert table["game_date"] == {"0": game["game_date"] + " 00:00:00"}
    month = data(env, "sports_nba_get_games_on_date", date=game["game_date"][:7])
    assert len(month["game_id"]) > 1
    pbp = data(env, "sports_nba_get_play_by_play_data_by_game_ids", game_ids=[game["game_id"]])
    last = str(len(pbp["eventnum"]) - 1)
    assert pbp["score"][last] == f"{game['pts_away']} - {game['pts_home']}"
    soccer = env.world.soccer[0]
    table = data(
        env, "sports_soccer_get_games_on_date", date=soccer["date"], team_name=soccer["home"]
    )
    # CRAG's soccer table is labelled by (league, season, team, match) and has GF as text
    (label,) = table["GF"]
    assert label.startswith("('") and f"'{soccer['home']}'" in label
    assert table["GF"][label] == str(soccer["home_goals"]) and table["venue"][label] == "Home"


def test_open_apis(env):
    name, _ = core_name(env, "open")
    hits = data(env, "open_search_entity_by_name", query=name)
    assert hits[0] == name and len(hits) <= 10
    entity = data(env, "open_get_entity", query=name)
    assert set(entity) == {"summary_text", "summary_structured", "raw_mediawiki"}
    assert entity["raw_mediawiki"].startswith("{{Infobox")
    assert entity["summary_text"].startswith(name)


def test_session_dates_follow_the_task(env):
    from raleval.records import Level, Task

    task = Task(
        id="t",
        domain="crag",
        level=Level.KS,
        family="x",
        question="q",
        answers=["a"],
        query_time="2023-03-01T10:00:00",
    )
    assert str(env.session(task).as_of) == "2023-03-01"
    assert env.session(None) is env


def test_observations_are_json(env):
    name, _ = core_name(env, "company")
    obs = env.call_sync("finance_get_company_name", {"query": name}).observation
    assert json.loads(obs)[0] == name
