"""Server-sent events: reading them from a byte stream, writing them to one.

Not httpx-sse (checked against 0.4.3) for reading: it refuses a reply whose Content-Type
is not text/event-stream with an `SSEError` of its own, before the backends can say what
the upstream sent; it makes an event of an `event:` line with no data; and it drops a
last event that no blank line ends. Nor does it bound a line's length (httpx's
`aiter_lines` buffers a line however long): `bounded_lines` splits the text itself, so an
upstream that never ends a line, or an event, fails the reply at a set size instead of
growing the proxy's memory without end. The writing half has no counterpart there.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import Any

from attrs import frozen

from parlay.errors import BackendProtocolError

_SURROGATE = re.compile("[\ud800-\udfff]")
# A line ends at CRLF, LF or CR (the SSE grammar).
_LINE_BREAK = re.compile("\r\n|\r|\n")
# The most one line, or one event's data, may hold: far above any delta a model server
# streams (a whole file as one tool call's arguments included), far below a machine's memory.
MAX_EVENT_CHARS = 16 * 1024 * 1024


@frozen
class ServerSentEvent:
    data: str
    event: str | None = None


def _too_long(what: str, limit: int) -> BackendProtocolError:
    return BackendProtocolError(f"the event stream sent {what} over {limit:,} characters")


async def bounded_lines(
    chunks: AsyncIterator[str], limit: int = MAX_EVENT_CHARS
) -> AsyncIterator[str]:
    """The lines of a text stream (ended by CRLF, LF or CR, as SSE says), each at most
    `limit` characters: a longer one raises `BackendProtocolError` as soon as it is known
    to be longer, however the text is split into chunks. Linear in the text."""
    parts: list[str] = []
    size = 0
    after_cr = False  # the last chunk ended in CR: a LF that opens this one is its pair
    async for chunk in chunks:
        if after_cr and chunk.startswith("\n"):
            chunk = chunk[1:]
        after_cr = chunk.endswith("\r")
        *ended, rest = _LINE_BREAK.split(chunk)
        for piece in ended:
            if size + len(piece) > limit:
                raise _too_long("a line", limit)
            yield "".join(parts) + piece
            parts, size = [], 0
        parts.append(rest)
        size += len(rest)
        if size > limit:
            raise _too_long("a line", limit)
    if size:
        yield "".join(parts)


async def read_events(
    lines: AsyncIterator[str], limit: int = MAX_EVENT_CHARS
) -> AsyncIterator[ServerSentEvent]:
    """Group `data:` / `event:` lines into events (blank line ends an event); an event
    whose data runs past `limit` characters raises `BackendProtocolError`."""
    data: list[str] = []
    size = 0
    event: str | None = None
    async for line in lines:
        if not line:
            if data:
                yield ServerSentEvent("\n".join(data), event)
            data, size, event = [], 0, None
            continue
        if line.startswith(":"):
            continue
        key, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if key == "data":
            size += len(value) + 1
            if size > limit:
                raise _too_long("an event", limit)
            data.append(value)
        elif key == "event":
            event = value
    if data:
        yield ServerSentEvent("\n".join(data), event)


def utf8(text: str) -> bytes:
    """`text` as UTF-8, a lone surrogate (which an upstream's JSON can hold as an escape)
    replaced by U+FFFD rather than failing the whole reply."""
    try:
        return text.encode()
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text).encode()


# One encoder for every frame: `json.dumps` with options builds a new one per call, which
# is a measurable part of a streamed reply's cost (a Responses stream writes 12 frames
# for a short answer).
_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def compact_json(data: Any) -> str:
    return _COMPACT.encode(data)


def encode_event(data: Any, event: str | None = None) -> bytes:
    """One SSE frame; `data` is JSON-encoded unless it is already a string."""
    body = data if isinstance(data, str) else compact_json(data)
    head = f"event: {event}\n" if event else ""
    return utf8(f"{head}data: {body}\n\n")
