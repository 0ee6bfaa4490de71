"""parlay's own HTTP/1.1 client for the POSTs and GETs a backend sends a model server.

httpx's layers (request building, auth and redirect handling, httpcore's h11 state
machine, the stream wrappers) cost ~0.4 ms of CPU a request, most of the proxy's cost
under load (bench/results/proxy.md); this client, llhttp's parser (httptools) under an
asyncio protocol and a connection pool, ~0.03 ms. httpx stays where this does not go:
a proxy from the environment, a transport passed in (see `HttpTransport`).

Every wait is bounded by the `httpx.Timeout` it is given (connect, write, read between
chunks, pool), a response's head by `MAX_HEAD_BYTES`; what is read is held up to
`PAUSE_BYTES` before the socket stops being read.
"""

from __future__ import annotations

import asyncio
import codecs
import ssl
import time
import zlib
from collections import deque
from collections.abc import AsyncIterator, Mapping
from typing import Any, cast

import httptools
import httpx

from parlay._version import __version__
from parlay.errors import (
    BackendConnectionError,
    BackendError,
    BackendProtocolError,
    BackendStreamCutError,
    BackendTimeoutError,
)

MAX_HEAD_BYTES = 64 * 1024
PAUSE_BYTES = 256 * 1024
MAX_CONNECTIONS = 256
KEEPALIVE_SECONDS = 5.0


class Link(asyncio.Protocol):
    """One connection, and the answer being read on it."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.parser = httptools.HttpResponseParser(self)
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.idle_since = 0.0
        self.writable = asyncio.Event()
        self.writable.set()
        self.reset()

    def reset(self) -> None:
        self.status = 0
        self.headers: dict[str, str] = {}
        self.head_bytes = 0
        self.head_done = False
        self.complete = False
        self.keep_alive = False
        self.chunks: deque[bytes] = deque()
        self.buffered = 0
        self.received = False
        self.error: BackendError | None = None
        self.waiter: asyncio.Future[None] | None = None

    # asyncio's side
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not subclasses of asyncio's, only alike.
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        self.received = True
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserCallbackError as exc:
            cause = exc.__context__
            self.fail(cause if isinstance(cause, BackendError) else self.malformed(exc))
        except httptools.HttpParserError as exc:
            self.fail(self.malformed(exc))

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.head_done and not self.complete and self.until_close():
            self.complete = True
        elif not self.complete and self.error is None:
            self.error = BackendStreamCutError(
                f"the answer from {self.url} was cut: the connection closed before its end"
            )
        self.writable.set()
        self.wake()

    def pause_writing(self) -> None:
        self.writable.clear()

    def resume_writing(self) -> None:
        self.writable.set()

    # llhttp's side
    def on_header(self, name: bytes, value: bytes) -> None:
        self.head_bytes += len(name) + len(value) + 4
        if self.head_bytes > MAX_HEAD_BYTES:
            raise BackendProtocolError(
                f"{self.url} answered with a head over {MAX_HEAD_BYTES:,} bytes"
            )
        self.headers[name.decode("latin-1").lower()] = value.decode("latin-1")

    def on_headers_complete(self) -> None:
        self.status = self.parser.get_status_code()
        self.head_done = True
        self.wake()

    def on_body(self, body: bytes) -> None:
        self.chunks.append(body)
        self.buffered += len(body)
        if self.buffered > PAUSE_BYTES and self.transport is not None:
            self.transport.pause_reading()
        self.wake()

    def on_message_complete(self) -> None:
        self.keep_alive = self.parser.should_keep_alive()
        self.complete = True
        self.wake()

    # the client's side
    def malformed(self, exc: Exception) -> BackendProtocolError:
        return BackendProtocolError(f"{self.url} answered with malformed HTTP: {exc}")

    def until_close(self) -> bool:
        """Whether the body is read until the server closes (no length, not chunked)."""
        chunked = "chunked" in self.headers.get("transfer-encoding", "").lower()
        return "content-length" not in self.headers and not chunked

    def fail(self, error: BackendError) -> None:
        if self.error is None:
            self.error = error
        if self.transport is not None:
            self.transport.close()
        self.wake()

    def wake(self) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)

    async def wait(self, timeout: float | None) -> None:
        self.waiter = asyncio.get_running_loop().create_future()
        try:
            async with asyncio.timeout(timeout):
                await self.waiter
        finally:
            self.waiter = None

    def take(self) -> bytes:
        chunk = self.chunks.popleft()
        self.buffered -= len(chunk)
        if self.buffered <= PAUSE_BYTES // 2 and self.transport is not None:
            self.transport.resume_reading()
        return chunk

    def reusable(self, now: float) -> bool:
        """An idle connection that may carry another request."""
        fresh = now - self.idle_since < KEEPALIVE_SECONDS
        return fresh and not self.closed and not self.received and self.transport is not None


class Answer:
    """A response being read: its status, headers and body (httpx.Response's names)."""

    def __init__(self, client: Http1Client, link: Link, read_timeout: float | None) -> None:
        self.client = client
        self.link = link
        self.status_code = link.status
        self.headers: Mapping[str, str] = link.headers
        self.read_timeout = read_timeout
        self.done = False

    async def aiter_raw(self) -> AsyncIterator[bytes]:
        link = self.link
        while True:
            while link.chunks:
                yield link.take()
            if link.error is not None:
                raise link.error
            if link.complete:
                return
            try:
                await link.wait(self.read_timeout)
            except TimeoutError:
                raise BackendTimeoutError(
                    f"{link.url} stopped sending in the middle of an answer (ReadTimeout)"
                ) from None

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        encoding = self.headers.get("content-encoding", "identity").strip().lower()
        if encoding in ("", "identity"):
            async for chunk in self.aiter_raw():
                yield chunk
            return
        if encoding not in ("gzip", "deflate"):
            raise BackendProtocolError(f"{self.link.url} answered in an encoding of {encoding!r}")
        inflate = zlib.decompressobj(zlib.MAX_WBITS | (16 if encoding == "gzip" else 32))
        try:
            async for chunk in self.aiter_raw():
                yield inflate.decompress(chunk)
        except zlib.error as exc:
            broken = f"{self.link.url} answered a broken {encoding} body"
            raise BackendProtocolError(broken) from exc

    async def aiter_text(self) -> AsyncIterator[str]:
        # A character split across two chunks: the decoder keeps its start for the next.
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        async for chunk in self.aiter_bytes():
            yield decoder.decode(chunk)
        yield decoder.decode(b"", final=True)

    async def aclose(self) -> None:
        if not self.done:
            self.done = True
            self.client.release(self.link)


def _origin(url: httpx.URL) -> tuple[bool, str, int]:
    """Whether the URL is TLS, its host, and its port (the scheme's when none is given)."""
    tls = url.scheme == "https"
    return tls, url.host, url.port or (443 if tls else 80)


class Http1Client:
    """Requests to one origin over a pool of kept-alive connections, on one event loop."""

    def __init__(self, base_url: str, headers: Mapping[str, str], timeout: httpx.Timeout) -> None:
        url = httpx.URL(base_url)
        self.base_url = base_url.rstrip("/")
        self.base_path = url.raw_path.decode("ascii").rstrip("/")
        self.tls, self.host, self.port = _origin(url)
        self.timeout = timeout
        authority = url.netloc.decode("ascii")
        lines = [f"Host: {authority}", f"User-Agent: parlay/{__version__}", "Accept: */*"]
        lines += ["Accept-Encoding: gzip, deflate"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        if any("\r" in line or "\n" in line for line in lines):
            raise BackendError("a header for the model server holds a line break")
        self.fixed_head = "".join(line + "\r\n" for line in lines).encode("latin-1")
        self.idle: deque[Link] = deque()  # the most recently used last
        self.slots = asyncio.Semaphore(MAX_CONNECTIONS)
        self.ssl_context: ssl.SSLContext | None = None
        self.closed = False

    def target(self, path: str) -> str:
        """The request target for `path` under the base URL, or for an absolute URL of
        the same server (llama.cpp's `/tokenize` beside an OpenAI-style `/v1`)."""
        if "://" not in path:
            return f"{self.base_path}{path}"
        url = httpx.URL(path)
        if _origin(url) != (self.tls, self.host, self.port):
            raise BackendError(f"{path} is not on the server of {self.base_url}")
        return url.raw_path.decode("ascii")

    def head(self, method: str, path: str, body: bytes | None) -> bytes:
        target = self.target(path)
        start = f"{method} {target} HTTP/1.1\r\n".encode("latin-1") + self.fixed_head
        if body is None:
            return start + b"\r\n"
        size = f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        return start + size.encode("ascii") + body

    async def request(self, method: str, path: str, body: bytes | None) -> Answer:
        url = path if "://" in path else f"{self.base_url}{path}"
        message = self.head(method, path, body)
        try:
            async with asyncio.timeout(self.timeout.pool):
                await self.slots.acquire()
        except TimeoutError:
            raise BackendTimeoutError(f"{url} did not answer in time (PoolTimeout)") from None
        try:
            link, reused = self.take_idle(), True
            if link is None:
                link, reused = await self.connect(url), False
            try:
                return await self.exchange(link, message)
            except BackendConnectionError:
                if not reused:
                    raise
            # A kept-alive connection the server had closed before answering (llama.cpp's
            # server does this between requests): nothing was answered, so once more.
            return await self.exchange(await self.connect(url), message)
        except BaseException:
            self.slots.release()
            raise

    def take_idle(self) -> Link | None:
        now = time.monotonic()
        while self.idle:
            link = self.idle.pop()
            if link.reusable(now):
                return link
            self.drop(link)
        return None

    async def connect(self, url: str) -> Link:
        loop = asyncio.get_running_loop()
        tls: dict[str, Any] = {}
        if self.tls:
            if self.ssl_context is None:
                self.ssl_context = httpx.create_ssl_context()
            tls = {"ssl": self.ssl_context, "server_hostname": self.host}
        try:
            async with asyncio.timeout(self.timeout.connect):
                _, link = await loop.create_connection(
                    lambda: Link(url), self.host, self.port, **tls
                )
        except TimeoutError:
            raise BackendTimeoutError(f"{url} did not answer in time (ConnectTimeout)") from None
        except (OSError, ssl.SSLError) as exc:
            reason = str(exc) or type(exc).__name__
            raise BackendConnectionError(f"cannot reach {url}: {reason}") from exc
        return link

    async def exchange(self, link: Link, message: bytes) -> Answer:
        """Sends `message` on `link` and reads the answer's head; the connection is closed
        if either fails or the caller is cancelled. (A link comes clean: new, or reset when
        it was released.)"""
        try:
            await self.send(link, message)
            await self.read_head(link)
        except BaseException:
            self.drop(link)
            raise
        return Answer(self, link, self.timeout.read)

    async def send(self, link: Link, message: bytes) -> None:
        assert link.transport is not None
        link.transport.write(message)
        if link.writable.is_set():
            return
        try:
            async with asyncio.timeout(self.timeout.write):
                await link.writable.wait()
        except TimeoutError:
            raise BackendTimeoutError(f"{link.url} did not answer in time (WriteTimeout)") from None

    async def read_head(self, link: Link) -> None:
        while not link.head_done:
            if link.error is not None or link.closed:
                if link.received:
                    raise link.error or link.malformed(EOFError("no head"))
                raise BackendConnectionError(
                    f"cannot reach {link.url}: the server closed the connection without answering"
                )
            try:
                await link.wait(self.timeout.read)
            except TimeoutError:
                raise BackendTimeoutError(
                    f"{link.url} did not answer in time (ReadTimeout)"
                ) from None

    def release(self, link: Link) -> None:
        """Back to the pool when its answer was read to the end on a connection that stays
        open; closed otherwise (an answer left unread is not worth reading to its end)."""
        self.slots.release()
        now = time.monotonic()
        if self.idle and not self.idle[0].reusable(now):
            # The longest idle, past its keep-alive: closed now, not when a burst reaches it.
            self.drop(self.idle.popleft())
        if link.complete and link.keep_alive and not link.closed and not self.closed:
            link.reset()
            link.idle_since = now
            if len(self.idle) < MAX_CONNECTIONS:
                self.idle.append(link)
                return
        self.drop(link)

    @staticmethod
    def drop(link: Link) -> None:
        if link.transport is not None and not link.closed:
            link.transport.close()

    async def aclose(self) -> None:
        self.closed = True
        while self.idle:
            self.drop(self.idle.pop())
