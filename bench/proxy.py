"""What a proxy costs per request and per core: parlay serve beside LiteLLM's proxy and
claude-code-router, each in front of the same stub upstream (tests/proxy/proxy_stub.py).

Every route a proxy serves, whole and streamed: the latency it adds one request at a time
(over calling the stub directly), then 32 keep-alive clients at once (requests a second,
CPU per request, p50 and p99). Targets take turns, the order rotated each round, so load
from elsewhere on the machine falls on all of them alike: ratios within a run count.

    python bench/proxy.py [--rounds 2] [--seconds 10] [--requests 300] [--only parlay]

The peers are installed on first use under ~/.cache/parlay-bench-proxy (LiteLLM in a venv
of its own, claude-code-router with npm), and skipped with the reason when they cannot be.
Writes bench/results/proxy.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import uvloop

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import proxy_peers as peers
from bench._table import RESULTS, cpu_seconds, markdown_table, pct
from bench.proxy_peers import CACHE, KEY, MODEL, ccr, litellm, parlay, start
from parlay.backends.local import free_port

ROOT = Path(__file__).resolve().parent.parent
STUB = ROOT / "tests" / "proxy" / "proxy_stub.py"
CLIENTS = 32
MARK, MARK_END = "<!-- table -->", "<!-- /table -->"  # where proxy.md holds the table
MESSAGES = [{"role": "user", "content": "Say hello."}]
TOOL = {"name": "get_weather", "description": "Current weather for a city.", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}  # fmt: skip
# route -> (path, body, a byte string every good whole answer holds, one every stream holds)
ROUTES: dict[str, tuple[str, dict[str, Any], bytes, bytes]] = {
    "chat": ("/v1/chat/completions", {"messages": MESSAGES}, b'"choices"', b"[DONE]"),
    "messages": ("/v1/messages", {"messages": MESSAGES}, b'"content"', b"message_stop"),
    "responses": ("/v1/responses", {"input": "Say hello."}, b'"completed"', b"response.completed"),
}


def sign_of(route: str, stream: bool) -> bytes:
    return ROUTES[route][3] if stream else ROUTES[route][2]


def raw_request(port: int, route: str, stream: bool, tools: bool) -> bytes:
    path, body, _, _ = ROUTES[route]
    body = {**body, "model": MODEL, "max_tokens": 16, "stream": stream}
    if tools:  # one tool, in each protocol's own shape
        tool: dict[str, Any] = {"type": "function", "function": TOOL}
        if route == "messages":
            tool = {"name": TOOL["name"], "input_schema": TOOL["parameters"]}
        elif route == "responses":
            tool = {"type": "function", **TOOL}
        body["tools"] = [tool]
    data = json.dumps(body).encode()
    return (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {KEY}\r\n"
        f"anthropic-version: 2023-06-01\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(data)}\r\n\r\n"
    ).encode() + data


async def read_response(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    """Status and body of one response (content-length or chunked)."""
    line = await reader.readline()
    if not line:
        raise ConnectionError("closed")
    status, length, chunked = int(line.split()[1]), 0, False
    while (line := await reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.decode("latin-1").partition(":")
        if name.strip().lower() == "content-length":
            length = int(value)
        chunked |= name.strip().lower() == "transfer-encoding" and "chunked" in value.lower()
    if not chunked:
        return status, await reader.readexactly(length)
    parts = []
    while size := int((await reader.readline()).split(b";")[0], 16):
        parts.append(await reader.readexactly(size))
        await reader.readexactly(2)
    await reader.readline()
    return status, b"".join(parts)


async def connect(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.transport.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return reader, writer


async def one(reader: Any, writer: Any, raw: bytes, sign: bytes) -> float:
    """One request on a kept-alive connection: its milliseconds (raises on a bad answer)."""
    start = time.perf_counter()
    writer.write(raw)
    status, body = await asyncio.wait_for(read_response(reader), 30)
    if status != 200 or sign not in body or b'"error":{' in body:
        raise RuntimeError(f"answered {status}: {body[:300]!r}")
    return (time.perf_counter() - start) * 1000


async def sequential(port: int, raw: bytes, sign: bytes, n: int) -> list[float]:
    reader, writer = await connect(port)
    try:
        for _ in range(n // 6):  # warm-up
            await one(reader, writer, raw, sign)
        return [await one(reader, writer, raw, sign) for _ in range(n)]
    finally:
        writer.close()


async def loaded(port: int, raw: bytes, sign: bytes, seconds: float) -> tuple[list[float], int]:
    """CLIENTS keep-alive clients in a loop for `seconds`: (latencies, errors)."""
    times: list[float] = []
    errors = 0
    stop = time.perf_counter() + seconds

    async def client() -> None:
        nonlocal errors
        conn = None
        while time.perf_counter() < stop:
            try:
                conn = conn or await connect(port)
                times.append(await one(*conn, raw, sign))
            except (OSError, RuntimeError, ValueError, TimeoutError, asyncio.IncompleteReadError):
                errors += 1
                if conn:
                    conn[1].close()
                conn = None
        if conn:
            conn[1].close()

    await asyncio.gather(*(client() for _ in range(CLIENTS)))
    return times, errors


def run_async(coro: Any) -> Any:
    return uvloop.run(coro)  # the client's own cost stays small beside what it measures


# -- the run -------------------------------------------------------------------------------

Cell = tuple[str, str, bool]  # target, route, streamed


def targets(stub: str, args: Any, notes: list[str]) -> dict[str, tuple[Any, int, bool]]:
    """name -> (process, port, whether requests carry a tool), for those that started."""
    makers: dict[str, Any] = {"parlay before": lambda p: parlay(stub, p, "native", 1, args.before)}
    makers = {
        **(makers if args.before else {}),
        "parlay": lambda p: parlay(stub, p, "native", 1),
        "parlay, 2 workers": lambda p: parlay(stub, p, "native", 2),
        "parlay prompted": lambda p: parlay(stub, p, "prompted", 1),
        "LiteLLM": lambda p: litellm(stub, p),
        "claude-code-router": lambda p: ccr(stub, p),
    }
    found = {}
    for name, make in makers.items():
        if args.only and name not in args.only.split(","):
            continue
        port = free_port()
        try:
            found[name] = (make(port), port, name == "parlay prompted")
        except (RuntimeError, OSError, subprocess.CalledProcessError) as exc:
            notes.append(f"{name}: skipped, it did not start or install ({exc})")
    return found


def cells(found: dict[str, tuple[Any, int, bool]], notes: list[str]) -> list[Cell]:
    """Every route each target answers well, probed once (a refusal is noted, not run)."""
    out = []
    for name, (_, port, tools) in found.items():
        for route in ROUTES:
            for stream in (False, True):
                raw = raw_request(port, route, stream, tools)
                try:
                    run_async(sequential(port, raw, sign_of(route, stream), 1))
                    out.append((name, route, stream))
                except (RuntimeError, OSError, TimeoutError) as exc:
                    mode = "streamed" if stream else "whole"
                    notes.append(f"{name}, {route} {mode}: not served here ({str(exc)[:160]})")
    return out


def measure_cell(proc: Any, port: int, cell: Cell, tools: bool, args: Any, data: Any) -> None:
    """One cell, one round: one request at a time, then CLIENTS at once (CPU of both)."""
    raw = raw_request(port, cell[1], cell[2], tools)
    sign = sign_of(cell[1], cell[2])
    cpu = cpu_seconds(proc.pid)
    seq = run_async(sequential(port, raw, sign, args.requests))
    seq_cpu = (cpu_seconds(proc.pid) - cpu) * 6 / 7  # less the warm-up's share
    cpu, began = cpu_seconds(proc.pid), time.perf_counter()
    times, errors = run_async(loaded(port, raw, sign, args.seconds))
    took = time.perf_counter() - began
    data[cell, "seq"].append(seq)
    data[cell, "seq cpu"].append(seq_cpu)
    data[cell, "load"].append((times, errors, took, cpu_seconds(proc.pid) - cpu))


def measure(args: argparse.Namespace) -> tuple[str, list[str]]:
    notes: list[str] = []
    CACHE.mkdir(parents=True, exist_ok=True)
    stub_port = free_port()
    stub_cmd = [sys.executable, str(STUB), str(stub_port)]
    stub = start(stub_cmd, stub_port, CACHE / "stub.log", peers.HARNESS_CORES)
    found = targets(f"http://127.0.0.1:{stub_port}/v1", args, notes)
    data: dict[Any, list[Any]] = defaultdict(list)
    try:
        todo = cells(found, notes)
        for r in range(args.rounds):
            for stream in (False, True):  # the stub alone, for the latency a proxy adds
                raw = raw_request(stub_port, "chat", stream, False)
                sign = sign_of("chat", stream)
                data["direct", stream] += run_async(sequential(stub_port, raw, sign, args.requests))
                began = time.perf_counter()
                times, _ = run_async(loaded(stub_port, raw, sign, args.seconds / 2))
                data["direct load", stream].append((times, time.perf_counter() - began))
            names = list(found)[r % len(found) :] + list(found)[: r % len(found)]
            for cell in [c for name in names for c in todo if c[0] == name]:
                proc, port, tools = found[cell[0]]
                try:
                    measure_cell(proc, port, cell, tools, args, data)
                except (RuntimeError, OSError, TimeoutError) as exc:
                    notes.append(f"{cell}: failed in round {r + 1} ({str(exc)[:160]})")
                    todo.remove(cell)
            print(f"round {r + 1} measured", file=sys.stderr, flush=True)
    finally:
        for proc, _, _ in [*found.values(), (stub, 0, False)]:
            proc.terminate()
            proc.wait(15)
    return table([c for c in todo if data[c, "load"]], data), notes


def table(todo: list[Cell], data: dict[Any, list[Any]]) -> str:
    rows: list[list[object]] = []
    for cell in todo:
        name, route, stream = cell
        seq = [t for run in data[cell, "seq"] for t in run]
        direct = data["direct", stream]
        seq_cpu = 1000 * sum(data[cell, "seq cpu"]) / len(seq)
        times = [t for run in data[cell, "load"] for t in run[0]]
        errors = sum(run[1] for run in data[cell, "load"])
        took = sum(run[2] for run in data[cell, "load"])
        load_cpu = 1000 * sum(run[3] for run in data[cell, "load"]) / max(1, len(times))
        p50, p99 = statistics.median(times), pct(times, 0.99)
        rows.append([
            name, route, "streamed" if stream else "whole",
            f"{statistics.median(seq) - statistics.median(direct):.2f} / "
            f"{pct(seq, 0.99) - pct(direct, 0.99):.2f}",
            f"{seq_cpu:.2f}", f"{len(times) / took:.0f}", f"{load_cpu:.2f}",
            f"{p50:.0f} / {p99:.0f}", f"{p99 / p50:.1f}", errors,
        ])  # fmt: skip
    for stream in (False, True):  # the harness's own ceiling: the client on the stub alone
        runs = data["direct load", stream]
        times = [t for run in runs for t in run[0]]
        if times:
            rate = len(times) / sum(run[1] for run in runs)
            p50, p99 = statistics.median(times), pct(times, 0.99)
            rows.append(["no proxy (the stub alone)", "chat", "streamed" if stream else "whole",
                         "–", "–", f"{rate:.0f}", "–", f"{p50:.0f} / {p99:.0f}",
                         f"{p99 / p50:.1f}", 0])  # fmt: skip
    headers = ["proxy", "route", "mode", "added p50 / p99 ms, 1 at a time", "CPU ms/req, 1 at a time",
               f"req/s @{CLIENTS}", f"CPU ms/req @{CLIENTS}", f"p50 / p99 ms @{CLIENTS}",
               "p99 / p50", "errors"]  # fmt: skip
    return markdown_table(headers, rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=10.0, help="per cell and round, loaded")
    parser.add_argument(
        "--requests", type=int, default=300, help="per cell and round, one at a time"
    )
    parser.add_argument("--only", help="these targets only, named as in the table, comma between")
    parser.add_argument("--print", action="store_true", help="print, do not write the page")
    parser.add_argument("--before", default="", help="another checkout's src/, run beside")
    parser.add_argument("--no-pin", action="store_true", help="let every process run anywhere")
    args = parser.parse_args()
    if not args.no_pin:
        peers.pin_cores()
    before = os.getloadavg()
    text, notes = measure(args)
    after = os.getloadavg()
    head = (f"{args.rounds} rounds, order rotated; per cell and round {args.requests} requests one "
            f"at a time (after {args.requests // 6} of warm-up), then {CLIENTS} keep-alive clients "
            f"for {args.seconds:g} s. Load average (1, 5, 15 min) {before[0]:.1f} {before[1]:.1f} "
            f"{before[2]:.1f} at the start, {after[0]:.1f} {after[1]:.1f} {after[2]:.1f} at the end; "
            f"{os.cpu_count()} cores; "
            + ("every process anywhere." if peers.PROXY_CORES is None else
               f"a one-process proxy on core {min(peers.PROXY_CORES)}, the stub and the client on "
               f"the rest, two workers anywhere."))  # fmt: skip
    text = head + "\n\n" + text + "".join(f"\n\n- {note}" for note in notes)
    print(text)
    if not args.print:
        page = RESULTS / "proxy.md"
        stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        section = f"Run {stamp}, Python {sys.version.split()[0]}. {text}\n"
        old = page.read_text() if page.exists() else "# Proxy cost per request and per core\n"
        top, _, rest = old.partition(MARK)
        page.write_text(f"{top}{MARK}\n{section}{MARK_END}{rest.partition(MARK_END)[2]}")


if __name__ == "__main__":
    main()
