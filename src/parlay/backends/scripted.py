"""A backend that answers from a script: for tests, benchmarks and offline notebooks.

Like httpx's `MockTransport`: deterministic, instant, and it records every request, so
code that drives a session (a tool protocol, a proxy) can be tested without a model.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

from parlay.backends.base import Capabilities
from parlay.context import AssistantMessage, ToolCall
from parlay.events import (
    Event,
    Finish,
    FinishReason,
    TextDelta,
    ToolCallArgsDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)
from parlay.request import ChatRequest

Reply = str | AssistantMessage | ToolCall
Script = Iterable[Reply] | Callable[[ChatRequest], Reply]


def reply_events(reply: Reply, chunk_size: int = 0) -> list[Event]:
    """The events a backend would stream for `reply` (text split every `chunk_size`)."""
    if isinstance(reply, str):
        reply = AssistantMessage(reply)
    elif isinstance(reply, ToolCall):
        reply = AssistantMessage("", (reply,))
    events: list[Event] = []
    text = reply.content
    step = chunk_size or max(len(text), 1)
    events.extend(TextDelta(text[i : i + step]) for i in range(0, len(text), step))
    for index, call in enumerate(reply.tool_calls):
        events.append(ToolCallStart(call.id, call.name, index))
        events.append(ToolCallArgsDelta(call.id, call.arguments_json))
        events.append(ToolCallEnd(call))
    reason: FinishReason = "tool_calls" if reply.tool_calls else "stop"
    events.append(Finish(reason, Usage(1, max(1, len(text) // 4)), model="scripted"))
    return events


class ScriptedBackend:
    """Answers each request with the next reply of `script` (or `script(request)`)."""

    def __init__(
        self,
        script: Script,
        *,
        capabilities: Capabilities = Capabilities(native_tools=True, json_schema=True),  # noqa: B008
        chunk_size: int = 0,
    ) -> None:
        self._call = script if callable(script) else None
        self._replies = iter(()) if callable(script) else iter(script)
        self._capabilities = capabilities
        self.chunk_size = chunk_size
        self.requests: list[ChatRequest] = []

    @property
    def name(self) -> str:
        return "scripted"

    @property
    def capabilities(self) -> Capabilities:
        return self._capabilities

    def next_reply(self, request: ChatRequest) -> Reply:
        if self._call is not None:
            return self._call(request)
        try:
            return next(self._replies)
        except StopIteration:
            raise AssertionError("ScriptedBackend ran out of replies") from None

    async def stream(self, request: ChatRequest) -> AsyncIterator[Event]:
        self.requests.append(request)
        for event in reply_events(self.next_reply(request), self.chunk_size):
            yield event


def calls(*items: tuple[str, dict[str, Any]]) -> AssistantMessage:
    """An assistant reply holding tool calls: `calls(("add", {"a": 1}), ...)`."""
    return AssistantMessage("", tuple(ToolCall(name, args) for name, args in items))
