"""Finance: companies with tickers, shares, quarterly EPS and dividends (prices: on use)."""

from __future__ import annotations

import random
from datetime import date
from typing import TYPE_CHECKING

from raleval.envs.crag.world.common import (
    SECTORS,
    UniqueNames,
    noise_names,
    popularity_of,
    random_name,
    world_trading_days,
)

if TYPE_CHECKING:
    from raleval.envs.crag.world import CragWorld


def _ticker(rng: random.Random, name: str, used: set[str]) -> str:
    letters = "".join(c for c in name.upper() if c.isalpha())
    for n in (3, 4, 2, 5):
        cand = letters[:n]
        if len(cand) == n and cand not in used:
            used.add(cand)
            return cand
    while True:
        cand = "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ") for _ in range(4))
        if cand not in used:
            used.add(cand)
            return cand


def generate(w: CragWorld, rng: random.Random, n_core: int, noise: int) -> None:
    unique, tickers = UniqueNames(), set()
    days = world_trading_days()

    def company_name(r: random.Random) -> str:
        first = random_name(r, 1)  # drawn before the kind: the world's draws stay in order
        return f"{first} {r.choice(['Systems', 'Energy', 'Labs', 'Bank', 'Motors', 'Foods'])}"

    names: list[tuple[str, bool, int]] = []
    for i in range(n_core):
        name = None
        while name is None:
            name = unique.take(company_name(rng))
        names.append((name, True, i))
        names += [
            (n, False, i) for n in noise_names(rng, name, "company", noise, company_name, unique)
        ]
    for name, core, i in names:
        ticker = _ticker(rng, name, tickers)
        shares = rng.randint(50, 5000) * 1_000_000
        eps = round(rng.uniform(-1.5, 12.0), 2)
        price0 = round(rng.uniform(8, 400), 2)
        dividends: dict[date, float] = {}
        if rng.random() < 0.6:
            amount = round(rng.uniform(0.05, 1.5), 2)
            for d in days[40::63]:  # quarterly
                dividends[d] = amount
                amount = round(amount * rng.choice([1.0, 1.0, 1.05]), 2)
        # quarterly EPS reports: a slow-changing fact with validity dates
        eps_history = []
        for d in days[::63]:
            eps_history.append((d, eps))
            eps = round(eps + rng.gauss(0.05, 0.4), 2)
        w.companies[ticker] = {
            "name": name,
            "ticker": ticker,
            "sector": rng.choice(SECTORS),
            "shares": shares,
            "eps": eps_history,
            "dividends": dividends,
            "price0": price0,
            "core": core,
        }
        w.add_node(
            f"company:{ticker}",
            type="company",
            domain="finance",
            name=name,
            popularity=popularity_of(i),
            core=core,
        )
