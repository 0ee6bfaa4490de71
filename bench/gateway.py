"""`parlay serve` for a team, measured: requests a second and the latency nginx and parlay
add (one and two replicas, logging to PostgreSQL, metrics on) over the scripted upstream;
the log's write time per turn on SQLite and PostgreSQL; the CPU `--metrics` costs per
request, on against off in one run. Writes bench/results/gateway.md.

    python bench/gateway.py [--requests 2000] [--clients 16]

Needs PostgreSQL and nginx (Debian's packages) and the `postgres` and `metrics` extras.
The parts are tests/gateway's (the same nginx configuration as docs/deploy.md).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "gateway"))
from gateway_parts import WEATHER, nginx, postgres_server, replica, stub_upstream  # noqa: E402

from bench._table import cpu_seconds, markdown_table, pct, write_result  # noqa: E402
from parlay.store import LoggedCall, LoggedResponse, LoggedResult, LoggedSession, Store  # noqa: E402

ASK = [{"role": "user", "content": "The weather in Paris?"}]
# Through parlay: the tools go into the engine's prompt. Straight to the upstream: the
# same question without them, so its reply is the same JSON action text.
BODY = {"model": "turns", "messages": ASK, "tools": [WEATHER]}
DIRECT = {"model": "turns", "messages": ASK}


async def load(
    url: str, requests: int, clients: int, path: str, body: object = BODY
) -> tuple[float, list[float]]:
    """`requests` POSTs by `clients` loops at once; (requests a second, latencies in ms)."""
    latencies: list[float] = []
    left = iter(range(requests))
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as client:

        async def loop() -> None:
            for _ in left:
                started = time.perf_counter()
                reply = await client.post(path, json=body)
                reply.raise_for_status()
                latencies.append((time.perf_counter() - started) * 1000)

        started = time.perf_counter()
        await asyncio.gather(*(loop() for _ in range(clients)))
        took = time.perf_counter() - started
    return requests / took, latencies


NOTES = """\
- Added latency is the p50 (p99) through nginx and parlay less the p50 (p99) of the same
  clients straight to the scripted upstream: nginx, parlay's engine (the contract
  rendered, the reply parsed), the row written to PostgreSQL before the reply's last
  bytes, and the queueing all of that causes at this concurrency on these cores. The
  one-client rows have no queueing of their own: what a request pays alone.
- Everything (client, nginx, the replicas, PostgreSQL, the upstream) shares 2 cores with
  other work (the load average above): a second replica adds a process, not a core, so
  it cannot double throughput here; on machines of their own, replicas add up.
- Write time: `Store.add_response` of one proxy turn (a prompt, a call, a result brought
  back, diagnostics), one after another from one thread. SQLite: WAL with
  synchronous=NORMAL (no fsync per commit). PostgreSQL: a fresh server with its
  defaults (fsync on, synchronous_commit on: every turn waits for its WAL flush), over
  loopback through the pool. A reply waits for its row at most 2 s (`turn_log`).
- CPU: user+system of the replica process (/proc), the same load sent to a replica with
  `--metrics` and one without in alternating batches, so the machine's load falls on
  both alike; neither logs. The batches' spread shows the noise of that measure; the
  last row times the calls `--metrics` adds to a request (request, first token, usage,
  the engine's counters) alone, which is what it costs without the noise.
"""


def row(label: str, rate: str, lat: list[float], base: list[float] | None) -> list[object]:
    """A table row: req/s, p50 and p99, and what they add to `base` (the upstream alone)."""
    cells = [f"{pct(lat, q):.1f}" for q in (0.5, 0.99)]
    added = [f"{pct(lat, q) - pct(base, q):.1f}" for q in (0.5, 0.99)] if base else ["-", "-"]
    return [label, rate, *cells, *added]


def throughput(upstream: str, log: str, requests: int, clients: int, rounds: int) -> str:
    """Each setup loaded by `clients` at once (req/s; latency with queueing), then by one
    client at a time (300 requests: latency alone); added: less the upstream's own."""
    counts = {clients: requests, 1: 300}
    alone = {
        n: asyncio.run(load(upstream, count, n, "/chat/completions", DIRECT))[1]
        for n, count in counts.items()
    }
    rows = [row(f"scripted upstream alone, {n} client(s)", "-", alone[n], None) for n in counts]
    extra = ("--log", log, "--metrics")
    with replica(upstream, *extra) as one, replica(upstream, *extra) as two:
        setups = (("nginx, 1 replica", [one.port]), ("nginx, 2 replicas", [one.port, two.port]))
        # Rounds alternate the setups, so the machine's other load falls on both alike.
        for number in range(1, rounds + 1):
            for name, ports in setups:
                with nginx(ports) as url:
                    asyncio.run(load(url, 200, clients, "/v1/chat/completions"))  # warm up
                    for n, count in counts.items():
                        rate, lat = asyncio.run(load(url, count, n, "/v1/chat/completions"))
                        label = f"{name}, {n} client(s), round {number}"
                        rows.append(row(label, f"{rate:.0f}", lat, alone[n]))
    headers = ["path", "req/s", "p50 ms", "p99 ms", "added p50 ms", "added p99 ms"]
    return markdown_table(headers, rows)


def turn(session: str, n: int) -> LoggedResponse:
    """A proxy's turn as the log keeps it: a prompt, a call, a result brought back."""
    return LoggedResponse(
        session,
        "It is sunny in Paris." if n % 2 else "",
        prompt=f"The weather in Paris? ({n})",
        backend="prompted:openai:turns",
        model="turns",
        finish_reason="stop",
        prompt_tokens=420,
        completion_tokens=18,
        first_event_ms=3.2,
        duration_ms=4.1,
        diagnostics={"calls_parsed": 1, "notes": [], "retries": []},
        calls=(LoggedCall(f"call_{session}_{n}", "get_weather", {"city": "Paris"}),),
        results=(LoggedResult(f"call_{session}_{n - 1}", "get_weather", "sunny, 21 C"),),
        request_key=f"{session}-{n}",
    )


def write_times(store: Store, turns: int) -> list[float]:
    backend = "prompted:openai:turns"
    session = LoggedSession("bench", "", "serve", backend, "You help.", ("get_weather",))
    store.add_response(turn("bench", -1), session)  # the first write opens the log
    times = []
    for n in range(turns):
        started = time.perf_counter()
        store.add_response(turn("bench", n), session)
        times.append((time.perf_counter() - started) * 1000)
    return times


def log_writes(pg_url: str, turns: int) -> str:
    rows: list[list[object]] = []
    with tempfile.TemporaryDirectory() as folder:
        kinds = (
            ("SQLite (WAL, synchronous=NORMAL)", Store(Path(folder) / "log.db")),
            ("PostgreSQL 15 on loopback (fsync on)", Store(pg_url)),
        )
        for name, store in kinds:
            times = write_times(store, turns)
            spread = (f"{pct(times, 0.5):.2f}", f"{pct(times, 0.99):.2f}")
            rows.append([name, turns, f"{statistics.mean(times):.2f}", *spread])
            store.close()
    return markdown_table(["log", "turns", "mean ms", "p50 ms", "p99 ms"], rows)


def metrics_cost(upstream: str, requests: int, clients: int) -> str:
    """Two replicas, one with --metrics: the same load to each in turns, CPU per request;
    and the instrumentation's own calls for one request, timed in this process."""
    batches = 20
    per_batch: dict[str, list[float]] = {"off": [], "on": []}
    with replica(upstream) as off, replica(upstream, "--metrics") as on:
        procs = {"off": off, "on": on}
        for proc in procs.values():
            asyncio.run(load(proc.url, 200, clients, "/v1/chat/completions"))
        for _ in range(batches):
            for name, proc in procs.items():
                before = cpu_seconds(proc.pid)
                asyncio.run(load(proc.url, requests // batches, clients, "/v1/chat/completions"))
                spent = cpu_seconds(proc.pid) - before
                per_batch[name].append(spent / (requests // batches) * 1e6)
        scraped = httpx.get(on.url + "/metrics").text
    diffs = sorted(a - b for a, b in zip(per_batch["on"], per_batch["off"], strict=True))
    rows = [[k, requests, f"{statistics.median(v):.0f}"] for k, v in per_batch.items()]
    spread = f"{diffs[0]:+.0f} to {diffs[-1]:+.0f} across batches"
    rows.append(["on - off (median of batches)", "", f"{statistics.median(diffs):+.0f} ({spread})"])
    rows.append(["the metrics' own calls, in-process", 100_000, f"{instrumentation_us():.1f}"])
    table = markdown_table(["--metrics", "requests", "CPU µs per request"], rows)
    return table + f"\n\n`/metrics` after the run: {len(scraped):,} bytes."


def instrumentation_us() -> float:
    """What `--metrics` calls for one request (a reply with a call), in µs."""
    from parlay.diagnostics import Diagnostics
    from parlay.events import Usage
    from parlay.server.metrics import Metrics

    metrics, usage, said = Metrics("prompted"), Usage(420, 18), Diagnostics(calls_parsed=1)
    started = time.process_time()
    for _ in range(100_000):
        metrics.first_token("openai", 0.003)
        metrics.finished(usage, said)
        metrics.request_done("/v1/chat/completions", 200, 0.004)
    return (time.process_time() - started) * 10


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    load_before = os.getloadavg()
    with postgres_server() as pg_url, stub_upstream() as upstream:
        gateway = throughput(upstream, pg_url, args.requests, args.clients, args.rounds)
        writes = log_writes(pg_url, args.turns)
        cost = metrics_cost(upstream, args.requests, args.clients)
    load_after = os.getloadavg()
    setup = (
        f"2 cores shared with other work: load average {load_before[0]:.2f} before the run, "
        f"{load_after[0]:.2f} after (1-minute). Scripted upstream (tests/proxy/proxy_stub.py, "
        f'"turns": a tool call in the prompt engine\'s JSON format), `parlay serve` in '
        f"prompted mode; {args.clients} clients each sending one request after another "
        f"({args.requests} requests a row), or one client (300); everything on one machine."
    )
    write_result(
        "gateway",
        "parlay serve for a team: nginx, replicas, the log, metrics",
        [
            ("Setup", setup),
            (
                "Through nginx (replicas logging to PostgreSQL, metrics on)",
                gateway + "\n\nAdded: against the scripted upstream alone, same clients.",
            ),
            ("The log's write time per turn", writes),
            ("The CPU of --metrics per request (one run, batches alternating)", cost),
            ("How to read it", NOTES),
        ],
    )
    print((ROOT / "bench" / "results" / "gateway.md").read_text())


if __name__ == "__main__":
    main()
