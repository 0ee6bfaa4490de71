"""uvicorn in a thread on 127.0.0.1 (free port): the proxy as clients meet it."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn
from proxy_stub import free_port
from starlette.types import ASGIApp


class RunningServer:
    def __init__(self, server: uvicorn.Server, port: int) -> None:
        self.server = server
        self.port = port

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@contextmanager
def running(app: ASGIApp) -> Iterator[RunningServer]:
    """`app` served by uvicorn on 127.0.0.1 until the block ends."""
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    try:
        yield RunningServer(server, port)
    finally:
        server.should_exit = True
        thread.join(10)
