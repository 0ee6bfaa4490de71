"""A recording relay between an agent client and `parlay serve`: every request passes
through unchanged, and what the benchmark reports of it is written down (status, the
proxy's `x-parlay-*` headers, time to the first byte and to the first content, and the
error body of a refused request).

It runs in a thread of the benchmark's own process, on 127.0.0.1.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import uvicorn
from attrs import define, field
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

# Marks in a streamed reply that the model has begun to answer (text, a call, reasoning),
# in each protocol: chat completion chunks, Anthropic and Responses events.
# (Not a bare `"reasoning`: a Responses stream's first event echoes the request's
# `reasoning` settings before the model has read a token.)
CONTENT_MARKS = (b'"content_block_delta"', b'output_text.delta"', b'"delta":{"content"',
                 b'"tool_calls"', b'function_call_arguments.delta"',
                 b'"reasoning_content"', b'reasoning_text.delta', b'reasoning_summary_text.delta')  # fmt: skip
# Headers a relay must not copy: they describe the hop, not the message.
HOP = {"content-length", "transfer-encoding", "connection", "content-encoding", "host"}


@define
class Exchange:
    """One request as the relay saw it."""

    path: str
    started: float
    request_bytes: int
    status: int = 0
    first_byte: float | None = None
    first_content: float | None = None
    ended: float | None = None
    headers: dict[str, str] = field(factory=dict)
    error: str = ""

    def as_row(self) -> dict[str, Any]:
        def since(moment: float | None) -> float | None:
            return None if moment is None else round(moment - self.started, 2)

        return {
            "path": self.path,
            "status": self.status,
            "request_bytes": self.request_bytes,
            "first_byte_s": since(self.first_byte),
            "first_content_s": since(self.first_content),
            "seconds": since(self.ended),
            "headers": self.headers,
            "error": self.error,
        }


class Relay:
    """Forwards everything to `target`, keeping an `Exchange` per request."""

    def __init__(self, target: str) -> None:
        self.target = target.rstrip("/")
        self.exchanges: list[Exchange] = []
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._client = httpx.AsyncClient(timeout=httpx.Timeout(3600, connect=10))
        app = Starlette(routes=[Route("/{path:path}", self._forward, methods=_METHODS)])
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="error")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)

    def start(self) -> Relay:
        self._thread.start()
        deadline = time.monotonic() + 20
        while not self._server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("the recording relay did not start")
            time.sleep(0.05)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(10)

    def take(self) -> list[Exchange]:
        """The exchanges so far, forgetting them (one cell's worth)."""
        taken, self.exchanges = self.exchanges, []
        return taken

    async def _forward(self, request: Request) -> Response:
        body = await request.body()
        exchange = Exchange(request.url.path, time.monotonic(), len(body))
        self.exchanges.append(exchange)
        url = self.target + request.url.path
        if request.url.query:
            url += "?" + request.url.query
        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP}
        upstream = await self._client.send(
            self._client.build_request(request.method, url, headers=headers, content=body),
            stream=True,
        )
        exchange.status = upstream.status_code
        exchange.headers = {
            k: v for k, v in upstream.headers.items() if k.lower().startswith("x-parlay")
        }
        out_headers = {k: v for k, v in upstream.headers.items() if k.lower() not in HOP}
        return StreamingResponse(self._relay(upstream, exchange), upstream.status_code, out_headers)

    async def _relay(self, upstream: httpx.Response, exchange: Exchange) -> AsyncIterator[bytes]:
        kept = b""
        try:
            async for chunk in upstream.aiter_raw():
                now = time.monotonic()
                exchange.first_byte = exchange.first_byte or now
                if exchange.first_content is None and any(m in chunk for m in CONTENT_MARKS):
                    exchange.first_content = now
                if exchange.status >= 400 and len(kept) < 2000:
                    kept += chunk
                yield chunk
        finally:
            exchange.ended = time.monotonic()
            exchange.error = kept[:2000].decode("utf-8", "replace")
            await upstream.aclose()


_METHODS = ["GET", "POST", "HEAD", "PUT", "DELETE", "OPTIONS"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
