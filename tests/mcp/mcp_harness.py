"""Helpers for the MCP tests: the test server (server_app.py) over stdio and HTTP, hang guards."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

HERE = Path(__file__).resolve().parent
SERVER = [sys.executable, str(HERE / "server_app.py")]
# Hang guards: generous bounds so a regression fails the test instead of hanging it.
GUARD = 60.0

T = TypeVar("T")


def within(seconds: float, fn: Callable[[], T]) -> T:
    """`fn()`, failing the test if it has not returned after `seconds` (a hang guard)."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        pytest.fail(f"still running after {seconds} s: it hangs")
    if "error" in box:
        raise box["error"]
    return box["value"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class HttpServer:
    """The test server on streamable HTTP at 127.0.0.1 on a free port."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.process = subprocess.Popen(
            [*SERVER, "http", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + GUARD
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the HTTP test server exited ({self.process.returncode})")
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError("the HTTP test server did not start listening")

    def stop(self) -> None:
        self.process.kill()
        self.process.wait(GUARD)
