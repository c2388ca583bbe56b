"""Core-entity pickers and call helpers shared by the CRAG question-type builders.

A builder (one per question type and domain, in the modules beside this one) takes the world, a
seeded ``random.Random`` and the query time, and returns the question, the gold calls, an
answer expression over their results (``r0, r1, ...``), the truth read from the world and the
metric - or None when the picked entities cannot make a question.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import date, datetime
from typing import Any

from raleval.envs.crag.world.prices import calendar, year_window
from raleval.records import ToolCall

INVALID = "invalid question"
Built = tuple[str, list[ToolCall], str, Any, str] | None  # question, calls, expr, truth, metric
Builder = Callable[[Any, random.Random, datetime], Built]


def tool_call(tool: str, **args: Any) -> ToolCall:
    return ToolCall(tool=tool, arguments=args)


def pick_company(w, rng):
    ticker = rng.choice(w.core("company")).split(":", 1)[1]
    return w.companies[ticker]


def trading_days(t: datetime) -> list[date]:
    """The trading days in the year up to ``t`` (after ``t`` - 365 days): the window the price
    API answers from (``year_window``), on the one calendar every ticker's bars are on."""
    start, stop = year_window(t.date())
    return list(calendar()[start:stop])


def pick_movie(w, rng, t):
    m = w.movies[int(rng.choice(w.core("movie")).split(":", 1)[1])]
    return m if m["release_date"] <= t.date().isoformat() else None


def movie_titled(title: str, result: str) -> str:
    """An expression selecting the movie titled exactly ``title`` from a search ``result``
    (look-alikes may rank first)."""
    return f"next(m for m in {result} if m['title'] == {title!r})"


def pick_artist(w, rng, t, band: bool | None = None):
    names = [k.split(":", 1)[1] for k in w.core("artist")]
    pool = [w.artists[n] for n in names if band is None or w.artists[n]["is_band"] == band]
    return rng.choice(pool) if pool else None


def pick_open(w, rng, kind: str | None = None):
    names = [k.split(":", 1)[1] for k in w.core("open")]
    pool = [
        n for n in names if kind is None or w.open_entities[n]["summary_structured"]["type"] == kind
    ]
    return rng.choice(pool) if pool else None


def pick_nba_game(w, rng, t):
    today = t.date().isoformat()
    past = [g for g in w.nba if g["game_date"] <= today]
    return rng.choice(past) if past else None


def pick_soccer_game(w, rng, t):
    today = t.date().isoformat()
    past = [g for g in w.soccer if g["date"] <= today]
    return rng.choice(past) if past else None


# Each false-premise template is also asked with a true premise (half the time): a question
# whose wording alone says "false premise" needs no tool to be rejected. The true twins are
# typed by what they ask (CRAG's "simple"); only the false ones are "false_premise".
TRUE_PREMISE = "simple"
