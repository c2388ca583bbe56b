"""Is ``raleval diagnose``'s rule for a cause at temperature > 0 calibrated? Simulated
episodes (``raleval.analysis.diagnosis.simulate_causes``) answer, in the regime the command
runs in (k = 3 replays of each intervention and of its control, 10-50 failed episodes, two or
three interventions tried in order):

- false-cause rate: the share of episodes given a cause when an intervention changes nothing
  (intervention and control succeed with the same chance p), for p from 0.1 to 0.9;
- coin flip (p = 0.5 everywhere, two interventions): the share of studies of 10 episodes in
  which at least 9 get no cause (``unstable``; issue 46's floor);
- power: the share given a cause when the intervention raises the chance from p0 to p1.

    python benchmarks/diagnosis_estimator.py [--studies 4000] [--seed 0] [--out FILE]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from _common import write_json

from raleval.analysis.diagnosis import simulate_causes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--studies", type=int, default=4000, help="simulated studies per cell")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    null, power = {}, {}
    for episodes in (10, 30, 50):
        for interventions in (2, 3):
            for p in (0.1, 0.3, 0.5, 0.7, 0.9):
                key = f"episodes={episodes} interventions={interventions} p={p}"
                null[key] = simulate_causes(
                    p, p, 3, episodes, interventions, args.studies, args.seed
                )
    for p0, p1 in ((0.0, 1.0), (0.0, 0.9), (0.1, 0.9), (0.2, 0.8), (0.3, 0.7), (0.0, 0.5)):
        # one intervention that works; the others change nothing (chance p0)
        power[f"p0={p0} p1={p1}"] = simulate_causes(p0, p1, 3, 30, 1, args.studies, args.seed)
    worst = max(v["cause_rate"] for v in null.values())
    coin = null["episodes=10 interventions=2 p=0.5"]["studies_90pct_without_cause"]
    payload = {
        "samples": 3,
        "false_cause_rate": null,
        "power": power,
        "worst_false_cause_rate": worst,
        "coin_flip_10_episodes_at_least_9_unstable": coin,
    }
    print(f"worst false-cause rate {worst:.4f}; coin flip, >=9 of 10 unstable: {coin:.3f}")
    print(f"wrote {write_json('diagnosis_estimator', payload, args.out)}")


if __name__ == "__main__":
    main()
