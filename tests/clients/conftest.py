"""The client suite's fixtures: the scripted upstream (in a thread), one real
`parlay serve` per mode in front of it, and the note task."""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn
from client_harness import MODES, Proxy, check_mode, free_port, serve
from client_task import SCRIPT, NoteTask
from client_upstream import Upstream


@pytest.fixture(scope="session")
def upstream() -> Iterator[Upstream]:
    scripted = Upstream()
    port = free_port()
    config = uvicorn.Config(
        scripted.app(), host="127.0.0.1", port=port, log_level="warning", lifespan="off"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("the scripted upstream did not start")
        time.sleep(0.01)
    scripted.url = f"http://127.0.0.1:{port}/v1"
    yield scripted
    server.should_exit = True
    thread.join(10)


@pytest.fixture(scope="session")
def proxies(upstream: Upstream) -> Iterator[dict[str, Proxy]]:
    """`parlay serve` in both modes: native (tools passed through) and prompted (the
    upstream treated as plain chat, the engine in between)."""
    running = {mode: serve(upstream.url, mode) for mode in MODES}
    yield {mode: proxy for mode, (_, proxy) in running.items()}
    for proc, _ in running.values():
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(params=MODES)
def proxy(request: pytest.FixtureRequest, proxies: dict[str, Proxy]) -> Proxy:
    return proxies[request.param]


@pytest.fixture
def task(tmp_path: Path, upstream: Upstream, proxy: Proxy) -> Iterator[NoteTask]:
    """The note task, scripted; afterwards, a check that the upstream was spoken to in
    the proxy's mode (tools passed natively, or only the engine's plain chat)."""
    upstream.play(SCRIPT)
    yield NoteTask(tmp_path)
    check_mode(upstream, proxy)
