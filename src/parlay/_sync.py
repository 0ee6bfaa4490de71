"""Running parlay's async core from synchronous code.

One daemon thread owns an event loop (the portal); synchronous calls submit coroutines to
it and wait. This works the same in scripts, in threads and inside Jupyter, whose own loop
is already running in the main thread.

Not anyio's `from_thread.start_blocking_portal` (checked against anyio 4.16): its portal
runs work on its own loop only, where `run_sync` must run a sync hook's async work on
the turn's loop (`PortalWaits.loop`) so that cancelling the turn cancels it; it stops
serving for good once a task lets KeyboardInterrupt or SystemExit out (every later call
is "This portal is not running", where `_serve` goes on: tests/test_portal.py); and it
has no bridge for async iterators (`iterate_sync`). What would remain is this module.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import threading
from collections.abc import AsyncIterator, Coroutine, Iterator
from typing import Any, TypeVar

T = TypeVar("T")


class PortalWaits:
    """The portal work a worker thread is waiting on, so that cancelling the coroutine
    that started the thread (`parlay.concurrent_calls.in_thread`) cancels that work too: a sync hook
    blocked in `run_sync` on an async tool would otherwise hold its thread for as long as
    the tool runs, after the turn that wanted it is gone.

    `loop` is the loop that started the thread: `run_sync` in the thread runs its work
    there (it is free, awaiting the thread), so a sync hook's async tool runs on the
    turn's loop, as it would without the hook, not on the portal."""

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self._lock = threading.Lock()
        self._futures: set[concurrent.futures.Future[Any]] = set()
        self.cancelled = False
        self.loop = loop

    @property
    def pending(self) -> bool:
        with self._lock:
            return bool(self._futures)

    def add(self, future: concurrent.futures.Future[Any]) -> None:
        with self._lock:
            self._futures.add(future)
            cancelled = self.cancelled
        if cancelled:
            future.cancel()

    def discard(self, future: concurrent.futures.Future[Any]) -> None:
        with self._lock:
            self._futures.discard(future)

    def cancel(self) -> None:
        with self._lock:
            self.cancelled = True
            futures = list(self._futures)
        for future in futures:
            future.cancel()


# Set, in the thread's copy of the context, by whoever runs the thread on parlay's behalf.
current_waits: contextvars.ContextVar[PortalWaits | None] = contextvars.ContextVar(
    "parlay_portal_waits", default=None
)

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None


def portal_loop() -> asyncio.AbstractEventLoop:
    global _loop
    with _lock:
        if _loop is None or _loop.is_closed():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(
                target=_serve, args=(loop,), name="parlay-portal", daemon=True
            )
            thread.start()
            _loop = loop
        return _loop


def _serve(loop: asyncio.AbstractEventLoop) -> None:
    """Run the portal loop for the life of the process. A task that lets KeyboardInterrupt
    or SystemExit out (a tool calling `sys.exit()`, a hook raising KeyboardInterrupt)
    makes asyncio re-raise it out of the loop, after handing it to whoever awaits the
    task; the loop goes on serving, or every later synchronous call would wait forever."""
    while True:
        try:
            loop.run_forever()
            return
        except (KeyboardInterrupt, SystemExit):
            continue


def in_portal() -> bool:
    try:
        return asyncio.get_running_loop() is _loop
    except RuntimeError:
        return False


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run `coro` on the portal loop and wait for its result."""
    if in_portal():
        coro.close()
        raise RuntimeError("run_sync called from parlay's own loop; await instead")
    waits = current_waits.get()
    loop = waits.loop if waits is not None else None
    if loop is None or loop.is_closed():
        loop = portal_loop()
    future = asyncio.run_coroutine_threadsafe(coro, loop)
    if waits is None:
        return future.result()
    waits.add(future)
    try:
        return future.result()
    finally:
        waits.discard(future)


def iterate_sync(agen: AsyncIterator[T]) -> Iterator[T]:
    """Iterate an async iterator from synchronous code, one item at a time."""
    loop = portal_loop()
    iterator = agen.__aiter__()
    try:
        while True:
            future = asyncio.run_coroutine_threadsafe(_next(iterator), loop)
            done, item = future.result()
            if done:
                return
            yield item
    finally:
        closer = getattr(iterator, "aclose", None)
        if closer is not None:
            asyncio.run_coroutine_threadsafe(closer(), loop).result()


async def _next(iterator: AsyncIterator[T]) -> tuple[bool, Any]:
    try:
        return False, await iterator.__anext__()
    except StopAsyncIteration:
        return True, None
