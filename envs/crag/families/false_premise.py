"""CRAG "false_premise" questions in the five domains, each template also asked with a true
premise (half the time) so that the wording alone does not give the answer away.
"""

from __future__ import annotations

from datetime import date, timedelta

from raleval.envs.crag.families.pickers import (
    INVALID,
    TRUE_PREMISE,
    movie_titled,
    pick_artist,
    pick_company,
    pick_movie,
    pick_open,
    pick_soccer_game,
    tool_call,
)


def fp_finance(w, rng, t):
    c = pick_company(w, rng)
    paid = sorted(d for d in c["dividends"] if d <= t.date())
    q = f"What was the most recent dividend paid by {c['name']}?"
    calls = [
        tool_call("finance_get_ticker_by_name", query=c["name"]),
        tool_call("finance_get_dividends_history", ticker=c["ticker"]),
    ]
    if rng.random() < 0.5:
        if not paid:
            return None
        return (q, calls, "str(r1[max(r1)])", c["dividends"][paid[-1]], "numeric", TRUE_PREMISE)
    if paid:
        return None
    return (q, calls, f"{INVALID!r} if not r1 else 'x'", INVALID, "f1")


def fp_movie(w, rng, t):
    m = pick_movie(w, rng, t)
    if m is None:
        return None
    pick = movie_titled(m["title"], "r0")
    q = f"In which year did {m['title']} win its Oscar?"
    calls = [tool_call("movie_get_movie_info", query=m["title"])]
    past = [a for a in m["oscar_awards"] if a["year_ceremony"] <= t.year]
    if rng.random() < 0.5:
        won = {a["year_ceremony"] for a in past if a["winner"]}
        if len(won) != 1:
            return None
        expr = f"str(next(a['year_ceremony'] for a in {pick}['oscar_awards'] if a['winner']))"
        return (q, calls, expr, won.pop(), "f1", TRUE_PREMISE)
    if past:
        return None
    return (q, calls, f"{INVALID!r} if not {pick}['oscar_awards'] else 'x'", INVALID, "f1")


def fp_music(w, rng, t):
    a = pick_artist(w, rng, t)
    if a is None:
        return None
    years = sorted(
        y
        for y in w.grammys
        if y <= t.year
        and a["name"].casefold()
        in (w.grammys[y]["best_new_artist"].casefold(), w.grammys[y]["album_artist"].casefold())
    )
    q = f"In which year did {a['name']} win their Grammy award?"
    calls = [tool_call("music_grammy_get_award_date_by_artist", artist_name=a["name"])]
    if rng.random() < 0.5:
        if len(years) != 1:
            return None
        return (q, calls, "str(r0[0])", years[0], "f1", TRUE_PREMISE)
    if years:
        return None
    return (q, calls, f"{INVALID!r} if not r0 else 'x'", INVALID, "f1")


def fp_sports(w, rng, t):
    g = pick_soccer_game(w, rng, t)
    if g is None:
        return None
    if rng.random() < 0.5:
        d = date.fromisoformat(g["date"])
        if (
            sum(x["date"] == g["date"] and g["home"] in (x["home"], x["away"]) for x in w.soccer)
            > 1
        ):
            return None
        return (
            f"What was the final score of {g['home']}'s match on {d.isoformat()}?",
            [tool_call("sports_soccer_get_games_on_date", date=d.isoformat(), team_name=g["home"])],
            "str(r0['GF']['0']) + '-' + str(r0['GA']['0'])",
            f"{g['home_goals']}-{g['away_goals']}",
            "f1",
            TRUE_PREMISE,
        )
    d = date.fromisoformat(g["date"]) + timedelta(days=1)
    if (
        any(x["date"] == d.isoformat() and g["home"] in (x["home"], x["away"]) for x in w.soccer)
        or d > t.date()
    ):
        return None
    return (
        f"What was the final score of {g['home']}'s match on {d.isoformat()}?",
        [tool_call("sports_soccer_get_games_on_date", date=d.isoformat(), team_name=g["home"])],
        f"{INVALID!r} if not r0 else 'x'",
        INVALID,
        "f1",
    )


def fp_open(w, rng, t):
    true_premise = rng.random() < 0.5
    name = pick_open(w, rng, "mountain" if true_premise else "city")
    if name is None:
        return None
    q = f"How tall is {name} in metres?"
    calls = [tool_call("open_get_entity", query=name)]
    if true_premise:
        height = w.open_entities[name]["summary_structured"]["height_m"]
        return (q, calls, "str(r0['summary_structured']['height_m'])", height, "f1", TRUE_PREMISE)
    return (
        q,
        calls,
        f"{INVALID!r} if 'height_m' not in r0['summary_structured'] else 'x'",
        INVALID,
        "f1",
    )
