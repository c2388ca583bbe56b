"""Sports: NBA and soccer teams and their games."""

from __future__ import annotations

import random
from datetime import date, timedelta
from typing import TYPE_CHECKING

from raleval.envs.crag.world.common import (
    random_name,
)

if TYPE_CHECKING:
    from raleval.envs.crag.world import CragWorld


def generate(w: CragWorld, rng: random.Random, n_core: int) -> None:
    cities = [random_name(rng, 1) for _ in range(max(6, min(30, n_core)))]
    nba_teams = [
        f"{c} {rng.choice(['Hawks', 'Comets', 'Giants', 'Kings', 'Wolves'])}" for c in cities
    ]
    soccer_teams = [f"{c} {rng.choice(['FC', 'United', 'City', 'Athletic'])}" for c in cities]
    for t in nba_teams:
        w.add_node(
            f"team:{t}", type="nba_team", domain="sports", name=t, popularity="head", core=True
        )
    for t in soccer_teams:
        w.add_node(
            f"team:{t}", type="soccer_team", domain="sports", name=t, popularity="torso", core=True
        )
    d = date(2023, 10, 24)
    game_id = 22300001
    while d <= date(2024, 6, 15):
        if d.weekday() in (1, 3, 5):
            teams = rng.sample(nba_teams, len(nba_teams) // 2 * 2)
            for home, away in zip(teams[::2], teams[1::2], strict=True):
                ph, pa = rng.randint(90, 135), rng.randint(90, 135)
                if ph == pa:
                    ph += 1
                w.nba.append(
                    {
                        "game_id": str(game_id),
                        "game_date": d.isoformat(),
                        "team_name_home": home,
                        "team_name_away": away,
                        "pts_home": ph,
                        "pts_away": pa,
                        "wl_home": "W" if ph > pa else "L",
                        "wl_away": "L" if ph > pa else "W",
                    }
                )
                w.graph.add_edge(f"team:{home}", f"team:{away}", key=f"nba:{game_id}")
                game_id += 1
        if d.weekday() == 5:
            teams = rng.sample(soccer_teams, len(soccer_teams) // 2 * 2)
            for home, away in zip(teams[::2], teams[1::2], strict=True):
                gh, ga = rng.randint(0, 4), rng.randint(0, 3)
                w.soccer.append(
                    {
                        "date": d.isoformat(),
                        "home": home,
                        "away": away,
                        "home_goals": gh,
                        "away_goals": ga,
                        "attendance": rng.randint(8000, 60000),
                    }
                )
        d += timedelta(days=1)
