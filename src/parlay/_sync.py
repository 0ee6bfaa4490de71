"""Running parlay's async core from synchronous code.

One daemon thread owns an event loop (the portal); synchronous calls submit coroutines to
it and wait. This works the same in scripts, in threads and inside Jupyter, whose own loop
is already running in the main thread.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Coroutine, Iterator
from typing import Any, TypeVar

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None


def portal_loop() -> asyncio.AbstractEventLoop:
    global _loop
    with _lock:
        if _loop is None or _loop.is_closed():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="parlay-portal", daemon=True)
            thread.start()
            _loop = loop
        return _loop


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
    return asyncio.run_coroutine_threadsafe(coro, portal_loop()).result()


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
