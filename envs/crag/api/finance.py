"""Finance domain: company names, tickers, prices, dividends and company info."""

from __future__ import annotations

from datetime import date
from typing import Any

from raleval.environment import ToolSpec
from raleval.envs.crag.api.common import (
    QueryParams,
    RenderedResult,
    TickerParams,
    search,
    specs,
)
from raleval.envs.crag.api.finance_info import info_record
from raleval.envs.crag.world import CragWorld, price_key
from raleval.envs.crag.world.prices import (
    MINUTES,
    bars_json,
    day_keys,
    minute_bars,
    minute_keys,
    year_window,
)


def tools(w: CragWorld, as_of: date) -> list[ToolSpec]:
    """This domain's endpoints over ``w`` as of ``as_of``."""
    start, stop = year_window(as_of)  # rows of the past year's trading days

    def company(ticker: str) -> dict[str, Any] | None:
        return w.companies.get(ticker.strip().upper())

    def last_close(c: dict[str, Any]) -> float | None:
        return float(w.price_series(c["ticker"]).close[stop - 1]) / 100 if stop else None

    def eps_now(c: dict[str, Any]) -> float | None:
        valid = [v for since, v in c["eps"] if since <= as_of]
        return valid[-1] if valid else None

    def finance_get_company_name(query: str) -> list[str]:
        return search(w.company_index, query)

    def finance_get_ticker_by_name(query: str) -> str | None:
        return w.company_by_name.get(query.strip().casefold())

    def finance_get_price_history(ticker: str) -> RenderedResult | dict | None:
        c = company(ticker)
        if c is None:
            return None
        if start == stop:
            return {}
        s = w.price_series(c["ticker"])
        window = slice(start, stop)
        return RenderedResult(
            bars_json(
                day_keys()[window], s.open[window], s.high[window], s.low[window],
                s.close[window], s.volume[window],
            )
        )  # fmt: skip

    def finance_get_detailed_price_history(ticker: str) -> RenderedResult | dict | None:
        c = company(ticker)
        if c is None:
            return None
        first = max(0, stop - 5)
        if first == stop:
            return {}
        bars = minute_bars(w.seed, w.price_series(c["ticker"]), first, stop)
        return RenderedResult(bars_json(minute_keys()[first * MINUTES : stop * MINUTES], *bars))

    def finance_get_dividends_history(ticker: str) -> dict[str, float] | None:
        c = company(ticker)
        if c is None:
            return None
        return {price_key(d): v for d, v in c["dividends"].items() if d <= as_of}

    def finance_get_market_capitalization(ticker: str) -> float | None:
        c = company(ticker)
        close = None if c is None else last_close(c)
        return None if c is None or close is None else round(close * c["shares"], 2)

    def finance_get_eps(ticker: str) -> float | None:
        c = company(ticker)
        return None if c is None else eps_now(c)

    def finance_get_pe_ratio(ticker: str) -> float | None:
        c = company(ticker)
        close = None if c is None else last_close(c)
        if c is None or close is None:
            return None
        eps = eps_now(c)
        return None if not eps or eps <= 0 else round(close / eps, 2)

    def finance_get_info(ticker: str) -> dict[str, Any] | None:
        c = company(ticker)
        if c is None:
            return None
        reports = [v for since, v in c["eps"] if since <= as_of]
        previous = reports[-2] if len(reports) > 1 else None
        series = w.price_series(c["ticker"])
        return info_record(c, series, (start, stop), as_of, eps_now(c), previous)

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
