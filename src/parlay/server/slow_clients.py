"""A bound on how long a client may take to send a request's line and headers.

uvicorn bounds the idle time between two requests of a connection (`timeout_keep_alive`)
but nothing before a request's headers are complete: a connection that sends nothing, or
its headers a byte at a time, is held as long as the client likes (an outside probe held
20 connections for a minute; enough of them exhaust the process's file descriptors).
This is uvicorn's h11 protocol with one timer: armed when a connection opens and when the
first byte of a later request arrives, disarmed once h11 has read the whole head; when it
fires the connection is closed (h11 cannot answer a request it has not read).
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

# Seconds a client has to send a request line and its headers: far more than any real
# client needs on a network, far less than a slow-headers attack wants.
DEFAULT_HEADER_TIMEOUT = 10.0


class HeaderTimeoutProtocol(H11Protocol):
    """uvicorn's h11 protocol that closes a connection whose request head is not complete
    within `config.header_timeout` seconds (set on the uvicorn `Config` it is given)."""

    def __init__(self, config: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(config, *args, **kwargs)
        self.header_timeout = float(getattr(config, "header_timeout", DEFAULT_HEADER_TIMEOUT))
        self._header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_header_timer()

    def data_received(self, data: bytes) -> None:
        if self._header_timer is None and self._reading_head():
            # The first byte of a later request on a kept-alive connection.
            self._arm_header_timer()
        super().data_received(data)
        if not self._reading_head():
            self._disarm_header_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_header_timer()
        super().connection_lost(exc)

    def _reading_head(self) -> bool:
        # h11 leaves IDLE for the client's side once a whole request head has been read.
        return self.conn.their_state is h11.IDLE

    def _arm_header_timer(self) -> None:
        self._disarm_header_timer()
        self._header_timer = self.loop.call_later(self.header_timeout, self._head_too_slow)

    def _disarm_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _head_too_slow(self) -> None:
        self._header_timer = None
        if self._reading_head() and not self.transport.is_closing():
            self.logger.info(
                "closed a connection whose request head took over %ss", self.header_timeout
            )
            self.transport.close()
