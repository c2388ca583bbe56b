"""Clustered intervals, paired tests, Holm, power: golden values for the formulas, seeded
simulations that show they are calibrated, and ``raleval compare`` / ``power`` on real runs."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from typer.testing import CliRunner

from raleval.analysis.calibration import (
    Design,
    aa_rate,
    comparison_rate,
    coverage,
    shift_for_difference,
)
from raleval.analysis.compare import RunUnits, compare_runs, power_plan
from raleval.analysis.runs import cluster_of
from raleval.analysis.stats import (
    Interval,
    clustered_se,
    combine_means,
    disagrees,
    epoch_spread,
    holm,
    holm_intervals,
    mean_interval,
    minimum_detectable_difference,
    paired_difference,
    tasks_for_power,
)
from raleval.app.cli import app
from raleval.records import Level, Task

runner = CliRunner()


# --- formulas -------------------------------------------------------------------------------


def test_clustered_se_matches_the_formula_by_hand():
    # mean 0.5; residual sums per cluster 0, +1, -1; C = 3: sqrt(3/2 * 2) / 6
    values = [1, 0, 1, 1, 0, 0]
    assert clustered_se(values, ["a", "a", "b", "b", "c", "c"]) == pytest.approx(math.sqrt(3) / 6)
    # every value its own cluster: the textbook sd(ddof=1) / sqrt(n)
    assert clustered_se(values) == pytest.approx(math.sqrt(0.3) / math.sqrt(6))
    assert clustered_se(values, list("abcdef")) == pytest.approx(clustered_se(values))
    assert math.isnan(clustered_se(values, ["x"] * 6))  # one cluster: nothing to measure


def test_mean_interval_uses_t_with_clusters_minus_one_df():
    ci = mean_interval([1, 0, 1, 1, 0, 0], ["a", "a", "b", "b", "c", "c"])
    assert (ci.clusters, ci.df) == (3, 2)
    assert ci.half_width == pytest.approx(4.302652729911275 * math.sqrt(3) / 6)
    assert str(mean_interval([0.7])) == "0.700 [n/a]"


def test_holm_step_down():
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5]) == [0.5]
    out = holm([0.02, float("nan"), 0.03])
    assert out[0] == pytest.approx(0.04) and math.isnan(out[1]) and out[2] == pytest.approx(0.04)


def test_mdd_and_tasks_needed_agree_with_miller():
    # z_{0.975} + z_{0.8} = 2.8016 (Miller, section 5)
    assert minimum_detectable_difference(0.01) == pytest.approx(0.028016, abs=1e-5)
    # omega^2 = 0.25: n = (2.8016 / 0.05)^2 * 0.25 = 784.9 -> 785
    assert tasks_for_power(0.05, 0.25) == 785
    # epochs shrink only the within-task part: 0.1 + 0.3 / 3 = 0.2 -> 628
    assert tasks_for_power(0.05, 0.1, 0.3, epochs=3) == 628
    # a design effect of 2 doubles it
    assert tasks_for_power(0.05, 0.25, deff=2.0) == 1570


def test_combined_interval_of_family_means():
    a = Interval(0.5, 0.4, 0.6, se=0.05, df=10, clusters=11)
    b = Interval(0.3, 0.2, 0.4, se=0.05, df=10, clusters=11)
    c = combine_means([a, b])
    assert c.estimate == pytest.approx(0.4)
    assert c.se == pytest.approx(math.sqrt(0.005) / 2)
    assert c.df == pytest.approx(20)  # Welch-Satterthwaite for equal parts
    assert math.isnan(combine_means([a, Interval(0.1, float("nan"), float("nan"))]).low)


def test_a_weighted_combination_weighs_each_mean_and_its_variance():
    """The third study's seconds weigh each environment by its share of the tasks: the
    estimate is the weighted mean, its variance sum w^2 SE^2, Welch-Satterthwaite df."""
    a = Interval(0.5, 0.4, 0.6, se=0.05, df=10, clusters=11)
    b = Interval(0.3, 0.1, 0.5, se=0.1, df=5, clusters=6)
    c = combine_means([a, b], weights=[0.75, 0.25])
    assert c.estimate == pytest.approx(0.45)
    ta, tb = 0.75**2 * 0.05**2, 0.25**2 * 0.1**2
    assert c.se == pytest.approx(math.sqrt(ta + tb))
    assert c.df == pytest.approx((ta + tb) ** 2 / (ta**2 / 10 + tb**2 / 5))
    assert c.low < 0.45 < c.high and c.high - 0.45 == pytest.approx(0.45 - c.low)
    # equal weights are the unweighted mean; a part that weighs nothing cannot spoil it
    assert combine_means([a, b], weights=[0.5, 0.5]) == combine_means([a, b])
    nan = Interval(9.0, float("nan"), float("nan"))
    assert combine_means([a, nan], weights=[1.0, 0.0]).estimate == pytest.approx(0.5)
    with pytest.raises(ValueError):
        combine_means([a, b], weights=[0.5, 0.6])


def test_epoch_spread_and_flip_rate():
    samples = {"t1": [1.0, 1.0, 1.0], "t2": [1.0, 0.0, 1.0], "t3": [0.0, 0.0, 0.0]}
    verdicts = {k: [x >= 0.5 for x in v] for k, v in samples.items()}
    s = epoch_spread(samples, verdicts)
    assert s is not None and (s.tasks, s.epochs) == (3, 3)
    assert s.flip_rate == pytest.approx(1 / 3)
    assert s.within_var == pytest.approx((0 + 1 / 3 + 0) / 3)
    assert epoch_spread({"t1": [1.0]}, {"t1": [True]}) is None


def test_paired_difference_is_the_se_of_differences():
    a, b = [0.9, 0.8, 0.4, 0.7, 0.6], [0.5, 0.7, 0.3, 0.2, 0.6]
    res = paired_difference(a, b)
    d = [x - y for x, y in zip(a, b, strict=True)]
    assert res.diff.estimate == pytest.approx(sum(d) / 5)
    assert res.diff.se == pytest.approx(clustered_se(d))
    assert 0 < res.p < 0.1
    assert paired_difference([1, 1], [1, 1]).p == 1.0


def test_a_difference_every_cluster_shares_is_never_certain():
    # the study: ReAct 1.0 and function calling 0.0 on the same 3 tasks gave SE 0, p 0 and
    # "differ"; 3 clusters cannot make a difference certain. The exact sign-flip test over
    # clusters gives p = 2 / 2^C, checked here against enumerating every flip.
    import itertools

    from raleval.analysis.stats import paired_difference

    assert paired_difference([1.0, 1.0, 1.0], [0.0, 0.0, 0.0]).p == 0.25
    assert paired_difference([0.5, 0.5], [0.5, 0.5]).p == 1.0
    # nor does it say what the design could detect: the study's table showed "MDD 0.000"
    # for two systems that scored alike on every HotpotQA item
    assert all(
        paired_difference(a, b).mdd != paired_difference(a, b).mdd
        for a, b in (([1.0] * 3, [0.0] * 3), ([0.5, 0.5], [0.5, 0.5]))
    )
    assert paired_difference([1.0, 0.0, 1.0], [0.0, 0.0, 0.0]).mdd > 0
    # unequal clusters, every task moved by 0.5: cluster sums 1.0, 0.5, 1.5, 0.5
    a, b = [0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5], [0.0] * 7
    clusters = ["x", "x", "y", "z", "z", "z", "w"]
    res = paired_difference(a, b, clusters)
    sums = [1.0, 0.5, 1.5, 0.5]
    flips = list(itertools.product([-1, 1], repeat=len(sums)))
    extreme = sum(
        abs(sum(f * x for f, x in zip(fl, sums, strict=True))) >= sum(sums) - 1e-12 for fl in flips
    )
    assert res.p == extreme / len(flips) == 2 / 16


def test_compare_runs_holm_over_every_pair():
    def units(name: str, scores: list[float]) -> RunUnits:
        ids = [f"t{i}" for i in range(len(scores))]
        return RunUnits(
            name, name, {k: [s] for k, s in zip(ids, scores, strict=True)},
            {k: [s >= 0.5] for k, s in zip(ids, scores, strict=True)},
            {k: f"g{i // 2}" for i, k in enumerate(ids)},
        )  # fmt: skip

    runs = [
        units("a", [1, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1, 0]),
        units("b", [0, 1, 0, 0, 1, 0, 0, 0, 1, 0, 1, 0]),
        units("c", [1, 0, 1, 0, 0, 1, 0, 1, 1, 1, 0, 0]),
    ]
    cmp = compare_runs(runs)
    assert [(p.a, p.b) for p in cmp.pairs] == [(0, 1), (0, 2), (1, 2)]
    assert [p.p_holm for p in cmp.pairs] == pytest.approx(holm([p.p for p in cmp.pairs]))
    assert all(p.clusters == 6 and p.mdd > 0 for p in cmp.pairs)
    ab = cmp.pairs[0]
    assert (ab.a_only, ab.b_only) == (5, 0)


def test_cluster_of_prefers_declared_then_template():
    def task(**metadata) -> Task:
        return Task(
            id="t", domain="d", level=Level.KS, family="f", question="q?", answers=["a"],
            metadata=metadata,
        )  # fmt: skip

    assert cluster_of(task(cluster="Paris", template="x"), "t") == "cluster:Paris"
    assert cluster_of(task(template="Who is {x}?"), "t") == "f:Who is {x}?"
    assert cluster_of(task(), "t") == "t"
    assert cluster_of(task(template="x"), "t", "family") == "f"
    assert cluster_of(task(template="x"), "t", "task") == "t"
    assert cluster_of(task(person_id="p1"), "t", "person_id") == "person_id:p1"


# --- simulations (small and seeded; benchmarks/stats_calibration.py runs them at size) ------

CLUSTERED = Design(templates=10, per_template=12, diff_template_sd=0.8)


@pytest.mark.slow
def test_aa_comparisons_are_called_different_at_about_alpha():
    assert 0.02 <= aa_rate(CLUSTERED, 400, seed=11, clustered=True) <= 0.09
    assert 0.02 <= aa_rate(CLUSTERED, 400, seed=12, clustered=False) <= 0.09


@pytest.mark.slow
def test_clustered_interval_covers_where_the_unclustered_one_does_not():
    clustered = coverage(CLUSTERED, 400, seed=13, clustered=True, draws=200_000)
    plain = coverage(CLUSTERED, 400, seed=13, clustered=False, draws=200_000)
    assert 0.91 <= clustered <= 0.985
    assert plain < 0.87  # tasks of one template are not independent: too narrow


@pytest.mark.slow
def test_detection_at_the_reported_mdd_is_about_the_power():
    design = Design(templates=30, per_template=4, diff_template_sd=0.8)
    zero = shift_for_difference(design, 0.0, draws=100_000)
    null_rate, mdd = comparison_rate(design, 300, zero, seed=14)
    assert null_rate <= 0.1
    shift = shift_for_difference(design, mdd, draws=100_000)
    detected, _ = comparison_rate(design, 300, shift, seed=15)
    assert 0.66 <= detected <= 0.93


def test_the_calibration_weighs_environments_as_the_claims_do():
    """The simulated design under an estimand that weighs environments alike gives each task
    the weight `compare_study` gives it (scholar's 3 families of 2 tasks against wiki's 9 and
    CRAG's 8): the calibration checks the claims' own statistic."""
    from collections import Counter

    from raleval.analysis.calibration import HeteroDesign

    envs = (0,) * 3 + (1,) * 9 + (2,) * 8
    design = HeteroDesign((2,) * 20, (0.5,) * 20, environments=envs)
    per_task = [e for e in envs for _ in range(2)]
    count = Counter(per_task)
    expected = [40 / (3 * count[e]) for e in per_task]
    assert np.allclose(design.weights, expected) and abs(design.weights.mean() - 1) < 1e-12
    assert np.allclose(HeteroDesign((2,) * 20, (0.5,) * 20).weights, 1.0)


@pytest.mark.slow
def test_a_weighted_claim_on_the_third_study_s_clusters_covers_its_estimand():
    from raleval.analysis.calibration import HeteroDesign, claim_calibration

    envs = (0,) * 3 + (1,) * 9 + (2,) * 8
    design = HeteroDesign((2,) * 20, (2.0,) * 3 + (0.3,) * 17, environments=envs)
    row = claim_calibration(design, 400, 0.4, seed=21)
    assert 0.91 <= row["coverage_claim"] <= 0.985
    assert row["aa_verdict"] <= 0.09


# --- the commands on real runs ----------------------------------------------------------------


def _run(tmp_path, model: str, epochs: int = 2) -> list:
    res = runner.invoke(
        app,
        ["run", "--model", model, "-E", "size=tiny", "--tasks", "scholar",
         "--tasks-per-family", "3", "--epochs", str(epochs), "--display", "none",
         "--log-dir", str(tmp_path)],
    )  # fmt: skip
    assert res.exit_code == 0, res.output


def test_compare_three_runs_prints_every_pair_holm_mdd_and_flip_rate(tmp_path):
    _run(tmp_path, "scripted/oracle")
    _run(tmp_path, "scripted/abstain")
    oracle = tmp_path / "scholar__react__scripted_oracle__scholar"
    # a third system: the oracle's episodes with one task wrong in its second epoch only,
    # and another wrong in both (a flip, and a stable miss)
    flaky = tmp_path / "flaky"
    flaky.mkdir()
    for name in ("header.json", "tasks.jsonl"):
        (flaky / name).write_bytes((oracle / name).read_bytes())
    lines = []
    for line in (oracle / "results.jsonl").read_text().splitlines():
        d = json.loads(line)
        if (d["task_id"], d["epoch"]) in {
            ("scholar-1-3-s0-0000", 1),
            ("scholar-2-4-s0-0000", 0),
            ("scholar-2-4-s0-0000", 1),
        }:
            d["scores"].update(f1=0.0, correct=0.0)
        lines.append(json.dumps(d))
    (flaky / "results.jsonl").write_text("\n".join(lines) + "\n")
    res = runner.invoke(
        app,
        ["compare", str(oracle), str(tmp_path / "scholar__react__scripted_abstain__scholar"),
         str(flaky)],
        env={"COLUMNS": "100"},
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    out = res.output
    assert "Holm over 3 comparisons" in out and "MDD" in out
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line.strip()}
    assert set(rows) >= {"A-B", "A-C", "B-C"}
    # A - C: oracle 1.0 on 9 tasks vs flaky's means (0.5 on one, 0 on another): +1.5 / 9
    assert rows["A-C"][2] == "+0.167"
    # flips: 1 of 9 tasks changes verdict across epochs in the flaky run, none elsewhere
    assert rows["C"][-1] == "11.1%" and rows["A"][-1] == "0.0%"
    assert rows["A"][-3] == "2"  # epochs
    # issue 50: compare ends with what may be concluded, one verdict line per pair
    verdicts = [line for line in out.splitlines() if line.startswith("verdict ")]
    assert [v.split(":")[0] for v in verdicts] == ["verdict A-B", "verdict A-C", "verdict B-C"]
    assert verdicts[0].startswith("verdict A-B: A scores higher than B (A - B = +1.000")
    assert "no difference detected" in verdicts[1] and "could go unseen" in verdicts[1]

    # a log directory stands for the runs below it; one run is not a comparison
    res = runner.invoke(app, ["compare", str(tmp_path)], env={"COLUMNS": "100"})
    assert res.exit_code == 0 and "Holm over 3 comparisons" in res.output, res.output
    res = runner.invoke(app, ["compare", str(oracle)])
    assert res.exit_code == 2 and "at least two" in res.output

    res = runner.invoke(app, ["power", "--runs", str(flaky), "--diff", "0.1"])
    assert res.exit_code == 0, res.output
    assert "between epochs (sigma_A^2 + sigma_B^2)" in res.output
    assert " 10 epoch(s):" in res.output
    res = runner.invoke(app, ["power", "--runs", str(oracle)])
    assert res.exit_code == 2 and "do not vary" in res.output


def test_compare_needs_runs(tmp_path):
    res = runner.invoke(app, ["compare", str(tmp_path)])
    assert res.exit_code == 2 and "no run directory" in res.output


def test_power_plan_splits_task_and_epoch_variance():
    # two tasks per cluster; A - B per task: epochs (1, 0) -> 0.5 mean, within var 0.5
    a = RunUnits(
        "a", "a", {"t1": [1, 0], "t2": [1, 1], "t3": [0, 0], "t4": [1, 0]},
        {"t1": [True, False], "t2": [True, True], "t3": [False, False], "t4": [True, False]},
        {"t1": "g1", "t2": "g1", "t3": "g2", "t4": "g2"},
    )  # fmt: skip
    b = RunUnits(
        "b", "b", {k: [0, 0] for k in a.samples}, {k: [False, False] for k in a.samples},
        a.clusters,
    )  # fmt: skip
    plan = power_plan([a, b], 0.1, epochs=[1, 4])
    # differences 0.5, 1, 0, 0.5: variance 1/6; within: A's mean epoch variance 0.25, B's 0
    assert plan.var_within == pytest.approx(0.25)
    assert plan.var_between == pytest.approx(1 / 6 - 0.25 / 2)
    assert plan.needed[4] < plan.needed[1]
    assert plan.pilot_epochs == 2 and plan.clusters == 2


def test_reval_table_prints_each_mean_with_its_interval():
    from raleval.analysis.tables import RevalTable

    a = Interval(50.0, 40.0, 60.0, se=5.0, df=10, clusters=11)
    b = Interval(30.0, 24.0, 36.0, se=3.0, df=10, clusters=11)
    table = RevalTable({"s": {"1-3": 50.0, "2-4": 30.0}}, intervals={"s": {"1-3": a, "2-4": b}})
    header, (row,) = table.rows(ci=True)
    assert row[1:3] == ["50.0 ±10.0", "30.0 ±6.0"]
    avg = combine_means([a, b])
    assert avg.se == pytest.approx(math.sqrt(34) / 2)
    assert row[header.index("avg_all")] == f"40.0 ±{avg.half_width:.1f}"
    assert table.rows()[1][0][1] == "50.0"  # without ci: the published table, unchanged
    assert r"$\pm$" in table.to_latex(ci=True)


def test_compare_shows_a_mean_interval_clipped_to_f1s_range():
    """`raleval compare` printed a run's F1 interval as [-0.046, 0.284] (a t interval over few
    clusters passes 0; F1 cannot); the study's tables already clipped it."""
    from rich.console import Console

    from raleval.analysis.compare import render_comparison

    ids = [f"t{i}" for i in range(4)]
    low = RunUnits(
        "a", "a", {k: [float(k == "t0")] for k in ids}, {k: [k == "t0"] for k in ids},
        {k: k for k in ids},
    )  # fmt: skip
    high = RunUnits(
        "b", "b", {k: [float(k != "t0")] for k in ids}, {k: [k != "t0"] for k in ids},
        {k: k for k in ids},
    )  # fmt: skip
    # 0.25 and 0.75 over 4 clusters: the t interval passes 0 and 1; a run's F1 now gets
    # Wilson's on the clustered effective size (issue 48), inside [0, 1] by construction
    units = [float(k == "t0") for k in ids]
    assert mean_interval(units, ids).low < 0 < 1 < mean_interval([1 - u for u in units]).high
    assert low.mean().low > 0 and high.mean().high < 1
    result = compare_runs([low, high], 0.05, 0.8)
    console = Console(width=200, record=True)
    console.print(render_comparison(result, ["A", "B"]))
    rows = {line.split()[0]: line for line in console.export_text().splitlines() if line.strip()}
    assert f"[{low.mean().low:.3f}, {low.mean().high:.3f}]" in rows["A"]
    assert f"[{high.mean().low:.3f}, {high.mean().high:.3f}]" in rows["B"]
    assert "-0." not in rows["A"] and "1.5" not in rows["B"]
    # the difference -0.5 with its interval inside [-1, +1]
    assert "[-1.000, " in rows["A-B"]


def test_sign_flip_p_is_exact_over_the_clusters():
    from raleval.analysis.stats import sign_flip_p

    # three clusters summing to 1, 2, 3: of the 8 sign flips only +-(1+2+3) reach 6
    d = [1.0, 1.0, 1.0, 0.5, 0.5, 1.0, 0.5, 0.5]
    clusters = ["a", "b", "b", "c", "c", "c", "c", "c"]
    assert sign_flip_p([1, 2, 3], ["a", "b", "c"]) == 0.25
    # the same sums spread over several tasks per cluster
    assert sign_flip_p([1.0, 1.0, 1.0, 1.0, 1.0, 1.0], list("abbccc")) == 0.25
    assert sign_flip_p(d, clusters) == 0.25
    # with 6 clusters the smallest p is 2 / 64, and 1 with nothing to flip
    assert sign_flip_p([1.0] * 6, list("abcdef")) == 2 / 64
    assert sign_flip_p([0.0] * 4, list("abcd")) == 1.0
    # testing delta: the deviations flip; at the mean nothing is far from 0
    assert sign_flip_p([1, 2, 3], list("abc"), delta=2.0) == 1.0
    # weights: a cluster's deviation is sum w_i (x_i - delta) for values given as w_i x_i:
    # here 0, 2 and 4, so half of the flips reach |6|
    assert sign_flip_p([2.0, 4.0, 6.0], list("abc"), 1.0, weights=[2.0, 2.0, 2.0]) == 0.5


def test_sign_flip_interval_is_the_differences_the_test_keeps():
    from raleval.analysis.stats import sign_flip_interval, sign_flip_p

    rng = np.random.default_rng(3)
    d = rng.normal(0.2, 0.3, 24)
    clusters = np.repeat(np.arange(8), 3)
    ci = sign_flip_interval(d, clusters, 0.95)
    assert ci.low < d.mean() < ci.high
    # just inside its ends the test keeps the difference, just outside it rejects it
    for edge, step in ((ci.low, -1e-6), (ci.high, 1e-6)):
        assert sign_flip_p(d, clusters, edge - step) > 0.05
        assert sign_flip_p(d, clusters, edge + step) <= 0.05
    # 6 clusters at a level below 2 / 2^6: no difference can be rejected, the whole range
    six = sign_flip_interval(d[:18], np.repeat(np.arange(6), 3), 1 - 0.05 / 20)
    assert (six.low, six.high) == (-1.0, 1.0)


def test_a_claim_on_few_clusters_takes_the_larger_p_and_the_wider_interval():
    from raleval.analysis.stats import holm_level

    # every cluster moves up by about the same: the t test is sure, the sign-flip test with
    # 6 clusters cannot go below 2 / 64
    a = [0.6, 0.7, 0.8, 0.75, 0.65, 0.7] * 2
    b = [0.0] * 12
    clusters = list("abcdef") * 2
    res = paired_difference(a, b, clusters)
    assert res.p < 0.001 and res.p_flip == 2 / 64 and res.p_verdict == 2 / 64
    many = paired_difference(a * 2, b * 2, [f"c{i}" for i in range(24)])
    assert many.p_flip != many.p_flip and many.p_verdict == many.p
    # in a family of 3, Holm's p of the claim is 3 x 2/64: open, and its interval holds 0
    # though the t interval alone would not
    others = [paired_difference([0.1, 0.2, 0.3], [0.2, 0.1, 0.3]) for _ in range(2)]
    p_holm = holm([res.p_verdict, *(o.p for o in others)])
    assert p_holm[0] == 3 * 2 / 64
    samples = [(np.subtract(a, b), clusters, None), None, None]
    intervals = holm_intervals([res.diff, *(o.diff for o in others)], p_holm, samples=samples)
    assert intervals[0].low <= 0 <= intervals[0].high
    t_only = holm_intervals([res.diff, *(o.diff for o in others)], p_holm)
    assert t_only[0].low > 0  # what the t interval alone would have said
    assert not any(disagrees(i, p) for i, p in zip(intervals, p_holm, strict=True))
    # the level Holm's open verdicts used: 0.05 / (m - rejected)
    assert holm_level([0.01, 0.2, 0.6]) == 0.05 / 2
    assert holm_level([0.01, 0.02]) == 0.05
