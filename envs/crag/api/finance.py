"""Finance domain: company names, tickers, prices, dividends and company info."""

from __future__ import annotations

import random
from datetime import date, datetime, timedelta
from typing import Any

from raleval.environment import ToolSpec
from raleval.envs.crag.api.common import (
    QueryParams,
    TickerParams,
    search,
    specs,
)
from raleval.envs.crag.api.finance_info import info_record
from raleval.envs.crag.world import CragWorld, price_key


def tools(w: CragWorld, as_of: date) -> list[ToolSpec]:
    """This domain's endpoints over ``w`` as of ``as_of``."""

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
        c = company(ticker)
        if c is None:
            return None
        reports = [v for since, v in c["eps"] if since <= as_of]
        previous = reports[-2] if len(reports) > 1 else None
        return info_record(c, history(ticker), as_of, eps_now(c), previous)

    funcs = [
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
    ]
    return specs(funcs)
