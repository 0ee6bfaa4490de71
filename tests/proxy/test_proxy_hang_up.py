"""A client that hangs up ends the upstream request within a second, in every mode:
streaming or not, native or through the prompt engine, while output is held back or
after some of it went out. The upstream here counts what it sent and notes when its
request was dropped."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from proxy_harness import running
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

from parlay import OpenAIBackend, PromptedBackend
from parlay.backends.base import PLAIN_CHAT
from parlay.server import create_app

CHUNKS = 40
GAP = 0.1  # seconds between the upstream's chunks: 4 s for the whole reply


class CountingUpstream:
    """An OpenAI-compatible upstream that streams CHUNKS chunks GAP apart, counting
    them, and notes when the proxy dropped the request."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.sent = 0
        self.dropped_at: float | None = None
        self.started = threading.Event()

    def _chunk(self, delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return b"data: " + json.dumps({"choices": [choice]}).encode() + b"\n\n"

    async def _chunks(self) -> AsyncIterator[bytes]:
        self.started.set()
        try:
            yield self._chunk({"role": "assistant", "content": ""})
            for _ in range(CHUNKS):
                await asyncio.sleep(GAP)
                self.sent += 1
                yield self._chunk({"content": self.text})
            yield self._chunk({}, "stop") + b"data: [DONE]\n\n"
        finally:
            if self.sent < CHUNKS:
                self.dropped_at = time.monotonic()

    async def _chat(self, request: Request) -> StreamingResponse:
        return StreamingResponse(self._chunks(), media_type="text/event-stream")

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/v1/chat/completions", self._chat, methods=["POST"])])


@pytest.fixture
def words() -> Iterator[CountingUpstream]:
    # 15 characters a chunk: past the engine's hold-back window (200) after 14 chunks.
    yield CountingUpstream("word word word ")


def hang_up_after(
    port: int,
    body: dict[str, Any],
    *,
    seconds: float,
    upstream: CountingUpstream,
    path: str = "/v1/chat/completions",
) -> tuple[float, bytes]:
    """POST `body` on a raw socket, read until `seconds` after the upstream began its
    reply, then close: when it closed, and what it had received. (Counted from the
    upstream's start, not the request's, so a loaded machine cannot turn a hang-up
    midway into one before the request went upstream at all.)"""
    data = json.dumps(body).encode()
    head = (
        f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(data)}\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(head + data)
        sock.settimeout(0.05)
        received = b""
        assert upstream.started.wait(30), "the request never reached the upstream"
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            with contextlib.suppress(TimeoutError):
                received += sock.recv(65536)
        return time.monotonic(), received


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]


def proxy_for(upstream_url: str, mode: str) -> Any:
    if mode == "native":
        return create_app(OpenAIBackend("m", base_url=upstream_url))
    inner = OpenAIBackend("m", base_url=upstream_url, capabilities=PLAIN_CHAT)
    return create_app(PromptedBackend(inner))


@pytest.mark.parametrize("mode", ["native", "prompted"])
@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("after", [0.5, 2.5], ids=["while-held", "midway"])
def test_hang_up_ends_the_upstream_request_within_a_second(
    words: CountingUpstream, mode: str, stream: bool, after: float
) -> None:
    """Seen in prompted streaming: the upstream request stayed open 5 s after the client
    left (the first output was held and nobody watched the connection), and after three
    SSE lines the upstream ran to its end (40 of 40 chunks)."""
    body = {
        "model": "m",
        "stream": stream,
        "tools": TOOLS,
        "messages": [{"role": "user", "content": "Tell me a long story."}],
    }
    with running(words.app()) as upstream, running(proxy_for(upstream.url + "/v1", mode)) as proxy:
        gone, received = hang_up_after(proxy.port, body, seconds=after, upstream=words)
        deadline = time.monotonic() + 5
        while words.dropped_at is None and time.monotonic() < deadline:
            time.sleep(0.02)
    assert words.dropped_at is not None, f"the upstream sent all {words.sent} chunks"
    assert words.dropped_at - gone < 1.0
    assert words.sent < CHUNKS
    if stream and after > 2:  # midway: the client had seen the reply's first words
        assert b"word word" in received


TELL = "Tell me a long story."
OTHER_WIRES = {
    "/v1/responses": {
        "model": "m", "stream": True, "input": TELL,
        "tools": [{"type": "function", **TOOLS[0]["function"]}],
    },
    "/v1/messages": {
        "model": "m", "stream": True, "max_tokens": 1024,
        "messages": [{"role": "user", "content": TELL}],
        "tools": [{"name": "get_weather", "input_schema": TOOLS[0]["function"]["parameters"]}],
    },
}  # fmt: skip


@pytest.mark.parametrize("path", list(OTHER_WIRES))
@pytest.mark.parametrize("after", [0.5, 2.5], ids=["while-held", "midway"])
def test_hang_up_ends_the_upstream_request_in_every_protocol(
    words: CountingUpstream, path: str, after: float
) -> None:
    """The Responses and Anthropic streams, in prompted mode where output is held."""
    with (
        running(words.app()) as upstream,
        running(proxy_for(upstream.url + "/v1", "prompted")) as proxy,
    ):
        gone, received = hang_up_after(
            proxy.port, OTHER_WIRES[path], seconds=after, upstream=words, path=path
        )
        deadline = time.monotonic() + 5
        while words.dropped_at is None and time.monotonic() < deadline:
            time.sleep(0.02)
    assert words.dropped_at is not None, f"the upstream sent all {words.sent} chunks"
    assert words.dropped_at - gone < 1.0
    if after > 2:
        assert b"word word" in received
