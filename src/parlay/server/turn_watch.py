"""What the proxy's operators see of each reply: its events watched on their way to the
client, for the metrics (time to the first token, tokens, the engine's counters, upstream
failures) and the log (`turn_log`). A server with neither watches nothing."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextvars import ContextVar

import attrs
from starlette.requests import Request

from parlay.context import ToolCall
from parlay.events import Event, Finish, ReasoningDelta, TextDelta, ToolCallEnd, ToolCallStart
from parlay.request import ChatRequest
from parlay.server.metrics import PROTOCOLS, ROUTES, Metrics
from parlay.server.turn_log import (
    REQUEST_ID_HEADER,
    SESSION_HEADER,
    ProxyLog,
    Reply,
    conversation_id,
    row_of,
)

_FIRST_OUTPUT = (TextDelta, ReasoningDelta, ToolCallStart)


@attrs.frozen
class Arrival:
    """The request a reply answers: when it came, by which protocol, under which ids."""

    protocol: str
    started: float
    request_key: str | None
    session_header: str | None


# Set by the handler, read by the watcher (the stream's pump runs in a copy of the
# handler's context, as the engine's fit note does).
_arrival: ContextVar[Arrival | None] = ContextVar("parlay_arrival", default=None)


class TurnWatch:
    """Watches replies for `metrics` and `log` (either may be None)."""

    def __init__(self, backend_name: str, metrics: Metrics | None, log: ProxyLog | None) -> None:
        self.backend_name = backend_name
        self.metrics = metrics
        self.log = log

    def arrived(self, request: Request) -> None:
        headers = request.headers
        protocol = PROTOCOLS.get(ROUTES.get(request.url.path, ""), "none")
        arrival = Arrival(
            protocol,
            time.perf_counter(),
            headers.get(REQUEST_ID_HEADER),
            headers.get(SESSION_HEADER),
        )
        _arrival.set(arrival)

    async def watch(self, events: AsyncIterator[Event], chat: ChatRequest) -> AsyncIterator[Event]:
        arrival = _arrival.get() or Arrival("none", time.perf_counter(), None, None)
        first_ms: float | None = None
        text: list[str] = []
        calls: list[ToolCall] = []
        try:
            async for event in events:
                if first_ms is None and isinstance(event, _FIRST_OUTPUT):
                    first_ms = (time.perf_counter() - arrival.started) * 1000
                    if self.metrics is not None:
                        self.metrics.first_token(arrival.protocol, first_ms / 1000)
                if isinstance(event, TextDelta):
                    text.append(event.text)
                elif isinstance(event, ToolCallEnd):
                    calls.append(event.call)
                elif isinstance(event, Finish):
                    reply = Reply("".join(text), calls, event, first_ms, _ms_since(arrival))
                    await self._finished(chat, reply, arrival)
                yield event
        except Exception as exc:
            if self.metrics is not None:
                self.metrics.upstream_error(exc)
            raise

    async def _finished(self, chat: ChatRequest, reply: Reply, arrival: Arrival) -> None:
        if self.metrics is not None:
            self.metrics.finished(reply.finish.usage, reply.finish.diagnostics)
        if self.log is not None:
            session_id = conversation_id(chat, arrival.session_header)
            row, session = row_of(chat, reply, self.backend_name, session_id, arrival.request_key)
            await self.log.write(row, session)


def _ms_since(arrival: Arrival) -> float:
    return (time.perf_counter() - arrival.started) * 1000
