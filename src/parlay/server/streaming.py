"""Streaming a backend's events to a client: a pump that can wait with a timeout, the
SSE frames (heartbeats, an error event on failure or shutdown), and a response that
stops producing as soon as the client goes away."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from typing import Any

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from parlay.errors import BackendError
from parlay.events import Event, Finish
from parlay.server.errors import SHUTTING_DOWN, Failure, log_failure
from parlay.server.wires import StreamWire, worker_headers

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}

END = object()  # the backend stream ended
IDLE = object()  # no event within the wait
DRAIN = object()  # the server is shutting down: end the stream now


async def close_quietly(events: AsyncIterator[Any]) -> None:
    close: Callable[[], Any] | None = getattr(events, "aclose", None)
    if close is not None:
        # Closing a failed stream must not mask the failure.
        with suppress(Exception):
            await close()


class Pump:
    """Pulls the backend's events in one task of its own and hands them over, so that
    waiting for the next one can time out (to send a heartbeat) without cancelling the
    backend. One future and one timer per wait: cheaper than a task per event."""

    def __init__(self, events: AsyncIterator[Event]) -> None:
        self.events = events
        self.ready: deque[Any] = deque()
        self.waiter: asyncio.Future[None] | None = None
        self.task = asyncio.ensure_future(self._pull())

    async def _pull(self) -> None:
        try:
            async for event in self.events:
                self._put(event)
            self._put(END)
        except Exception as exc:
            self._put(exc)
        except BaseException:
            # Cancelled: by `close()`, or from inside the backend. Either way the
            # consumer must not wait for an event that will never come.
            self._put(BackendError("the backend stream was cancelled"))
            raise

    def _put(self, item: Any) -> None:
        self.ready.append(item)
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)

    def interrupt(self) -> None:
        """Make the consumer's next wait return `DRAIN` before anything else."""
        self.ready.appendleft(DRAIN)
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)

    async def next(self, timeout: float) -> Any:
        """The next event, `END`, `DRAIN`, or `IDLE` if none came within `timeout`
        seconds. A failure of the backend is raised here."""
        if not self.ready:
            loop = asyncio.get_running_loop()
            self.waiter = waiter = loop.create_future()
            timer = loop.call_later(timeout, _wake, waiter)
            try:
                await waiter
            finally:
                timer.cancel()
                self.waiter = None
            if not self.ready:
                return IDLE
        item = self.ready.popleft()
        if isinstance(item, Exception):
            raise item
        return item

    async def close(self) -> None:
        if not self.task.done():
            # Cancelling the pull closes the backend stream from inside.
            self.task.cancel()
            with suppress(BaseException):
                await self.task
        await close_quietly(self.events)


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


async def frames(out: StreamWire, first: Any, pump: Pump, heartbeat: float) -> AsyncIterator[bytes]:
    """The SSE bytes: one write per event, heartbeats while the backend is quiet, and an
    error event if the stream fails midway or the server shuts down."""
    finished = False
    try:
        head = out.start()
        item = first
        while True:
            if item is END:
                break
            if item is DRAIN:
                yield head + out.error(SHUTTING_DOWN)
                return
            if item is IDLE:
                head += out.heartbeat()
            else:
                finished = isinstance(item, Finish)
                head += out.feed(item)
            yield head
            if finished:
                break
            head = b""
            item = await pump.next(heartbeat)
        if not finished:
            yield head + out.error(
                Failure(502, "the model's stream ended before the reply finished")
            )
            return
        yield out.end()
    except Exception as exc:
        yield out.error(log_failure(exc, "a stream, midway"))
    finally:
        await pump.close()


class Watch:
    gone = False


@asynccontextmanager
async def cancel_on_disconnect(receive: Receive) -> AsyncIterator[Watch]:
    """Cancel the current task if the client disconnects inside the block.

    A reply the client no longer waits for should not keep the model generating; the
    cancellation closes the backend stream and with it the upstream request.
    """
    task = asyncio.current_task()
    watch = Watch()

    async def wait() -> None:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                watch.gone = True
                if task is not None:
                    task.cancel()
                return

    watcher = asyncio.create_task(wait())
    try:
        yield watch
    finally:
        watcher.cancel()
        if watch.gone and task is not None:
            task.uncancel()  # the cancel was ours; the server's task goes on


class EventStream(Response):
    """An SSE response that stops producing as soon as the client goes away.

    Starlette's `StreamingResponse` does the same with an anyio task group per response;
    a plain watcher task is cheaper, and the proxy pays it on every streamed request.
    When the client disconnects, the producing task is cancelled, which closes the
    backend stream and with it the upstream request (no tokens generated for nobody).
    """

    media_type = "text/event-stream"

    def __init__(
        self, chunks: AsyncIterator[bytes], cleanup: Callable[[], Awaitable[None]]
    ) -> None:
        self.chunks = chunks
        # Run however the response ends, even when `chunks` never started (a client
        # gone before the head was sent), so the backend stream is never left running.
        self.cleanup = cleanup
        self.status_code = 200
        self.background = None
        self.init_headers({**SSE_HEADERS, **worker_headers()})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            async with cancel_on_disconnect(receive) as watch:
                try:
                    await send(
                        {"type": "http.response.start", "status": 200, "headers": self.raw_headers}
                    )
                    async for chunk in self.chunks:
                        await send({"type": "http.response.body", "body": chunk, "more_body": True})
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
                except asyncio.CancelledError:
                    if not watch.gone:
                        raise
        finally:
            await close_quietly(self.chunks)
            await self.cleanup()
