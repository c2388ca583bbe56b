"""CRAG "set" questions in the five domains: the answer is a set of entities."""

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


def set_finance(w, rng, t):
    c = pick_company(w, rng)
    paid = sorted(d for d in c["dividends"] if d <= t.date())
    if not paid:
        return None
    year = rng.choice(paid).year
    dates = [d.isoformat() for d in paid if d.year == year]
    return (
        f"On which dates in {year} did {c['name']} pay a dividend?",
        [
            tool_call("finance_get_ticker_by_name", query=c["name"]),
            tool_call("finance_get_dividends_history", ticker=c["ticker"]),
        ],
        f"', '.join(k[:10] for k in sorted(r1) if k.startswith('{year}'))",
        ", ".join(dates),
        "set_f1",
    )


def set_movie(w, rng, t):
    m = pick_movie(w, rng, t)
    if m is None:
        return None
    return (
        f"What are the genres of the movie {m['title']}?",
        [tool_call("movie_get_movie_info", query=m["title"])],
        "', '.join(g['name'] for g in " + movie_titled(m["title"], "r0") + "['genres'])",
        ", ".join(g["name"] for g in m["genres"]),
        "set_f1",
    )


def set_music(w, rng, t):
    today = t.date().isoformat()
    a = pick_artist(w, rng, t)
    works = [s for s in a["works"] if s in w.songs and w.songs[s]["release_date"] <= today]
    if not works:
        return None
    return (
        f"Which songs has {a['name']} released?",
        [tool_call("music_get_artist_all_works", artist_name=a["name"])],
        "', '.join(r0)",
        ", ".join(works),
        "set_f1",
    )


def set_sports(w, rng, t):
    today = t.date().isoformat()
    g = pick_nba_game(w, rng, t)
    if g is None:
        return None
    team, month = g["team_name_home"], g["game_date"][:7]
    games = [
        x
        for x in w.nba
        if x["game_date"].startswith(month)
        and x["game_date"] <= today
        and team in (x["team_name_home"], x["team_name_away"])
    ]
    opponents = sorted(
        {x["team_name_away"] if x["team_name_home"] == team else x["team_name_home"] for x in games}
    )
    return (
        f"Which teams did the {team} play in the NBA in {month}?",
        [tool_call("sports_nba_get_games_on_date", date=month, team_name=team)],
        f"', '.join(sorted({{r0['team_name_away'][i] if r0['team_name_home'][i] == {team!r} "
        "else r0['team_name_home'][i] for i in r0['game_id']}))",
        ", ".join(opponents),
        "set_f1",
    )


def set_open(w, rng, t):
    name = pick_open(w, rng)
    s = w.open_entities[name]["summary_structured"]
    return (
        f"What kind of entity is {name} and in which country is it?",
        [tool_call("open_get_entity", query=name)],
        "r0['summary_structured']['type'] + ', ' + r0['summary_structured']['country']",
        f"{s['type']}, {s['country']}",
        "set_f1",
    )
