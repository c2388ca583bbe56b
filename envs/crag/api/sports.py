"""Sports domain: soccer and NBA games and NBA play-by-play."""

from __future__ import annotations

import random
from bisect import bisect_left
from datetime import date
from typing import Any

from raleval.environment import ToolSpec
from raleval.envs.crag.api.common import (
    GameIdsParams,
    GamesParams,
    parse_date,
    specs,
)
from raleval.envs.crag.world import CragWorld

LEAGUE = "GEN-Premier League"  # the generated soccer league's name
NBA_COLUMNS_SIDE = (
    "team_id", "team_abbreviation", "team_name", "matchup", "wl", "fgm", "fga", "fg_pct",
    "fg3m", "fg3a", "fg3_pct", "ftm", "fta", "ft_pct", "oreb", "dreb", "reb", "ast", "stl",
    "blk", "tov", "pf", "pts", "plus_minus", "video_available",
)  # fmt: skip


def team_id(name: str) -> str:
    """A stable NBA-style team id for a generated team."""
    return str(1610612700 + int.from_bytes(name.encode()[:8].ljust(8, b"_"), "big") % 97)


def abbreviation(name: str) -> str:
    return "".join(c for c in name.upper() if c.isalpha())[:3]


def season(day: str) -> str:
    """A season's first year: seasons start in August (NBA in October)."""
    y, m = int(day[:4]), int(day[5:7])
    return str(y if m >= 8 else y - 1)


def soccer_row(g: dict[str, Any], side: str) -> tuple[str, dict[str, Any]]:
    """One team's row of a soccer match as CRAG's table has it, with its index label."""
    other = "away" if side == "home" else "home"
    gf, ga = g[f"{side}_goals"], g[f"{other}_goals"]
    r = random.Random(f"soccer/{g['date']}/{g['home']}")
    xg = {"home": round(r.uniform(0.2, 3.5), 1), "away": round(r.uniform(0.2, 3.0), 1)}
    poss = r.randint(30, 70)
    first = int(season(g["date"]))
    index = f"('{LEAGUE}', '{first % 100:02d}{(first + 1) % 100:02d}', '{g[side]}', "
    index += f"'{g['date']} {g['home']}-{g['away']}')"
    day = date.fromisoformat(g["date"])
    row = {
        "date": f"{g['date']}T00:00:00.000",
        "time": r.choice(["12:30:00", "15:00:00", "17:30:00", "20:00:00"]),
        "round": f"Matchweek {(day - date(first, 8, 1)).days // 7 + 1}",
        "day": day.strftime("%a"),
        "venue": side.capitalize(),
        "result": "W" if gf > ga else ("L" if gf < ga else "D"),
        "GF": str(gf),
        "GA": str(ga),
        "opponent": g[other],
        "xG": xg[side],
        "xGA": xg[other],
        "Poss": poss if side == "home" else 100 - poss,
        "Attendance": g["attendance"],
        "Captain": f"Captain of {g[side]}",
        "Formation": r.choice(["4-3-3", "4-2-3-1", "3-5-2", "4-4-2"]),
        "Referee": r.choice(["Anthony Taylor", "Michael Oliver", "Simon Hooper"]),
        "match_report": f"/en/matches/{r.getrandbits(32):08x}/{g['home']}-{g['away']}",
        "Notes": None,
    }
    return index, row


def _box(pts: int, r: random.Random) -> dict[str, Any]:
    fg3m = r.randint(5, 18)
    ftm = r.randint(8, 25)
    if (pts - 3 * fg3m - ftm) % 2:
        ftm += 1
    fgm = (pts - 3 * fg3m - ftm) // 2 + fg3m
    fga, fg3a, fta = fgm + r.randint(35, 55), fg3m + r.randint(10, 25), ftm + r.randint(0, 8)
    oreb, dreb = r.randint(5, 16), r.randint(28, 45)
    return {
        "fgm": float(fgm), "fga": float(fga), "fg_pct": round(fgm / fga, 3),
        "fg3m": float(fg3m), "fg3a": float(fg3a), "fg3_pct": round(fg3m / fg3a, 3),
        "ftm": float(ftm), "fta": float(fta), "ft_pct": round(ftm / fta, 3) if fta else 0.0,
        "oreb": float(oreb), "dreb": float(dreb), "reb": float(oreb + dreb),
        "ast": float(r.randint(18, 35)), "stl": float(r.randint(3, 12)),
        "blk": float(r.randint(1, 9)), "tov": float(r.randint(8, 20)),
        "pf": float(r.randint(12, 25)), "pts": float(pts),
    }  # fmt: skip


def nba_row(g: dict[str, Any]) -> dict[str, Any]:
    """A game as a row of CRAG's NBA ``game`` table (55 columns, its value types)."""
    r = random.Random(f"nba/{g['game_id']}")
    home, away = g["team_name_home"], g["team_name_away"]
    first = int(season(g["game_date"]))
    row: dict[str, Any] = {"season_id": f"2{first}"}
    for side, team, other in (("home", home, away), ("away", away, home)):
        box = _box(g[f"pts_{side}"], r)
        vs = " vs. " if side == "home" else " @ "
        values = {
            "team_id": team_id(team),
            "team_abbreviation": abbreviation(team),
            "team_name": team,
            "matchup": f"{abbreviation(team)}{vs}{abbreviation(other)}",
            "wl": g[f"wl_{side}"],
            **box,
            "plus_minus": g[f"pts_{side}"] - g[f"pts_{'away' if side == 'home' else 'home'}"],
            "video_available": 1,
        }
        for col in NBA_COLUMNS_SIDE:
            row[f"{col}_{side}"] = values[col]
        if side == "home":
            row["game_id"] = g["game_id"]
            row["game_date"] = f"{g['game_date']} 00:00:00"
            row["min"] = 240
    row["season_type"] = "Regular Season"
    return {k: row[k] for k in NBA_ORDER}


NBA_ORDER = (
    ["season_id"]
    + [f"{c}_home" for c in NBA_COLUMNS_SIDE[:3]]
    + ["game_id", "game_date", "matchup_home", "wl_home", "min"]
    + [f"{c}_home" for c in NBA_COLUMNS_SIDE[5:]]
    + [f"{c}_away" for c in NBA_COLUMNS_SIDE[:3]]
    + [f"{c}_away" for c in NBA_COLUMNS_SIDE[3:]]
    + ["season_type"]
)
PLAYERS = ("player1", "player2", "player3")


def pbp_rows(g: dict[str, Any]) -> list[dict[str, Any]]:
    """The play-by-play of a game as rows of CRAG's ``play_by_play`` table (34 columns)."""
    gid = g["game_id"]
    rng = random.Random(f"pbp/{gid}")
    home = away = 0
    rows = []
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
        team = g["team_name_home"] if scorer_home else g["team_name_away"]
        city, _, nickname = team.rpartition(" ")
        player = f"Player {rng.randint(1, 12)} of {team}"
        desc = f"{player} {pts}PT shot made" if pts > 1 else f"{player} Free Throw 1 of 1"
        margin = home - away
        row: dict[str, Any] = {
            "game_id": gid,
            "eventnum": event,
            "eventmsgtype": 1 if pts > 1 else 3,
            "eventmsgactiontype": rng.choice([1, 5, 79]) if pts > 1 else 10,
            "period": period,
            "wctimestring": f"{7 + period // 3}:{rng.randint(0, 59):02d} PM",
            "pctimestring": f"{11 - (event - 1) % 6 * 2}:{rng.randint(0, 59):02d}",
            "homedescription": desc if scorer_home else None,
            "neutraldescription": None,
            "visitordescription": None if scorer_home else desc,
            "score": f"{away} - {home}",
            "scoremargin": "TIE" if margin == 0 else str(margin),
        }
        for i, who in enumerate(PLAYERS):
            scorer = i == 0
            row[f"person{i + 1}type"] = (4.0 if scorer_home else 5.0) if scorer else 0.0
            row[f"{who}_id"] = str(1_600_000 + rng.randint(0, 99_999)) if scorer else "0"
            row[f"{who}_name"] = player if scorer else None
            row[f"{who}_team_id"] = f"{team_id(team)}.0" if scorer else None
            row[f"{who}_team_city"] = city if scorer else None
            row[f"{who}_team_nickname"] = nickname if scorer else None
            row[f"{who}_team_abbreviation"] = abbreviation(team) if scorer else None
        row["video_available_flag"] = "1"
        rows.append(row)
    return rows


def _by_date(w: CragWorld, league: str, field: str) -> tuple[list[str], list[int]]:
    """A league's game dates sorted, and each one's position in the league's list."""
    key = f"{league}_by_date"
    if key not in w.derived:
        games = getattr(w, league)
        order = sorted(range(len(games)), key=lambda i: games[i][field])
        w.derived[key] = ([games[i][field] for i in order], order)
    return w.derived[key]


def _memo(w: CragWorld, name: str) -> dict[Any, Any]:
    return w.derived.setdefault(name, {})


def tools(w: CragWorld, as_of: date) -> list[ToolSpec]:
    """This domain's endpoints over ``w`` as of ``as_of``."""
    today = as_of.isoformat()

    def on_date(league: str, field: str, value: str) -> list[dict[str, Any]]:
        """The league's games on a date, in a month or a year, played by ``as_of``, in the
        league's order (dates are looked up in a sorted list, not scanned)."""
        value = value.strip()
        if len(value) == 4 and value.isdigit():  # a year, YYYY
            prefix = value
        elif len(value) == 7:  # a month, YYYY-MM
            parse_date(value + "-01")
            prefix = value
        else:
            prefix = parse_date(value).isoformat()
        dates, order = _by_date(w, league, field)
        start, stop = bisect_left(dates, prefix), bisect_left(dates, prefix + "~")
        games = getattr(w, league)
        return [games[i] for i in sorted(order[start:stop]) if games[i][field] <= today]

    def columns(rows: list[tuple[str, dict[str, Any]]]) -> dict[str, dict[str, Any]] | None:
        # pandas' DataFrame.to_json() layout, as CRAG returns it: column -> {row label: value}
        if not rows:
            return None
        return {col: {label: r[col] for label, r in rows} for col in rows[0][1]}

    def soccer(g: dict[str, Any], side: str) -> tuple[str, dict[str, Any]]:
        memo, key = _memo(w, "soccer_rows"), (g["date"], g["home"], side)
        if key not in memo:
            memo[key] = soccer_row(g, side)
        return memo[key]

    def nba(g: dict[str, Any]) -> dict[str, Any]:
        memo = _memo(w, "nba_rows")
        if g["game_id"] not in memo:
            memo[g["game_id"]] = nba_row(g)
        return memo[g["game_id"]]

    def sports_soccer_get_games_on_date(date: str, team_name: str | None = None) -> Any:
        key = team_name.strip().casefold() if team_name else None
        rows = [
            soccer(g, side)
            for g in on_date("soccer", "date", date)
            for side in ("home", "away")
            if key is None or g[side].casefold() == key
        ]
        return columns(rows)

    def sports_nba_get_games_on_date(date: str, team_name: str | None = None) -> Any:
        key = team_name.strip().casefold() if team_name else None
        games = [
            g
            for g in on_date("nba", "game_date", date)
            if key is None
            or key in (g["team_name_home"].casefold(), g["team_name_away"].casefold())
        ]
        return columns([(str(i), nba(g)) for i, g in enumerate(games)])

    def sports_nba_get_play_by_play_data_by_game_ids(game_ids: list[str]) -> Any:
        if "nba_by_id" not in w.derived:
            w.derived["nba_by_id"] = {g["game_id"]: g for g in w.nba}
        by_id, memo = w.derived["nba_by_id"], _memo(w, "pbp_rows")
        rows = []
        for gid in game_ids:
            g = by_id.get(str(gid).strip())
            if g is None or g["game_date"] > today:
                continue
            if g["game_id"] not in memo:
                memo[g["game_id"]] = pbp_rows(g)
            rows += memo[g["game_id"]]
        return columns([(str(i), r) for i, r in enumerate(rows)])

    funcs = [
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
    return specs(funcs)
