"""Price series kept in the shape the finance APIs read them: whole cents in numpy arrays
over the shared trading calendar, and JSON text rendered from them without a Python loop.

A company's daily bars are a seeded random walk (log-normal steps, floored at 1.0) drawn with
numpy; its minute bars for one day are a seeded walk from that day's Open bridged to its Close
and kept inside its Low..High. Prices are whole cents, so a bar's JSON text is digits cut out
of fixed-width columns (:func:`bars_json`), exactly what ``json.dumps`` writes for the same
bars: rendering 1,950 minute bars this way takes a fraction of a millisecond, formatting them
float by float took milliseconds.
"""

from __future__ import annotations

import hashlib
from bisect import bisect_right
from dataclasses import dataclass
from datetime import date, timedelta
from functools import cache

import numpy as np

from raleval.envs.crag.world.common import world_trading_days

MINUTES = 390  # 09:30 to 15:59


def _rng(*parts: object) -> np.random.Generator:
    digest = hashlib.blake2b("/".join(map(str, parts)).encode(), digest_size=8)
    return np.random.default_rng(int.from_bytes(digest.digest(), "big"))


@dataclass(frozen=True)
class PriceSeries:
    """Daily bars of one ticker over :func:`calendar` (row ``i`` is day ``calendar()[i]``)."""

    ticker: str
    open: np.ndarray  # int64 cents
    high: np.ndarray
    low: np.ndarray
    close: np.ndarray
    volume: np.ndarray  # int64 shares

    def bar(self, i: int) -> dict[str, float | int]:
        """Day ``i``'s bar as CRAG's API has it."""
        return {
            "Open": float(self.open[i]) / 100,
            "High": float(self.high[i]) / 100,
            "Low": float(self.low[i]) / 100,
            "Close": float(self.close[i]) / 100,
            "Volume": int(self.volume[i]),
        }

    def closes(self, start: int, stop: int) -> list[float]:
        return (self.close[start:stop] / 100).tolist()


@cache
def calendar() -> tuple[date, ...]:
    return world_trading_days()


def days_through(when: date) -> int:
    """How many trading days there are up to and including ``when``."""
    return bisect_right(calendar(), when)


def year_window(as_of: date) -> tuple[int, int]:
    """Rows of the trading days in the year up to ``as_of`` (after ``as_of`` - 365 days)."""
    return days_through(as_of - timedelta(days=365)), days_through(as_of)


def _cents(x: np.ndarray) -> np.ndarray:
    # np.round(x, 2) is rint(x * 100) / 100: the same cents, so c / 100 is the same float
    return np.rint(x * 100).astype(np.int64)


def daily_series(seed: int, ticker: str, price0: float) -> PriceSeries:
    """``ticker``'s daily bars (the walk the world has always drawn for it)."""
    rng = _rng("crag", seed, "price", ticker)
    n = len(calendar())
    close = np.maximum(1.0, price0 * np.exp(np.cumsum(rng.normal(0.0003, 0.02, n))))
    open_ = np.concatenate(([price0], close[:-1]))
    high = np.maximum(open_, close) * (1 + np.abs(rng.normal(0, 0.006, n)))
    low = np.minimum(open_, close) * (1 - np.abs(rng.normal(0, 0.006, n)))
    volume = rng.integers(200_000, 20_000_000, n)
    return PriceSeries(
        ticker, _cents(open_), _cents(high), _cents(low), _cents(close), volume.astype(np.int64)
    )


def minute_bars(seed: int, series: PriceSeries, start: int, stop: int) -> tuple[np.ndarray, ...]:
    """(open, high, low, close, volume) of the 390 minute bars of days ``start .. stop - 1``,
    in cents: each day a walk from its Open bridged to its Close, inside its Low..High, with
    its volume spread evenly. A day's walk depends only on (seed, ticker, day): it is drawn
    from a counter-based generator at that day's own counter."""
    days = stop - start
    if days <= 0:
        return tuple(np.empty(0, np.int64) for _ in range(5))
    digest = hashlib.blake2b(f"crag/{seed}/minutes/{series.ticker}".encode(), digest_size=16)
    bits = np.random.Philox(key=int.from_bytes(digest.digest(), "big"), counter=start * 128)
    raw = bits.random_raw(days * 512).reshape(days, 512)[:, :MINUTES]  # 128 blocks of 4 a day
    u = ((raw >> np.uint64(11)).astype(np.float64) + 1.0) * 2.0**-53  # (0, 1]
    # Box-Muller on each day's pairs of uniforms: standard normal steps
    radius = np.sqrt(-2.0 * np.log(u[:, 0::2]))
    angle = 2.0 * np.pi * u[:, 1::2]
    steps = np.concatenate([radius * np.cos(angle), radius * np.sin(angle)], axis=1) * 0.001
    walk = np.cumsum(steps, axis=1)
    o, h, lo, c = (
        a[start:stop, None] for a in (series.open, series.high, series.low, series.close)
    )
    ramp = np.arange(1, MINUTES + 1) / MINUTES
    log_path = walk - ramp * (walk[:, -1:] - np.log(c / o))
    close = np.clip(np.rint(o * np.exp(log_path)), lo, h).astype(np.int64)
    close[:, -1] = c[:, 0]
    open_ = np.concatenate([o, close[:, :-1]], axis=1)
    volume = np.repeat(series.volume[start:stop] // MINUTES, MINUTES)
    return (
        open_.ravel(),
        np.maximum(open_, close).ravel(),
        np.minimum(open_, close).ravel(),
        close.ravel(),
        volume,
    )


# --- JSON text ----------------------------------------------------------------------------


@cache
def day_keys() -> np.ndarray:
    """``YYYY-MM-DD 00:00:00 EST`` of every trading day, as a (days, 23) byte matrix."""
    return _byte_rows([f"{d.isoformat()} 00:00:00 EST" for d in calendar()])


@cache
def minute_keys() -> np.ndarray:
    """``YYYY-MM-DD HH:MM:00 EST`` of every trading minute (390 rows a day), as a byte matrix
    (7 MB, made on first use)."""
    times = _byte_rows(
        [f" {9 + (30 + m) // 60:02d}:{(30 + m) % 60:02d}:00 EST" for m in range(390)]
    )
    dates = _byte_rows([d.isoformat() for d in calendar()])
    n = len(dates) * MINUTES
    return np.hstack([np.repeat(dates, MINUTES, axis=0), np.tile(times, (len(dates), 1))]).reshape(
        n, -1
    )


def _byte_rows(texts: list[str]) -> np.ndarray:
    width = len(texts[0])
    assert all(len(t) == width for t in texts)
    return np.frombuffer("".join(texts).encode("ascii"), dtype=np.uint8).reshape(-1, width)


_FIELDS = ("Open", "High", "Low", "Close", "Volume")
_WIDTH = 8  # digits of a column: dollars of a price, shares of a volume (below 10**8)


def _words(texts: list[bytes]) -> np.ndarray:
    """Four-byte strings as native uint32 words (so a column of them is one array write)."""
    return np.frombuffer(b"".join(texts), dtype=np.uint32)


# 0..9999 as four digits; the same with leading zeros as NUL bytes (dropped from the text),
# 0 as one digit, or as nothing when a higher word holds digits; the cents of a price as
# float repr writes them (".5", ".05", ".0"), padded with NUL
_DIGITS4 = _words([f"{i:04d}".encode() for i in range(10_000)])
_LEADING = _words([f"{i:>4d}".replace(" ", "\0").encode() for i in range(10_000)])
_HIGH = _LEADING.copy()
_HIGH[0] = 0
_LOW = np.concatenate([_LEADING, _DIGITS4])  # [high > 0 and 10_000 or 0] + low
_CENTS = _words(
    [(f".{i // 10}\0\0" if i % 10 == 0 else f".{i:02d}\0").encode() for i in range(100)]
)


@cache
def _layout(key_width: int) -> tuple[np.ndarray, int, list[tuple[int, bool]]]:
    """One ``"key": {...}, `` row as bytes with NUL where the key and numbers go, where the
    key starts, and each number's first word (and whether it is a price): number columns
    start on a four-byte word, so each is written as one uint32 column."""
    row = bytearray(b'"')
    key_at = len(row)
    row += b"\0" * key_width
    columns = []
    for i, name in enumerate(_FIELDS):
        row += (('": {' if i == 0 else ", ") + f'"{name}": ').encode()
        row += b"\0" * (-len(row) % 4)
        price = name != "Volume"
        columns.append((len(row) // 4, price))
        row += b"\0" * (_WIDTH + 4 if price else _WIDTH)
    row += b"}, "
    row += b"\0" * (-len(row) % 4)
    return np.frombuffer(bytes(row), np.uint8), key_at, columns


def bars_json(keys: np.ndarray, o, h, lo, c, v) -> str:
    """``json.dumps({key: {"Open": o/100, ..., "Volume": v}, ...}, separators=(", ", ": "))``
    for rows of whole-cent prices, built with numpy (keys: a byte matrix, one key a row)."""
    n, key_width = keys.shape
    if n == 0:
        return "{}"
    columns = [np.asarray(x, dtype=np.int64) for x in (o, h, lo, c, v)]
    too_big = max(x.max() for x in columns[:4]) >= 2**31 or columns[4].max() >= 10**_WIDTH
    if too_big or min(x.min() for x in columns) < 0:
        return _bars_json_slow(keys, columns)
    row, key_at, slots = _layout(key_width)
    out = np.tile(row, (n, 1))
    out[:, key_at : key_at + key_width] = keys
    words = out.view(np.uint32)
    for (w, price), values in zip(slots, columns, strict=True):
        values = values.astype(np.int32)  # bounded above: int32 arithmetic is faster
        number = values // 100 if price else values
        high, low = np.divmod(number, 10_000)
        words[:, w] = _HIGH[high]
        words[:, w + 1] = _LOW[low + (high > 0) * 10_000]
        if price:
            words[:, w + 2] = _CENTS[values - number * 100]
    # NUL bytes are the padding and the leading zeros
    text = out.tobytes().translate(None, b"\0").decode("ascii")
    return "{" + text[:-2] + "}"


def _bars_json_slow(keys: np.ndarray, columns: list[np.ndarray]) -> str:
    import json

    o, h, lo, c, v = (x.tolist() for x in columns)
    rows = {
        bytes(k).decode("ascii"): {
            "Open": o[i] / 100,
            "High": h[i] / 100,
            "Low": lo[i] / 100,
            "Close": c[i] / 100,
            "Volume": v[i],
        }
        for i, k in enumerate(keys)
    }
    return json.dumps(rows, ensure_ascii=False, separators=(", ", ": "))
