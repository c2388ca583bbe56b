"""What reading a cut reply for a loop (``ends_in_loop``) costs, against what loading the
reply's episode from its stored cell costs, over every distinct real cut reply of the
repository's stored studies; and the worst case, unrelated text longer than the window.

    python benchmarks/loop_reading.py

Prints the medians and their ratio: the reading runs once per cut call whenever a table is
built, so it should stay a fraction of the load it follows.
"""

from __future__ import annotations

import gzip
import random
import statistics
import time
from pathlib import Path

from _common import write_json

from raleval.analysis.format_failures import cut_calls, ends_in_loop, header_max_tokens
from raleval.records import RunHeader, Trajectory

STUDIES = Path(__file__).resolve().parents[1] / "studies"


def cut_episodes() -> list[tuple[str, str]]:
    """(the stored episode line, its cut reply) for every distinct cut reply."""
    out, seen = [], set()
    for path in sorted(STUDIES.glob("**/results.jsonl.gz")):
        header = RunHeader.model_validate_json((path.parent / "header.json").read_text())
        max_tokens = header_max_tokens(header)
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            for line in fh:
                traj = Trajectory.model_validate_json(line)
                for cut, call in zip(cut_calls(traj, max_tokens), traj.llm_calls, strict=True):
                    if cut and call.output not in seen:
                        seen.add(call.output)
                        out.append((line, call.output))
    return out


def timed(fn, arg, repeat: int = 5) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn(arg)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    episodes = cut_episodes()
    read = [timed(ends_in_loop, reply) for _, reply in episodes]
    load = [timed(Trajectory.model_validate_json, line) for line, _ in episodes]
    rng = random.Random(0)
    worst = "".join(rng.choice("abcdefghij ") for _ in range(5000))
    worst_s = timed(ends_in_loop, worst)
    read_ms, load_ms = statistics.median(read) * 1e3, statistics.median(load) * 1e3
    print(f"{len(episodes)} distinct cut replies in the stored studies")
    print(f"ends_in_loop, median:          {read_ms:.3f} ms a reply")
    print(f"loading its episode, median:   {load_ms:.3f} ms")
    print(f"ratio reading / loading:       {read_ms / load_ms:.2f}")
    print(f"worst case (5,000 unrelated characters): {worst_s * 1e3:.1f} ms")
    write_json(
        "loop_reading",
        {
            "replies": len(episodes),
            "read_ms_median": read_ms,
            "load_ms_median": load_ms,
            "ratio": read_ms / load_ms,
            "worst_ms": worst_s * 1e3,
        },
    )


if __name__ == "__main__":
    main()
