"""CRAG "comparison" questions in the five domains: which of two entities has more."""

from __future__ import annotations

from raleval.envs.crag.families.pickers import (
    movie_titled,
    pick_artist,
    pick_company,
    pick_movie,
    pick_nba_game,
    pick_open,
    tool_call,
)


def cmp_finance(w, rng, t):
    a, b = pick_company(w, rng), pick_company(w, rng)
    caps = []
    for c in (a, b):
        days = [d for d in w.prices(c["ticker"]) if d <= t.date()]
        caps.append(round(w.prices(c["ticker"])[days[-1]]["Close"] * c["shares"], 2))
    if a is b or caps[0] == caps[1]:
        return None
    return (
        f"Which company has the larger market capitalization, {a['name']} or {b['name']}?",
        [
            tool_call("finance_get_ticker_by_name", query=a["name"]),
            tool_call("finance_get_ticker_by_name", query=b["name"]),
            tool_call("finance_get_market_capitalization", ticker=a["ticker"]),
            tool_call("finance_get_market_capitalization", ticker=b["ticker"]),
        ],
        f"{a['name']!r} if r2 > r3 else {b['name']!r}",
        a["name"] if caps[0] > caps[1] else b["name"],
        "f1",
    )


def cmp_movie(w, rng, t):
    a, b = pick_movie(w, rng, t), pick_movie(w, rng, t)
    if a is None or b is None or a is b or a["budget"] == b["budget"]:
        return None
    pa, pb = movie_titled(a["title"], "r0"), movie_titled(b["title"], "r1")
    return (
        f"Which movie had the bigger budget, {a['title']} or {b['title']}?",
        [
            tool_call("movie_get_movie_info", query=a["title"]),
            tool_call("movie_get_movie_info", query=b["title"]),
        ],
        f"{a['title']!r} if {pa}['budget'] > {pb}['budget'] else {b['title']!r}",
        a["title"] if a["budget"] > b["budget"] else b["title"],
        "f1",
    )


def cmp_music(w, rng, t):
    a, b = pick_artist(w, rng, t, band=False), pick_artist(w, rng, t, band=False)
    if a is None or b is None or a is b or not a["birth_date"] or not b["birth_date"]:
        return None
    if a["birth_date"] == b["birth_date"]:
        return None
    return (
        f"Who was born first, {a['name']} or {b['name']}?",
        [
            tool_call("music_get_artist_birth_date", artist_name=a["name"]),
            tool_call("music_get_artist_birth_date", artist_name=b["name"]),
        ],
        f"{a['name']!r} if r0 < r1 else {b['name']!r}",
        a["name"] if a["birth_date"] < b["birth_date"] else b["name"],
        "f1",
    )


def cmp_sports(w, rng, t):
    g = pick_nba_game(w, rng, t)
    if g is None:
        return None
    return (
        f"Did the {g['team_name_home']} score more points than the {g['team_name_away']} "
        f"on {g['game_date']}?",
        [
            tool_call(
                "sports_nba_get_games_on_date", date=g["game_date"], team_name=g["team_name_home"]
            )
        ],
        "'yes' if r0['pts_home']['0'] > r0['pts_away']['0'] else 'no'",
        "yes" if g["pts_home"] > g["pts_away"] else "no",
        "f1",
    )


def cmp_open(w, rng, t):
    a, b = pick_open(w, rng), pick_open(w, rng)
    if a == b:
        return None
    ca, cb = (w.open_entities[x]["summary_structured"]["country"] for x in (a, b))
    return (
        f"Are {a} and {b} in the same country?",
        [tool_call("open_get_entity", query=a), tool_call("open_get_entity", query=b)],
        "'yes' if r0['summary_structured']['country'] == r1['summary_structured']['country'] "
        "else 'no'",
        "yes" if ca == cb else "no",
        "f1",
    )
