"""Are ``raleval compare``'s p-values, minimum detectable differences and the tables' intervals
calibrated? Simulated studies (``raleval.analysis.calibration``) answer, per design:

- A/A false-positive rate at alpha 0.05: template-clustered test and unclustered test;
- null with template effects (B differs from A by template, not on average): both tests;
- detection rate when the true difference is the MDD the paired test reports (80% power);
- coverage of the clustered 95% interval of a mean, unclustered beside it.

Floors (issue 36): A/A 3-7% with and without template clustering, detection 70-90%, clustered
coverage 93-97% when tasks share templates.

    python benchmarks/stats_calibration.py [--sims 2000] [--seed 0] [--out FILE]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from _common import write_json

from raleval.analysis.calibration import (
    Design,
    aa_rate,
    comparison_rate,
    coverage,
    shift_for_difference,
)

DESIGNS = {
    # the floors are checked on these three
    "templates 30x4, 1 epoch": Design(templates=30, per_template=4, epochs=1, diff_template_sd=0.8),
    "templates 30x4, 3 epochs": Design(
        templates=30, per_template=4, epochs=3, diff_template_sd=0.8
    ),
    "independent tasks 120, 1 epoch": Design(
        templates=120,
        per_template=1,
        epochs=1,
        template_sd=0.0,
        task_sd=1.2,
        diff_template_sd=0.0,
        diff_task_sd=0.8,
    ),
    # shown, not checked: ten clusters, where the unclustered test goes most wrong
    "few clusters 10x12, 1 epoch": Design(
        templates=10, per_template=12, epochs=1, diff_template_sd=0.8
    ),
}
CHECKED = list(DESIGNS)[:3]


def check(design: Design, sims: int, seed: int) -> dict[str, float]:
    zero = shift_for_difference(design, 0.0)
    null_cl, mdd = comparison_rate(design, sims, zero, seed + 2, clustered=True)
    null_un, _ = comparison_rate(design, sims, zero, seed + 2, clustered=False)
    detected, _ = comparison_rate(
        design, sims, shift_for_difference(design, mdd), seed + 3, clustered=True
    )
    return {
        "tasks": design.tasks,
        "templates": design.templates,
        "epochs": design.epochs,
        "aa_fpr_clustered": aa_rate(design, sims, seed, clustered=True),
        "aa_fpr_unclustered": aa_rate(design, sims, seed + 1, clustered=False),
        "null_fpr_clustered": null_cl,
        "null_fpr_unclustered": null_un,
        "mdd": mdd,
        "detection_at_mdd": detected,
        "coverage_clustered": coverage(design, sims, seed + 4, clustered=True),
        "coverage_unclustered": coverage(design, sims, seed + 4, clustered=False),
    }


def floors(name: str, row: dict[str, float]) -> list[str]:
    """The floors this design misses (empty: all met)."""
    missed = []
    for key in ("aa_fpr_clustered", "aa_fpr_unclustered"):
        if not 0.03 <= row[key] <= 0.07:
            missed.append(f"{name}: {key} {row[key]:.3f} outside 0.03-0.07")
    if not 0.70 <= row["detection_at_mdd"] <= 0.90:
        missed.append(f"{name}: detection {row['detection_at_mdd']:.3f} outside 0.70-0.90")
    if row["templates"] < row["tasks"] and not 0.93 <= row["coverage_clustered"] <= 0.97:
        missed.append(f"{name}: coverage {row['coverage_clustered']:.3f} outside 0.93-0.97")
    return missed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sims", type=int, default=2000, help="simulated studies per figure")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    start = time.perf_counter()
    rows, missed = {}, []
    print(
        f"{'design':32} {'A/A cl':>7} {'A/A un':>7} {'null cl':>7} {'null un':>7} "
        f"{'MDD':>6} {'detect':>7} {'cov cl':>7} {'cov un':>7}"
    )
    for name, design in DESIGNS.items():
        row = check(design, args.sims, args.seed)
        rows[name] = row
        if name in CHECKED:
            missed += floors(name, row)
        print(
            f"{name:32} {row['aa_fpr_clustered']:7.3f} {row['aa_fpr_unclustered']:7.3f} "
            f"{row['null_fpr_clustered']:7.3f} {row['null_fpr_unclustered']:7.3f} "
            f"{row['mdd']:6.3f} {row['detection_at_mdd']:7.3f} "
            f"{row['coverage_clustered']:7.3f} {row['coverage_unclustered']:7.3f}"
        )
    elapsed = time.perf_counter() - start
    print(f"{args.sims} simulated studies per figure, alpha 0.05, power 0.8; {elapsed:.1f} s")
    print("floors: all met" if not missed else "floors missed:\n  " + "\n  ".join(missed))
    payload = {"sims": args.sims, "seed": args.seed, "designs": rows, "floors_missed": missed}
    print(f"wrote {write_json('stats_calibration', payload, args.out)}")


if __name__ == "__main__":
    main()
