"""A company's yfinance-style info record, with the 125 keys CRAG's ``finance_get_info`` has.

Keys and value types follow CRAG's real output (tests/data/crag_real_shapes.json). Values that
the world models (name, sector, shares, EPS, dividends, prices) are computed from it as of the
query date; descriptive values the world does not model (address, officers, risk scores,
analyst targets ...) are drawn from a generator seeded by the ticker, so they are stable.
"""

from __future__ import annotations

import random
from datetime import date, datetime, timedelta, timezone
from typing import Any

from raleval.envs.crag.world.prices import PriceSeries, calendar

_STREETS = ["Main Street", "Market Street", "Harbor Way", "Industrial Park", "Hill Road"]
_TITLES = ["Founder, Chairman & CEO", "Chief Financial Officer", "Chief Operating Officer"]


def _epoch(d: date) -> int:
    return int(datetime(d.year, d.month, d.day, tzinfo=timezone.utc).timestamp())


def _key(text: str) -> str:
    return text.lower().replace(" ", "-").replace("&", "").replace("--", "-")


def info_record(
    c: dict[str, Any],
    series: PriceSeries,
    year: tuple[int, int],
    as_of: date,
    eps: float | None,
    previous_eps: float | None,
) -> dict[str, Any] | None:
    """``c``'s info as of ``as_of`` from its daily ``series`` (``year``: the rows of the past
    year's trading days, up to ``as_of``); None before its first trade.

    As in CRAG, ``forwardEps`` and ``forwardPE`` are what ``finance_get_eps`` and
    ``finance_get_pe_ratio`` answer (the latest EPS report); ``trailingEps`` / ``trailingPE``
    use the report before it."""
    start, stop = year
    if not stop:
        return None
    r = random.Random(f"info/{c['ticker']}")
    bar, prev = series.bar(stop - 1), series.bar(max(0, stop - 2))
    close = float(bar["Close"])
    closes = series.closes(start, stop)
    volumes = series.volume[start:stop].tolist()
    shares = int(c["shares"])
    market_cap = round(close * shares)
    paid = [(d, v) for d, v in c["dividends"].items() if d <= as_of]
    rate = round(sum(v for d, v in paid if d > as_of - timedelta(days=365)), 2)
    forward_eps = float(eps) if eps is not None else 0.0
    trailing_eps = float(previous_eps) if previous_eps is not None else forward_eps
    revenue = int(market_cap * r.uniform(0.1, 0.6))
    ebitda = int(revenue * r.uniform(0.1, 0.5))
    cash, debt = int(revenue * r.uniform(0.05, 0.5)), int(revenue * r.uniform(0.05, 0.8))
    net_income = int(trailing_eps * shares)
    city = r.choice(["Springfield", "Riverside", "Fairview", "Madison", "Georgetown"])
    sector = c["sector"]
    industry = f"{sector} Services"
    fiscal_end = date(as_of.year - 1, 12, 31)
    first_trade = calendar()[0]
    officers = [
        {
            "maxAge": 1,
            "name": f"Officer {i + 1} of {c['name']}",
            "age": r.randint(35, 70),
            "title": title,
            "yearBorn": as_of.year - r.randint(35, 70),
            "fiscalYear": fiscal_end.year,
            "totalPay": r.randint(500_000, 30_000_000),
            "exercisedValue": 0,
            "unexercisedValue": 0,
        }
        for i, title in enumerate(_TITLES)
    ]
    target = close * r.uniform(0.9, 1.4)
    short = int(shares * r.uniform(0.005, 0.05))
    record: dict[str, Any] = {
        "address1": f"{r.randint(1, 999)} {r.choice(_STREETS)}",
        "city": city,
        "state": r.choice(["CA", "NY", "TX", "WA", "MA"]),
        "zip": f"{r.randint(10000, 99999)}",
        "country": "United States",
        "phone": f"{r.randint(200, 999)} {r.randint(200, 999)} {r.randint(1000, 9999)}",
        "website": f"https://www.{c['ticker'].lower()}.example.com",
        "industry": industry,
        "industryKey": _key(industry),
        "industryDisp": industry,
        "sector": sector,
        "sectorKey": _key(sector),
        "sectorDisp": sector,
        "longBusinessSummary": f"{c['name']} operates in the {sector.lower()} sector.",
        "fullTimeEmployees": r.randint(200, 200_000),
        "companyOfficers": officers,
        "auditRisk": r.randint(1, 10),
        "boardRisk": r.randint(1, 10),
        "compensationRisk": r.randint(1, 10),
        "shareHolderRightsRisk": r.randint(1, 10),
        "overallRisk": r.randint(1, 10),
        "governanceEpochDate": _epoch(as_of.replace(day=1)),
        "compensationAsOfEpochDate": _epoch(fiscal_end),
        "maxAge": 86400,
        "priceHint": 2,
        "previousClose": float(prev["Close"]),
        "open": float(bar["Open"]),
        "dayLow": float(bar["Low"]),
        "dayHigh": float(bar["High"]),
        "regularMarketPreviousClose": float(prev["Close"]),
        "regularMarketOpen": float(bar["Open"]),
        "regularMarketDayLow": float(bar["Low"]),
        "regularMarketDayHigh": float(bar["High"]),
        "dividendRate": float(rate),
        "dividendYield": round(rate / close, 4),
        "exDividendDate": _epoch(paid[-1][0]) if paid else 0,
        "beta": round(r.uniform(0.4, 2.0), 3),
        "trailingPE": round(close / trailing_eps, 6) if trailing_eps > 0 else None,
        "forwardPE": round(close / forward_eps, 2) if forward_eps > 0 else None,
        "volume": int(bar["Volume"]),
        "regularMarketVolume": int(bar["Volume"]),
        "averageVolume": int(sum(volumes) / len(volumes)),
        "averageVolume10days": int(sum(volumes[-10:]) / len(volumes[-10:])),
        "averageDailyVolume10Day": int(sum(volumes[-10:]) / len(volumes[-10:])),
        "bid": round(close * 0.999, 2),
        "ask": round(close * 1.001, 2),
        "bidSize": 100 * r.randint(1, 40),
        "askSize": 100 * r.randint(1, 40),
        "marketCap": market_cap,
        "fiftyTwoWeekLow": min(closes),
        "fiftyTwoWeekHigh": max(closes),
        "priceToSalesTrailing12Months": round(market_cap / revenue, 6),
        "fiftyDayAverage": round(sum(closes[-50:]) / len(closes[-50:]), 4),
        "twoHundredDayAverage": round(sum(closes[-200:]) / len(closes[-200:]), 4),
        "currency": "USD",
        "enterpriseValue": market_cap + debt - cash,
        "profitMargins": round(net_income / revenue, 5),
        "floatShares": int(shares * r.uniform(0.7, 0.99)),
        "sharesOutstanding": shares,
        "sharesShort": short,
        "sharesShortPriorMonth": int(short * r.uniform(0.8, 1.2)),
        "sharesShortPreviousMonthDate": _epoch(as_of - timedelta(days=45)),
        "dateShortInterest": _epoch(as_of - timedelta(days=15)),
        "sharesPercentSharesOut": round(short / shares, 4),
        "heldPercentInsiders": round(r.uniform(0.0, 0.2), 5),
        "heldPercentInstitutions": round(r.uniform(0.3, 0.9), 5),
        "shortRatio": round(r.uniform(0.5, 5.0), 2),
        "shortPercentOfFloat": round(r.uniform(0.005, 0.06), 4),
        "impliedSharesOutstanding": shares,
        "bookValue": round(r.uniform(5.0, 150.0), 3),
        "priceToBook": round(r.uniform(0.8, 12.0), 6),
        "lastFiscalYearEnd": _epoch(fiscal_end),
        "nextFiscalYearEnd": _epoch(date(fiscal_end.year + 1, 12, 31)),
        "mostRecentQuarter": _epoch(date(as_of.year, 1, 1) - timedelta(days=1)),
        "earningsQuarterlyGrowth": round(r.uniform(-0.5, 2.0), 3),
        "netIncomeToCommon": net_income,
        "trailingEps": trailing_eps,
        "forwardEps": forward_eps,
        "pegRatio": round(r.uniform(0.5, 3.0), 2),
        "enterpriseToRevenue": round((market_cap + debt - cash) / revenue, 3),
        "enterpriseToEbitda": round((market_cap + debt - cash) / ebitda, 3),
        "52WeekChange": round(closes[-1] / closes[0] - 1, 6),
        "SandP52WeekChange": round(r.uniform(-0.1, 0.3), 6),
        "lastDividendValue": float(paid[-1][1]) if paid else 0.0,
        "lastDividendDate": _epoch(paid[-1][0]) if paid else 0,
        "exchange": r.choice(["NMS", "NYQ"]),
        "quoteType": "EQUITY",
        "symbol": c["ticker"],
        "underlyingSymbol": c["ticker"],
        "shortName": c["name"],
        "longName": c["name"],
        "firstTradeDateEpochUtc": _epoch(first_trade),
        "timeZoneFullName": "America/New_York",
        "timeZoneShortName": "EST",
        "uuid": f"{random.Random(c['ticker']).getrandbits(128):032x}",
        "messageBoardId": f"finmb_{r.randint(10_000, 99_999_999)}",
        "gmtOffSetMilliseconds": -18000000,
        "currentPrice": close,
        "targetHighPrice": round(target * 1.3, 2),
        "targetLowPrice": round(target * 0.7, 2),
        "targetMeanPrice": round(target, 2),
        "targetMedianPrice": round(target * 1.01, 2),
        "recommendationMean": round(r.uniform(1.0, 4.0), 1),
        "recommendationKey": r.choice(["buy", "hold", "strong_buy", "underperform"]),
        "numberOfAnalystOpinions": r.randint(3, 60),
        "totalCash": cash,
        "totalCashPerShare": round(cash / shares, 3),
        "ebitda": ebitda,
        "totalDebt": debt,
        "quickRatio": round(r.uniform(0.5, 3.0), 3),
        "currentRatio": round(r.uniform(0.8, 3.5), 3),
        "totalRevenue": revenue,
        "debtToEquity": round(r.uniform(5.0, 200.0), 3),
        "revenuePerShare": round(revenue / shares, 3),
        "returnOnAssets": round(r.uniform(-0.05, 0.2), 5),
        "returnOnEquity": round(r.uniform(-0.1, 0.4), 5),
        "freeCashflow": int(ebitda * r.uniform(0.2, 0.7)),
        "operatingCashflow": int(ebitda * r.uniform(0.6, 1.0)),
        "earningsGrowth": round(r.uniform(-0.5, 2.0), 3),
        "revenueGrowth": round(r.uniform(-0.2, 0.5), 3),
        "grossMargins": round(r.uniform(0.2, 0.8), 5),
        "ebitdaMargins": round(ebitda / revenue, 5),
        "operatingMargins": round(r.uniform(0.05, 0.4), 5),
        "financialCurrency": "USD",
        "trailingPegRatio": round(r.uniform(0.5, 3.0), 4),
    }
    return record
