"""SIGTERM to a real `parlay serve` with replies in flight from a stalled upstream: the
process ends within 5 s, each stream closing with an error in its own protocol (an
OpenAI error chunk, an Anthropic `event: error`), a whole reply with a 503."""

from __future__ import annotations

import json
import signal
import threading
import time
from typing import Any

import httpx
import pytest
from malformed import shaped
from proxy_stub import StubUpstream
from serve_process import parlay_serve

OA = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
AN = {**OA, "max_tokens": 50}


def _stream(url: str, api: str, out: dict[str, Any], started: threading.Event) -> None:
    path, body = ("/v1/chat/completions", OA) if api == "openai" else ("/v1/messages", AN)
    chunks: list[bytes] = []
    try:
        with httpx.stream("POST", url + path, json={**body, "stream": True}, timeout=30) as r:
            for chunk in r.iter_raw():
                chunks.append(chunk)
                started.set()
    except httpx.HTTPError as exc:  # a cut connection is what must not happen
        out[api + " failure"] = repr(exc)
    out[api] = b"".join(chunks).decode()


def _whole(url: str, out: dict[str, Any]) -> None:
    try:
        out["whole"] = httpx.post(url + "/v1/chat/completions", json=OA, timeout=30)
    except httpx.HTTPError as exc:
        out["whole failure"] = repr(exc)


def _last_frame(text: str) -> tuple[str | None, Any]:
    frame = text.strip().split("\n\n")[-1]
    name = None
    data: Any = None
    for line in frame.splitlines():
        if line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: "):
            data = json.loads(line[6:])
    return name, data


@pytest.mark.parametrize("workers", [1, 2])
def test_sigterm_ends_serve_within_5s_closing_streams_in_their_protocol(
    stub_upstream: StubUpstream, workers: int
) -> None:
    args = ["--upstream-url", stub_upstream.base_url, "--upstream-model", "stall"]
    args += ["--tools", "native", "--workers", str(workers), "--log-level", "warning"]
    with parlay_serve(*args) as server:
        before = stub_upstream.calls("stall")
        out: dict[str, Any] = {}
        events = {api: threading.Event() for api in ("openai", "anthropic")}
        threads = [
            threading.Thread(target=_stream, args=(server.url, api, out, events[api]))
            for api in events
        ]
        threads.append(threading.Thread(target=_whole, args=(server.url, out)))
        for thread in threads:
            thread.start()
        assert all(event.wait(20) for event in events.values())
        deadline = time.monotonic() + 20
        while stub_upstream.calls("stall") - before < 3:  # all three are upstream now
            assert time.monotonic() < deadline
            time.sleep(0.05)
        signalled = time.monotonic()
        server.proc.send_signal(signal.SIGTERM)
        server.proc.wait(10)
        took = time.monotonic() - signalled
        for thread in threads:
            thread.join(10)
    assert took < 5, took
    assert not [k for k in out if k.endswith("failure")], out
    name, data = _last_frame(out["openai"])
    assert name is None and data["error"]["type"] and "shutting down" in data["error"]["message"]
    assert "[DONE]" not in out["openai"]
    name, data = _last_frame(out["anthropic"])
    assert (
        name == "error" and data["type"] == "error" and "shutting down" in data["error"]["message"]
    )
    assert "message_stop" not in out["anthropic"]
    assert out["whole"].status_code == 503 and shaped("openai", out["whole"].json())


def test_a_server_shutting_down_says_so_on_health_and_refuses_new_requests() -> None:
    """In-process: `Proxy.drain` is what SIGTERM calls."""
    import asyncio

    from parlay import ScriptedBackend
    from parlay.server import create_app

    app = create_app(ScriptedBackend(["x"]))

    async def run() -> None:
        transport = httpx.ASGITransport(app)
        async with httpx.AsyncClient(transport=transport, base_url="http://proxy") as c:
            assert (await c.post("/v1/messages", json=AN)).status_code == 200
            app.state.proxy.drain()
            r = await c.post("/v1/messages", json=AN)
            assert r.status_code == 503 and shaped("anthropic", r.json())
            assert (await c.get("/health")).status_code == 503

    asyncio.run(run())


BLOCKING_SERVER = """
import sys, time, uvicorn
from parlay import Capabilities
from parlay.server.app import create_app
from parlay.server.run import HARD_EXIT

class Blocking:
    name = "blocking"
    capabilities = Capabilities(native_tools=True)

    async def stream(self, request):
        time.sleep(60)  # holds the event loop, as a runaway computation would
        yield None

app = create_app(Blocking(), hard_exit_after=HARD_EXIT)
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="critical")
"""


def test_sigterm_ends_serve_even_when_the_event_loop_is_held() -> None:
    """The backstop: a loop that never yields cannot drain, so the process exits anyway."""
    import subprocess
    import sys

    from proxy_stub import free_port

    port = free_port()
    proc = subprocess.Popen([sys.executable, "-c", BLOCKING_SERVER, str(port)])
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(url + "/health", timeout=1)
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline and proc.poll() is None
                time.sleep(0.1)
        client = threading.Thread(
            target=lambda: _whole(url, {}), daemon=True
        )  # its request holds the loop
        client.start()
        time.sleep(0.5)
        signalled = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        proc.wait(10)
        assert time.monotonic() - signalled < 5
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
