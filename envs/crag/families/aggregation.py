"""CRAG "aggregation" questions in the five domains: counts and sums over many facts."""

from __future__ import annotations

from datetime import datetime

from raleval.envs.crag.families.pickers import (
    pick_company,
    pick_nba_game,
    tool_call,
    trading_days,
)


def agg_finance(w, rng, t):
    c = pick_company(w, rng)
    days = trading_days(t)[-5:]
    if len(days) < 5:
        return None
    avg = round(sum(w.prices(c["ticker"])[d]["Close"] for d in days) / 5, 2)
    return (
        f"What was the average closing price of {c['name']} over its last five trading days?",
        [
            tool_call("finance_get_ticker_by_name", query=c["name"]),
            tool_call("finance_get_price_history", ticker=c["ticker"]),
        ],
        "str(round(sum(r1[k]['Close'] for k in sorted(r1)[-5:]) / 5, 2))",
        avg,
        "numeric",
    )


def agg_movie(w, rng, t):
    today = t.date().isoformat()
    pid = rng.choice([int(k.split(":", 1)[1]) for k in w.core("person")])
    p = w.people[pid]
    n = sum(1 for m in p["acted_movies"] if w.movies[m]["release_date"] <= today)
    if n == 0:
        return None
    return (
        f"In how many released movies has {p['name']} acted?",
        [tool_call("movie_get_person_info", query=p["name"])],
        f"str(len(next(p for p in r0 if p['name'] == {p['name']!r})['acted_movies']))",
        n,
        "numeric",
    )


def _grammy_count(w, name: str, t: datetime) -> int:
    return sum(
        1
        for y in w.grammys
        if y <= t.year
        and name.casefold()
        in (w.grammys[y]["best_new_artist"].casefold(), w.grammys[y]["album_artist"].casefold())
    )


def agg_music(w, rng, t):
    # draw the count first, then an artist with it: most artists have none, and a family whose
    # answer is "0" half the time is answered without a tool
    names = [k.split(":", 1)[1] for k in w.core("artist")]
    counts = {n: _grammy_count(w, n, t) for n in names}
    target = rng.choice(sorted(set(counts.values())))
    a = w.artists[rng.choice([n for n, k in counts.items() if k == target])]
    return (
        f"How many Grammy awards has {a['name']} won?",
        [tool_call("music_grammy_get_award_count_by_artist", artist_name=a["name"])],
        "str(r0)",
        target,
        "numeric",
    )


def agg_sports(w, rng, t):
    # wins, not games: every team plays about as many games a month, so that count was constant
    today = t.date().isoformat()
    g = pick_nba_game(w, rng, t)
    if g is None:
        return None
    team = rng.choice([g["team_name_home"], g["team_name_away"]])
    month = g["game_date"][:7]
    n = sum(
        1
        for x in w.nba
        if x["game_date"].startswith(month)
        and x["game_date"] <= today
        and (
            (x["team_name_home"] == team and x["wl_home"] == "W")
            or (x["team_name_away"] == team and x["wl_away"] == "W")
        )
    )
    return (
        f"How many NBA games did the {team} win in {month}?",
        [tool_call("sports_nba_get_games_on_date", date=month, team_name=team)],
        "str(sum(1 for i in r0['game_id'] if (r0['team_name_home'][i] == "
        f"{team!r} and r0['wl_home'][i] == 'W') or (r0['team_name_away'][i] == {team!r} "
        "and r0['wl_away'][i] == 'W')))",
        n,
        "numeric",
    )


def agg_open(w, rng, t):
    # the count is drawn first (0 to 3), then entities to match it
    names = [k.split(":", 1)[1] for k in w.core("open")]
    country_of = {n: w.open_entities[n]["summary_structured"]["country"] for n in names}
    country = rng.choice(sorted(set(country_of.values())))
    inside = [n for n in names if country_of[n] == country]
    outside = [n for n in names if country_of[n] != country]
    target = rng.randint(0, 3)
    if len(inside) < target or len(outside) < 3 - target:
        return None
    picked = rng.sample(inside, target) + rng.sample(outside, 3 - target)
    rng.shuffle(picked)
    return (
        f"How many of {picked[0]}, {picked[1]} and {picked[2]} are in {country}?",
        [tool_call("open_get_entity", query=x) for x in picked],
        f"str(sum(r['summary_structured']['country'] == {country!r} for r in (r0, r1, r2)))",
        target,
        "numeric",
    )
