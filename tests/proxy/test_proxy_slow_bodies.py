"""A client cannot hold a connection to `parlay serve` by sending its request body slowly
(an outside probe: complete headers with `Content-Length: 2000`, then a body byte a
second, held the connection for over 150 s, and 20 such connections all stayed open).
The body gets a total time (`--body-timeout`): then a 408 in the caller's protocol where
one can still be written, and the connection is closed either way."""

from __future__ import annotations

import json
import socket
import threading
import time

import httpx
import pytest
from malformed import shaped
from serve_process import parlay_serve

from parlay.errors import ConfigurationError
from parlay.server import ServerConfig

UPSTREAM = ("--upstream-url", "http://127.0.0.1:9/v1")
BODY_TIMEOUT = 2.0
# Closed at the timeout, or BODY_GRACE (1 s) after it where the app never read the body;
# the rest is slack for a loaded machine.
CLOSED_WITHIN = BODY_TIMEOUT + 2.5
# Bounds: every drip below ends by these, whatever the server does.
DRIP_SECONDS = 12.0


def _head(path: str, length: int = 2000) -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {length}\r\n\r\n"
    ).encode()


def _drip_body(port: int, path: str, every: float) -> tuple[float, bytes]:
    """Send a whole head, then the body a byte every `every` seconds, reading meanwhile.

    Returns the seconds until the server closed the connection (inf: held for the whole
    drip) and what it answered."""
    started = time.monotonic()
    answer = b""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(_head(path))
        sock.settimeout(every)
        while time.monotonic() - started < DRIP_SECONDS:
            try:
                sock.sendall(b" ")  # JSON whitespace: the body stays parseable
                data = sock.recv(4096)
            except TimeoutError:
                continue  # nothing to read yet: the server still holds the connection
            except OSError:
                break  # reset or broken pipe: closed
            if data == b"":
                break
            answer += data
        else:
            return float("inf"), answer
    return time.monotonic() - started, answer


def _status_and_body(answer: bytes) -> tuple[int, object]:
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split(b" ")[1]), json.loads(body)


def _read_answer(sock: socket.socket) -> bytes:
    """One whole answer (head and Content-Length body) from a kept-alive connection."""
    answer = b""
    for _ in range(50):  # the head and the body may come in separate reads
        answer += sock.recv(65536)
        head, sep, body = answer.partition(b"\r\n\r\n")
        length = [line for line in head.lower().split(b"\r\n") if b"content-length:" in line]
        if sep and length and len(body) >= int(length[0].split(b":")[1]):
            break
    return answer


def test_a_slow_request_body_is_closed_with_408_within_the_body_timeout() -> None:
    with parlay_serve(*UPSTREAM, "--body-timeout", str(BODY_TIMEOUT)) as srv:
        for path, api in (
            ("/v1/messages", "anthropic"),
            ("/v1/messages/count_tokens", "anthropic"),
            ("/v1/chat/completions", "openai"),
            ("/v1/responses", "openai"),
        ):
            # A byte every 0.5 s: each gap is well inside the timeout, the total is not.
            closed_after, answer = _drip_body(srv.port, path, every=0.5)
            assert BODY_TIMEOUT - 0.5 < closed_after < CLOSED_WITHIN, (path, closed_after)
            status, body = _status_and_body(answer)
            assert status == 408, (path, answer[:300])
            assert b"\r\nconnection: close\r\n" in answer.lower()
            assert shaped(api, body), (path, body)


def test_twenty_clients_sending_a_body_a_byte_at_a_time_are_all_closed() -> None:
    with parlay_serve(*UPSTREAM, "--body-timeout", str(BODY_TIMEOUT)) as srv:
        results: list[tuple[float, bytes]] = [(float("inf"), b"")] * 20

        def drip(index: int) -> None:
            results[index] = _drip_body(srv.port, "/v1/chat/completions", every=1.0)

        drips = [threading.Thread(target=drip, args=(i,), daemon=True) for i in range(20)]
        for thread in drips:
            thread.start()
        for thread in drips:
            thread.join(DRIP_SECONDS + 10)
        closed_after = [seconds for seconds, _ in results]
        assert all(seconds < CLOSED_WITHIN for seconds in closed_after), closed_after
        assert all(answer.startswith(b"HTTP/1.1 408") for _, answer in results), results
        # A client that sends its request at once is served as before.
        assert httpx.get(srv.url + "/health", timeout=5).status_code == 200


def test_a_body_nobody_reads_cannot_hold_the_connection_either() -> None:
    """A route that answers without reading the body (a 404, a 405) leaves the client
    free to go on sending it; the connection is cut all the same."""
    with parlay_serve(*UPSTREAM, "--body-timeout", str(BODY_TIMEOUT)) as srv:
        for path in ("/nowhere", "/health"):
            closed_after, answer = _drip_body(srv.port, path, every=0.5)
            assert closed_after < CLOSED_WITHIN, (path, closed_after)
            assert answer.startswith((b"HTTP/1.1 404", b"HTTP/1.1 405")), answer[:100]


def test_a_body_that_arrives_within_the_timeout_is_served() -> None:
    """Slow but in time, in pieces: read whole and answered (here with the 502 of an
    upstream that is down), not cut off; the connection then serves another request."""
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()
    with (
        parlay_serve(*UPSTREAM, "--body-timeout", str(BODY_TIMEOUT)) as srv,
        socket.create_connection(("127.0.0.1", srv.port), timeout=10) as sock,
    ):
        sock.sendall(_head("/v1/chat/completions", len(body)))
        for start in range(0, len(body), len(body) // 3 + 1):
            time.sleep(0.4)
            sock.sendall(body[start : start + len(body) // 3 + 1])
        answer = _read_answer(sock)
        assert answer.startswith(b"HTTP/1.1 502"), answer[:200]
        time.sleep(BODY_TIMEOUT + 1.5)  # past every timer the first request armed
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        again = _read_answer(sock)
        assert again.startswith(b"HTTP/1.1 200") and again.endswith(b'{"status":"ok"}'), again


def test_worker_processes_cut_slow_bodies_off_too() -> None:
    args = (*UPSTREAM, "--workers", "2", "--body-timeout", str(BODY_TIMEOUT))
    with parlay_serve(*args) as srv:
        results: list[tuple[float, bytes]] = [(float("inf"), b"")] * 4

        def drip(index: int) -> None:
            results[index] = _drip_body(srv.port, "/v1/messages", every=0.5)

        drips = [threading.Thread(target=drip, args=(i,), daemon=True) for i in range(4)]
        for thread in drips:
            thread.start()
        for thread in drips:
            thread.join(DRIP_SECONDS + 10)
        assert all(seconds < CLOSED_WITHIN for seconds, _ in results), results
        assert all(answer.startswith(b"HTTP/1.1 408") for _, answer in results), results


def test_the_body_timeout_is_a_setting_from_flag_or_environment() -> None:
    assert ServerConfig().body_timeout == 10.0
    assert ServerConfig.from_env({"PARLAY_SERVE_BODY_TIMEOUT": "3.5"}).body_timeout == 3.5
    assert (
        ServerConfig.from_env({"PARLAY_SERVE_BODY_TIMEOUT": "3.5"}, body_timeout=7).body_timeout
        == 7
    )
    for bad in (0.0, -1.0, float("inf"), float("nan")):
        with pytest.raises(ConfigurationError, match="--body-timeout"):
            ServerConfig(body_timeout=bad)
