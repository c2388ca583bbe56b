"""CRAG "simple_w_condition" questions in the five domains: one fact under a condition."""

from __future__ import annotations

from raleval.envs.crag.families.pickers import (
    pick_company,
    pick_movie,
    pick_open,
    pick_soccer_game,
    tool_call,
    trading_days,
)
from raleval.envs.crag.world import price_key


def cond_finance(w, rng, t):
    c = pick_company(w, rng)
    days = trading_days(t)
    if not days:
        return None
    d = rng.choice(days)
    key = price_key(d)
    return (
        f"What was the closing price of {c['name']} on {d.isoformat()}?",
        [
            tool_call("finance_get_ticker_by_name", query=c["name"]),
            tool_call("finance_get_price_history", ticker=c["ticker"]),
        ],
        f"str(r1[{key!r}]['Close'])",
        w.prices(c["ticker"])[d]["Close"],
        "numeric",
    )


def cond_movie(w, rng, t):
    m = pick_movie(w, rng, t)
    if m is None:
        return None
    year = m["release_date"][:4]
    return (
        f"What was the budget of the {year} movie {m['title']}?",
        [tool_call("movie_get_movie_info", query=m["title"])],
        f"str(next(m['budget'] for m in r0 if m['title'] == {m['title']!r} "
        f"and m['release_date'][:4] == {year!r}))",
        m["budget"],
        "numeric",
    )


def cond_music(w, rng, t):
    weeks = [wk for wk in w.charts if wk <= t.date()]
    if not weeks:
        return None
    wk = rng.choice(weeks)
    rank = rng.randint(1, 10)
    song = next(e["song"] for e in w.charts[wk] if e["rank"] == rank)
    return (
        f"Which song was number {rank} on the Billboard Hot 100 in the week of {wk.isoformat()}?",
        [tool_call("music_get_billboard_rank_date", rank=rank, date=wk.isoformat())],
        "r0[0][0]",
        song,
        "f1",
    )


def cond_sports(w, rng, t):
    g = pick_soccer_game(w, rng, t)
    if g is None:
        return None
    return (
        f"How many goals did {g['home']} score at home on {g['date']}?",
        [tool_call("sports_soccer_get_games_on_date", date=g["date"], team_name=g["home"])],
        "r0['GF'][min(r0['GF'])]",
        g["home_goals"],
        "f1",
    )


def cond_open(w, rng, t):
    name = pick_open(w, rng)
    s = w.open_entities[name]["summary_structured"]
    return (
        f"In which country is the {s['type']} {name}?",
        [tool_call("open_get_entity", query=name)],
        "r0['summary_structured']['country']",
        s["country"],
        "f1",
    )
