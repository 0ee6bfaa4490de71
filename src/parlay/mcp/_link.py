"""One MCP client connection, owned by a task on parlay's portal loop.

The SDK's `Client` is an async context manager whose task groups must be entered and
left by one task. Parking that task on the portal loop (the loop `run_sync` uses) lets a
connection be opened from a plain script, a notebook cell or any event loop, live as
long as the tools that use it, and be called from any of them: a call made on another
loop is handed to the portal and awaited there.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import os
import threading
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine
from contextlib import AsyncExitStack
from typing import Any, TypeVar

from attrs import frozen
from mcp import Client, MCPError, types

from parlay._sync import in_portal, portal_loop
from parlay.context import ToolResult
from parlay.errors import MCPServerError
from parlay.mcp._listing import Skipped
from parlay.mcp._wire import Watch
from parlay.mcp.results import to_tool_result

T = TypeVar("T")

# Pages of a tool listing read at start-up (a server that pages forever cannot hang it).
MAX_LISTING_PAGES = 100
# How long closing waits for the server to go (the SDK itself bounds a stdio shutdown
# to a few seconds: close stdin, wait, terminate, kill).
STOP_GRACE_SECONDS = 10.0

# Opens the connection in the stack, its traffic seen through the watch.
Opener = Callable[[AsyncExitStack, Watch], Awaitable[Client]]


@frozen
class Listing:
    """A server's tools at start: those that load, and those left out (and why)."""

    tools: tuple[types.Tool, ...]
    skipped: tuple[Skipped, ...] = ()


async def on_portal(coro: Coroutine[Any, Any, T]) -> T:
    """Await `coro` on the portal loop, from whatever loop this runs on."""
    if in_portal():
        return await coro
    return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, portal_loop()))


class StderrTail:
    """The last lines a server process writes on stderr, for error messages.

    A pipe the child writes to and a daemon thread that reads it, so a chatty server
    neither blocks on a full pipe nor fills a file.
    """

    def __init__(self, lines: int = 20) -> None:
        read_fd, write_fd = os.pipe()
        self.writer = os.fdopen(write_fd, "w")
        self._lines: deque[str] = deque(maxlen=lines)
        self._thread = threading.Thread(
            target=self._read, args=(read_fd,), name="parlay-mcp-stderr", daemon=True
        )
        self._thread.start()

    def _read(self, fd: int) -> None:
        with os.fdopen(fd, "r", errors="replace") as stream:
            for line in stream:
                self._lines.append(line.rstrip("\n"))

    def close_writer(self) -> None:
        """Drop this process's end; the reader stops once the server's end closes too."""
        if not self.writer.closed:
            self.writer.close()

    def text(self, wait: float = 0.0) -> str:
        if wait:
            self._thread.join(wait)
        return "\n".join(line for line in self._lines if line.strip())


def _describe(exc: BaseException) -> str:
    """The innermost meaningful error of an exception group, as one line."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    if isinstance(exc, MCPError):
        return exc.message
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class Link:
    """A connection to one MCP server: start, call, stop (every method runs on the portal)."""

    def __init__(self, label: str, opener: Opener, stderr: StderrTail | None = None) -> None:
        self.label = label
        self._opener = opener
        self._stderr = stderr
        self._watch = Watch(label)
        self._client: Client | None = None
        self._stop: asyncio.Event | None = None
        self._owner: asyncio.Task[None] | None = None
        self._ended: str | None = None
        self.server_name: str | None = None

    @property
    def running(self) -> bool:
        return self._client is not None

    def stderr(self) -> str:
        return self._stderr.text() if self._stderr is not None else ""

    def stderr_note(self, wait: float = 0.0) -> str:
        text = self._stderr.text(wait) if self._stderr is not None else ""
        return f"; its stderr ends with:\n{text}" if text else ""

    async def start(self, timeout: float) -> Listing:
        """Connect and list the tools; MCPServerError when that fails or takes too long."""
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[Listing] = loop.create_future()
        self._stop = asyncio.Event()
        self._owner = loop.create_task(self._own(ready))
        _live.add(self)
        try:
            return await asyncio.wait_for(asyncio.shield(ready), timeout)
        except TimeoutError:
            await self.stop()
            raise MCPServerError(
                f"{self.label} did not answer within {timeout:g} s of starting "
                f"(startup_timeout){self.stderr_note(wait=1.0)}"
            ) from None
        except Exception as exc:
            await self.stop()
            raise MCPServerError(
                f"{self.label} could not be started: {_describe(exc)}{self.stderr_note(wait=1.0)}"
            ) from exc

    async def _own(self, ready: asyncio.Future[Listing]) -> None:
        assert self._stop is not None
        try:
            async with AsyncExitStack() as stack:
                client = await self._opener(stack, self._watch)
                tools = await _list_tools(client)
                listing = Listing(tuple(tools), tuple(self._watch.take_skipped()))
                info = client.server_info
                self.server_name = info.name if info is not None else None
                self._client = client
                ready.set_result(listing)
                await self._stop.wait()
            self._ended = self._ended or "was closed"
        except asyncio.CancelledError:
            self._ended = self._ended or "was closed"
            ready.cancel()
            raise
        except Exception as exc:
            self._ended = self._ended or f"stopped: {_describe(exc)}"
            if not ready.done():
                ready.set_exception(exc)
        finally:
            self._client = None
            _live.discard(self)
            if self._stderr is not None:
                self._stderr.close_writer()

    async def stop(self) -> None:
        owner = self._owner
        if owner is None or owner.done():
            return
        assert self._stop is not None
        self._stop.set()
        done: set[asyncio.Task[None]] = set()
        if self._client is not None:  # connected: let it leave its context in order
            done, _ = await asyncio.wait({owner}, timeout=STOP_GRACE_SECONDS)
        if not done:  # still starting (or stuck closing): cancel its scopes
            owner.cancel()
            await asyncio.wait({owner}, timeout=STOP_GRACE_SECONDS)

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """The tool's result; a server that is gone or refuses is an error result."""
        client = self._client
        if client is None:
            why = self._ended or "was not started"
            return ToolResult("", name, error=f"{self.label} is not running (it {why})")
        try:
            result = await client.call_tool(name, arguments)
        except MCPError as exc:
            if exc.code != types.CONNECTION_CLOSED:
                return ToolResult("", name, error=f"{self.label} refused the call: {exc.message}")
            # The server is gone (its stderr is for people: see `MCPTools.stderr`); the
            # owner task winds the connection down, later calls say it is not running.
            self._ended = self._ended or f"stopped answering: {exc.message}"
            if self._stop is not None:
                self._stop.set()
            return ToolResult("", name, error=f"{self.label} {self._ended}")
        except Exception as exc:
            return ToolResult("", name, error=f"{self.label}: {_describe(exc)}")
        return to_tool_result(name, result)


async def _list_tools(client: Client) -> list[types.Tool]:
    tools: list[types.Tool] = []
    cursor: str | None = None
    for _ in range(MAX_LISTING_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            break
    return tools


# Links still connected, closed when the program ends (servers are not left running).
_live: set[Link] = set()


def stop_soon(link: Link) -> None:
    """Ask `link` to stop without waiting (a finalizer may run on any thread)."""
    loop = portal_loop()
    if in_portal():
        loop.create_task(link.stop())
    else:
        asyncio.run_coroutine_threadsafe(link.stop(), loop)


@atexit.register
def _stop_all() -> None:
    if not _live or in_portal():
        return
    loop = portal_loop()
    pending = [asyncio.run_coroutine_threadsafe(link.stop(), loop) for link in list(_live)]
    concurrent.futures.wait(pending, timeout=STOP_GRACE_SECONDS)
