"""Where one `parlay serve` worker's time goes under load: py-spy samples it while 32
keep-alive clients send one route, and each sample is charged to a part of the request's
path (the innermost frame that belongs to one, asyncio's own frames looked through).

    python bench/proxy_profile.py [--route messages] [--stream] [--seconds 12]

Needs py-spy (`pip install py-spy`; it reads another process's memory, so it may need
root or ptrace rights). Prints milliseconds of samples per request, by part; the numbers
are wall time of the running thread, on a shared machine a little above CPU time.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import proxy_peers as peers
from bench.proxy import CLIENTS, STUB, free_port, loaded, raw_request, run_async, sign_of

# (part, what a frame's text holds): the first rule a frame matches names its part.
PARTS: list[tuple[str, str]] = [
    ("upstream client", "backends/_http"),
    ("upstream client", "httpx/"),
    ("upstream client", "httpcore/"),
    ("access logging", "access_log"),
    ("access logging", "logging/"),
    ("SSE encoding", "wire/sse"),
    ("SSE encoding", "server/streaming"),
    ("JSON decode and encode", "json/"),
    ("request validation", "jsonschema"),
    ("request validation", "server/body"),
    ("parlay's protocol decode and encode", "parlay/wire/"),
    ("parlay's backend plumbing", "parlay/backends/"),
    ("app (Starlette, parlay's handlers)", "starlette/"),
    ("app (Starlette, parlay's handlers)", "parlay/server/"),
    ("app (Starlette, parlay's handlers)", "parlay/"),
    ("HTTP server (uvicorn, httptools)", "uvicorn/"),
    ("HTTP server (uvicorn, httptools)", "httptools"),
]
LOOP = "event loop (uvloop, asyncio)"


def part_of(stack: str) -> tuple[str, str]:
    """The part a sample (py-spy's `root;...;leaf` frames) is charged to, and the frame."""
    for frame in reversed(stack.split(";")):
        if "asyncio/" in frame:
            continue
        for part, mark in PARTS:
            if mark in frame:
                return part, frame
    return LOOP, stack.rpartition(";")[2]


def profile(route: str, stream: bool, seconds: float) -> tuple[Counter[tuple[str, str]], int]:
    stub_port, port = free_port(), free_port()
    stub_cmd = [sys.executable, str(STUB), str(stub_port)]
    stub = peers.start(stub_cmd, stub_port, peers.CACHE / "stub.log", peers.HARNESS_CORES)
    proxy = peers.parlay(f"http://127.0.0.1:{stub_port}/v1", port, "native", 1)
    raw, sign = raw_request(port, route, stream, False), sign_of(route, stream)
    out = Path(tempfile.mkdtemp()) / "samples.txt"
    try:
        run_async(loaded(port, raw, sign, 2))  # warm-up
        spy_cmd = ["py-spy", "record", "-r", "200", "-f", "raw", "-d", str(int(seconds)), "--gil",
                   "-o", str(out), "--pid", str(proxy.pid)]  # fmt: skip
        spy = subprocess.Popen(spy_cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1)
        times, _ = run_async(loaded(port, raw, sign, seconds - 1))
        spy.wait(60)
    finally:
        for proc in (proxy, stub):
            proc.terminate()
            proc.wait(15)
    counts: Counter[tuple[str, str]] = Counter()
    for line in out.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        counts[part_of(stack)] += int(n)
    return counts, len(times)  # with --gil, the idle second before the load has no samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--route", default="messages", choices=["chat", "messages", "responses"])
    parser.add_argument("--stream", action="store_true")
    parser.add_argument("--seconds", type=float, default=12.0)
    parser.add_argument("--frames", type=int, default=0, help="also the N costliest frames")
    args = parser.parse_args()
    if shutil.which("py-spy") is None:
        sys.exit("py-spy is not installed: pip install py-spy")
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) >= 2:
        peers.PROXY_CORES, peers.HARNESS_CORES = {cores[-1]}, set(cores[:-1])
        os.sched_setaffinity(0, peers.HARNESS_CORES)
    counts, requests = profile(args.route, args.stream, args.seconds)
    per_request = 1000 / 200 / max(1, requests)  # milliseconds of samples per request
    parts: Counter[str] = Counter()
    for (part, _), n in counts.items():
        parts[part] += n
    mode = "streamed" if args.stream else "whole"
    print(f"{args.route} {mode}, {CLIENTS} clients: {requests} requests, ms of samples each")
    for part, n in parts.most_common():
        print(f"| {part} | {n * per_request:.3f} |")
    print(f"| **all** | **{sum(parts.values()) * per_request:.3f}** |")
    for (part, frame), n in counts.most_common(args.frames):
        print(f"{n * per_request:.3f}  {part}: {frame}")


if __name__ == "__main__":
    main()
