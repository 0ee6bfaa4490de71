"""The proxy's fast path keeps its bounds: the httptools protocol cuts slow heads and
bodies off as the h11 one does, the access line never waits on a slow stderr, a large
tool schema is checked once per content, and a request goes upstream in one write."""

from __future__ import annotations

import asyncio
import logging
import socket
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
import uvicorn
from uvicorn.logging import AccessFormatter

from parlay.backends._net import AsyncioStream
from parlay.server import access_log
from parlay.server.run import bounded_protocol
from parlay.server.slow_clients import SlowClientProtocol
from parlay.server.slow_clients_httptools import FastSlowClientProtocol
from parlay.wire import validate

# httptools is a core dependency: where it is missing, this module fails to import.
PROTOCOLS = [SlowClientProtocol, FastSlowClientProtocol]


async def _not_found(scope: Any, receive: Any, send: Any) -> None:
    """Answers at once without reading the body (as the proxy does an unknown route)."""
    await send({"type": "http.response.start", "status": 404, "headers": []})
    await send({"type": "http.response.body", "body": b"no"})


@contextmanager
def _server(protocol: type[asyncio.Protocol], bound: float = 0.5) -> Iterator[int]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    config = uvicorn.Config(
        _not_found, host="127.0.0.1", port=port, http=protocol, lifespan="off", log_level="error"
    )
    config.header_timeout = bound  # type: ignore[attr-defined]
    config.body_timeout = bound  # type: ignore[attr-defined]
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(10)


def _closed_within(sock: socket.socket, seconds: float) -> bool:
    """Whether the server closes `sock` within `seconds` (what it answers is read past)."""
    sock.settimeout(seconds)
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            if sock.recv(4096) == b"":
                return True
    except TimeoutError:
        return False
    except OSError:
        return True
    return False


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=["h11", "httptools"])
def test_a_head_sent_halfway_is_cut_off_on_either_parser(protocol: Any) -> None:
    with _server(protocol) as port, socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n")
        assert _closed_within(sock, 4)


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=["h11", "httptools"])
def test_a_kept_alive_connection_gets_the_head_bound_again_on_either_parser(
    protocol: Any,
) -> None:
    with _server(protocol) as port, socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n")
        sock.settimeout(4)
        assert b"404" in sock.recv(4096)
        time.sleep(0.8)  # idle longer than the head's bound: kept alive, not cut
        sock.sendall(b"GET /b HTTP/1.1\r\n")
        assert _closed_within(sock, 4)


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=["h11", "httptools"])
def test_a_body_nobody_reads_is_cut_off_on_either_parser(protocol: Any) -> None:
    head = b"POST /v1/nothing HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n"
    with _server(protocol) as port, socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(head + b"{")
        # 0.5 s of body bound and 1 s of grace, then closed.
        assert _closed_within(sock, 5)


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=["h11", "httptools"])
def test_a_prompt_request_is_not_cut_off_on_either_parser(protocol: Any) -> None:
    with _server(protocol) as port, socket.create_connection(("127.0.0.1", port)) as sock:
        for _ in range(3):
            sock.sendall(b"POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
            sock.settimeout(4)
            assert b"404" in sock.recv(4096)
        assert not _closed_within(sock, 1.0)


def test_serve_runs_on_httptools_and_on_h11_without_it(monkeypatch: pytest.MonkeyPatch) -> None:
    assert bounded_protocol() is FastSlowClientProtocol
    monkeypatch.setitem(sys.modules, "parlay.server.slow_clients_httptools", None)
    assert bounded_protocol() is SlowClientProtocol


class _SlowHandler(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(AccessFormatter('%(client_addr)s "%(request_line)s" %(status_code)s'))
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        time.sleep(0.3)  # a stderr nobody drains
        self.lines.append(self.format(record))


def test_the_access_line_never_holds_the_event_loop_on_a_slow_stderr() -> None:
    logger = logging.getLogger("parlay.test.access")
    logger.propagate = False
    logger.setLevel(logging.INFO)
    slow = _SlowHandler()
    logger.handlers = [slow]
    writer = access_log.access_log_off_the_loop(logger.name)
    assert writer is not None
    assert access_log.access_log_off_the_loop(logger.name) is None  # moved once only
    started = time.monotonic()
    for _ in range(5):
        logger.info('%s - "%s %s HTTP/%s" %d', "127.0.0.1:1", "POST", "/v1/messages", "1.1", 200)
    assert time.monotonic() - started < 0.2  # five lines would take 1.5 s written here
    writer.stop()
    # Written all the same, formatted by uvicorn's formatter from the record's args.
    assert slow.lines == ['127.0.0.1:1 "POST /v1/messages HTTP/1.1" 200 OK'] * 5


def test_a_large_tool_schema_is_checked_once_per_content(monkeypatch: pytest.MonkeyPatch) -> None:
    checked: list[int] = []
    real = validate._problem

    def counting(schema: Any) -> str | None:
        checked.append(1)
        return real(schema)

    monkeypatch.setattr(validate, "_problem", counting)
    monkeypatch.setattr(validate, "_known", type(validate._known)())
    fields = {f"field_{i}": {"type": "string", "description": "x" * 200} for i in range(600)}
    big = {"type": "object", "properties": fields}  # ~150 KB: past any size-bound cache
    assert validate.schema_problem(big) is None
    assert validate.schema_problem(dict(reversed(big.items()))) is None  # same content
    assert len(checked) == 1
    wrong = {**big, "required": "city"}
    assert validate.schema_problem(wrong) is not None
    assert validate.schema_problem(wrong) is not None
    assert len(checked) == 2


class _Writer:
    """Enough of an asyncio StreamWriter to count the writes that reach the socket."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.transport = self

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def get_write_buffer_size(self) -> int:
        return 0


def test_a_request_goes_upstream_in_one_write() -> None:
    async def run() -> list[bytes]:
        reader = asyncio.StreamReader()
        reader.feed_data(b"HTTP/1.1 200 OK\r\n\r\n")
        writer = _Writer()
        stream = AsyncioStream(reader, writer)  # type: ignore[arg-type]
        await stream.write(b"POST /v1/chat/completions HTTP/1.1\r\n\r\n")
        await stream.write(b'{"model": "m"}')
        await stream.write(b"")  # h11's end of a body with a Content-Length
        assert writer.writes == []  # held until the answer is read
        assert await stream.read(1024) == b"HTTP/1.1 200 OK\r\n\r\n"
        return writer.writes

    assert asyncio.run(run()) == [b'POST /v1/chat/completions HTTP/1.1\r\n\r\n{"model": "m"}']


def test_an_upstream_that_closed_an_idle_connection_is_seen_as_closed() -> None:
    async def run() -> list[bool]:
        reader = asyncio.StreamReader()
        stream = AsyncioStream(reader, _Writer())  # type: ignore[arg-type]
        seen = [stream.get_extra_info("is_readable")]
        reader.feed_eof()
        return [*seen, stream.get_extra_info("is_readable")]

    assert asyncio.run(run()) == [False, True]


def test_forty_concurrent_upstream_requests_share_a_pool_of_four_connections() -> None:
    from proxy_stub import StubUpstream

    from parlay.backends._net import LinearPool, pooled_transport

    stub = StubUpstream().start()
    transport = pooled_transport(httpx.Limits(max_connections=4, max_keepalive_connections=2))
    pool = transport._pool
    assert isinstance(pool, LinearPool)
    most: list[int] = []

    async def run() -> list[int]:
        async with httpx.AsyncClient(base_url=stub.base_url, transport=transport) as client:

            async def one(i: int) -> int:
                body = {"model": "m", "messages": [{"role": "user", "content": str(i)}]}
                answer = await client.post("/chat/completions", json=body)
                most.append(len(pool.connections))
                return answer.status_code

            codes = list(await asyncio.wait_for(asyncio.gather(*(one(i) for i in range(40))), 30))
            idle_after = len(pool.connections)
            await client.post("/chat/completions", json={"model": "m", "messages": []})
            return [*codes, idle_after]

    try:
        *codes, idle_after = asyncio.run(run())
    finally:
        stub.stop()
    assert codes == [200] * 40  # every request queued for a connection got one
    assert max(most) <= 4
    assert idle_after <= 4 and len(pool.connections) <= 2  # idle past the bound closed
