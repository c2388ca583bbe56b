"""One example call per CRAG endpoint whose arguments exist in a world as of a date.

``raleval list tools --env crag`` shows them, and the shape test calls each one and compares
the result with CRAG's real record shape, so every example must hit data (never a miss).
"""

from __future__ import annotations

from datetime import date
from typing import Any

from raleval.envs.crag.world import CragWorld


def _core_names(w: CragWorld, kind: str) -> list[str]:
    return [k.split(":", 1)[1] for k in w.core(kind)]


def example_calls(w: CragWorld, as_of: date) -> dict[str, dict[str, Any]]:
    """Tool name -> arguments, for all 38 endpoints (the first core entity that fits)."""
    today = as_of.isoformat()
    ticker = next(
        t for t in _core_names(w, "company") if any(d <= as_of for d in w.companies[t]["dividends"])
    )
    company = w.companies[ticker]["name"]
    movie = next(
        w.movies[int(k)]
        for k in _core_names(w, "movie")
        if w.movies[int(k)]["release_date"] <= today
    )
    person_id = movie["cast"][0]["id"]
    person = w.people[person_id]["name"]
    artists = _core_names(w, "artist")
    band = next(a for a in artists if w.artists[a]["members"])
    solo = next(a for a in artists if w.artists[a]["birth_date"])
    songs = [s for s in _core_names(w, "song") if w.songs[s]["release_date"] <= today]
    week = max(wk for wk in w.charts if wk <= as_of)
    top = w.charts[week][0]
    year = max(y for y in w.grammys if y <= as_of.year)
    grammy = w.grammys[year]
    soccer = next(g for g in reversed(w.soccer) if g["date"] <= today)
    nba = next(g for g in reversed(w.nba) if g["game_date"] <= today)
    entity = _core_names(w, "open")[0]
    return {
        "open_search_entity_by_name": {"query": entity},
        "open_get_entity": {"query": entity},
        "movie_get_person_info": {"query": person},
        "movie_get_movie_info": {"query": movie["title"]},
        "movie_get_year_info": {"year": int(movie["release_date"][:4])},
        "movie_get_movie_info_by_id": {"id": movie["id"]},
        "movie_get_person_info_by_id": {"id": person_id},
        "finance_get_company_name": {"query": company},
        "finance_get_ticker_by_name": {"query": company},
        "finance_get_price_history": {"ticker": ticker},
        "finance_get_detailed_price_history": {"ticker": ticker},
        "finance_get_dividends_history": {"ticker": ticker},
        "finance_get_market_capitalization": {"ticker": ticker},
        "finance_get_eps": {"ticker": ticker},
        "finance_get_pe_ratio": {"ticker": ticker},
        "finance_get_info": {"ticker": ticker},
        "music_search_artist_entity_by_name": {"query": artists[0]},
        "music_search_song_entity_by_name": {"query": songs[0]},
        "music_get_billboard_rank_date": {"rank": top["rank"], "date": week.isoformat()},
        "music_get_billboard_attributes": {
            "date": week.isoformat(),
            "attribute": "weeks_in_chart",
            "song_name": top["song"],
        },
        "music_grammy_get_best_artist_by_year": {"year": year},
        "music_grammy_get_award_count_by_artist": {"artist_name": grammy["best_new_artist"]},
        "music_grammy_get_award_count_by_song": {"song_name": grammy["song_of_the_year"]},
        "music_grammy_get_best_song_by_year": {"year": year},
        "music_grammy_get_award_date_by_artist": {"artist_name": grammy["best_new_artist"]},
        "music_grammy_get_best_album_by_year": {"year": year},
        "music_grammy_get_all_awarded_artists": {},
        "music_get_artist_birth_place": {"artist_name": artists[0]},
        "music_get_artist_birth_date": {"artist_name": solo},
        "music_get_members": {"band_name": band},
        "music_get_lifespan": {"artist_name": band},
        "music_get_song_author": {"song_name": songs[0]},
        "music_get_song_release_country": {"song_name": songs[0]},
        "music_get_song_release_date": {"song_name": songs[0]},
        "music_get_artist_all_works": {"artist_name": artists[0]},
        "sports_soccer_get_games_on_date": {"date": soccer["date"], "team_name": soccer["home"]},
        "sports_nba_get_games_on_date": {
            "date": nba["game_date"],
            "team_name": nba["team_name_home"],
        },
        "sports_nba_get_play_by_play_data_by_game_ids": {"game_ids": [nba["game_id"]]},
    }
