"""Bounds on how long a client may take to send a request: its line and headers, then
its body.

uvicorn bounds the idle time between two requests of a connection (`timeout_keep_alive`)
but nothing while a request arrives: a connection that sends nothing, its headers a byte
at a time, or a whole head and then its body a byte a second, is held as long as the
client likes (outside probes held 20 connections for minutes; enough of them exhaust the
process's file descriptors).

The app answers a body that is too slow with a 408 in the caller's protocol
(`server.body.read_body`). The protocols here are uvicorn's (h11's below, httptools' in
`slow_clients_httptools`, which `parlay serve` runs when httptools is installed) with one
timer for what the app cannot see: armed when a connection opens and when the first byte
of a later request arrives, it closes a connection whose head is not complete within the
header timeout (the parser cannot answer a request it has not read); re-armed once the
head is read, it closes a connection whose body is still arriving `BODY_GRACE` seconds
after the body timeout: a body the app never reads (a 404, say), or one still dripping
in after the app's answer.
"""

from __future__ import annotations

import asyncio
import enum
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

# Seconds a client has to send a request line and its headers: far more than any real
# client needs on a network, far less than a slow-headers attack wants.
DEFAULT_HEADER_TIMEOUT = 10.0
# Seconds a client has to send a request's whole body once its head is read: as long as
# the head's, and 8 MiB (the body limit) at under 1 MB/s still arrives within it.
DEFAULT_BODY_TIMEOUT = 10.0
# The app's own deadline starts a moment after the head is read; this leaves it time to
# answer with its 408 before the connection is cut from under it.
BODY_GRACE = 1.0


class Phase(enum.Enum):
    """What the timer of a connection is waiting for."""

    HEAD = "head"
    BODY = "body"


class SlowClientBounds:
    """The two timers, for a uvicorn HTTP protocol that says whether it is reading a
    request's head or its body (`_reading_head`, `_reading_body`) and calls `_arm` when a
    phase starts; `loop`, `transport` and `logger` are the protocol's own."""

    loop: asyncio.AbstractEventLoop
    transport: asyncio.Transport
    logger: Any

    def _init_bounds(self, config: Any) -> None:
        self.header_timeout = float(getattr(config, "header_timeout", DEFAULT_HEADER_TIMEOUT))
        self.body_timeout = float(getattr(config, "body_timeout", DEFAULT_BODY_TIMEOUT))
        self._timer: asyncio.TimerHandle | None = None
        self._phase: Phase | None = None

    def _reading_head(self) -> bool:
        raise NotImplementedError

    def _reading_body(self) -> bool:
        raise NotImplementedError

    def _arm(self, phase: Phase) -> None:
        self._disarm()
        seconds = self.header_timeout if phase is Phase.HEAD else self.body_timeout + BODY_GRACE
        self._phase = phase
        self._timer = self.loop.call_later(seconds, self._too_slow)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = None
        self._phase = None

    def _too_slow(self) -> None:
        phase = self._phase
        self._timer = None
        self._phase = None
        still = self._reading_head() if phase is Phase.HEAD else self._reading_body()
        if not still or self.transport.is_closing():
            return
        if phase is Phase.HEAD:
            self.logger.info(
                "closed a connection whose request head took over %ss", self.header_timeout
            )
        else:
            self.logger.info(
                "closed a connection whose request body took over %ss", self.body_timeout
            )
        self.transport.close()


class SlowClientProtocol(SlowClientBounds, H11Protocol):
    """uvicorn's h11 protocol that closes a connection whose request head is not complete
    within `config.header_timeout` seconds, or whose body is not complete within
    `config.body_timeout` (plus `BODY_GRACE`) seconds after that (both set on the uvicorn
    `Config` it is given)."""

    def __init__(self, config: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(config, *args, **kwargs)
        self._init_bounds(config)

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm(Phase.HEAD)

    def data_received(self, data: bytes) -> None:
        if self._timer is None and self._reading_head():
            # The first byte of a later request on a kept-alive connection.
            self._arm(Phase.HEAD)
        super().data_received(data)
        self._follow()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _reading_head(self) -> bool:
        # h11 leaves IDLE for the client's side once a whole request head has been read.
        return self.conn.their_state is h11.IDLE

    def _reading_body(self) -> bool:
        return self.conn.their_state is h11.SEND_BODY

    def _follow(self) -> None:
        """The timer for what h11 now waits for from the client."""
        state = self.conn.their_state
        if state is h11.IDLE:
            if self._phase is Phase.BODY:
                # The body ended after the app's answer and h11 began the next request:
                # its head is due now if some of it came along, else it is kept-alive idle.
                self._disarm()
                if self.conn.trailing_data[0]:
                    self._arm(Phase.HEAD)
            return  # else the head's timer, armed above, runs on
        if state is h11.SEND_BODY:
            if self._phase is not Phase.BODY:
                self._arm(Phase.BODY)
            return
        self._disarm()  # the whole request is read (or the connection is ending)


# The name it had when it bounded only the head.
HeaderTimeoutProtocol = SlowClientProtocol
