"""`parlay serve --log`: every answered request written to the log, as a session's turns
are, so `parlay logs`, `Store.context` and `start_session(resume=)` read the proxy's
conversations like any other.

The proxy keeps no state, so a conversation is named by what every request of it
repeats: the client's `x-parlay-session` header if it sends one, else a hash of its
system prompt and first user message (two clients opening with the same words share a
log session; send the header to keep them apart). One row per request: its prompt (the
last user message; none when it carries tool results back), the tool results it
brought, the reply's text, calls, usage and diagnostics. A load balancer's request id
(`X-Request-Id`) is the row's key, so a request retried on another replica is logged
once, as the answer its client got.

A row is written before the reply's last bytes leave (a reply the client has is in the
log), in a thread, bounded in time. A log that fails warns once and turns go on
unlogged until a write succeeds again (tried at most every `RETRY_S` seconds meanwhile).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

import attrs

from parlay.context import AssistantMessage, SystemMessage, ToolCall, ToolResult, UserMessage
from parlay.events import Finish
from parlay.request import ChatRequest
from parlay.store import LoggedCall, LoggedResponse, LoggedResult, LoggedSession, Store
from parlay.store.records import utc_now

logger = logging.getLogger("parlay.server")

SESSION_HEADER = "x-parlay-session"
REQUEST_ID_HEADER = "x-request-id"
# Seconds a reply waits for its row at most; the write goes on in its thread after.
WRITE_BOUND_S = 2.0
# Seconds between tries while the log is failing.
RETRY_S = 5.0


def conversation_id(chat: ChatRequest, header: str | None) -> str:
    """The log session of the conversation `chat` belongs to."""
    if header:
        return header[:200]
    digest = hashlib.sha256()
    for message in chat.messages:
        if isinstance(message, SystemMessage):
            digest.update(b"s\0" + message.content.encode("utf-8", "replace") + b"\0")
        elif isinstance(message, UserMessage):
            digest.update(b"u\0" + message.content.encode("utf-8", "replace"))
            break
    return "serve-" + digest.hexdigest()[:26]


def _brought_results(chat: ChatRequest) -> tuple[LoggedResult, ...]:
    """The tool results the client sent since the model's last turn."""
    found: list[LoggedResult] = []
    for message in reversed(chat.messages):
        if isinstance(message, ToolResult):
            found.append(LoggedResult(message.call_id, message.name, message.output, message.error))
        elif isinstance(message, AssistantMessage | UserMessage):
            break
    found.reverse()
    return tuple(found)


@attrs.frozen
class Reply:
    """What the watcher saw of one reply."""

    text: str
    calls: Sequence[ToolCall]
    finish: Finish
    first_event_ms: float | None
    duration_ms: float


def row_of(
    chat: ChatRequest, reply: Reply, backend: str, session_id: str, request_key: str | None
) -> tuple[LoggedResponse, LoggedSession]:
    """The request and its reply as a log row, and the log session it belongs to."""
    last = chat.messages[-1] if chat.messages else None
    system = "\n\n".join(m.content for m in chat.messages if isinstance(m, SystemMessage))
    finish = reply.finish
    usage = finish.usage
    response = LoggedResponse(
        session_id=session_id,
        text=reply.text,
        prompt=last.content if isinstance(last, UserMessage) else None,
        backend=backend,
        model=finish.model,
        finish_reason=finish.reason,
        prompt_tokens=usage.prompt_tokens if usage else None,
        completion_tokens=usage.completion_tokens if usage else None,
        first_event_ms=reply.first_event_ms,
        duration_ms=reply.duration_ms,
        diagnostics=attrs.asdict(finish.diagnostics) if finish.diagnostics else None,
        calls=tuple(LoggedCall(c.id, c.name, dict(c.arguments)) for c in reply.calls),
        results=_brought_results(chat),
        request_key=request_key,
    )
    names = tuple(t.name for t in chat.tools)
    session = LoggedSession(session_id, utc_now(), "serve", backend, system or None, names)
    return response, session


class ProxyLog:
    """Writes the proxy's turns to a `Store`, never holding a reply long."""

    def __init__(self, store: Store, on_unwritten: Callable[[], object] | None = None) -> None:
        self.store = store
        self._threads = ThreadPoolExecutor(max_workers=8, thread_name_prefix="parlay-log")
        self._failing_since: float | None = None
        self._next_try = 0.0
        self.unwritten = 0
        self._on_unwritten = on_unwritten

    @property
    def failing(self) -> bool:
        return self._failing_since is not None

    async def write(self, response: LoggedResponse, session: LoggedSession) -> bool:
        """Write one row; False when it was not (the log is failing, or slow)."""
        now = time.monotonic()
        if self._failing_since is not None and now < self._next_try:
            self._missed()
            return False
        loop = asyncio.get_running_loop()
        job = loop.run_in_executor(self._threads, self.store.add_response, response, session)
        # A write that outlives its bound still ends; its failure is read here, not lost.
        job.add_done_callback(lambda done: done.cancelled() or done.exception())
        try:
            await asyncio.wait_for(asyncio.shield(job), WRITE_BOUND_S)
        except Exception as exc:
            self._failed(exc if not isinstance(exc, TimeoutError) else None)
            return False
        if self._failing_since is not None:
            down = now - self._failing_since
            logger.warning("the log %s takes turns again (after %.0f s)", self.store.where, down)
            self._failing_since = None
        return True

    def _failed(self, exc: BaseException | None) -> None:
        self._missed()
        now = time.monotonic()
        self._next_try = now + RETRY_S
        if self._failing_since is None:
            self._failing_since = now
            why = str(exc) if exc is not None else f"no answer within {WRITE_BOUND_S:g} s"
            logger.warning(
                "cannot write to the log %s: %s; turns go on unlogged until it is back",
                self.store.where,
                why,
            )

    def _missed(self) -> None:
        self.unwritten += 1
        if self._on_unwritten is not None:
            self._on_unwritten()

    def writable(self) -> str | None:
        """None when the log takes writes now; else why not (for `/ready`)."""
        if self._failing_since is not None and time.monotonic() < self._next_try:
            return f"the log {self.store.where} is failing"
        return self.store.writable()

    def close(self) -> None:
        self._threads.shutdown(wait=False)
