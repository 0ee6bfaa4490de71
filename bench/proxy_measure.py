"""What `bench/proxy_bench.py` measures a proxy with: latency, throughput and CPU time.

A hand-written HTTP/1.1 keep-alive client on raw asyncio streams: httpx's own overhead
(and its pool under 64 connections) would otherwise dominate what is measured.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import time
from pathlib import Path
from typing import Any

import httpx

MODEL = "bench"
KEY = "sk-bench-key"
BODY = {"model": MODEL, "messages": [{"role": "user", "content": "Say hello."}], "max_tokens": 16}
# The same question over OpenAI's Responses API.
RESPONSES_BODY = {"model": MODEL, "input": "Say hello.", "max_output_tokens": 16}


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process and its children (the workers of
    `--workers N`) have used so far (Linux /proc)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    own = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return own + sum(cpu_seconds(child) for child in _children(pid))


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def request_bytes(url: str, stream: bool, api: str = "openai") -> tuple[str, int, bytes]:
    if api == "anthropic":
        parsed = httpx.URL(url + "/messages")
        body = json.dumps({**BODY, "stream": stream}).encode()
    elif api == "responses":
        parsed = httpx.URL(url + "/responses")
        body = json.dumps({**RESPONSES_BODY, "stream": stream}).encode()
    else:
        parsed = httpx.URL(url + "/chat/completions")
        body = json.dumps({**BODY, "stream": stream}).encode()
    head = (
        f"POST {parsed.raw_path.decode()} HTTP/1.1\r\nHost: {parsed.host}:{parsed.port}\r\n"
        f"Authorization: Bearer {KEY}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return parsed.host, int(parsed.port or 80), head.encode() + body


async def read_response(reader: asyncio.StreamReader, on_first: Any = None) -> tuple[int, bytes]:
    """Status and body of one response (content-length or chunked)."""
    status_line = await reader.readline()
    if not status_line:
        raise ConnectionError("connection closed")
    status = int(status_line.split()[1])
    length = None
    chunked = False
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b""):
            break
        name, _, value = line.decode("latin-1").partition(":")
        name = name.strip().lower()
        if name == "content-length":
            length = int(value)
        elif name == "transfer-encoding" and "chunked" in value.lower():
            chunked = True
    if not chunked:
        body = await reader.readexactly(length or 0)
        if on_first:
            on_first()
        return status, body
    parts = []
    while True:
        size = int((await reader.readline()).split(b";")[0], 16)
        if size == 0:
            await reader.readline()
            return status, b"".join(parts)
        parts.append(await reader.readexactly(size))
        await reader.readexactly(2)
        if on_first and len(parts) == 1:
            on_first()


def ok(stream: bool, status: int, body: bytes, api: str = "openai") -> bool:
    if status != 200:
        return False
    if api == "anthropic":
        if stream:
            return body.rstrip().endswith(b'data: {"type":"message_stop"}')
        return b'"content"' in body
    if api == "responses":
        if stream:
            return b"event: response.completed\n" in body and b"event: error\n" not in body
        return b'"status":"completed"' in body
    if stream:
        return body.rstrip().endswith(b"data: [DONE]") and b'"error"' not in body
    return b'"choices"' in body


async def latencies(
    url: str, n: int, stream: bool, api: str = "openai"
) -> tuple[list[float], list[float]]:
    """Sequential requests on one keep-alive connection: (total ms, first-body-byte ms)."""
    host, port, raw = request_bytes(url, stream, api)
    reader, writer = await asyncio.open_connection(host, port)
    writer.transport.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    totals: list[float] = []
    firsts: list[float] = []
    try:
        for i in range(n + n // 10):
            first: list[float] = []
            start = time.perf_counter()
            writer.write(raw)
            status, body = await read_response(
                reader, lambda f=first: f.append(time.perf_counter())
            )
            end = time.perf_counter()
            if not ok(stream, status, body, api):
                raise RuntimeError(f"{url}: bad answer {status} {body[:200]!r}")
            if i >= n // 10:  # the first tenth warms up
                totals.append((end - start) * 1000)
                firsts.append(((first[0] if first else end) - start) * 1000)
    finally:
        writer.close()
    return totals, firsts


async def load(
    url: str, concurrency: int, seconds: float, stream: bool, api: str = "openai"
) -> tuple[float, int, int]:
    """`concurrency` keep-alive clients in a loop for `seconds`: (requests/s, done, errors)."""
    return await load_mixed(url, concurrency, seconds, [(stream, api)])


async def load_mixed(
    url: str, concurrency: int, seconds: float, variants: list[tuple[bool, str]]
) -> tuple[float, int, int]:
    """Client i sends variant i mod len(variants) (streaming or not, which protocol)."""
    done = 0
    errors = 0
    stop = time.perf_counter() + seconds

    async def worker(stream: bool, api: str) -> None:
        nonlocal done, errors
        host, port, raw = request_bytes(url, stream, api)
        writer = None
        while time.perf_counter() < stop:
            try:
                if writer is None:
                    reader, writer = await asyncio.open_connection(host, port)
                writer.write(raw)
                status, body = await asyncio.wait_for(read_response(reader), 30)
                if ok(stream, status, body, api):
                    done += 1
                else:
                    errors += 1
            except (TimeoutError, OSError, asyncio.IncompleteReadError, ValueError):
                errors += 1
                if writer is not None:
                    writer.close()
                writer = None
        if writer is not None:
            writer.close()

    started = time.perf_counter()
    await asyncio.gather(*(worker(*variants[i % len(variants)]) for i in range(concurrency)))
    return done / (time.perf_counter() - started), done, errors
