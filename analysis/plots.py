"""Figures for the report (matplotlib, the ``plots`` extra): SVG text, deterministic bytes;
PNG bytes instead inside :func:`rendered_as` ``("png")`` (figures for a README)."""

from __future__ import annotations

import contextlib
import io
import math
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from typing import Any

_FORMAT: ContextVar[str] = ContextVar("raleval_plot_format", default="svg")


@contextlib.contextmanager
def rendered_as(fmt: str) -> Iterator[None]:
    """Every figure made inside returns ``fmt`` ("svg": text, "png": bytes at 120 dpi)."""
    if fmt not in ("svg", "png"):
        raise ValueError(f"figures render as svg or png, not {fmt!r}")
    token = _FORMAT.set(fmt)
    try:
        yield
    finally:
        _FORMAT.reset(token)


# Okabe & Ito's colour-blind-safe palette ("Color Universal Design", 2008): no green beside
# red, GE and RE apart (orange and yellow), and the label's name in the legend.
LABEL_COLORS = {
    "EM": "#009E73",  # bluish green
    "AM": "#56B4E9",  # sky blue
    "GE": "#E69F00",  # orange
    "RE": "#F0E442",  # yellow
    "TE": "#D55E00",  # vermillion
    "ME": "#CC79A7",  # reddish purple
}
LABEL_NAMES = {
    "EM": "EM: right, from evidence",
    "AM": "AM: right, without it",
    "GE": "GE: wrong despite evidence",
    "RE": "RE: wrong, nothing found",
    "TE": "TE: tool misuse or unparseable",
    "ME": "ME: model or tool failed",
}


# Ten colours (Paul Tol's colour-blind-safe "muted" scheme and its pale grey) and eight
# markers: a system's colour is its model's, its marker its workflow's, so a figure of 3
# models x 6 workflows never gives two systems one look.
COLORS = [
    "#332288", "#88CCEE", "#44AA99", "#117733", "#999933",
    "#DDCC77", "#CC6677", "#882255", "#AA4499", "#DDDDDD",
]  # fmt: skip
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]
HATCHES = ["", "//", "..", "xx", "\\\\", "oo", "--", "++"]  # bars have no marker: the same index


def system_styles(names: list[str]) -> dict[str, tuple[str, str]]:
    """(colour, marker) per system name ``workflow/model``: one colour per model, one marker
    per workflow; distinct for every pair while there are at most 10 models and 8 workflows,
    else cycled so that no two of the first 80 systems look alike."""
    parts = [n.split("/", 1) if "/" in n else [n, n] for n in names]
    workflows = sorted({w for w, _ in parts})
    models = sorted({m for _, m in parts})
    if len(models) > len(COLORS) or len(workflows) > len(MARKERS):
        # too many to encode apart: each system its own (colour, marker) pair
        return {
            n: (COLORS[i % len(COLORS)], MARKERS[(i // len(COLORS)) % len(MARKERS)])
            for i, n in enumerate(sorted(names))
        }
    return {
        n: (COLORS[models.index(m)], MARKERS[workflows.index(w)])
        for n, (w, m) in zip(names, parts, strict=True)
    }


def available() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _configure() -> None:
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "raleval"  # stable element ids
    # labels are system and family names, which come from task files and model specs: a "$"
    # in them is text, not mathtext (which would fail on "$\\frac" and stop the report)
    matplotlib.rcParams["text.parse_math"] = False


def _figure(width: float = 6.0, height: float = 4.0):  # type: ignore[no-untyped-def]
    _configure()
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=(width, height))


def _svg(fig) -> Any:  # type: ignore[no-untyped-def]
    import matplotlib.pyplot as plt

    if _FORMAT.get() == "png":
        raw = io.BytesIO()
        fig.savefig(raw, format="png", dpi=120, bbox_inches="tight", metadata={"Software": None})
        plt.close(fig)
        return raw.getvalue()
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg") :]  # drop the XML prolog: the SVG is inlined in HTML


def radar(
    title: str,
    series: Mapping[str, Mapping[str, float]],
    counts: Mapping[str, Mapping[str, int]] | None = None,
) -> str:
    """One polygon per system (LLM) over the same axes (domain x level), F1 in [0, 1]."""
    return _svg(radar_figure(title, series, counts))  # (bars below three axes)


def radar_figure(
    title: str,
    series: Mapping[str, Mapping[str, float]],
    counts: Mapping[str, Mapping[str, int]] | None = None,
):  # type: ignore[no-untyped-def]
    """The radar as a matplotlib figure. An axis a system has no task on is not drawn at 0 (an
    untested axis is no failure): its line breaks there, it has no fill, and the legend says
    how many axes it leaves untested; with ``counts`` the legend gives its episodes too."""
    _configure()
    import matplotlib.pyplot as plt

    axes = sorted({a for s in series.values() for a in s})
    if len(axes) < 3:  # a radar needs three axes; the report shows the bars instead
        return level_bars_figure(title, series, counts=counts)
    angles = [2 * math.pi * i / len(axes) for i in range(len(axes))] + [0.0]
    fig = plt.figure(figsize=(5, 5) if len(axes) <= 8 else (6.5, 6.5))
    ax = fig.add_subplot(projection="polar")
    styles = system_styles(list(series))
    for name, values in sorted(series.items()):
        pts = [values.get(a, float("nan")) for a in axes]
        untested = sum(p != p for p in pts)
        label = name
        if counts is not None:
            label += f" (n={sum(counts.get(name, {}).values())}"
            label += f"; {untested} untested axes)" if untested else ")"
        elif untested:
            label += f" ({untested} untested axes)"
        color, marker = styles[name]
        ax.plot(angles, [*pts, pts[0]], label=label, color=color, marker=marker, markersize=4)
        if not untested:
            ax.fill(angles, [*pts, pts[0]], alpha=0.1, color=color)
    # a prefix every axis shares ("crag/") says nothing; labels point away from the circle
    # (left-aligned on the right half, right-aligned on the left), so neighbours do not overlap
    ax.set_xticks(angles[:-1], _drop_shared_prefix(axes), fontsize=9 if len(axes) <= 8 else 8)
    for label, angle in zip(ax.get_xticklabels(), angles, strict=False):
        x, y = math.cos(angle), math.sin(angle)
        label.set_horizontalalignment("left" if x > 0.1 else "right" if x < -0.1 else "center")
        label.set_verticalalignment("bottom" if y > 0.1 else "top" if y < -0.1 else "center")
    ax.set_ylim(0, 1)
    ax.set_title(title, pad=24)
    _legend_outside(ax, anchor=(1.25, 1.0))
    return fig


def _drop_shared_prefix(labels: list[str]) -> list[str]:
    """``labels`` without the leading ``domain/`` part they all share (``crag/``)."""
    heads = {a.split("/", 1)[0] for a in labels}
    if len(heads) == 1 and all("/" in a for a in labels):
        return [a.split("/", 1)[1] for a in labels]
    return list(labels)


def level_bars(
    title: str,
    series: Mapping[str, Mapping[str, float]],
    xlabel: str = "F1",
    counts: Mapping[str, Mapping[str, int]] | None = None,
) -> str:
    """F1 (or ``xlabel``'s measure, e.g. progress rate) by domain x level: one row per axis,
    one bar per system, "n=" its episodes at the bar's end (with ``counts``); a system with no
    task on an axis has no bar there, not a bar at 0. Horizontal, so long axis names (CRAG's
    five domains x three levels) are written out in full and never overlap."""
    return _svg(level_bars_figure(title, series, xlabel, counts))


def level_bars_figure(
    title: str,
    series: Mapping[str, Mapping[str, float]],
    xlabel: str = "F1",
    counts: Mapping[str, Mapping[str, int]] | None = None,
):  # type: ignore[no-untyped-def]
    axes = sorted({a for s in series.values() for a in s}, reverse=True)  # first on top
    names = sorted(series)
    row = 0.8 / max(1, len(names))
    fig, ax = _figure(7, 1.0 + len(axes) * max(0.3, 0.16 * len(names)))
    styles = system_styles(names)
    for i, name in enumerate(names):
        color, marker = styles[name]
        hatch = HATCHES[MARKERS.index(marker)]  # the workflow's
        tested = [(y, a) for y, a in enumerate(axes) if a in series[name]]
        ys = [y + (len(names) - 1 - i) * row for y, _ in tested]
        values = [series[name][a] for _, a in tested]
        ax.barh(
            ys, values, row, label=name, color=color, hatch=hatch,
            edgecolor="white" if hatch else None,
        )  # fmt: skip
        if counts is not None:
            for y, v, (_, a) in zip(ys, values, tested, strict=True):
                n = counts.get(name, {}).get(a, 0)
                ax.text(v + 0.01, y, f"n={n}", va="center", fontsize=6)
    ax.set_yticks([y + 0.4 - row / 2 for y in range(len(axes))], axes)
    ax.set_xlim(0, 1.1 if counts is not None else 1)
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    _legend_outside(ax)
    return fig


def _legend_outside(ax, anchor: tuple[float, float] = (1.02, 1.0)) -> None:  # type: ignore[no-untyped-def]
    """The legend right of the axes, where it covers no data."""
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=anchor, borderaxespad=0)


def error_bars(counts: Mapping[str, Mapping[str, int]]) -> str:
    """Stacked share of EM / AM / GE / RE / TE / ME per system, its episodes (n) at the end."""
    fig, ax = _figure(7, 0.5 + 0.45 * max(1, len(counts)))
    names = sorted(counts)
    left = [0.0] * len(names)
    for label, color in LABEL_COLORS.items():
        shares = [counts[n].get(label, 0) / max(1, sum(counts[n].values())) for n in names]
        ax.barh(names, shares, left=left, color=color, label=LABEL_NAMES[label])
        left = [a + b for a, b in zip(left, shares, strict=True)]
    for i, n in enumerate(names):
        ax.text(1.01, i, f"n={sum(counts[n].values())}", va="center", fontsize=7)
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of episodes")
    # above the bars: below them it sat on the axis title
    ax.legend(ncol=3, fontsize=7, loc="lower center", bbox_to_anchor=(0.5, 1.02), borderaxespad=0)
    return _svg(fig)


Extras = Mapping[str, tuple[float, float, int]]  # system -> (F1 low, F1 high, n)


def deployment(
    points: Mapping[str, tuple[float, float, float, float]],
    front: list[str],
    extras: Extras | None = None,
) -> str:
    """Seconds per query versus F1 with 95% interval bars on both (F1's from ``extras``) and
    each point's n; the Pareto front as a line.

    ``points``: system -> (seconds, seconds low, seconds high, F1)."""
    return _svg(_pareto_figure(points, front, "seconds per query (wall)", 0.01, extras))


def cost(
    points: Mapping[str, tuple[float, float, float, float]],
    front: list[str],
    extras: Extras | None = None,
) -> str:
    """US dollars per query versus F1 with 95% interval bars; the Pareto front as a line.

    ``points``: system -> (USD, USD low, USD high, F1); a model on this machine sits at 0."""
    positive = [v for p in points.values() for v in p[:3] if v > 0]
    # linear below the smallest cost shown, so free models (0) and cheap ones both show
    linthresh = 10 ** math.floor(math.log10(min(positive))) if positive else 1e-6
    return _svg(_pareto_figure(points, front, "US dollars per query", linthresh, extras))


def tokens(
    points: Mapping[str, tuple[float, float, float, float]],
    front: list[str],
    extras: Extras | None = None,
) -> str:
    """Tokens per episode (prompt + completion) versus F1, 95% interval bars on both, each
    point's n and the Pareto front: cost as the model sees it, the same on any machine (the
    matched-compute comparison's figure). ``points``: system -> (tokens, low, high, F1)."""
    positive = [v for p in points.values() for v in p[:3] if v > 0]
    linthresh = 10 ** math.floor(math.log10(min(positive))) if positive else 1.0
    return _svg(_pareto_figure(points, front, "tokens per episode", linthresh, extras))


def _pareto_figure(
    points: Mapping[str, tuple[float, float, float, float]],
    front: list[str],
    xlabel: str,
    linthresh: float,
    extras: Extras | None = None,
):  # type: ignore[no-untyped-def]
    fig, ax = _figure(6, 4)
    styles = system_styles(list(points))
    for name, (x, lo, hi, f1) in sorted(points.items()):
        color, marker = styles[name]
        yerr = None
        label = name
        if extras is not None and name in extras:
            f_lo, f_hi, n = extras[name]
            if f_lo == f_lo:
                yerr = [[max(0.0, f1 - f_lo)], [max(0.0, f_hi - f1)]]
            label = f"{name} (n={n})"
            ax.annotate(f"n={n}", (x, f1), textcoords="offset points", xytext=(4, 4), fontsize=6)
        ax.errorbar(
            [x], [f1], xerr=[[x - lo], [hi - x]], yerr=yerr, fmt=marker, color=color,
            capsize=3, label=label,
        )  # fmt: skip
    if len(front) > 1:
        ax.plot(
            [points[n][0] for n in front],
            [points[n][3] for n in front],
            "k--",
            lw=1,
            label="Pareto front",
        )
    ax.set_xscale("symlog", linthresh=linthresh)
    # plain numbers: the log axis writes its ticks in mathtext ("$\\mathdefault{10^{0}}$"),
    # which is off (text.parse_math) so that names with "$" stay text
    ax.xaxis.set_major_formatter(_plain_ticks())
    ax.set_xlabel(xlabel)
    ax.set_ylabel("F1")
    ax.set_ylim(-0.02, 1.02)
    _legend_outside(ax)
    return fig


def _plain_ticks():  # type: ignore[no-untyped-def]
    """A tick formatter writing 0.01, 1, 10, 100 as plain text."""
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(lambda value, _: f"{value:g}")


def robustness(series: Mapping[str, Mapping[float, float]]) -> str:
    """F1 versus the ratio of noise mixed into tool results, one line per system."""
    fig, ax = _figure(6, 4)
    for name, points in sorted(series.items()):
        xs = sorted(points)
        ax.plot(xs, [points[x] for x in xs], marker="o", label=name)
    ax.set_xlabel("noise ratio")
    ax.set_ylabel("F1")
    ax.set_ylim(-0.02, 1.02)
    _legend_outside(ax)
    return _svg(fig)


def budget_curves(series: Mapping[str, Mapping[int, tuple[float, float, float]]]) -> Any:
    """F1 against the token budget per episode, one line per system with its 95% interval
    bars (a budget sweep's figure). ``series``: system -> budget -> (F1, low, high)."""
    from matplotlib.ticker import NullFormatter

    fig, ax = _figure(6, 4)
    styles = system_styles(list(series))
    names = sorted(series)
    budgets = sorted({x for points in series.values() for x in points})
    for i, name in enumerate(names):
        points = series[name]
        color, marker = styles[name]
        xs = sorted(points)
        ys = [points[x][0] for x in xs]
        # each system a little to the side of the budget, so the intervals do not hide each other
        shift = 2 ** (0.25 * ((i + 0.5) / len(names) - 0.5))
        err = [
            [max(0.0, points[x][0] - points[x][1]) if points[x][1] == points[x][1] else 0.0
             for x in xs],
            [max(0.0, points[x][2] - points[x][0]) if points[x][2] == points[x][2] else 0.0
             for x in xs],
        ]  # fmt: skip
        ax.errorbar(
            [x * shift for x in xs], ys, yerr=err, marker=marker, color=color, capsize=3, label=name
        )
    ax.set_xscale("log")
    ax.set_xticks(budgets)
    ax.xaxis.set_major_formatter(_plain_ticks())
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("token budget per episode")
    ax.set_ylabel("F1")
    ax.set_ylim(-0.02, 1.02)
    _legend_outside(ax)
    return _svg(fig)
