"""The harness's share of failures (issue 58): per episode and per cell, how many model calls
were cut at ``max_tokens``, wrote output the workflow could not parse, or repeated a tool call
already made in the episode, and the format-failure rate: the share of calls with any of
these. Pure: reads stored records only.

Calls recorded since the flags exist carry them (``LLMCall.cut``, ``unparseable``,
``repeated``, set by the recorder). Files written before have none, and the counts are derived
(``derived``): a call is cut when its completion tokens reach the run's ``max_tokens`` (its
header's decoding) or its reply was cut to the character bound; unparseable and repeated are
counted from the steps (:func:`raleval.formats.is_unparseable`; a tool step whose tool and
arguments an earlier step of the episode already had), which do not say which call wrote them,
so the failed calls lie between the largest of the three and their sum (at most the calls):
``failed`` is that upper bound and ``failed_low`` the lower, and a gap between two cells is
said only where the bounds leave no doubt.

A cut call whose output ends repeating itself (:func:`ends_in_loop`) is counted again as
``looped``: the model was in a loop when the cap stopped it. That is a description, not a
promise that a larger cap would never have seen the reply end (docs/study.md measures how
often one did).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass

from raleval.formats import is_unparseable
from raleval.records import RunHeader, Trajectory

# A verdict whose two sides' format-failure rates differ by more than this says so beside it
# (``--format-gap``), with the kinds each side's failures were: a cut or unparseable reply may be
# the harness's handling of the output; a parsed call repeating an earlier one is the model's
# loop (or a tool paged on: Lookup's same call gives its next match).
DEFAULT_FORMAT_GAP = 0.10

# ends_in_loop reads this many characters of a reply's end; a loop must span at least
# LOOP_MIN_CHARS of them (so two short words alike are no loop)
LOOP_WINDOW = 2048
LOOP_MIN_CHARS = 32
# a number (at most 12 digits: a longer run of digits is read digit by digit) or one character
_TOKEN = re.compile(r"\d{1,12}|.", re.S)


def _alike(later: str, earlier: str, counting: bool) -> bool:
    return later == earlier or (
        counting and later.isdigit() and earlier.isdigit() and int(later) > int(earlier)
    )


def _repeats(tokens: list[str], counting: bool) -> bool:
    """Whether ``tokens`` end in two whole copies of one unit (a cut copy may follow), the
    copies spanning at least :data:`LOOP_MIN_CHARS` characters; with ``counting`` a number may
    be larger in the later copy."""
    n = len(tokens)
    for period in range(1, n // 2 + 1):
        # how far back the end repeats itself at this period
        run = 0
        while run < n - period and _alike(
            tokens[n - 1 - run], tokens[n - 1 - run - period], counting
        ):
            run += 1
        if run >= period and sum(map(len, tokens[n - run - period :])) >= LOOP_MIN_CHARS:
            return True
    return False


def ends_in_loop(text: str) -> bool:
    """Whether a reply ends repeating itself: in at least two whole back-to-back copies of
    one unit, the last possibly cut short, where the copies are the same text or differ only
    in numbers that count up (``r8 = Lookup(...)``, ``r9 = Lookup(...)``). The reply is read
    as starting a fresh paragraph, so a first copy at its very start counts whole. Checked
    against hand labels of real cut replies (``tests/data/cut_replies_labelled.json``)."""
    s = "\n\n" + text.rstrip()[-LOOP_WINDOW:]
    return _repeats(list(s), False) or _repeats(_TOKEN.findall(s), True)


@dataclass(frozen=True)
class FormatFailures:
    """Counts of model calls; ``failed``: calls with at least one of the three."""

    calls: int = 0
    cut: int = 0
    unparseable: int = 0
    repeated: int = 0
    failed: int = 0
    derived: bool = False  # some episode's counts were derived (``failed`` an upper bound)
    failed_low: int = 0  # the fewest calls that failed (``failed`` where none was derived)
    looped: int = 0  # of the cut calls, those whose output ends in a loop (ends_in_loop)

    def __add__(self, other: FormatFailures) -> FormatFailures:
        return FormatFailures(
            self.calls + other.calls,
            self.cut + other.cut,
            self.unparseable + other.unparseable,
            self.repeated + other.repeated,
            self.failed + other.failed,
            self.derived or other.derived,
            self.failed_low + other.failed_low,
            self.looped + other.looped,
        )

    @property
    def rate(self) -> float | None:
        """The format-failure rate: failed calls over calls (None without calls); for derived
        counts, its upper bound."""
        return self.failed / self.calls if self.calls else None

    @property
    def rate_low(self) -> float | None:
        """The rate's lower bound (the rate itself where nothing was derived)."""
        return self.failed_low / self.calls if self.calls else None

    def text(self) -> str:
        """The rate as tables print it: ``12.5%``; derived, its bounds (``4.0-12.5%``, one
        figure where they meet); ``-`` without calls."""
        if not self.calls:
            return "-"
        low, high = 100 * self.failed_low / self.calls, 100 * self.failed / self.calls
        return f"{low:.1f}-{high:.1f}%" if f"{low:.1f}" != f"{high:.1f}" else f"{high:.1f}%"

    def kinds_text(self) -> str:
        """Which kinds the failures were, each as a share of calls, the kinds that occurred only:
        ``repeats 95.4%, cut 1.2%``; ``none`` without a failure. (A call can be of two kinds.)
        Derived counts tally repeats and parse errors by step, and a reply can hold several
        calls: those two read ``up to`` their count over calls, at most 100%."""
        if not self.calls:
            return "-"
        shown = []
        for name, n, by_step in (
            ("repeats", self.repeated, True),
            ("cut", self.cut, False),
            ("unparseable", self.unparseable, True),
        ):
            if n:
                bound = "up to " if self.derived and by_step else ""
                shown.append(f"{name} {bound}{100 * min(n, self.calls) / self.calls:.1f}%")
        return ", ".join(shown) or "none"

    def cut_text(self) -> str:
        """The cut calls as tables print them: ``1/18 (1 loop)``; ``-`` without calls."""
        if not self.calls:
            return "-"
        loops = f" ({self.looped} loop{'s' if self.looped != 1 else ''})" if self.looped else ""
        return f"{self.cut}/{self.calls}{loops}"


def header_max_tokens(header: RunHeader | None) -> int | None:
    """The ``max_tokens`` a run's calls were made with, where its header says."""
    if header is None:
        return None
    value = header.decoding.get("max_tokens")
    if value is None:
        value = (header.config.get("workflow_options") or {}).get("max_tokens")
    return int(value) if isinstance(value, (int, float)) else None


def flagged(traj: Trajectory) -> bool:
    """Whether every call of the episode carries the harness's flags (``cut`` and the rest);
    episodes stored before them have their counts derived."""
    return all(c.cut is not None for c in traj.llm_calls)


def cut_calls(traj: Trajectory, max_tokens: int | None = None) -> list[bool]:
    """Which of the episode's calls were cut at max_tokens: their flags, or where the episode
    has none, a ``reply_truncated`` error or a reply as long as ``max_tokens``."""
    if flagged(traj):
        return [bool(c.cut) for c in traj.llm_calls]
    return [
        (c.error or "").startswith("reply_truncated")
        or (max_tokens is not None and (c.completion_tokens or 0) >= max_tokens)
        for c in traj.llm_calls
    ]


def episode_format_failures(traj: Trajectory, max_tokens: int | None = None) -> FormatFailures:
    """The episode's counts: from its calls' flags, or derived (see the module docstring)."""
    calls = traj.llm_calls
    was_cut = cut_calls(traj, max_tokens)
    cut = sum(was_cut)
    looped = sum(w and ends_in_loop(c.output) for w, c in zip(was_cut, calls, strict=True))
    if flagged(traj):
        failed = sum(bool(c.cut or c.unparseable or c.repeated) for c in calls)
        return FormatFailures(
            calls=len(calls),
            cut=cut,
            unparseable=sum(bool(c.unparseable) for c in calls),
            repeated=sum(bool(c.repeated) for c in calls),
            failed=failed,
            failed_low=failed,
            looped=looped,
        )
    unparseable = sum(is_unparseable(s.kind, s.cause) for s in traj.steps)
    made: set[tuple[str, str]] = set()
    repeated = 0
    for s in traj.steps:
        if s.tool is None or s.tool == "Finish" or is_unparseable(s.kind, s.cause):
            continue
        key = (s.tool, json.dumps(s.arguments or {}, sort_keys=True, default=str))
        repeated += key in made
        made.add(key)
    failed = min(len(calls), cut + unparseable + repeated)
    low = min(len(calls), max(cut, unparseable, repeated))
    return FormatFailures(len(calls), cut, unparseable, repeated, failed, True, low, looped)


def format_failures(trajs: Iterable[Trajectory], header: RunHeader | None = None) -> FormatFailures:
    """The counts over a cell's episodes (``header``: its run's, for derived counts)."""
    max_tokens = header_max_tokens(header)
    total = FormatFailures()
    for t in trajs:
        total = total + episode_format_failures(t, max_tokens)
    return total


def format_gap_note(a: FormatFailures, b: FormatFailures, gap: float) -> str:
    """What a verdict between ``a`` and ``b`` says beside it when their format-failure rates
    differ by more than ``gap``; "" otherwise (or when either has no calls)."""
    if not a.calls or not b.calls:
        return ""
    # the gap the bounds guarantee (derived counts are ranges)
    apart = max(
        a.failed_low / a.calls - b.failed / b.calls, b.failed_low / b.calls - a.failed / a.calls
    )
    if apart <= gap:
        return ""
    head = (
        f"format failures differ: {a.text()} vs {b.text()} of calls (more than "
        f"{100 * gap:g} points; by kind {a.kinds_text()} vs {b.kinds_text()})"
    )
    if not (a.cut or a.unparseable or b.cut or b.unparseable):
        # every failed call parsed whole: the harness read it, and the model made it again
        return (
            f"{head}: each failed call parsed and repeats an earlier call (the model looping, or "
            "paging a tool such as Lookup on), not the harness's parsing"
        )
    # the harness's part, cut or unparseable calls (an upper bound: a call can be both), is
    # too small on both sides to make a gap this wide: the rest parsed and was made again
    harness = max(min(x.cut + x.unparseable, x.calls) / x.calls for x in (a, b))
    if harness <= gap:
        return (
            f"{head}: cut or unparseable calls are at most {100 * harness:.1f}% of either "
            "side's, so the gap is in calls that parsed and repeat an earlier one (the model "
            "looping, or paging a tool such as Lookup on), not the harness's parsing"
        )
    return f"{head}: the gap may be the harness's handling of the output"
