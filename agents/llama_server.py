"""Subprocess entry point: serve one GGUF file with llama.cpp on 127.0.0.1 until terminated.

Run by :class:`raleval.agents.local.LlamaServer`; not meant to be started by hand.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading

from raleval.processes import die_with_parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--ctx", type=int, default=4096)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--parallel", type=int, default=1)
    parser.add_argument("--parent-pid", type=int, default=None)
    args = parser.parse_args()
    if not die_with_parent(args.parent_pid):
        sys.exit(0)  # the parent died before the request was made

    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.n_ctx = args.ctx * args.parallel  # llama.cpp splits the context across slots
    params.n_parallel = args.parallel
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    params.use_jinja = True
    params.cache_prompt = True
    params.hostnames = ["127.0.0.1"]  # never reachable from outside the machine
    params.port = args.port
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    server = xllamacpp.Server(params)
    try:
        stop.wait()
    finally:
        del server


if __name__ == "__main__":
    main()
