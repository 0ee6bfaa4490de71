"""The client suite's parts: the scripted upstream (in a thread), one real `parlay serve`
per mode in front of it (subprocesses), and the pinned npm clients (installed into
tests/clients/node on first use when `.ci/run` has not already)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn
from client_task import SCRIPT, NoteTask
from client_upstream import Upstream

NODE_DIR = Path(__file__).parent / "node"
CLIENT_KEY = "sk-parlay-client-suite"
MODES = ("native", "prompted")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


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


class Proxy:
    def __init__(self, port: int, mode: str) -> None:
        self.port = port
        self.mode = mode
        self.url = f"http://127.0.0.1:{port}"
        self.key = CLIENT_KEY


def _serve(upstream_url: str, mode: str) -> tuple[subprocess.Popen[bytes], Proxy]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PARLAY_")}
    command = [
        sys.executable, "-c", "from parlay.cli.app import main; main()", "serve",
        "--upstream-url", upstream_url, "--tools", mode, "--port", str(port),
        "--client-key", CLIENT_KEY, "--log-level", "warning",
    ]  # fmt: skip
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    proxy = Proxy(port, mode)
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(proxy.url + "/health", timeout=1).status_code == 200:
                return proc, proxy
        except httpx.HTTPError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            err = proc.stderr.read().decode() if proc.stderr else ""
            raise RuntimeError(f"parlay serve did not start: {err[-2000:]}")
        time.sleep(0.1)


@pytest.fixture(scope="session")
def proxies(upstream: Upstream) -> Iterator[dict[str, Proxy]]:
    """`parlay serve` in both modes: native (tools passed through) and prompted (the
    upstream treated as plain chat, the engine in between)."""
    running = {mode: _serve(upstream.url, mode) for mode in MODES}
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


def check_mode(upstream: Upstream, proxy: Proxy) -> None:
    offered = ["tools" in body for body in upstream.requests]
    assert offered, "the upstream was never asked"
    if proxy.mode == "native":
        assert any(offered)
    else:
        assert not any(offered)


def node_client(name: str) -> Path:
    """The pinned npm client `name` (claude, codex), installed on first use."""
    binary = NODE_DIR / "node_modules" / ".bin" / name
    if not binary.exists():
        npm = shutil.which("npm")
        if npm is None:
            pytest.skip("npm is not installed: the npm clients cannot be installed")
        subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund"],
            cwd=NODE_DIR, check=True, capture_output=True, timeout=600,
        )  # fmt: skip
    return binary
