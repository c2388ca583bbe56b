"""Figures that do not mislead (issue 48): no untested radar axis drawn at 0, n on every bar and
point, F1 intervals on the time figure, colour-blind-safe colours with the label names in the
legend. Checked on the matplotlib figures the report renders, and on the study's stored cells."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

from raleval.analysis import plots

SERIES = {
    "qwen": {"wiki KS": 0.5, "wiki KU": 0.4, "wiki KA": 0.3, "scholar KS": 0.2},
    "small": {"wiki KS": 0.1, "wiki KU": 0.2},  # no task on two of the four axes
}
COUNTS = {
    "qwen": {"wiki KS": 10, "wiki KU": 12, "wiki KA": 8, "scholar KS": 5},
    "small": {"wiki KS": 4, "wiki KU": 6},
}


def _close(fig) -> None:  # type: ignore[no-untyped-def]
    import matplotlib.pyplot as plt

    plt.close(fig)


def test_the_radar_draws_no_untested_axis_at_zero_and_says_so():
    fig = plots.radar_figure("t", SERIES, COUNTS)
    ax = fig.axes[0]
    axes = sorted({a for s in SERIES.values() for a in s})
    lines = {line.get_label(): list(line.get_ydata())[:-1] for line in ax.get_lines()}
    small = lines["small (n=10; 2 untested axes)"]
    assert [a for a, v in zip(axes, small, strict=True) if math.isnan(v)] == [
        "scholar KS", "wiki KA",
    ]  # fmt: skip
    assert 0.0 not in small
    assert lines["qwen (n=35)"] == [SERIES["qwen"][a] for a in axes]
    assert len(ax.patches) == 1  # only the fully tested system is filled
    _close(fig)


def test_every_bar_shows_its_n_and_an_untested_axis_has_no_bar():
    fig = plots.level_bars_figure("t", SERIES, counts=COUNTS)
    ax = fig.axes[0]
    bars = [p for p in ax.patches if p.get_width() > 0 or p.get_height() > 0]
    assert len(bars) == 4 + 2  # not 8: "small" has no bar on its two untested axes
    texts = sorted(t.get_text() for t in ax.texts)
    assert texts == sorted(f"n={n}" for c in COUNTS.values() for n in c.values())
    _close(fig)


def test_the_time_figure_has_f1_intervals_and_n_on_every_point():
    points = {"react/q": (20.0, 15.0, 25.0, 0.25), "direct/q": (1.0, 0.9, 1.1, 0.18)}
    extras = {"react/q": (0.17, 0.37, 100), "direct/q": (0.12, 0.27, 40)}
    fig = plots._pareto_figure(points, ["direct/q", "react/q"], "s", 0.01, extras)
    ax = fig.axes[0]
    assert sorted(t.get_text() for t in ax.texts) == ["n=100", "n=40"]
    labels = ax.get_legend_handles_labels()[1]
    assert "react/q (n=100)" in labels and "direct/q (n=40)" in labels
    # each point's error bars: one horizontal (seconds) and one vertical (F1) segment
    vertical = [
        seg
        for coll in ax.collections
        for seg in coll.get_segments()
        if seg[0][0] == seg[1][0] and seg[0][1] != seg[1][1]
    ]
    spans = sorted((round(s[0][1], 3), round(s[1][1], 3)) for s in vertical)
    assert spans == [(0.12, 0.27), (0.17, 0.37)]
    _close(fig)


def test_the_palette_is_colour_blind_safe_and_names_the_labels():
    # Okabe-Ito: no pure green and pure red, GE and RE far apart
    assert plots.LABEL_COLORS["GE"] != plots.LABEL_COLORS["RE"]
    assert set(plots.LABEL_COLORS.values()) <= {
        "#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7", "#000000",
    }  # fmt: skip
    assert all(plots.LABEL_NAMES[k].startswith(f"{k}: ") for k in plots.LABEL_COLORS)


def test_the_study_figures_show_n_and_leave_untested_axes_undrawn():
    """The first study's 1.5B model ran ReAct on 2 tasks per family: some radar axes have no
    task of it. Its radar breaks there instead of drawing 0."""
    from raleval.analysis.runs import domain_level_counts, domain_level_f1
    from raleval.analysis.study import load_study

    runs = list(load_study(Path(__file__).resolve().parents[1] / "studies" / "local-models")[
        "generated"
    ].values())  # fmt: skip
    react = [r for r in runs if r.system.startswith("react/")]
    f1, n = domain_level_f1(react), domain_level_counts(react)
    series = {s.split("/", 1)[1]: v for s, v in f1.items()}
    counts = {s.split("/", 1)[1]: v for s, v in n.items()}
    fig = plots.radar_figure("react", series, counts)
    axes = sorted({a for v in series.values() for a in v})
    for line in fig.axes[0].get_lines():
        model = line.get_label().split(" (", 1)[0]
        values = list(line.get_ydata())[:-1]
        for axis, value in zip(axes, values, strict=True):
            if axis not in series[model]:
                assert math.isnan(value), f"{model}: untested {axis} drawn at {value}"
        assert "(n=" in line.get_label()
    _close(fig)
