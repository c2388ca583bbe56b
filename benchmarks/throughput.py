"""Throughput against a simulated OpenAI-compatible server on 127.0.0.1.

The server (a separate asyncio process) answers every chat completion after a fixed latency
with a ReAct reply that finishes at once, so one episode costs one model call. For each level of
episodes in flight, the benchmark runs ReAct on generated scholar tasks and reports episodes per
second against the ideal (concurrency / latency per episode), the CPU per episode of raleval's
processes (driver and workers) and of the server inside the measured span, and the memory
each in-flight episode adds. Target: at least 0.8 of ideal at 256. Each level runs ``--waves``
times its concurrency in episodes (16 by default: steady state; the first wave also opens every
connection).

The ratio is bounded by CPU: one process of raleval serves at most ``1000 / CPU ms per
episode`` episodes a second on a core of its own (about 2 ms an episode, half of it LangGraph's
engine), so the default runs the levels as ``raleval run --backend processes --workers N`` does,
one worker process per core, the driver writing; ``--backend local`` measures one process.
Other work on the machine (the load average, recorded per level) takes from those cores.

    pip install -e ".[bench]"; python benchmarks/throughput.py [--levels 64,256,1024]
    python benchmarks/throughput.py --levels 256 --backend local        # one process
    python benchmarks/throughput.py --levels 256 --backend ray --workers 4
    python benchmarks/throughput.py --levels 256 --baseline fe9507e --repeat 3

``--baseline REV`` measures a commit and this working tree back to back on this machine
(alternating, ``--repeat`` times each, which goes first alternating too, the same benchmark
script for both, each tree imported
from a copy laid out as the package installs it, run from a temporary directory) and prints the
ratio of the medians of CPU per episode and of throughput, and the median of the run-by-run
ratios; a CPU regression of more than 10% (ratio of medians) is said in the output.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from _common import write_json

REPLY = json.dumps(
    {
        "id": "sim",
        "object": "chat.completion",
        "created": 0,
        "model": "sim",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {
                    "role": "assistant",
                    "content": " I know this.\nAction 1: Finish[Paris]",
                },
            }
        ],
        "usage": {"prompt_tokens": 600, "completion_tokens": 12, "total_tokens": 612},
    }
).encode()


RESPONSE = (
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: keep-alive\r\n"
    + f"Content-Length: {len(REPLY)}\r\n\r\n".encode()
    + REPLY
)


def serve(port: int, latency: float) -> None:
    """The simulated server: an asyncio protocol that reads each HTTP/1.1 request (headers,
    then Content-Length bytes of body) and writes the same reply ``latency`` seconds later on
    that keep-alive connection; 1,024 requests waiting are timers, not threads or tasks.

    It stands for a remote endpoint, whose CPU would not be this machine's: it is kept lean so
    that it takes as little as it can from the cores raleval is measured on (and its CPU per
    request is reported). It runs on uvloop where installed (the ``bench`` extra): since
    raleval's episodes take turns (raleval.scheduling) requests arrive one at a time rather than
    in bursts, and on asyncio's loop it cost 0.13-0.15 ms of CPU per request at 256 in flight,
    on uvloop 0.08-0.09 ms (the aiohttp web server before it: 0.13-0.17 ms with bursts; a
    threaded server: 0.26-0.33 ms)."""
    import asyncio

    class Completion(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            self.transport = transport
            self.pending = b""

        def data_received(self, data: bytes) -> None:
            self.pending += data
            while True:
                end = self.pending.find(b"\r\n\r\n")
                if end < 0:
                    return
                length = 0
                for line in self.pending[:end].split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                if len(self.pending) < end + 4 + length:
                    return  # the body is still on its way
                self.pending = self.pending[end + 4 + length :]
                loop.call_later(latency, self.reply)

        def reply(self) -> None:
            if not self.transport.is_closing():
                self.transport.write(RESPONSE)

    async def listen() -> None:
        server = await loop.create_server(Completion, "127.0.0.1", port, backlog=4096)
        print("ready", flush=True)
        async with server:
            await server.serve_forever()

    try:  # libuv's loop where installed: less of the shared cores for the stand-in endpoint
        import uvloop

        loop = uvloop.new_event_loop()
    except ImportError:
        loop = asyncio.new_event_loop()
    loop.run_until_complete(listen())


def reference_ms() -> float:
    """CPU milliseconds of a fixed pure-Python loop: how fast this machine's cores run right
    now. On the 2-core machine the numbers in docs/scale.md come from, the same loop took
    83-155 ms from one run to the next within an hour, nothing else running, and raleval's CPU
    per episode moved between 1.3 and 2.5 ms; each level records the loop before and after,
    so that a ratio can be read against the machine's speed at the time."""
    start, total = time.process_time(), 0
    for i in range(3_000_000):
        total += i
    return 1e3 * (time.process_time() - start)


def _at(samples: list[tuple[float, int, float]], t: float) -> tuple[int, float]:
    """RSS and CPU seconds of the first sample taken at or after ``t`` (the last if none)."""
    for when, rss, cpu in samples:
        if when >= t:
            return rss, cpu
    return samples[-1][1], samples[-1][2]


def _ours(proc, server_pid: int) -> list:
    """This process and its descendants (worker processes), not the simulated server."""

    out = [proc]
    for child in proc.children(recursive=True):
        if child.pid != server_pid:
            out.append(child)
    return out


def run_at(
    url: str,
    concurrency: int,
    episodes: int,
    log_dir: Path,
    server_pid: int,
    backend: str,
    workers: int,
) -> dict:
    import psutil

    from raleval.app.runner import run_sync
    from raleval.config import RunConfig
    from raleval.store import RESULTS, ResultsFile

    proc, server = psutil.Process(), psutil.Process(server_pid)
    samples: list[tuple[float, int, float]] = []  # (time, RSS, client CPU seconds)
    stop = threading.Event()
    seen: dict[int, float] = {}  # CPU seconds of every worker process seen, even once ended

    def sample() -> None:
        while not stop.is_set():
            rss, now = 0, time.time()
            for p in _ours(proc, server_pid):
                try:
                    cpu, mem = p.cpu_times(), p.memory_info().rss
                except psutil.Error:  # ended meanwhile: its last reading stays counted
                    continue
                seen[p.pid] = cpu.user + cpu.system
                rss += mem
            samples.append((now, rss, sum(seen.values())))
            time.sleep(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    load_before = os.getloadavg()[0]
    server_cpu = sum(server.cpu_times()[:2])
    sampler.start()
    cfg = RunConfig(
        env="scholar",
        env_options={"size": "small"},
        workflow="react",
        model=f"openai-compatible/sim@{url}",
        model_options={"max_retries": 0},
        tasks="scholar-ks",
        tasks_per_family=episodes,
        limit=episodes,
        # `concurrency` episodes in flight over the workers (each its own process)
        max_connections=concurrency if backend == "local" else max(1, concurrency // workers),
        backend=backend,
        workers=workers,
        log_dir=log_dir,
        cache=False,
        run_name=f"c{concurrency}",
    )
    summary = run_sync(cfg)
    stop.set()
    sampler.join()
    server_cpu = sum(server.cpu_times()[:2]) - server_cpu  # the server idles outside the span
    results = list(ResultsFile(summary.run_dir / RESULTS))
    starts = [r.started_at.timestamp() for r in results]
    ends = [r.started_at.timestamp() + r.wall_time_s for r in results]
    first, last = min(starts), max(ends)
    span = last - first
    # Besides the whole span (what the ratio is), the rate between the 10th and the 90th
    # percentile of completion times: neither the ramp (workers starting, connections opening)
    # nor the draining tail. Reported to show where the whole-span rate loses.
    done = sorted(ends)
    lo, hi = done[len(done) // 10], done[(9 * len(done)) // 10]
    steady = (len(done) * 8 // 10) / (hi - lo) if hi > lo else float("nan")
    # Memory with `concurrency` episodes in flight: the median RSS over the middle half of the
    # span (every slot busy; neither the start nor the draining tail), not the peak, which
    # also holds what setting up the level (world, tasks) left behind.
    middle = [rss for when, rss, _ in samples if first + span / 4 <= when <= last - span / 4]
    steady_rss = sorted(middle)[len(middle) // 2] if middle else _at(samples, first)[0]
    client_cpu = _at(samples, last)[1] - _at(samples, first)[1]
    calls = sorted(c.latency_s for r in results for c in r.llm_calls)
    if backend == "ray":  # Ray's workers are not this process's children
        client_cpu = float("nan")
    return {
        "concurrency": concurrency,
        "backend": backend,
        "workers": workers if backend != "local" else 1,
        "episodes": len(results),
        "failed": sum(r.termination.value != "finished" for r in results),
        "episodes_per_s": len(results) / span,
        "steady_episodes_per_s": steady,
        "span_s": span,
        "client_cpu_ms_per_episode": 1e3 * client_cpu / len(results),
        "server_cpu_ms_per_episode": 1e3 * server_cpu / len(results),
        "model_call_median_s": calls[len(calls) // 2] if calls else None,
        "steady_rss_gb": steady_rss / 1e9,
        "rss_peak_gb": max(rss for _, rss, _ in samples) / 1e9,
        "load_average": [load_before, os.getloadavg()[0]],
    }


REGRESSION = 1.10  # CPU per episode above the baseline's by more than this is reported


def _package_layout(tree: Path, dest: Path) -> Path:
    """``tree`` (a checkout) copied as the package installs it (``raleval/`` plus the folders
    setup.py maps to ``raleval.<folder>``), for PYTHONPATH: it is imported ahead of the
    editable install."""
    import re
    import shutil

    folders = re.search(r"SUBPACKAGE_FOLDERS = \(([^)]*)\)", (tree / "setup.py").read_text())
    assert folders, f"no SUBPACKAGE_FOLDERS in {tree / 'setup.py'}"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(tree / "raleval", dest / "raleval", ignore=ignore)
    for folder in re.findall(r'"([^"]+)"', folders.group(1)):
        shutil.copytree(tree / folder, dest / "raleval" / folder, ignore=ignore)
    return dest


def against_baseline(args: argparse.Namespace, passthrough: list[str]) -> None:
    """Run this benchmark on ``args.baseline`` and on the working tree, alternating."""
    repo = Path(__file__).resolve().parent.parent
    rev = subprocess.run(
        ["git", "rev-parse", "--short", args.baseline], cwd=repo, capture_output=True,
        text=True, check=True,
    ).stdout.strip()  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        base_tree = Path(tmp) / "baseline-tree"
        base_tree.mkdir()
        archive = subprocess.run(["git", "archive", rev], cwd=repo, capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(base_tree)], input=archive.stdout, check=True)
        layouts = {
            f"baseline {rev}": _package_layout(base_tree, Path(tmp) / "baseline"),
            "working tree": _package_layout(repo, Path(tmp) / "working"),
        }
        runs: dict[str, list[dict]] = {name: [] for name in layouts}
        for i in range(args.repeat):
            # which tree goes first alternates (baseline first, then the working tree first):
            # whatever the second run of a pair meets that the first did not falls on each
            order = list(layouts.items()) if i % 2 == 0 else list(layouts.items())[::-1]
            for name, layout in order:
                out = Path(tmp) / f"{name.split()[0]}-{i}.json"
                env = {**os.environ, "PYTHONPATH": str(layout)}
                # run from the temporary directory: a worker process (`python -m`) puts its
                # working directory first on sys.path, and from the checkout it would import
                # the working tree's raleval in the baseline's workers too
                subprocess.run(
                    [sys.executable, str(Path(__file__).resolve()), *passthrough, "--out",
                     str(out.resolve())], env=env, check=True, stdout=subprocess.DEVNULL, cwd=tmp,
                )  # fmt: skip
                row = json.loads(out.read_text())["levels"][-1]
                runs[name].append(row)
                print(
                    f"{name} (run {i + 1}): CPU per episode "
                    f"{row['client_cpu_ms_per_episode']:.2f} ms, ratio to ideal "
                    f"{row['ratio_to_ideal']:.2f}, load {row['load_average'][0]:.1f}",
                    flush=True,
                )

    def median(name: str, key: str) -> float:
        values = sorted(r[key] for r in runs[name])
        return values[len(values) // 2]

    base, work = layouts  # names
    cpu = median(work, "client_cpu_ms_per_episode") / median(base, "client_cpu_ms_per_episode")
    speed = median(work, "ratio_to_ideal") / median(base, "ratio_to_ideal")
    # each working-tree run over the baseline run just before it: a drift in the machine's
    # load between runs moves both of a pair, where the medians can fall in different spells
    key = "client_cpu_ms_per_episode"
    pairs = sorted(w[key] / b[key] for b, w in zip(runs[base], runs[work], strict=True))
    paired = pairs[len(pairs) // 2]
    print(
        f"working tree / {base} ({args.backend}): CPU per episode x{cpu:.3f} (medians of "
        f"{args.repeat}: {median(work, key):.2f} vs {median(base, key):.2f} ms; run by run "
        f"x{paired:.3f}, x{pairs[0]:.2f}-x{pairs[-1]:.2f}), throughput x{speed:.3f}"
    )
    if cpu > REGRESSION:
        print(f"REGRESSION: CPU per episode {100 * (cpu - 1):.0f}% above {base}")
    payload = {
        "baseline": rev,
        "repeat": args.repeat,
        "backend": args.backend,
        "cpu_ratio": cpu,
        "cpu_ratio_paired": paired,
        "throughput_ratio": speed,
        "regression": cpu > REGRESSION,
        "runs": runs,
    }
    print(f"wrote {write_json('throughput-baseline', payload, args.out)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--levels", default="1,8,64,256")
    parser.add_argument("--waves", type=int, default=16, help="episodes per level / concurrency")
    parser.add_argument(
        "--backend",
        choices=("processes", "local", "ray"),
        default="processes",
        help="where episodes run (raleval run --backend): worker processes (default), this "
        "process, or a local Ray cluster",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=os.cpu_count() or 1,
        help="worker processes for --backend processes/ray (default: one per core); each "
        "level's episodes in flight are spread over them",
    )
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument(
        "--baseline",
        metavar="REV",
        help="also measure this commit, back to back with the working tree, and print the ratio",
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs of each with --baseline")
    parser.add_argument("--serve", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(int(args.serve[0]), float(args.serve[1]))
        return
    if args.baseline:
        keep = ["--latency", str(args.latency), "--levels", args.levels, "--waves",
                str(args.waves), "--backend", args.backend, "--workers",
                str(args.workers)]  # fmt: skip
        against_baseline(args, keep)
        return
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve", str(port), str(args.latency)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout and server.stdout.readline().strip() == "ready"
    url = f"http://127.0.0.1:{port}/v1"
    rows = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for level in (int(x) for x in args.levels.split(",")):
                episodes = max(40, args.waves * level)
                before = reference_ms()
                row = run_at(
                    url, level, episodes, Path(tmp), server.pid, args.backend, args.workers
                )
                row["reference_loop_ms"] = [before, reference_ms()]
                ideal = level / args.latency
                row.update(
                    ideal_episodes_per_s=ideal,
                    ratio_to_ideal=row["episodes_per_s"] / ideal,
                    steady_ratio=row["steady_episodes_per_s"] / ideal,
                )
                rows.append(row)
                print(
                    f"concurrency {level:4d}: {row['episodes_per_s']:7.1f} episodes/s, ideal "
                    f"{ideal:7.1f}, ratio {row['ratio_to_ideal']:.2f} (steady "
                    f"{row['steady_ratio']:.2f}; {args.backend}, "
                    f"{row['workers']} worker(s)); CPU per episode: raleval "
                    f"{row['client_cpu_ms_per_episode']:.2f} ms, server "
                    f"{row['server_cpu_ms_per_episode']:.2f} ms; model call median "
                    f"{row['model_call_median_s']:.3f} s; steady RSS "
                    f"{row['steady_rss_gb']:.3f} GB; "
                    f"failed {row['failed']}; load {row['load_average'][0]:.1f}; reference "
                    f"loop {row['reference_loop_ms'][0]:.0f}/{row['reference_loop_ms'][1]:.0f} ms"
                )
    finally:
        server.terminate()
        server.wait()
    per_episode = None
    if len(rows) > 1 and args.backend != "ray":  # steady RSS across levels, our processes
        lo, hi = rows[0], rows[-1]
        per_episode = (
            (hi["steady_rss_gb"] - lo["steady_rss_gb"])
            * 1e3
            / (hi["concurrency"] - lo["concurrency"])
        )
        print(
            f"memory per in-flight episode: {per_episode:.3f} MB (steady RSS at concurrency "
            f"{hi['concurrency']} minus at {lo['concurrency']}, over the difference)"
        )
    payload = {
        "latency_s": args.latency,
        "waves": args.waves,
        "cpu_count": os.cpu_count(),
        "backend": args.backend,
        "workers": args.workers,
        "levels": rows,
        "mb_per_inflight_episode": per_episode,
    }
    print(f"wrote {write_json('throughput', payload, args.out)}")


if __name__ == "__main__":
    main()
