"""Every CRAG endpoint answers in CRAG's real record shape (keys, value types, nesting).

tests/data/crag_real_shapes.json holds the shapes of the outputs CRAG's authors printed when
calling all 38 endpoints of their mock API (see tests/data/README.md); each endpoint is called
here with its example arguments from the default world and its result compared with them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from raleval.envs.crag import make_crag_env
from raleval.envs.crag.examples import example_calls
from raleval.envs.crag.shapes import derive, differences
from raleval.records import OutcomeKind

REAL = json.loads((Path(__file__).parent / "data" / "crag_real_shapes.json").read_text())


@pytest.fixture(scope="module")
def env():
    return make_crag_env("tiny")


@pytest.fixture(scope="module")
def results(env):
    out = {}
    for name, args in example_calls(env.world, env.as_of).items():
        result = env.call_sync(name, args)
        assert result.kind is OutcomeKind.ok, (name, result.observation)
        assert result.data not in (None, [], {}, [None, None]), name
        out[name] = json.loads(json.dumps(result.data))  # as it goes over the wire
    return out


def test_the_fixture_covers_all_38_endpoints(env):
    assert len(REAL) == 38 and set(REAL) == {t.name for t in env.tools}


@pytest.mark.parametrize("name", sorted(REAL))
def test_result_shape_equals_crags(results, name):
    assert differences(derive(results[name]), REAL[name]["shape"]) == []


def test_key_counts_of_the_big_records(results):
    assert len(results["finance_get_info"]) == 125
    assert len(results["sports_nba_get_games_on_date"]) == 55
    assert len(results["sports_nba_get_play_by_play_data_by_game_ids"]) == 34
    assert len(results["sports_soccer_get_games_on_date"]) == 18
    assert set(results["open_get_entity"]) == {
        "summary_text",
        "summary_structured",
        "raw_mediawiki",
    }


def test_the_comparison_catches_each_kind_of_difference():
    real = REAL["music_get_billboard_attributes"]["shape"]
    assert differences(derive(7), real) == ["$: int where CRAG has str"]
    info = REAL["finance_get_info"]["shape"]
    ours = derive({"symbol": "X", "extra": 1})
    diff = differences(ours, info)
    assert diff[0].startswith("$: missing keys ['address1'") and diff[1] == (
        "$: keys CRAG does not have ['extra']"
    )
    prices = REAL["finance_get_price_history"]["shape"]
    assert differences(derive({"2024-01-02": {"Open": 1.0}}), prices)[0] == (
        "$: object where CRAG has map"
    )
