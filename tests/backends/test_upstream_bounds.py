"""A model server can send without end: a line that never ends, an event that never
ends, a body or an error page without end. Each fails the request at a set size (a
`BackendProtocolError`, a 502 at the proxy) instead of growing the proxy's memory."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from parlay import OpenAIBackend
from parlay.backends import _http
from parlay.context import UserMessage
from parlay.errors import BackendProtocolError, BackendStatusError
from parlay.request import ChatRequest
from parlay.wire.sse import bounded_lines, read_events

REQUEST = ChatRequest((UserMessage("hi"),))


async def _chunks(pieces: list[str]) -> AsyncIterator[str]:
    for piece in pieces:
        yield piece


def _lines(pieces: list[str], limit: int = 1 << 20) -> list[str]:
    async def collect() -> list[str]:
        return [line async for line in bounded_lines(_chunks(pieces), limit)]

    return asyncio.run(collect())


@given(st.text(alphabet="ab:\r\n ", max_size=60), st.lists(st.integers(0, 60), max_size=6))
def test_lines_are_the_same_however_the_stream_is_split(text: str, cuts: list[int]) -> None:
    points = sorted({min(c, len(text)) for c in cuts})
    pieces = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
    expected = re.split("\r\n|\r|\n", text)
    if expected and expected[-1] == "":
        expected.pop()
    assert _lines(pieces) == expected


def test_a_line_that_never_ends_fails_at_the_limit_without_reading_on() -> None:
    read = 0

    async def endless() -> AsyncIterator[str]:
        nonlocal read
        while True:
            read += 1
            yield "x" * 1000

    async def first() -> None:
        async for _ in bounded_lines(endless(), 100_000):
            pass

    with pytest.raises(BackendProtocolError, match="a line over 100,000"):
        asyncio.run(first())
    assert read <= 101


def test_an_event_whose_data_never_ends_fails_at_the_limit() -> None:
    async def data_lines() -> AsyncIterator[str]:
        while True:
            yield "data: " + "y" * 1000

    async def first() -> None:
        async for _ in read_events(data_lines(), 50_000):
            pass

    with pytest.raises(BackendProtocolError, match="an event over 50,000"):
        asyncio.run(first())


async def _endless(head: bytes, piece: bytes) -> AsyncIterator[bytes]:
    yield head
    while True:
        yield piece


def _backend(status: int, body: AsyncIterator[bytes], stream: bool, kind: str) -> OpenAIBackend:
    def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, headers={"content-type": kind}, content=body)

    return OpenAIBackend("m", base_url="http://x.invalid/v1", api_key="",
                         transport=httpx.MockTransport(handle), stream=stream)  # fmt: skip


async def _drain(backend: OpenAIBackend) -> None:
    async for _ in backend.stream(REQUEST):
        pass


def test_a_streamed_reply_with_an_endless_line_is_a_protocol_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("parlay.wire.sse.MAX_EVENT_CHARS", 200_000)
    body = _endless(b'data: {"choices":[{"delta":{"content":"', b"z" * 4096)
    backend = _backend(200, body, True, "text/event-stream")
    with pytest.raises(BackendProtocolError, match="a line over"):
        asyncio.run(_drain(backend))


def test_a_whole_reply_without_end_is_a_protocol_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_http, "MAX_BODY_BYTES", 300_000)
    backend = _backend(200, _endless(b'{"choices": [', b" " * 4096), False, "application/json")
    with pytest.raises(BackendProtocolError, match="a body over 300,000 bytes"):
        asyncio.run(_drain(backend))


def test_an_endless_error_page_is_read_only_for_its_message() -> None:
    body = _endless(b'{"error": {"message": "no"}} ', b"<p>" * 4096)
    backend = _backend(500, body, False, "text/html")
    with pytest.raises(BackendStatusError) as caught:
        asyncio.run(_drain(backend))
    assert caught.value.status_code == 500
    assert len(str(caught.value.body)) <= _http.ERROR_SAMPLE_BYTES
