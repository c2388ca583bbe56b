"""CRAG's 38 mock-API endpoints over a :class:`CragWorld`, answered as of a query date.

Names, parameters and result shapes follow CRAG's mock API: searches return names, getters
take the exact name / ticker / id and return ``None`` for an unknown key (never raise);
malformed arguments (a date that is not a date, a rank that is not a number) are misuse.
"""

from __future__ import annotations

import random
from datetime import date, datetime, timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from raleval.environment import ToolMisuse, ToolSpec
from raleval.envs.crag.world import BILLBOARD_ATTRIBUTES, CragWorld, price_key

MAX_HITS = 10
CUTOFF = 60.0


class _P(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)


class QueryParams(_P):
    query: str = Field(min_length=1, description="a name (or words of it) to search for")


class TickerParams(_P):
    ticker: str = Field(
        min_length=1, description="a ticker symbol, e.g. from finance_get_ticker_by_name"
    )


class YearParams(_P):
    year: int | str = Field(description="a year, e.g. 2021")


class IdParams(_P):
    id: int = Field(description="an id from a search result")


class ArtistParams(_P):
    artist_name: str = Field(min_length=1, description="the exact artist or band name")


class BandParams(_P):
    band_name: str = Field(min_length=1, description="the exact band name")


class SongParams(_P):
    song_name: str = Field(min_length=1, description="the exact song name")


class RankDateParams(_P):
    rank: int = Field(ge=1, le=100, description="a chart position, 1-100")
    date: str | None = Field(None, description="YYYY-MM-DD; the latest chart if omitted")


class BillboardAttrParams(_P):
    date: str = Field(description="YYYY-MM-DD")
    attribute: str = Field(description=", ".join(BILLBOARD_ATTRIBUTES))
    song_name: str = Field(min_length=1)


class GamesParams(_P):
    date: str = Field(description="YYYY-MM-DD, or YYYY-MM for a whole month")
    team_name: str | None = Field(None, description="only this team's games")


class GameIdsParams(_P):
    game_ids: list[str] = Field(min_length=1, description="NBA game ids")


def _parse_date(value: str, field: str = "date") -> date:
    try:
        return datetime.strptime(value.strip()[:10], "%Y-%m-%d").date()
    except ValueError as exc:
        raise ToolMisuse(f"{field} must be YYYY-MM-DD, got {value!r}") from exc


def _year(value: int | str) -> int:
    try:
        return int(str(value).strip())
    except ValueError as exc:
        raise ToolMisuse(f"year must be a number, got {value!r}") from exc


def build_tools(w: CragWorld, as_of: date) -> list[ToolSpec]:
    """Declare all 38 endpoints over ``w``; facts after ``as_of`` do not exist yet."""

    def search(index: tuple[Any, list[Any]], query: str) -> list[Any]:
        fuzzy, keys = index
        return [keys[i] for i, _ in fuzzy.search(query, MAX_HITS, CUTOFF)]

    # --- open --------------------------------------------------------------------------
    def open_search_entity_by_name(query: str) -> list[str]:
        return search(w.open_index, query)

    def open_get_entity(query: str) -> dict[str, Any] | None:
        name = w.open_key.get(query.casefold())
        if name is None:
            return None
        e = w.open_entities[name]
        return {"summary_text": e["summary_text"], "summary_structured": e["summary_structured"]}

    # --- movie -------------------------------------------------------------------------
    def person_view(pid: int) -> dict[str, Any]:
        p = w.people[pid]
        visible = [m for m in p["acted_movies"] if w.movies[m]["release_date"] <= as_of.isoformat()]
        directed = [
            m for m in p["directed_movies"] if w.movies[m]["release_date"] <= as_of.isoformat()
        ]
        return {
            "name": p["name"],
            "id": pid,
            "acted_movies": visible,
            "directed_movies": directed,
            "birthday": p["birthday"],
            "oscar_awards": [a for a in p["oscar_awards"] if a["year_ceremony"] <= as_of.year],
        }

    def movie_view(mid: int) -> dict[str, Any] | None:
        m = w.movies[mid]
        if m["release_date"] > as_of.isoformat():
            return None  # not released yet at query time
        rating = [v for since, v in m["rating_history"] if since <= as_of][-1]
        out = {
            k: m[k]
            for k in (
                "title",
                "id",
                "release_date",
                "original_title",
                "original_language",
                "budget",
                "revenue",
            )
        }
        out.update(
            rating=rating,
            genres=m["genres"],
            oscar_awards=[a for a in m["oscar_awards"] if a["year_ceremony"] <= as_of.year],
            cast=m["cast"],
            crew=m["crew"],
            length=m["length"],
        )
        return out

    def movie_get_person_info(query: str) -> list[dict[str, Any]]:
        return [person_view(pid) for pid in search(w.person_index, query)]

    def movie_get_movie_info(query: str) -> list[dict[str, Any]]:
        views = (movie_view(mid) for mid in search(w.movie_index, query))
        return [v for v in views if v is not None]

    def movie_get_year_info(year: int | str) -> dict[str, Any] | None:
        y = _year(year)
        if y > as_of.year:
            return None
        today = as_of.isoformat()
        movies = [mid for released, mid in w.movies_by_year.get(str(y), ()) if released <= today]
        awards = w.oscars.get(y, []) if y <= as_of.year else []
        if not movies and not awards:
            return None
        return {"movie_list": sorted(movies), "oscar_awards": awards}

    def movie_get_movie_info_by_id(id: int) -> dict[str, Any] | None:
        return movie_view(id) if id in w.movies else None

    def movie_get_person_info_by_id(id: int) -> dict[str, Any] | None:
        return person_view(id) if id in w.people else None

    # --- finance -----------------------------------------------------------------------
    def company(ticker: str) -> dict[str, Any] | None:
        return w.companies.get(ticker.strip().upper())

    def history(ticker: str) -> dict[date, dict[str, float]]:
        c = company(ticker)
        return {} if c is None else w.prices(c["ticker"])

    def last_close(ticker: str) -> tuple[date, float] | None:
        series = history(ticker)
        days = [d for d in series if d <= as_of]
        return (days[-1], series[days[-1]]["Close"]) if days else None

    def eps_now(c: dict[str, Any]) -> float | None:
        valid = [v for since, v in c["eps"] if since <= as_of]
        return valid[-1] if valid else None

    def finance_get_company_name(query: str) -> list[str]:
        return search(w.company_index, query)

    def finance_get_ticker_by_name(query: str) -> str | None:
        return w.company_by_name.get(query.strip().casefold())

    def finance_get_price_history(ticker: str) -> dict[str, dict[str, float]] | None:
        series = history(ticker)
        if not series:
            return None
        start = as_of - timedelta(days=365)
        return {price_key(d): bar for d, bar in series.items() if start < d <= as_of}

    def finance_get_detailed_price_history(ticker: str) -> dict[str, dict[str, float]] | None:
        c = company(ticker)
        if c is None:
            return None
        series = history(ticker)
        days = [d for d in series if d <= as_of][-5:]
        out: dict[str, dict[str, float]] = {}
        for d in days:
            bar = series[d]
            rng = random.Random(f"{c['ticker']}/{d}")
            price = bar["Open"]
            for minute in range(0, 390, 1):
                t = datetime(d.year, d.month, d.day, 9, 30) + timedelta(minutes=minute)
                target = bar["Close"] if minute == 389 else None
                nxt = target or min(bar["High"], max(bar["Low"], price * (1 + rng.gauss(0, 0.001))))
                out[f"{t:%Y-%m-%d %H:%M:%S} EST"] = {
                    "Open": round(price, 2),
                    "High": round(max(price, nxt), 2),
                    "Low": round(min(price, nxt), 2),
                    "Close": round(nxt, 2),
                    "Volume": int(bar["Volume"] / 390),
                }
                price = nxt
        return out

    def finance_get_dividends_history(ticker: str) -> dict[str, float] | None:
        c = company(ticker)
        if c is None:
            return None
        return {price_key(d): v for d, v in c["dividends"].items() if d <= as_of}

    def finance_get_market_capitalization(ticker: str) -> float | None:
        c, close = company(ticker), last_close(ticker)
        return None if c is None or close is None else round(close[1] * c["shares"], 2)

    def finance_get_eps(ticker: str) -> float | None:
        c = company(ticker)
        return None if c is None else eps_now(c)

    def finance_get_pe_ratio(ticker: str) -> float | None:
        c, close = company(ticker), last_close(ticker)
        if c is None or close is None:
            return None
        eps = eps_now(c)
        return None if not eps or eps <= 0 else round(close[1] / eps, 2)

    def finance_get_info(ticker: str) -> dict[str, Any] | None:
        c, close = company(ticker), last_close(ticker)
        if c is None or close is None:
            return None
        year_ago = as_of - timedelta(days=365)
        paid = sum(v for d, v in c["dividends"].items() if year_ago < d <= as_of)
        return {
            "symbol": c["ticker"],
            "longName": c["name"],
            "sector": c["sector"],
            "currency": "USD",
            "currentPrice": close[1],
            "marketCap": finance_get_market_capitalization(ticker),
            "sharesOutstanding": c["shares"],
            "trailingEps": eps_now(c),
            "trailingPE": finance_get_pe_ratio(ticker),
            "dividendRate": round(paid, 2),
            "dividendYield": round(paid / close[1], 4) if paid else None,
        }

    # --- music -------------------------------------------------------------------------
    def artist(name: str) -> dict[str, Any] | None:
        key = w.artist_key.get(name.strip().casefold())
        return None if key is None else w.artists[key]

    def song(name: str) -> dict[str, Any] | None:
        key = w.song_key.get(name.strip().casefold())
        s = None if key is None else w.songs[key]
        return s if s is not None and s["release_date"] <= as_of.isoformat() else None

    def chart_on(d: date) -> tuple[date, list[dict[str, Any]]] | None:
        weeks = [wk for wk in w.charts if wk <= min(d, as_of)]
        return (weeks[-1], w.charts[weeks[-1]]) if weeks else None

    def music_search_artist_entity_by_name(query: str) -> list[str]:
        return search(w.artist_index, query)

    def music_search_song_entity_by_name(query: str) -> list[str]:
        return [s for s in search(w.song_index, query) if song(s) is not None]

    def music_get_billboard_rank_date(rank: int, date: str | None = None) -> list[Any] | None:
        found = chart_on(_parse_date(date) if date else as_of)
        if found is None:
            return None
        week, chart = found
        songs = [e["song"] for e in chart if e["rank"] == rank]
        return [songs, [week.isoformat()]] if songs else None

    def music_get_billboard_attributes(date: str, attribute: str, song_name: str) -> Any:
        if attribute not in BILLBOARD_ATTRIBUTES:
            raise ToolMisuse(f"attribute must be one of {', '.join(BILLBOARD_ATTRIBUTES)}")
        found = chart_on(_parse_date(date))
        if found is None:
            return None
        for entry in found[1]:
            if entry["song"].casefold() == song_name.casefold():
                return entry[attribute]
        return None

    def grammy_years() -> range:
        return range(min(w.grammys), min(max(w.grammys), as_of.year) + 1)

    def music_grammy_get_best_artist_by_year(year: int | str) -> list[str] | None:
        y = _year(year)
        return [w.grammys[y]["best_new_artist"]] if y in grammy_years() else None

    def music_grammy_get_best_song_by_year(year: int | str) -> list[str] | None:
        y = _year(year)
        return [w.grammys[y]["song_of_the_year"]] if y in grammy_years() else None

    def music_grammy_get_best_album_by_year(year: int | str) -> list[str] | None:
        y = _year(year)
        return [w.grammys[y]["album_of_the_year"]] if y in grammy_years() else None

    def award_years(name: str) -> list[int]:
        key = name.strip().casefold()
        return [
            y
            for y in grammy_years()
            if key
            in (w.grammys[y]["best_new_artist"].casefold(), w.grammys[y]["album_artist"].casefold())
        ]

    def music_grammy_get_award_count_by_artist(artist_name: str) -> int | None:
        return None if artist(artist_name) is None else len(award_years(artist_name))

    def music_grammy_get_award_count_by_song(song_name: str) -> int | None:
        if song(song_name) is None:
            return None
        key = song_name.strip().casefold()
        return sum(w.grammys[y]["song_of_the_year"].casefold() == key for y in grammy_years())

    def music_grammy_get_award_date_by_artist(artist_name: str) -> list[int] | None:
        return None if artist(artist_name) is None else award_years(artist_name)

    def music_grammy_get_all_awarded_artists() -> list[str]:
        names = {
            w.grammys[y][k] for y in grammy_years() for k in ("best_new_artist", "album_artist")
        }
        return sorted(names)

    def music_get_artist_birth_place(artist_name: str) -> str | None:
        a = artist(artist_name)
        return None if a is None else a["birth_place"]

    def music_get_artist_birth_date(artist_name: str) -> str | None:
        a = artist(artist_name)
        return None if a is None else a["birth_date"]

    def music_get_members(band_name: str) -> list[str] | None:
        a = artist(band_name)
        if a is None:
            return None
        return [
            m
            for joined, left, m in a["members"]
            if joined <= as_of and (left is None or left > as_of.isoformat())
        ]

    def music_get_lifespan(artist_name: str) -> list[str | None] | None:
        a = artist(artist_name)
        if a is None:
            return None
        start, end = a["lifespan"]
        return [start, end if end is not None and int(end) <= as_of.year else None]

    def music_get_song_author(song_name: str) -> str | None:
        s = song(song_name)
        return None if s is None else s["author"]

    def music_get_song_release_country(song_name: str) -> str | None:
        s = song(song_name)
        return None if s is None else s["release_country"]

    def music_get_song_release_date(song_name: str) -> str | None:
        s = song(song_name)
        return None if s is None else s["release_date"]

    def music_get_artist_all_works(artist_name: str) -> list[str] | None:
        a = artist(artist_name)
        return None if a is None else [s for s in a["works"] if song(s) is not None]

    # --- sports ------------------------------------------------------------------------
    def on_date(games: list[dict[str, Any]], field: str, value: str) -> list[dict[str, Any]]:
        if len(value.strip()) == 7:  # a month, YYYY-MM
            _parse_date(value.strip() + "-01")
            prefix = value.strip()
        else:
            prefix = _parse_date(value).isoformat()
        return [g for g in games if g[field].startswith(prefix) and g[field] <= as_of.isoformat()]

    def columns(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]] | None:
        # pandas' DataFrame.to_dict() layout, as CRAG returns it: column -> {row index: value}
        if not rows:
            return None
        return {col: {str(i): r[col] for i, r in enumerate(rows)} for col in rows[0]}

    def sports_soccer_get_games_on_date(date: str, team_name: str | None = None) -> Any:
        rows = []
        for g in on_date(w.soccer, "date", date):
            for side, other, gf, ga, venue in (
                ("home", "away", "home_goals", "away_goals", "Home"),
                ("away", "home", "away_goals", "home_goals", "Away"),
            ):
                if team_name and g[side].casefold() != team_name.strip().casefold():
                    continue
                result = "W" if g[gf] > g[ga] else ("L" if g[gf] < g[ga] else "D")
                rows.append(
                    {
                        "date": g["date"],
                        "team": g[side],
                        "opponent": g[other],
                        "venue": venue,
                        "result": result,
                        "GF": g[gf],
                        "GA": g[ga],
                        "Attendance": g["attendance"],
                    }
                )
        return columns(rows)

    def sports_nba_get_games_on_date(date: str, team_name: str | None = None) -> Any:
        key = team_name.strip().casefold() if team_name else None
        rows = [
            g
            for g in on_date(w.nba, "game_date", date)
            if key is None
            or key in (g["team_name_home"].casefold(), g["team_name_away"].casefold())
        ]
        return columns(rows)

    def sports_nba_get_play_by_play_data_by_game_ids(game_ids: list[str]) -> Any:
        games = {g["game_id"]: g for g in w.nba if g["game_date"] <= as_of.isoformat()}
        rows = []
        for gid in game_ids:
            g = games.get(str(gid).strip())
            if g is None:
                continue
            rng = random.Random(f"pbp/{gid}")
            home = away = 0
            for event in range(1, 25):
                period = 1 + (event - 1) // 6
                scorer_home = rng.random() < 0.5
                pts = rng.choice([2, 2, 3, 1])
                if event == 24:  # the last event lands on the final score
                    home, away = g["pts_home"], g["pts_away"]
                elif scorer_home:
                    home = min(g["pts_home"] - 1, home + pts)
                else:
                    away = min(g["pts_away"] - 1, away + pts)
                desc = f"{pts}PT shot made"
                rows.append(
                    {
                        "game_id": gid,
                        "eventnum": event,
                        "period": period,
                        "pctimestring": f"{11 - (event - 1) % 6 * 2}:{rng.randint(0, 59):02d}",
                        "homedescription": desc if scorer_home else None,
                        "visitordescription": None if scorer_home else desc,
                        "score": f"{away} - {home}",
                    }
                )
        return columns(rows)

    funcs = [
        (
            open_search_entity_by_name,
            QueryParams,
            "list[str]",
            "fuzzy",
            "search entity names (up to 10).",
        ),
        (
            open_get_entity,
            QueryParams,
            "dict | None",
            "exact",
            "summary_text and summary_structured of an entity (exact name).",
        ),
        (
            movie_get_person_info,
            QueryParams,
            "list[dict]",
            "fuzzy",
            "people matching the name (up to 10): name, id, acted_movies, "
            "directed_movies, birthday, oscar_awards.",
        ),
        (
            movie_get_movie_info,
            QueryParams,
            "list[dict]",
            "fuzzy",
            "movies matching the title (up to 10): title, id, release_date, budget, "
            "revenue, rating, genres, cast, crew, ...",
        ),
        (
            movie_get_year_info,
            YearParams,
            "dict | None",
            "exact",
            "movie_list (ids) and oscar_awards of a year.",
        ),
        (movie_get_movie_info_by_id, IdParams, "dict | None", "exact", "a movie by id."),
        (movie_get_person_info_by_id, IdParams, "dict | None", "exact", "a person by id."),
        (
            finance_get_company_name,
            QueryParams,
            "list[str]",
            "fuzzy",
            "company names matching the query (up to 10).",
        ),
        (
            finance_get_ticker_by_name,
            QueryParams,
            "str | None",
            "exact",
            "the ticker of a company (exact name).",
        ),
        (
            finance_get_price_history,
            TickerParams,
            "dict | None",
            "exact",
            "daily Open/High/Low/Close/Volume of the past year, keyed 'YYYY-MM-DD 00:00:00 EST'.",
        ),
        (
            finance_get_detailed_price_history,
            TickerParams,
            "dict | None",
            "exact",
            "minute bars of the last 5 trading days.",
        ),
        (
            finance_get_dividends_history,
            TickerParams,
            "dict | None",
            "exact",
            "dividends paid, keyed by date.",
        ),
        (
            finance_get_market_capitalization,
            TickerParams,
            "float | None",
            "exact",
            "market capitalization in USD.",
        ),
        (finance_get_eps, TickerParams, "float | None", "exact", "earnings per share."),
        (
            finance_get_pe_ratio,
            TickerParams,
            "float | None",
            "exact",
            "price-to-earnings ratio.",
        ),
        (
            finance_get_info,
            TickerParams,
            "dict | None",
            "exact",
            "company info (sector, marketCap, trailingPE, dividendYield, ...).",
        ),
        (
            music_search_artist_entity_by_name,
            QueryParams,
            "list[str]",
            "fuzzy",
            "artist names matching the query (up to 10).",
        ),
        (
            music_search_song_entity_by_name,
            QueryParams,
            "list[str]",
            "fuzzy",
            "song names matching the query (up to 10).",
        ),
        (
            music_get_billboard_rank_date,
            RankDateParams,
            "list | None",
            "exact",
            "Music: [songs, [chart date]] at a Billboard Hot 100 rank on the chart of a date.",
        ),
        (
            music_get_billboard_attributes,
            BillboardAttrParams,
            "int | None",
            "exact",
            "a song's rank, rank_last_week, weeks_in_chart or top_position on a date's chart.",
        ),
        (
            music_grammy_get_best_artist_by_year,
            YearParams,
            "list[str] | None",
            "exact",
            "the Grammy Best New Artist of a year.",
        ),
        (
            music_grammy_get_award_count_by_artist,
            ArtistParams,
            "int | None",
            "exact",
            "Grammy awards won by an artist.",
        ),
        (
            music_grammy_get_award_count_by_song,
            SongParams,
            "int | None",
            "exact",
            "Grammy awards won by a song.",
        ),
        (
            music_grammy_get_best_song_by_year,
            YearParams,
            "list[str] | None",
            "exact",
            "the Grammy Song of the Year of a year.",
        ),
        (
            music_grammy_get_award_date_by_artist,
            ArtistParams,
            "list[int] | None",
            "exact",
            "the years an artist won Grammys.",
        ),
        (
            music_grammy_get_best_album_by_year,
            YearParams,
            "list[str] | None",
            "exact",
            "the Grammy Album of the Year of a year.",
        ),
        (
            music_grammy_get_all_awarded_artists,
            _P,
            "list[str]",
            "none",
            "every artist who has won a Grammy.",
        ),
        (
            music_get_artist_birth_place,
            ArtistParams,
            "str | None",
            "exact",
            "an artist's birth place.",
        ),
        (
            music_get_artist_birth_date,
            ArtistParams,
            "str | None",
            "exact",
            "an artist's birth date.",
        ),
        (
            music_get_members,
            BandParams,
            "list[str] | None",
            "exact",
            "a band's current members.",
        ),
        (
            music_get_lifespan,
            ArtistParams,
            "list | None",
            "exact",
            "Music: [start year, end year or None] of an artist or band.",
        ),
        (music_get_song_author, SongParams, "str | None", "exact", "a song's author."),
        (
            music_get_song_release_country,
            SongParams,
            "str | None",
            "exact",
            "a song's release country.",
        ),
        (
            music_get_song_release_date,
            SongParams,
            "str | None",
            "exact",
            "a song's release date.",
        ),
        (
            music_get_artist_all_works,
            ArtistParams,
            "list[str] | None",
            "exact",
            "an artist's works.",
        ),
        (
            sports_soccer_get_games_on_date,
            GamesParams,
            "dict | None",
            "exact",
            "soccer games on a date (or month), column-oriented.",
        ),
        (
            sports_nba_get_games_on_date,
            GamesParams,
            "dict | None",
            "exact",
            "NBA games on a date (or month), column-oriented.",
        ),
        (
            sports_nba_get_play_by_play_data_by_game_ids,
            GameIdsParams,
            "dict | None",
            "exact",
            "play-by-play events of NBA games, column-oriented.",
        ),
    ]
    return [
        ToolSpec(f.__name__, desc, params, returns, f, matching)
        for f, params, returns, matching, desc in funcs
    ]
