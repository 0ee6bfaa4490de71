"""The bounds of `slow_clients` on uvicorn's httptools protocol (a C parser): the head's
timer armed when a connection opens and when a request's first byte is parsed, the
body's once its head is complete, both disarmed once the whole request is read.

Importing this module fails with ImportError where httptools is not installed.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from parlay.server.slow_clients import Phase, SlowClientBounds


class FastSlowClientProtocol(SlowClientBounds, HttpToolsProtocol):
    """uvicorn's httptools protocol that closes a connection whose request head is not
    complete within `config.header_timeout` seconds, or whose body is not complete within
    `config.body_timeout` (plus `BODY_GRACE`) seconds after that."""

    def __init__(self, config: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(config, *args, **kwargs)
        self._init_bounds(config)
        self._in_message = False  # a request has begun and is not yet wholly read
        self._head_done = False  # ... and its head is complete

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm(Phase.HEAD)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def on_message_begin(self) -> None:
        # The first byte of a request: on a kept-alive connection, its head is due now.
        self._in_message, self._head_done = True, False
        if self._phase is not Phase.HEAD:
            self._arm(Phase.HEAD)
        super().on_message_begin()

    def on_headers_complete(self) -> None:
        self._head_done = True
        # A request without a body is complete within this same feed, which disarms it.
        self._arm(Phase.BODY)
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        # Noted even when uvicorn ignores the rest of a body the app has answered.
        self._in_message = False
        self._disarm()
        super().on_message_complete()

    def _reading_head(self) -> bool:
        return not (self._in_message and self._head_done)

    def _reading_body(self) -> bool:
        return self._in_message and self._head_done
