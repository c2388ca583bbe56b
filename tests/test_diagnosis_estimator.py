"""The rule by which ``raleval diagnose`` names a cause at temperature > 0 (an intervention's
success rate must beat its control's), checked against exact values and by simulation in the
regime the command runs in: k = 3 replays each, 10-50 failed episodes (docs/diagnosis.md)."""

from __future__ import annotations

from math import comb

import pytest

from raleval.analysis.diagnosis import (
    Cause,
    Outcome,
    beats,
    cause_of,
    fisher_one_sided,
    simulate_causes,
)


def test_fisher_one_sided_is_the_hypergeometric_tail() -> None:
    # 3/3 against 0/3: the three successes all fall to the intervention's replays
    assert fisher_one_sided(3, 3, 0, 3) == pytest.approx(1 / comb(6, 3))
    # 2/3 against 0/3: P(X >= 2) with 2 successes among 6, 3 drawn = 3/15
    assert fisher_one_sided(2, 3, 0, 3) == pytest.approx(3 / 15)
    assert fisher_one_sided(0, 3, 3, 3) == pytest.approx(1.0)
    # the tail over every split sums with its complement to one
    lower = 1 - fisher_one_sided(2, 4, 1, 4)
    assert lower == pytest.approx(sum(comb(4, x) * comb(4, 3 - x) for x in (0, 1)) / comb(8, 3))


def test_at_three_replays_only_all_against_none_is_a_cause() -> None:
    wins = {(a, c) for a in range(4) for c in range(4) if beats(a, 3, c, 3)[0]}
    assert wins == {(3, 0)}
    assert beats(1, 1, 0, 1, deterministic=True)[0]
    assert not beats(1, 1, 1, 1, deterministic=True)[0]
    assert not beats(1, 1, 0, 1)[0]  # one sample each at temperature > 0 never suffices


def test_no_cause_but_some_success_is_unstable() -> None:
    tried = Outcome(applied=True, samples=3, rate=2 / 3, control_rate=1 / 3, p_value=0.5)
    assert cause_of(False, {"gold_retrieval": tried}) is Cause.unstable
    never = Outcome(applied=True, samples=3, rate=0.0, control_rate=0.0, p_value=1.0)
    assert cause_of(False, {"gold_retrieval": never}) is Cause.beyond_reach
    fixed = Outcome(applied=True, fixed=True, samples=3, rate=1.0, control_rate=0.0)
    assert cause_of(False, {"gold_retrieval": never, "evidence_in_hand": fixed}) is (
        Cause.grounding
    )


@pytest.mark.parametrize("episodes", [10, 30, 50])
@pytest.mark.parametrize("p", [0.1, 0.3, 0.5, 0.7, 0.9])
def test_an_intervention_that_changes_nothing_rarely_gets_a_cause(episodes: int, p: float) -> None:
    """The false-cause rate is at most (1/2)^6 = 1/64 per intervention whatever the chance:
    three interventions, at most 3/64 (4.7%) of episodes."""
    sim = simulate_causes(p, p, samples=3, episodes=episodes, interventions=3, studies=3000)
    assert sim["cause_rate"] <= 3 * p**3 * (1 - p) ** 3 + 0.006
    assert sim["cause_rate"] <= 0.05


def test_a_coin_flip_model_is_unstable_on_nine_of_ten_episodes_in_most_studies() -> None:
    sim = simulate_causes(0.5, 0.5, samples=3, episodes=10, interventions=2, studies=6000)
    assert sim["studies_90pct_without_cause"] >= 0.95


@pytest.mark.parametrize(
    ("p0", "p1", "floor"), [(0.0, 1.0, 1.0), (0.0, 0.9, 0.70), (0.1, 0.9, 0.50)]
)
def test_an_intervention_that_works_is_found(p0: float, p1: float, floor: float) -> None:
    """Power at k = 3: (p1^3 (1 - p0)^3) per episode, e.g. 0.53 at 0.1 -> 0.9."""
    sim = simulate_causes(p0, p1, samples=3, episodes=30, interventions=1, studies=3000)
    assert sim["cause_rate"] >= floor - 0.01
    assert sim["cause_rate"] == pytest.approx(p1**3 * (1 - p0) ** 3, abs=0.01)
