"""parlay's own HTTP/1.1 client and httpx behind `HttpTransport`, against a real socket
server that answers well and badly: the same values, the same parlay errors, every wait
bounded."""

from __future__ import annotations

import asyncio
import gzip
import json
import ssl
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest
import trustme

from parlay.backends import _http1
from parlay.backends._http import HttpTransport
from parlay.backends.local import free_port
from parlay.errors import (
    BackendConnectionError,
    BackendError,
    BackendProtocolError,
    BackendRateLimitError,
    BackendStreamCutError,
    BackendTimeoutError,
)

Writer = asyncio.StreamWriter
Handler = Callable[[bytes, Writer], Awaitable[None]]


def reply(body: bytes, status: str = "200 OK", *extra: str) -> bytes:
    head = [f"HTTP/1.1 {status}", f"Content-Length: {len(body)}", *extra]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def chunked(*pieces: bytes, kind: str = "application/json") -> list[bytes]:
    head = f"HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nTransfer-Encoding: chunked\r\n\r\n"
    frames = [f"{len(p):x}\r\n".encode() + p + b"\r\n" for p in pieces]
    return [head.encode(), *frames, b"0\r\n\r\n"]


class Upstream:
    """A socket server: reads each request whole, then runs `handler(path, writer)`."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.connections = 0
        self.closed = asyncio.Event()  # set when a client closed its connection
        self.ended = 0  # connections the client closed
        self.requests: list[bytes] = []

    async def serve(self, reader: asyncio.StreamReader, writer: Writer) -> None:
        self.connections += 1
        try:
            while head := await reader.readuntil(b"\r\n\r\n"):
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                body = await reader.readexactly(length)
                self.requests.append(head + body)
                await self.handler(head.split(b" ")[1], writer)
        except (asyncio.IncompleteReadError, ConnectionError):
            self.ended += 1
            self.closed.set()
        except asyncio.CancelledError:
            pass  # the test ended
        finally:
            writer.close()


@pytest.fixture(params=["parlay", "httpx"])
def client_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def transport_for(url: str, kind: str, timeout: float = 2.0) -> HttpTransport:
    given = httpx.AsyncHTTPTransport() if kind == "httpx" else None
    http = HttpTransport(url, {"Authorization": "Bearer sk-secret"}, timeout, given)
    assert http.uses_httpx == (kind == "httpx")
    return http


async def started(handler: Handler) -> tuple[Upstream, asyncio.Server, str]:
    upstream = Upstream(handler)
    server = await asyncio.start_server(upstream.serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    return upstream, server, f"http://127.0.0.1:{port}/v1"


async def post(handler: Handler, kind: str, timeout: float = 2.0, times: int = 1) -> list[Any]:
    _, server, url = await started(handler)
    http = transport_for(url, kind, timeout)
    try:
        return [await http.post_json("/chat", {"n": n, "text": "é"}) for n in range(times)]
    finally:
        await http.aclose()
        server.close()


async def events(handler: Handler, kind: str) -> list[str]:
    _, server, url = await started(handler)
    http = transport_for(url, kind)
    try:
        return [event.data async for event in http.post_sse("/chat", {"stream": True})]
    finally:
        await http.aclose()
        server.close()


def writes(*frames: bytes, close: bool = False, pause: float = 0.0) -> Handler:
    async def handler(path: bytes, writer: Writer) -> None:
        for frame in frames:
            writer.write(frame)
            await writer.drain()
            await asyncio.sleep(pause)
        if close:
            writer.close()

    return handler


async def test_a_json_answer_reads_the_same_whole_chunked_or_gzipped(client_kind: str) -> None:
    body = json.dumps({"text": "héllo"}).encode()
    packed = gzip.compress(body)
    assert await post(writes(reply(body)), client_kind) == [{"text": "héllo"}]
    assert await post(writes(*chunked(body[:5], body[5:])), client_kind) == [{"text": "héllo"}]
    gzipped = writes(reply(packed, "200 OK", "Content-Encoding: gzip"))
    assert await post(gzipped, client_kind) == [{"text": "héllo"}]
    until_close = writes(b"HTTP/1.0 200 OK\r\n\r\n" + body, close=True)
    assert await post(until_close, client_kind) == [{"text": "héllo"}]


async def test_the_request_carries_the_json_the_headers_and_the_path(client_kind: str) -> None:
    upstream, server, url = await started(writes(reply(b"{}")))
    http = transport_for(url, client_kind)
    await http.post_json("/chat", {"text": "é", "n": [1, 2]})
    await http.aclose()
    server.close()
    head, _, body = upstream.requests[0].partition(b"\r\n\r\n")
    assert head.startswith(b"POST /v1/chat HTTP/1.1\r\n")
    assert b"\r\nauthorization: bearer sk-secret\r\n" in head.lower()
    assert body == '{"text":"é","n":[1,2]}'.encode()


async def test_a_character_split_between_two_chunks_of_a_stream_arrives_whole(
    client_kind: str,
) -> None:
    stream = 'data: {"t": "aé"}\n\ndata: [DONE]\n\n'.encode()
    split = stream.index("é".encode()) + 1
    handler = writes(*chunked(stream[:split], stream[split:], kind="text/event-stream"))
    assert await events(handler, client_kind) == ['{"t": "aé"}', "[DONE]"]


async def test_a_kept_alive_connection_the_server_closed_is_sent_again(client_kind: str) -> None:
    # The race llama.cpp's server makes between requests: a kept-alive connection closed
    # as the next request arrives, nothing answered.
    answered: set[Writer] = set()

    async def once_per_connection(path: bytes, writer: Writer) -> None:
        if writer in answered:
            writer.transport.abort()
            return
        answered.add(writer)
        writer.write(reply(b"{}"))

    answers = await post(once_per_connection, client_kind, times=3)
    assert answers == [{}, {}, {}]
    assert len(answered) == 3


async def test_connections_are_kept_alive_between_requests() -> None:
    upstream, server, url = await started(writes(reply(b"{}")))
    http = transport_for(url, "parlay")
    for _ in range(10):
        await http.post_json("/chat", {})
    answers = await asyncio.gather(*(http.post_json("/chat", {}) for _ in range(32)))
    await http.aclose()
    server.close()
    assert answers == [{}] * 32
    assert upstream.connections <= 32


async def test_idle_connections_past_their_keep_alive_close_while_others_stay_busy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_http1, "KEEPALIVE_SECONDS", 0.2)
    upstream, server, url = await started(writes(reply(b"{}")))
    http = transport_for(url, "parlay")
    await asyncio.gather(*(http.post_json("/chat", {}) for _ in range(3)))  # three connections
    for _ in range(20):  # one at a time: the newest connection, kept busy
        await http.post_json("/chat", {})
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.1)
    assert (upstream.connections, upstream.ended) == (3, 2)
    await http.aclose()
    server.close()


async def test_a_server_that_never_answers_is_a_timeout(client_kind: str) -> None:
    with pytest.raises(BackendTimeoutError, match="did not answer in time"):
        await post(writes(), client_kind, timeout=0.3)


async def test_a_request_cancelled_while_waiting_closes_its_connection(client_kind: str) -> None:
    upstream, server, url = await started(writes())
    http = transport_for(url, client_kind)
    waiting = asyncio.create_task(http.post_json("/chat", {}))
    await asyncio.sleep(0.2)
    waiting.cancel()
    await asyncio.wait_for(upstream.closed.wait(), 2)
    await http.aclose()
    server.close()


async def test_a_head_that_drips_in_is_bounded_by_one_read_timeout() -> None:
    # A byte every 0.05 s resets no clock: the whole head must come within the timeout.
    drip = writes(*[bytes([b]) for b in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 400], pause=0.05)
    loop = asyncio.get_running_loop()
    began = loop.time()
    with pytest.raises(BackendTimeoutError, match="did not answer in time"):
        await post(drip, "parlay", timeout=0.5)
    assert loop.time() - began < 2


async def test_a_body_that_stops_halfway_is_a_timeout(client_kind: str) -> None:
    head = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{"
    with pytest.raises(BackendTimeoutError, match="in the middle of an answer"):
        await post(writes(head, pause=5), client_kind, timeout=0.3)


async def test_a_body_cut_by_the_server_is_a_cut(client_kind: str) -> None:
    head = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{"
    with pytest.raises(BackendStreamCutError, match="was cut"):
        await post(writes(head, close=True), client_kind)


async def test_an_endless_head_fails_without_reading_on(client_kind: str) -> None:
    endless = [b"HTTP/1.1 200 OK\r\n"] + [b"X-Pad: " + b"a" * 4000 + b"\r\n"] * 200
    with pytest.raises(BackendError) as caught:
        await post(writes(*endless), client_kind)
    if client_kind == "parlay":
        assert isinstance(caught.value, BackendProtocolError)
        assert "a head over 65,536 bytes" in str(caught.value)


async def test_an_answer_that_is_not_http_is_an_error(client_kind: str) -> None:
    with pytest.raises(BackendError):
        await post(writes(b"SSH-2.0-OpenSSH_9.6\r\n\r\n", close=True), client_kind)


async def test_a_429_carries_its_retry_after_and_no_secret(client_kind: str) -> None:
    page = b'{"error": {"message": "slow down, sk-secret"}}'
    with pytest.raises(BackendRateLimitError) as caught:
        await post(writes(reply(page, "429 Too Many", "Retry-After: 7")), client_kind)
    assert caught.value.retry_after == "7"
    assert "sk-secret" not in str(caught.value)


async def test_a_large_answer_read_slower_than_it_comes_arrives_whole(client_kind: str) -> None:
    body = json.dumps({"text": "x" * (3 * _http1.PAUSE_BYTES)}).encode()
    [answer] = await post(writes(*chunked(body[:1000], body[1000:])), client_kind)
    assert len(answer["text"]) == 3 * _http1.PAUSE_BYTES


async def test_a_server_that_does_not_read_is_a_write_timeout(client_kind: str) -> None:
    async def never_reads(reader: asyncio.StreamReader, writer: Writer) -> None:
        await asyncio.sleep(10)

    server = await asyncio.start_server(never_reads, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1"
    http = transport_for(url, client_kind, timeout=0.5)
    with pytest.raises(BackendTimeoutError):
        await http.post_json("/chat", {"text": "x" * 64_000_000})
    await http.aclose()
    server.close()


async def test_a_refused_connection_is_a_connection_error(client_kind: str) -> None:
    http = transport_for(f"http://127.0.0.1:{free_port()}/v1", client_kind)
    with pytest.raises(BackendConnectionError, match="cannot reach"):
        await http.post_json("/chat", {})


async def test_waiting_for_a_free_connection_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_http1, "MAX_CONNECTIONS", 1)
    _, server, url = await started(writes(*chunked(b"{"), pause=5))
    client = _http1.Http1Client(url, {}, httpx.Timeout(0.3))
    held = await client.request("POST", "/chat", b"{}")  # its body never ends
    with pytest.raises(BackendTimeoutError, match="PoolTimeout"):
        await client.request("POST", "/chat", b"{}")
    await held.aclose()
    await client.aclose()
    server.close()


async def test_an_absolute_url_must_be_on_the_same_server() -> None:
    _, server, url = await started(writes(reply(b'{"tokens": [1]}')))
    http = transport_for(url, "parlay")
    root = url.removesuffix("/v1")
    assert await http.post_json(f"{root}/tokenize", {}) == {"tokens": [1]}
    with pytest.raises(BackendError, match="is not on the server"):
        await http.post_json("http://example.invalid/tokenize", {})
    await http.aclose()
    server.close()


async def tls_upstream(tmp_path: Any) -> tuple[asyncio.Server, str, str]:
    """An https upstream whose certificate a CA of the test's own signed; the CA's file."""
    authority = trustme.CA()
    served = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    authority.issue_cert("127.0.0.1").configure_cert(served)
    upstream = Upstream(writes(reply(b'{"over": "tls"}')))
    server = await asyncio.start_server(upstream.serve, "127.0.0.1", 0, ssl=served)
    ca_file = tmp_path / "ca.pem"
    authority.cert_pem.write_to_path(str(ca_file))
    return server, f"https://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1", str(ca_file)


async def test_an_upstream_certificate_no_trusted_authority_signed_is_refused(
    client_kind: str, tmp_path: Any
) -> None:
    server, url, _ = await tls_upstream(tmp_path)
    http = transport_for(url, client_kind)
    with pytest.raises(BackendConnectionError, match="CERTIFICATE_VERIFY_FAILED"):
        await http.post_json("/chat", {})
    await http.aclose()
    server.close()


async def test_an_authority_named_by_ssl_cert_file_is_trusted(
    client_kind: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    server, url, ca_file = await tls_upstream(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", ca_file)
    http = transport_for(url, client_kind)
    assert await http.post_json("/chat", {}) == {"over": "tls"}
    await http.aclose()
    server.close()


def test_a_proxy_in_the_environment_sends_through_httpx(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    assert not HttpTransport("http://10.0.0.7:8080/v1", {}).uses_httpx
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.internal:3128")
    assert HttpTransport("http://10.0.0.7:8080/v1", {}).uses_httpx
    assert not HttpTransport("https://api.example.com/v1", {}).uses_httpx
    monkeypatch.setenv("NO_PROXY", "10.0.0.7")
    assert not HttpTransport("http://10.0.0.7:8080/v1", {}).uses_httpx


async def test_credentials_in_the_url_reach_the_server_as_basic_auth() -> None:
    upstream, server, url = await started(writes(reply(b"{}")))
    http = HttpTransport(url.replace("http://", "http://user:pw@"), {})
    assert http.uses_httpx  # httpx turns the URL's user and password into basic auth
    assert await http.post_json("/chat", {}) == {}
    await http.aclose()
    server.close()
    assert b"\r\nauthorization: basic dxnlcjpwdw==\r\n" in upstream.requests[0].lower()


def test_one_timeout_is_the_wait_for_the_model_and_connecting_takes_at_most_10_s() -> None:
    timeout = HttpTransport("http://h/v1", {}, 300.0).timeout
    assert (timeout.connect, timeout.read, timeout.write, timeout.pool) == (10.0, 300, 300, 300)
    assert HttpTransport("http://h/v1", {}, 2.0).timeout.connect == 2.0


def test_a_header_with_a_line_break_is_refused() -> None:
    with pytest.raises(BackendError, match="line break"):
        _http1.Http1Client("http://h/v1", {"x-api-key": "k\r\nX-Evil: 1"}, httpx.Timeout(1))
