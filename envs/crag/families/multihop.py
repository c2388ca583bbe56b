"""CRAG "multi-hop" questions in the five domains: one answer found through another."""

from __future__ import annotations

from raleval.envs.crag.families.pickers import (
    pick_company,
    pick_movie,
    pick_nba_game,
    pick_open,
    tool_call,
)


def hop_finance(w, rng, t):
    c = pick_company(w, rng)
    valid = [v for since, v in c["eps"] if since <= t.date()]
    if not valid:
        return None
    return (
        f"What is the earnings per share of the company called {c['name']}?",
        [
            tool_call("finance_get_ticker_by_name", query=c["name"]),
            tool_call("finance_get_eps", ticker=c["ticker"]),
        ],
        "str(r1)",
        valid[-1],
        "numeric",
    )


def hop_movie(w, rng, t):
    m = pick_movie(w, rng, t)
    if m is None:
        return None
    director = next((x for x in m["crew"] if x["job"] == "Director"), None)
    if director is None:
        return None
    return (
        f"When was the director of {m['title']} born?",
        [
            tool_call("movie_get_movie_info", query=m["title"]),
            tool_call("movie_get_person_info_by_id", id=director["id"]),
        ],
        "r1['birthday']",
        w.people[director["id"]]["birthday"],
        "f1",
    )


def hop_music(w, rng, t):
    today = t.date().isoformat()
    songs = [
        s
        for s, x in w.songs.items()
        if x.get("core") and x["release_date"] <= today and x["author"] in w.artists
    ]
    if not songs:
        return None
    s = w.songs[rng.choice(songs)]
    return (
        f"Where was the author of the song {s['name']} born?",
        [
            tool_call("music_get_song_author", song_name=s["name"]),
            tool_call("music_get_artist_birth_place", artist_name=s["author"]),
        ],
        "r1",
        w.artists[s["author"]]["birth_place"],
        "f1",
    )


def hop_sports(w, rng, t):
    today = t.date().isoformat()
    g = pick_nba_game(w, rng, t)
    if g is None:
        return None
    team, month = g["team_name_home"], g["game_date"][:7]
    games = sorted(
        (
            x
            for x in w.nba
            if x["game_date"].startswith(month)
            and x["game_date"] <= today
            and team in (x["team_name_home"], x["team_name_away"])
        ),
        key=lambda x: x["game_date"],
    )
    first = games[0]
    pts = first["pts_home"] if first["team_name_home"] == team else first["pts_away"]
    return (
        f"How many points did the {team} score in their first NBA game of {month}?",
        [tool_call("sports_nba_get_games_on_date", date=month, team_name=team)],
        f"str((lambda i: int(r0['pts_home'][i]) if r0['team_name_home'][i] == {team!r} "
        "else int(r0['pts_away'][i]))(min(r0['game_date'], key=lambda k: r0['game_date'][k])))",
        pts,
        "numeric",
    )


def hop_open(w, rng, t):
    name = pick_open(w, rng)
    query = name.split()[0] if " " in name else name
    return (
        f"In which country is {name}?",
        [
            tool_call("open_search_entity_by_name", query=query),
            tool_call("open_get_entity", query=name),
        ],
        "r1['summary_structured']['country']",
        w.open_entities[name]["summary_structured"]["country"],
        "f1",
    )
