"""Server-sent events: reading them from a byte stream, writing them to one."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from attrs import frozen


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


def encode_event(data: Any, event: str | None = None) -> bytes:
    """One SSE frame; `data` is JSON-encoded unless it is already a string."""
    if isinstance(data, str):
        body = data
    else:
        body = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {body}\n\n".encode()
