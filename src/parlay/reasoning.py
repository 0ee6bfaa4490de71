"""Reasoning a plain-chat model writes as text (`<think>…</think>`), taken out of its reply.

Local reasoning models (Qwen3, DeepSeek-R1 distills) open their reply with a `<think>`
block. It is reasoning, not answer: it must never reach a client as answer text, and the
engine's parser must never read a call inside it. `ThinkSplitter` turns such text into
`ReasoningDelta`s and the answer after it into `TextDelta`s, as the text streams.

Only a block that opens the reply counts (leading whitespace aside): a `<think>` later
in an answer is the answer's own text. A block never closed is reasoning to the end.
The split is the same for every way of chunking the text, never raises, and is linear:
at most a tag's length is ever held back.
"""

from __future__ import annotations

import enum
from collections.abc import AsyncIterable, AsyncIterator

from parlay.events import Event, ReasoningDelta, TextDelta

OPEN = "<think>"
CLOSE = "</think>"


class _State(enum.Enum):
    START = "start"  # nothing but whitespace or part of `<think>` seen yet
    THINK = "think"  # inside the block
    AFTER = "after"  # the block closed; whitespace before the answer is dropped
    TEXT = "text"  # the answer: passed through as it comes


def _partial_tail(text: str, tag: str) -> int:
    """The length of the longest end of `text` that begins `tag` (it may continue)."""
    for size in range(min(len(tag) - 1, len(text)), 0, -1):
        if tag.startswith(text[-size:]):
            return size
    return 0


class ThinkSplitter:
    """Feeds on a reply's text deltas; hands back reasoning and answer events."""

    def __init__(self) -> None:
        self.state = _State.START
        self._held = ""

    def feed(self, event: TextDelta) -> list[Event]:
        if self.state is _State.TEXT:
            return [event]  # unchanged: its scored tokens stay with it
        self._held += event.text
        if self.state is _State.START:
            return self._start(event)
        if self.state is _State.THINK:
            return self._think()
        return self._after()

    def _start(self, event: TextDelta) -> list[Event]:
        head = self._held.lstrip()
        if not head or (len(head) < len(OPEN) and OPEN.startswith(head)):
            return []  # still undecided
        if head.startswith(OPEN):
            self.state, self._held = _State.THINK, head[len(OPEN) :]
            return self._think()
        self.state, text, self._held = _State.TEXT, self._held, ""
        return [event if text == event.text else TextDelta(text)]

    def _think(self) -> list[Event]:
        held = self._held
        end = held.find(CLOSE)
        if end >= 0:
            self.state, self._held = _State.AFTER, held[end + len(CLOSE) :]
            out: list[Event] = [ReasoningDelta(held[:end])] if end else []
            return out + self._after()
        keep = _partial_tail(held, CLOSE)
        self._held = held[len(held) - keep :] if keep else ""
        thought = held[: len(held) - keep]
        return [ReasoningDelta(thought)] if thought else []

    def _after(self) -> list[Event]:
        text = self._held.lstrip()
        self._held = ""
        if not text:
            return []
        self.state = _State.TEXT
        return [TextDelta(text)]

    def finish(self) -> list[Event]:
        """The reply ended: what was held back goes out as what it turned out to be."""
        held, self._held = self._held, ""
        if not held:
            return []
        if self.state is _State.THINK:
            return [ReasoningDelta(held)]  # a block never closed is reasoning to the end
        if self.state is _State.START:
            self.state = _State.TEXT
            return [TextDelta(held)]
        return []


async def split_reasoning(events: AsyncIterable[Event]) -> AsyncIterator[Event]:
    """`events` with a leading `<think>` block of their text turned into reasoning."""
    splitter = ThinkSplitter()
    async for event in events:
        if isinstance(event, TextDelta):
            for out in splitter.feed(event):
                yield out
            continue
        if not isinstance(event, ReasoningDelta):
            # A call or the end: held text goes out first, in order.
            for out in splitter.finish():
                yield out
        yield event
