"""Server-sent events: reading them from a byte stream, writing them to one.

Not httpx-sse (checked against 0.4.3) for reading: it refuses a reply whose Content-Type
is not text/event-stream with an `SSEError` of its own, before the backends can say what
the upstream sent; it makes an event of an `event:` line with no data; and it drops a
last event that no blank line ends. Neither it nor this reader bounds a line's length
(httpx's `aiter_lines` buffers it). The writing half has no counterpart there.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import Any

from attrs import frozen

_SURROGATE = re.compile("[\ud800-\udfff]")


@frozen
class ServerSentEvent:
    data: str
    event: str | None = None


async def read_events(lines: AsyncIterator[str]) -> AsyncIterator[ServerSentEvent]:
    """Group `data:` / `event:` lines into events (blank line ends an event)."""
    data: list[str] = []
    event: str | None = None
    async for line in lines:
        if not line:
            if data:
                yield ServerSentEvent("\n".join(data), event)
            data, event = [], None
            continue
        if line.startswith(":"):
            continue
        key, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if key == "data":
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
