"""The sockets under the HTTP backends' connection pool: plain asyncio streams, with a
request's head and body sent in one write.

httpcore's default network layer goes through anyio: three socket writes per request
(head, body, an empty end), each followed by a pass through the event loop, and several
attribute look-ups per idle connection on every request. This layer buffers what
httpcore writes until it reads (HTTP/1.1 sends a whole request before reading its
answer), and raises httpcore's own errors, so httpx maps them as before. `LinearPool`
does the pool's bookkeeping in linear time. See bench/results/proxy.md for both.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import Iterable
from contextlib import AbstractAsyncContextManager, nullcontext
from typing import Any

import httpcore

Connection = httpcore.AsyncConnectionInterface
# Sent at once past this size rather than held until the answer is read.
FLUSH_BYTES = 64 * 1024
READ_CHUNK = 64 * 1024


def _deadline(timeout: float | None) -> AbstractAsyncContextManager[Any]:
    return nullcontext() if timeout is None else asyncio.timeout(timeout)


class AsyncioStream(httpcore.AsyncNetworkStream):
    """One connection: reads as they come, writes held until the next read."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.pending: list[bytes] = []
        self.pending_bytes = 0

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        if self.pending:
            await self._flush(timeout)
        try:
            async with _deadline(timeout):
                return await self.reader.read(min(max_bytes, READ_CHUNK))
        except TimeoutError as exc:
            raise httpcore.ReadTimeout(str(exc)) from exc
        except OSError as exc:
            raise httpcore.ReadError(str(exc) or type(exc).__name__) from exc

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        self.pending.append(buffer)
        self.pending_bytes += len(buffer)
        if self.pending_bytes >= FLUSH_BYTES:
            await self._flush(timeout)

    async def _flush(self, timeout: float | None) -> None:
        data = b"".join(self.pending)
        self.pending.clear()
        self.pending_bytes = 0
        try:
            self.writer.write(data)
            if self.writer.transport.get_write_buffer_size():
                async with _deadline(timeout):
                    await self.writer.drain()
        except TimeoutError as exc:
            raise httpcore.WriteTimeout(str(exc)) from exc
        except (OSError, RuntimeError) as exc:
            raise httpcore.WriteError(str(exc) or type(exc).__name__) from exc

    async def aclose(self) -> None:
        self.pending.clear()
        self.writer.close()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        if self.pending:
            await self._flush(timeout)
        try:
            async with _deadline(timeout):
                await self.writer.start_tls(ssl_context, server_hostname=server_hostname)
        except TimeoutError as exc:
            raise httpcore.ConnectTimeout(str(exc)) from exc
        except (OSError, ssl.SSLError) as exc:
            raise httpcore.ConnectError(str(exc) or type(exc).__name__) from exc
        return self

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable":
            # An idle connection with something to read: the server closed it.
            return self.reader.at_eof() or bool(getattr(self.reader, "_buffer", b""))
        if info == "ssl_object":
            return self.writer.get_extra_info("ssl_object")
        if info == "client_addr":
            return self.writer.get_extra_info("sockname")
        if info == "server_addr":
            return self.writer.get_extra_info("peername")
        if info == "socket":
            return self.writer.get_extra_info("socket")
        return None


class AsyncioBackend(httpcore.AsyncNetworkBackend):
    """httpcore's network backend on asyncio streams (for an asyncio or uvloop loop)."""

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        local = None if local_address is None else (local_address, 0)
        try:
            async with _deadline(timeout):
                reader, writer = await asyncio.open_connection(
                    host, port, local_addr=local, limit=2 * READ_CHUNK
                )
        except TimeoutError as exc:
            raise httpcore.ConnectTimeout(str(exc)) from exc
        except OSError as exc:
            raise httpcore.ConnectError(str(exc) or type(exc).__name__) from exc
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            for option in socket_options or ():
                sock.setsockopt(*option)
        return AsyncioStream(reader, writer)

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.AsyncNetworkStream:
        try:
            async with _deadline(timeout):
                reader, writer = await asyncio.open_unix_connection(path)
        except TimeoutError as exc:
            raise httpcore.ConnectTimeout(str(exc)) from exc
        except OSError as exc:
            raise httpcore.ConnectError(str(exc) or type(exc).__name__) from exc
        return AsyncioStream(reader, writer)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


class LinearPool(httpcore.AsyncConnectionPool):
    """httpcore's connection pool with its bookkeeping in one pass over the connections.

    httpcore's own, run as every request starts and ends, counts every connection once
    per idle connection and lists the available ones once per queued request: under 32
    concurrent requests that was 15 % of the proxy's CPU, and the reason its CPU per
    request rose with the load. Same decisions: closed and expired connections dropped,
    idle ones closed past the keep-alive bound, each queued request given the first
    available connection to its origin, else a new one, else an idle one replaced.
    """

    def _assign_requests_to_connections(self) -> list[Connection]:
        closing = self._sweep()
        queued = [request for request in self._requests if request.is_queued()]
        if queued:
            self._assign(queued, closing)
        return closing

    def _sweep(self) -> list[Connection]:
        """Drop the closed connections; return the expired ones and the idle ones past
        the keep-alive bound, to be closed."""
        closing: list[Connection] = []
        live: list[Connection] = []
        for connection in self._connections:
            if connection.is_closed():
                continue
            if connection.has_expired():
                closing.append(connection)
            else:
                live.append(connection)
        surplus = len(live) - self._max_keepalive_connections
        if surplus > 0:
            idle = [c for c in live if c.is_idle()][:surplus]
            closing += idle
            live = [c for c in live if c not in idle]
        self._connections[:] = live
        return closing

    def _assign(self, queued: list[Any], closing: list[Connection]) -> None:
        available = [c for c in self._connections if c.is_available()]
        idle = [c for c in self._connections if c.is_idle()]
        for pool_request in queued:
            origin = pool_request.request.url.origin
            found = next((c for c in available if c.can_handle_request(origin)), None)
            if found is not None:
                available.remove(found)
            elif len(self._connections) < self._max_connections:
                found = self.create_connection(origin)
                self._connections.append(found)
            elif idle:
                replaced = idle.pop(0)
                self._connections.remove(replaced)
                closing.append(replaced)
                found = self.create_connection(origin)
                self._connections.append(found)
            else:
                continue  # it waits for a connection to come free
            if found in idle:
                idle.remove(found)
            pool_request.assign_to_connection(found)


def pooled_transport(limits: Any) -> Any:
    """httpx's own transport (its pool settings, proxies from the environment, TLS), its
    pool made a `LinearPool` on `AsyncioBackend`. httpx takes neither as an argument, so
    they are set after the fact; a pool of another shape (a proxy's, or an httpx release
    that moved it) is left as httpx made it."""
    import httpx

    transport = httpx.AsyncHTTPTransport(limits=limits)
    pool = getattr(transport, "_pool", None)
    if type(pool) is httpcore.AsyncConnectionPool and hasattr(pool, "_network_backend"):
        pool.__class__ = LinearPool
        pool._network_backend = AsyncioBackend()
    return transport
