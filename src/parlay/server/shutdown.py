"""Ending promptly on SIGTERM: in-flight replies are closed with an error in their own
protocol at once, instead of the server waiting for them (a stream may run for minutes).
The proxy's drain marks it draining before anything else, so `/ready` says 503 from the
signal on and a load balancer stops sending it requests while it finishes.

uvicorn installs its own SIGTERM and SIGINT handlers before the app's lifespan starts;
`drain_on_signals` wraps them, so the server's own shutdown still runs after ours.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from types import FrameType
from typing import Any

logger = logging.getLogger("parlay.server")

SIGNALS = (signal.SIGTERM, signal.SIGINT)


def drain_on_signals(
    drain: Callable[[], None], *, hard_exit_after: float | None = None
) -> Callable[[], None]:
    """On SIGTERM or SIGINT, call `drain` on the running loop, then the handler that was
    there before. With `hard_exit_after`, the process exits that many seconds after the
    first signal whatever it is doing (a backstop for `parlay serve`, never for an app
    embedded elsewhere). Returns a function restoring the previous handlers.

    Does nothing outside the main thread, where signals cannot be handled."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous: dict[int, Any] = {}
    handler = _signal_handler(drain, hard_exit_after, previous)

    for sig in SIGNALS:
        before = signal.getsignal(sig)
        if not callable(before):
            continue  # nobody was listening (no server running us): leave the default
        previous[sig] = before
        signal.signal(sig, handler)

    def restore() -> None:
        for sig, before in previous.items():
            if signal.getsignal(sig) is handler:
                signal.signal(sig, before)

    return restore


def _signal_handler(
    drain: Callable[[], None], hard_exit_after: float | None, previous: dict[int, Any]
) -> Callable[[int, FrameType | None], None]:
    """A handler draining on the first signal, then calling the one `previous` holds."""
    loop = asyncio.get_running_loop()
    fired = threading.Event()

    def handler(signum: int, frame: FrameType | None) -> None:
        if not fired.is_set():
            fired.set()
            # Called between two bytecodes of the loop's own thread: hand over, never
            # touch the loop's state from here.
            loop.call_soon_threadsafe(drain)
            if hard_exit_after is not None:
                _start_watchdog(hard_exit_after)
        before = previous.get(signum)
        if callable(before):
            before(signum, frame)

    return handler


def _start_watchdog(seconds: float) -> None:
    def run() -> None:
        if not _exited.wait(seconds):
            logger.error("still running %.1f s after the signal: exiting now", seconds)
            os._exit(1)

    threading.Thread(target=run, name="parlay-exit-watchdog", daemon=True).start()


_exited = threading.Event()


def mark_exited() -> None:
    """The server finished shutting down on its own: the watchdog has nothing to do."""
    _exited.set()


def drain_lifespan(
    drain: Callable[[], None], hard_exit_after: float | None
) -> Callable[[Any], AbstractAsyncContextManager[None]]:
    """An app's lifespan: SIGTERM calls `drain` while the server runs (`create_app`)."""

    @asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        restore = drain_on_signals(drain, hard_exit_after=hard_exit_after)
        try:
            yield
        finally:
            restore()
            mark_exited()

    return lifespan
