"""CRAG "post-processing" questions in the five domains: a fact computed on (differences,
conversions).
"""

from __future__ import annotations

from datetime import date

from raleval.envs.crag.families.pickers import (
    movie_titled,
    pick_artist,
    pick_company,
    pick_movie,
    pick_nba_game,
    pick_open,
    tool_call,
    trading_days,
)
from raleval.envs.crag.world import price_key


def post_finance(w, rng, t):
    c = pick_company(w, rng)
    days = trading_days(t)
    if len(days) < 30:
        return None
    d1, d2 = days[-30], days[-1]
    p = w.prices(c["ticker"])
    change = round((p[d2]["Close"] - p[d1]["Close"]) / p[d1]["Close"] * 100, 2)
    k1, k2 = price_key(d1), price_key(d2)
    return (
        f"By what percentage did the closing price of {c['name']} change from {d1} to {d2}?",
        [
            tool_call("finance_get_ticker_by_name", query=c["name"]),
            tool_call("finance_get_price_history", ticker=c["ticker"]),
        ],
        f"str(round((r1[{k2!r}]['Close'] - r1[{k1!r}]['Close']) / r1[{k1!r}]['Close'] * 100, 2))",
        change,
        "numeric",
    )


def post_movie(w, rng, t):
    m = pick_movie(w, rng, t)
    if m is None:
        return None
    pick = movie_titled(m["title"], "r0")
    return (
        f"How much profit (revenue minus budget) did {m['title']} make?",
        [tool_call("movie_get_movie_info", query=m["title"])],
        f"str({pick}['revenue'] - {pick}['budget'])",
        m["revenue"] - m["budget"],
        "numeric",
    )


def post_music(w, rng, t):
    a = pick_artist(w, rng, t, band=False)
    if a is None or not a["birth_date"]:
        return None
    born = date.fromisoformat(a["birth_date"])
    d = t.date()
    age = d.year - born.year - ((d.month, d.day) < (born.month, born.day))
    return (
        f"How old is {a['name']} as of {d.isoformat()}?",
        [tool_call("music_get_artist_birth_date", artist_name=a["name"])],
        f"str({d.year} - int(r0[:4]) - (({d.month}, {d.day}) < (int(r0[5:7]), int(r0[8:10]))))",
        age,
        "numeric",
    )


def post_sports(w, rng, t):
    g = pick_nba_game(w, rng, t)
    if g is None:
        return None
    return (
        f"By how many points did the game between the {g['team_name_home']} and the "
        f"{g['team_name_away']} on {g['game_date']} end?",
        [
            tool_call(
                "sports_nba_get_games_on_date", date=g["game_date"], team_name=g["team_name_home"]
            )
        ],
        "str(int(abs(r0['pts_home']['0'] - r0['pts_away']['0'])))",
        abs(g["pts_home"] - g["pts_away"]),
        "numeric",
    )


# (entity kind, question, field, factor): a unit conversion of one structured fact
_CONVERSIONS = [
    ("mountain", "How tall is {} in feet, rounded to the nearest foot?", "height_m", 3.28084),
    ("river", "How long is {} in miles, rounded to the nearest mile?", "length_km", 0.621371),
]


def post_open(w, rng, t):
    kind, question, field, factor = rng.choice(_CONVERSIONS)
    name = pick_open(w, rng, kind)
    if name is None:
        return None
    value = w.open_entities[name]["summary_structured"][field]
    return (
        question.format(name),
        [tool_call("open_get_entity", query=name)],
        f"str(round(float(r0['summary_structured'][{field!r}]) * {factor}))",
        round(value * factor),
        "numeric",
    )
