"""The sockets under the HTTP backends' connection pool: plain asyncio streams, with a
request's head and body sent in one write.

httpcore's default network layer goes through anyio: three socket writes per request
(head, body, an empty end), each followed by a pass through the event loop, and several
attribute look-ups per idle connection on every request. Under 32 concurrent clients
that was a fifth of the proxy's CPU (see bench/results/proxy.md). This layer buffers
what httpcore writes until it reads (HTTP/1.1 sends a whole request before reading its
answer), and raises httpcore's own errors, so httpx maps them as before.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import Iterable
from contextlib import AbstractAsyncContextManager, nullcontext
from typing import Any

import httpcore

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


def pooled_transport(limits: Any) -> Any:
    """httpx's own transport (its pool, proxies from the environment, TLS), on
    `AsyncioBackend`. httpx takes no network backend as an argument, so the pool's is
    set after the fact; a pool of another shape (an httpx release that moved it) keeps
    its own."""
    import httpx

    transport = httpx.AsyncHTTPTransport(limits=limits)
    pool = getattr(transport, "_pool", None)
    if isinstance(pool, httpcore.AsyncConnectionPool) and hasattr(pool, "_network_backend"):
        pool._network_backend = AsyncioBackend()
    return transport
