"""A whole reply gathered from the event stream: the one place events become calls.

The session's tool loop, the thunk, the engine and the wire encoders (through
`parlay.wire.reply`) read text and calls out of events with `ReplyBuilder`."""

from __future__ import annotations

from collections.abc import AsyncIterable, Iterable

from attrs import frozen

from parlay.events import (
    Event,
    Finish,
    ReasoningDelta,
    ScoredTextDelta,
    TextDelta,
    TokenChoice,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)
from parlay.messages import ToolCall


@frozen
class Reply:
    """The visible text, the finished calls in order, and the `Finish` event.

    `tokens`: the scored tokens of the text (from its `ScoredTextDelta`s), () when the
    text came without them. `reasoning`: the model's reasoning, apart from the text."""

    text: str
    calls: tuple[ToolCall, ...]
    finish: Finish
    tokens: tuple[TokenChoice, ...] = ()
    reasoning: str = ""

    @property
    def usage(self) -> Usage:
        return self.finish.usage or Usage()


class ReplyBuilder:
    """Feeds on events; `build()` once the `Finish` came."""

    def __init__(self) -> None:
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._tokens: list[TokenChoice] = []
        self._order: list[str] = []
        self._calls: dict[str, ToolCall] = {}
        self._finish: Finish | None = None

    def feed(self, event: Event) -> None:
        if isinstance(event, TextDelta):
            self._text.append(event.text)
            if isinstance(event, ScoredTextDelta):
                self._tokens.extend(event.tokens)
        elif isinstance(event, ReasoningDelta):
            self._reasoning.append(event.text)
        elif isinstance(event, ToolCallStart):
            if event.id not in self._order:
                self._order.append(event.id)
        elif isinstance(event, ToolCallEnd):
            if event.id not in self._order:
                self._order.append(event.id)
            self._calls[event.id] = event.call
        elif isinstance(event, Finish):
            self._finish = event

    def build(self) -> Reply:
        finish = self._finish or Finish("stop")
        # A call that started but never ended is dropped: its arguments are unknown.
        calls = tuple(self._calls[i] for i in self._order if i in self._calls)
        reasoning = "".join(self._reasoning)
        return Reply("".join(self._text), calls, finish, tuple(self._tokens), reasoning)


def gather(events: Iterable[Event]) -> Reply:
    builder = ReplyBuilder()
    for event in events:
        builder.feed(event)
    return builder.build()


async def agather(events: AsyncIterable[Event]) -> Reply:
    builder = ReplyBuilder()
    async for event in events:
        builder.feed(event)
    return builder.build()
