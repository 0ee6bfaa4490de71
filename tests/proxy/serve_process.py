"""`parlay serve` as a real subprocess on a free port, for the tests that need signals
and worker processes."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
from proxy_stub import free_port


class ServeProcess:
    def __init__(self, proc: subprocess.Popen[bytes], port: int) -> None:
        self.proc = proc
        self.port = port

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@contextmanager
def parlay_serve(*args: str, startup: float = 60) -> Iterator[ServeProcess]:
    """`parlay serve ARGS --port P`, waited for until /health answers; stopped (SIGKILL
    as a last resort) when the block ends."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PARLAY_SERVE_")}
    code = "from parlay.cli.app import main; main()"
    command = [sys.executable, "-c", code, "serve", *args, "--port", str(port)]
    proc = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL)
    server = ServeProcess(proc, port)
    try:
        deadline = time.monotonic() + startup
        while True:
            try:
                if httpx.get(server.url + "/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                err = proc.stderr.read().decode() if proc.stderr else ""
                raise RuntimeError(f"parlay serve did not start: {err[-2000:]}")
            time.sleep(0.1)
        yield server
    finally:
        stop(proc)


def stop(proc: subprocess.Popen[bytes]) -> None:
    """Ends a server process: SIGTERM, then SIGKILL if it has not gone in 10 s."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
