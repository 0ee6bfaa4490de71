"""What parlay reads from an MCP transport before the SDK does.

Two faults of one server cost more than they should when the SDK meets them alone:

- a tool listing with one unusable tool fails the whole `tools/list` (and the server's
  start): each listing page is sifted here first (`_listing.sift`), every later
  re-listing the SDK makes too, so the SDK only ever sees tools it can load;
- each line a stdio server writes to stdout that is not JSON-RPC (a stray `print`) made
  the SDK log a full traceback on the user's terminal: here it is counted, and a burst
  of them is one warning line.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import json
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from types import TracebackType

import anyio
from mcp import types
from mcp.client._transport import ReadStream, Transport, TransportStreams, WriteStream
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from parlay.mcp._listing import Skipped, sift

logger = logging.getLogger("parlay.mcp")

# Junk lines within this many seconds of a burst's first are told in one warning.
BURST_SECONDS = 1.0
# How much of a burst's first line the warning quotes.
QUOTED_CHARS = 80

# Set in the task that opens a parlay stdio connection, so inherited by the SDK's reader
# task: the SDK's traceback for a junk line is dropped there (parlay tells it instead),
# and nowhere else in the process.
_COUNTING_JUNK: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "parlay_mcp_counting_junk", default=False
)


class _DropParseTracebacks(logging.Filter):
    """On the SDK's stdio logger: a line that failed to parse, in a connection of parlay's."""

    def filter(self, record: logging.LogRecord) -> bool:
        failed = record.exc_info[1] if record.exc_info else None
        return not (_COUNTING_JUNK.get() and isinstance(failed, ValueError))


logging.getLogger("mcp.client.stdio").addFilter(_DropParseTracebacks())


class JunkLines:
    """Counts a server's stdout lines that are not JSON-RPC; warns once per burst."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.count = 0
        self.first = ""
        self._timer: asyncio.TimerHandle | None = None

    def note(self, error: ValueError) -> None:
        if self.count == 0:
            self.first = _line_of(error)
            self._timer = asyncio.get_running_loop().call_later(BURST_SECONDS, self.flush)
        self.count += 1

    def flush(self) -> None:
        """The warning for the lines counted so far, if any."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self.count:
            lines = "a line" if self.count == 1 else f"{self.count} lines"
            logger.warning(
                "%s wrote %s to stdout that %s not JSON-RPC (ignored; a server's own "
                "output belongs on stderr); the first: %s",
                self.label,
                lines,
                "is" if self.count == 1 else "are",
                _quote(self.first),
            )
        self.count = 0


def _line_of(error: ValueError) -> str:
    """The line the SDK failed to parse, from its error."""
    if isinstance(error, ValidationError) and error.errors():
        found = error.errors()[0].get("input")
        return found if isinstance(found, str) else json.dumps(found, default=str)
    return str(error).split("\n", 1)[0]


def _quote(line: str) -> str:
    return repr(line if len(line) <= QUOTED_CHARS else line[: QUOTED_CHARS - 3] + "...")


class Watch:
    """One connection's traffic as parlay watches it."""

    def __init__(self, label: str) -> None:
        self.junk = JunkLines(label)
        # The negotiated protocol version, once the handshake names it.
        self.version: Callable[[], str | None] = lambda: None
        self._listings: set[types.RequestId] = set()  # ids of tools/list requests in flight
        self._skipped: dict[str, Skipped] = {}

    def sent(self, message: types.JSONRPCMessage) -> None:
        if isinstance(message, types.JSONRPCRequest) and message.method == "tools/list":
            self._listings.add(message.id)

    def received(self, item: SessionMessage) -> SessionMessage:
        message = item.message
        if not isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            return item
        if message.id not in self._listings:
            return item
        self._listings.discard(message.id)
        if isinstance(message, types.JSONRPCError):
            return item
        page, skipped = sift(message.result, self.version())
        for tool in skipped:
            self._skipped[tool.name or f"#{tool.position}"] = tool
        if not skipped:
            return item
        return dataclasses.replace(item, message=message.model_copy(update={"result": page}))

    def take_skipped(self) -> list[Skipped]:
        """The tools left out of the listings read since the last call."""
        taken = list(self._skipped.values())
        self._skipped.clear()
        return taken


@asynccontextmanager
async def watched(
    transport: Transport, watch: Watch, *, stdout: bool
) -> AsyncIterator[TransportStreams]:
    """`transport`'s streams, seen through `watch` (`stdout`: junk lines are counted)."""
    if stdout:
        _COUNTING_JUNK.set(True)  # this task's context, copied by the SDK's reader task
    async with transport as (read, write):
        try:
            yield _Reader(read, watch, stdout), _Writer(write, watch)
        finally:
            watch.junk.flush()


class _Reader:
    """The read stream the SDK's session gets (the `ReadStream` protocol)."""

    def __init__(
        self, inner: ReadStream[SessionMessage | Exception], watch: Watch, stdout: bool
    ) -> None:
        self._inner, self._watch, self._stdout = inner, watch, stdout

    @property
    def last_context(self) -> contextvars.Context | None:
        # The sender's context of the item just received, for the SDK's dispatcher.
        found: contextvars.Context | None = getattr(self._inner, "last_context", None)
        return found

    async def receive(self) -> SessionMessage | Exception:
        while True:
            item = await self._inner.receive()
            if isinstance(item, SessionMessage):
                return self._watch.received(item)
            if not (self._stdout and isinstance(item, ValueError)):
                return item
            self._watch.junk.note(item)

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> _Reader:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> _Reader:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


class _Writer:
    """The write stream the SDK's session gets (the `WriteStream` protocol)."""

    def __init__(self, inner: WriteStream[SessionMessage], watch: Watch) -> None:
        self._inner, self._watch = inner, watch

    async def send(self, item: SessionMessage, /) -> None:
        self._watch.sent(item.message)
        await self._inner.send(item)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _Writer:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


__all__ = ["JunkLines", "Watch", "watched"]
