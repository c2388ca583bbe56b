"""Throughput against a simulated OpenAI-compatible server on 127.0.0.1.

The server (a separate process) answers every chat completion after a fixed latency with a
ReAct reply that finishes at once, so one episode costs one model call. For concurrency 1, 8,
64 and 256 episodes in flight, the benchmark runs ReAct on generated scholar tasks and reports
episodes per second against the ideal (concurrency / latency per episode), and the memory each
in-flight episode adds. Target: at least 0.8 of ideal at 64. Each level runs ``--waves`` times
its concurrency in episodes (16 by default: steady state; the first wave also opens every
connection, which a 4-wave run counts as a quarter of its time).

    pip install -e ".[bench]"; python benchmarks/throughput.py [--latency 0.2] [--waves 16]
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
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


def serve(port: int, latency: float) -> None:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def setup(self) -> None:
            super().setup()
            # Headers and body go out in two writes; without TCP_NODELAY, Nagle's algorithm
            # and delayed ACKs add ~40 ms to every reply, as no real server would.
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            time.sleep(latency)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(REPLY)))
            self.end_headers()
            self.wfile.write(REPLY)

    class Server(ThreadingHTTPServer):
        daemon_threads = True
        request_queue_size = 1024  # listen() backlog: read when the server binds

    server = Server(("127.0.0.1", port), Handler)
    print("ready", flush=True)
    server.serve_forever()


def run_at(url: str, concurrency: int, episodes: int, log_dir: Path) -> dict:
    import psutil

    from raleval.app.runner import run_sync
    from raleval.config import RunConfig
    from raleval.store import RESULTS, ResultsFile

    proc = psutil.Process()
    peak = [proc.memory_info().rss]
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], proc.memory_info().rss)
            time.sleep(0.02)

    base = proc.memory_info().rss
    sampler = threading.Thread(target=sample, daemon=True)
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
        max_connections=concurrency,
        log_dir=log_dir,
        cache=False,
        run_name=f"c{concurrency}",
    )
    summary = run_sync(cfg)
    stop.set()
    sampler.join()
    results = list(ResultsFile(summary.run_dir / RESULTS))
    starts = [r.started_at.timestamp() for r in results]
    ends = [r.started_at.timestamp() + r.wall_time_s for r in results]
    span = max(ends) - min(starts)
    return {
        "concurrency": concurrency,
        "episodes": len(results),
        "failed": sum(r.termination.value != "finished" for r in results),
        "episodes_per_s": len(results) / span,
        "span_s": span,
        "rss_peak_gb": peak[0] / 1e9,
        "rss_added_mb": (peak[0] - base) / 1e6,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--levels", default="1,8,64,256")
    parser.add_argument("--waves", type=int, default=16, help="episodes per level / concurrency")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--serve", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(int(args.serve[0]), float(args.serve[1]))
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
                row = run_at(url, level, max(40, args.waves * level), Path(tmp))
                ideal = level / args.latency
                row.update(ideal_episodes_per_s=ideal, ratio_to_ideal=row["episodes_per_s"] / ideal)
                rows.append(row)
                print(
                    f"concurrency {level:4d}: {row['episodes_per_s']:7.1f} episodes/s, ideal "
                    f"{ideal:7.1f}, ratio {row['ratio_to_ideal']:.2f}, peak RSS "
                    f"{row['rss_peak_gb']:.2f} GB, failed {row['failed']}"
                )
    finally:
        server.terminate()
        server.wait()
    per_episode = None
    if len(rows) > 1:  # peaks across levels, not against a cold start
        lo, hi = rows[0], rows[-1]
        per_episode = (
            (hi["rss_peak_gb"] - lo["rss_peak_gb"]) * 1e3 / (hi["concurrency"] - lo["concurrency"])
        )
        print(
            f"memory per in-flight episode: {per_episode:.3f} MB (peak RSS at concurrency "
            f"{hi['concurrency']} minus at {lo['concurrency']})"
        )
    payload = {
        "latency_s": args.latency,
        "waves": args.waves,
        "levels": rows,
        "mb_per_inflight_episode": per_episode,
    }
    print(f"wrote {write_json('throughput', payload, args.out)}")


if __name__ == "__main__":
    main()
