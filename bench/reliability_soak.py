"""The soak of bench/reliability.py: `parlay serve` in both modes, each a subprocess in
front of the stub upstream (a subprocess too), on loopback; clients on both protocols,
streaming and not, each turn of a tool conversation checked (the call, then the answer
to its result) for a bounded time."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
STUB = ROOT / "tests" / "proxy" / "proxy_stub.py"
sys.path.insert(0, str(ROOT / "tests" / "proxy"))

from proxy_stub import ANSWER, RESULT, free_port  # noqa: E402

from bench._table import markdown_table  # noqa: E402

CONCURRENCY = 16
PATHS = {"openai": "/v1/chat/completions", "anthropic": "/v1/messages"}
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


def _bodies(api: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The two turns of one conversation: the question, then the call's result."""
    ask = {"role": "user", "content": "What's the weather in Paris?"}
    if api == "openai":
        tools = [{"type": "function", "function": {"name": "get_weather", "parameters": SCHEMA}}]
        call = {"id": "call_1", "type": "function"}
        call["function"] = {"name": "get_weather", "arguments": '{"city": "Paris"}'}
        history = [
            ask,
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_1", "content": RESULT},
        ]
        return {"model": "m", "messages": [ask], "tools": tools}, {
            "model": "m",
            "messages": history,
            "tools": tools,
        }
    tools_an = [{"name": "get_weather", "input_schema": SCHEMA}]
    use = {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": RESULT}
    history = [ask, {"role": "assistant", "content": [use]}, {"role": "user", "content": [result]}]
    first = {"model": "m", "max_tokens": 100, "messages": [ask], "tools": tools_an}
    return first, {**first, "messages": history}


def _right(api: str, stream: bool, turn: int, r: httpx.Response) -> bool:
    if r.status_code != 200:
        return False
    want = "get_weather" if turn == 0 else ANSWER
    if stream:
        end = "data: [DONE]" if api == "openai" else 'data: {"type":"message_stop"}'
        text = r.text
        return text.rstrip().endswith(end) and '"error"' not in text and want in text
    body = r.json()
    return want in json.dumps(body)


def _start(args: list[str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _wait(url: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{url}: exited with {proc.returncode}")
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.HTTPError:
            time.sleep(0.2)
    raise RuntimeError(f"{url} did not come up")


async def _clients(urls: dict[str, str], seconds: float) -> Counter[tuple[str, ...]]:
    counts: Counter[tuple[str, ...]] = Counter()
    variants = list(itertools.product(urls, PATHS, (False, True), (0, 1)))
    stop = time.monotonic() + seconds
    async with httpx.AsyncClient(timeout=30, limits=httpx.Limits(max_connections=64)) as c:

        async def client(i: int) -> None:
            n = i
            while time.monotonic() < stop:
                mode, api, stream, turn = variants[n % len(variants)]
                n += CONCURRENCY
                body = {**_bodies(api)[turn], "stream": stream}
                key = (mode, api, "stream" if stream else "whole")
                try:
                    r = await c.post(urls[mode] + PATHS[api], json=body)
                    ok = _right(api, stream, turn, r)
                except (httpx.HTTPError, ValueError):
                    ok = False
                counts[(*key, "done")] += 1
                counts[(*key, "errors")] += not ok

        await asyncio.gather(*(client(i) for i in range(CONCURRENCY)))
    return counts


def soak(seconds: float) -> tuple[str, dict[str, int]]:
    procs: list[subprocess.Popen[bytes]] = []
    env = {k: v for k, v in os.environ.items() if not k.startswith("PARLAY_SERVE_")}
    try:
        port = free_port()
        procs.append(_start([sys.executable, str(STUB), str(port)]))
        stub = f"http://127.0.0.1:{port}/v1"
        urls = {}
        for mode in ("native", "prompted"):
            serve_port = free_port()
            code = "from parlay.cli.app import main; main()"
            args = [sys.executable, "-c", code, "serve", "--upstream-url", stub]
            args += ["--upstream-model", "turns", "--tools", mode, "--port", str(serve_port)]
            quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
            proc = subprocess.Popen([*args, "--log-level", "warning"], env=env, **quiet)
            procs.append(proc)
            urls[mode] = f"http://127.0.0.1:{serve_port}"
            _wait(urls[mode] + "/health", proc)
        started = time.monotonic()
        counts = asyncio.run(_clients(urls, seconds))
        took = time.monotonic() - started
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(10)
    rows = []
    for mode, api, kind in itertools.product(urls, PATHS, ("whole", "stream")):
        key = (mode, api, kind)
        rows.append([mode, api, kind, counts[(*key, "done")], counts[(*key, "errors")]])
    done = sum(r[3] for r in rows)
    errors = sum(r[4] for r in rows)
    summary = (
        f"{CONCURRENCY} clients for {took:.0f} s against `parlay serve` in each mode (each "
        f"its own process, one worker, on loopback), both turns of a tool conversation "
        f"checked: **{done:,} requests, {errors} errors** ({done / took:.0f} req/s)."
    )
    table = markdown_table(["mode", "protocol", "reply", "requests", "errors"], rows)
    return summary + "\n\n" + table, {"requests": done, "errors": errors}
