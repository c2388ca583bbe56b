"""CRAG price histories rendered from whole-cent arrays are the JSON ``json.dumps`` writes for
the same bars; minute bars are a pure function of (seed, ticker, day); persisted search indexes
answer as the ones built in memory."""

from __future__ import annotations

import json
from datetime import date

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from raleval.environment import render_observation
from raleval.envs.crag import CragEnv
from raleval.envs.crag.api.common import RenderedResult
from raleval.envs.crag.world import generate_world
from raleval.envs.crag.world.prices import (
    MINUTES,
    bars_json,
    calendar,
    day_keys,
    minute_bars,
    minute_keys,
)
from raleval.envs.fuzzy import FuzzyIndex, StringTable

CENTS = st.integers(0, 2**31 - 1)


def _reference(keys: list[str], columns: list[list[int]]) -> str:
    o, h, lo, c, v = columns
    rows = {
        k: {"Open": o[i] / 100, "High": h[i] / 100, "Low": lo[i] / 100, "Close": c[i] / 100}
        | {"Volume": v[i]}
        for i, k in enumerate(keys)
    }
    return render_observation(rows)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(CENTS, CENTS, CENTS, CENTS, st.integers(0, 10**8 + 5)), min_size=1, max_size=30
    )
)
def test_bars_json_is_what_json_dumps_writes(rows):
    keys = [f"k{i:03d}" for i in range(len(rows))]
    columns = [list(col) for col in zip(*rows, strict=True)]
    matrix = np.frombuffer("".join(keys).encode(), dtype=np.uint8).reshape(len(keys), -1)
    assert bars_json(matrix, *(np.array(col) for col in columns)) == _reference(keys, columns)


def test_bars_json_edges():
    keys = np.frombuffer(b"ab", dtype=np.uint8).reshape(1, 2)
    for cents, shown in [(0, "0.0"), (5, "0.05"), (50, "0.5"), (100, "1.0"), (10001, "100.01")]:
        text = bars_json(keys, [cents], [cents], [cents], [cents], [0])
        assert text == (
            f'{{"ab": {{"Open": {shown}, "High": {shown}, "Low": {shown}, '
            f'"Close": {shown}, "Volume": 0}}}}'
        )
    assert bars_json(np.empty((0, 2), np.uint8), [], [], [], [], []) == "{}"


def test_minute_bars_of_a_day_do_not_depend_on_the_window():
    w = generate_world("tiny", 0)
    series = w.price_series(next(iter(w.companies)))
    wide = minute_bars(0, series, 100, 110)
    narrow = minute_bars(0, series, 105, 107)
    for a, b in zip(wide, narrow, strict=True):
        assert (a[5 * MINUTES : 7 * MINUTES] == b).all()
    o, h, lo, c, _ = narrow
    assert (lo <= np.minimum(o, c)).all() and (np.maximum(o, c) <= h).all()
    assert o[0] == series.open[105] and c[MINUTES - 1] == series.close[105]
    assert h.max() <= series.high[105] and lo[:MINUTES].min() >= series.low[105]
    assert bytes(minute_keys()[105 * MINUTES]).decode() == f"{calendar()[105]} 09:30:00 EST"
    assert bytes(day_keys()[105]).decode() == f"{calendar()[105]} 00:00:00 EST"


def test_price_histories_are_rendered_results_whose_data_is_their_text():
    w = generate_world("tiny", 0)
    env = CragEnv(w).at("2024-03-15")
    ticker = next(iter(w.companies))
    daily = env.call_sync("finance_get_price_history", {"ticker": ticker})
    assert json.loads(daily.observation) == daily.data
    assert render_observation(daily.data) == daily.observation
    bars = w.prices(ticker)
    shown = {d: bars[d] for d in calendar() if date(2023, 3, 16) < d <= date(2024, 3, 15)}
    assert daily.data == {f"{d} 00:00:00 EST": bar for d, bar in shown.items()}
    minutes = env.call_sync("finance_get_detailed_price_history", {"ticker": ticker})
    assert render_observation(minutes.data) == minutes.observation and len(minutes.data) == 1950
    assert (
        env.at("2021-06-01").call_sync("finance_get_price_history", {"ticker": ticker}).data == {}
    )
    result = RenderedResult('{"a": [1, 2.5]}')
    result.data = {"replaced": True}  # a testbed's transform writes data back
    assert result.data == {"replaced": True}


def test_year_info_is_the_sorted_ids_released_by_the_query_date():
    w = generate_world("tiny", 0)
    for when in ("2023-06-30", "2024-03-15"):
        env = CragEnv(w).at(when)
        for year in (2001, 2023, 2024):
            got = env.call_sync("movie_get_year_info", {"year": year}).data
            want = sorted(
                mid
                for mid, m in w.movies.items()
                if m["release_date"][:4] == str(year) and m["release_date"] <= when
            )
            assert (got or {}).get("movie_list", []) == want


def test_saved_texts_and_index_reopen_the_same(tmp_path):
    names = ["Phantom Garden", "The Phantom", "Émile Zola", "Harbor Signal", "Harbour Signal"]
    StringTable.pack(names).save(tmp_path, "t")
    texts = StringTable.load(tmp_path, "t")
    assert list(texts) == names and texts[-1] == names[-1] and texts[1:3] == names[1:3]
    built = FuzzyIndex(names)
    built.save(tmp_path / "i")
    loaded = FuzzyIndex.load(tmp_path / "i")
    for q in ["phantom", "Phantm Garden", "emile zola", "Harbr Signal", "nothing", "zola"]:
        assert loaded.search(q) == built.search(q)
        assert loaded.exact(q) == built.exact(q)
    FuzzyIndex([]).save(tmp_path / "e")
    assert FuzzyIndex.load(tmp_path / "e").search("x") == []
