"""The client suite's plumbing: a real `parlay serve` per mode (a subprocess), the
pinned npm clients (installed into tests/clients/node on first use when `.ci/run` has
not already), and the check that the upstream was spoken to in the proxy's mode."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from client_upstream import Upstream

NODE_DIR = Path(__file__).parent / "node"
CLIENT_KEY = "sk-parlay"  # the key docs/clients.md shows
MODES = ("native", "prompted")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Proxy:
    def __init__(self, port: int, mode: str) -> None:
        self.port = port
        self.mode = mode
        self.url = f"http://127.0.0.1:{port}"
        self.key = CLIENT_KEY


def serve(upstream_url: str | None, mode: str) -> tuple[subprocess.Popen[bytes], Proxy]:
    """`parlay serve` in `mode` in front of `upstream_url` (None: the embedded model)."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PARLAY_")}
    upstream = ["--upstream-url", upstream_url, "--tools", mode] if upstream_url else []
    command = [
        sys.executable, "-c", "from parlay.cli.app import main; main()", "serve", *upstream,
        "--port", str(port), "--client-key", CLIENT_KEY, "--log-level", "warning",
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


def clean_env(home: Path) -> dict[str, str]:
    """The machine's environment without the keys and endpoints of whoever runs the
    tests, with a home of its own (no user config)."""
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    return {**keep, "HOME": str(home)}
