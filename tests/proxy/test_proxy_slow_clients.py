"""A client cannot hold a connection to `parlay serve` by sending its request head slowly
(an outside probe: 20 connections sending their headers a byte at a time were held for a
minute), and an empty client key is refused at start, not served to a wall of 401s."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time

import httpx
from serve_process import parlay_serve

HEAD = (
    b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    b"Content-Type: application/json\r\nContent-Length: 2\r\n\r\n"
)
# Bounds: every loop below ends by these, whatever the server does.
DRIP_SECONDS = 15.0
DRIP_EVERY = 0.1


def _drip(port: int, closed_after: list[float], index: int) -> None:
    """Send HEAD a byte at a time; note when the server closed the connection."""
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=2) as sock:
        sock.settimeout(DRIP_EVERY)
        for byte in (HEAD * 100)[: int(DRIP_SECONDS / DRIP_EVERY)]:
            try:
                sock.sendall(bytes([byte]))
                if sock.recv(1024) == b"":
                    break
            except TimeoutError:
                continue  # nothing to read yet: the server still holds the connection
            except OSError:
                break  # reset or broken pipe: closed
        else:
            return  # held for the whole drip: never closed
    closed_after[index] = time.monotonic() - started


def test_twenty_clients_sending_headers_a_byte_at_a_time_are_cut_off() -> None:
    with parlay_serve("--upstream-url", "http://127.0.0.1:9/v1", "--header-timeout", "1") as srv:
        closed_after = [float("inf")] * 20
        drips = [
            threading.Thread(target=_drip, args=(srv.port, closed_after, i), daemon=True)
            for i in range(20)
        ]
        for drip in drips:
            drip.start()
        for drip in drips:
            drip.join(DRIP_SECONDS + 10)
        assert all(seconds < 5 for seconds in closed_after), closed_after
        # A client that sends its request at once is served as before.
        assert httpx.get(srv.url + "/health", timeout=5).status_code == 200


def test_a_connection_that_sends_nothing_is_closed_too() -> None:
    with (
        parlay_serve("--upstream-url", "http://127.0.0.1:9/v1", "--header-timeout", "1") as srv,
        socket.create_connection(("127.0.0.1", srv.port), timeout=10) as sock,
    ):
        started = time.monotonic()
        assert sock.recv(1024) == b""  # the server hung up (a timeout would raise)
        assert time.monotonic() - started < 5


def test_a_kept_alive_connection_gets_the_same_bound_for_its_next_request() -> None:
    with (
        parlay_serve("--upstream-url", "http://127.0.0.1:9/v1", "--header-timeout", "1") as srv,
        socket.create_connection(("127.0.0.1", srv.port), timeout=10) as sock,
    ):
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        answer = b""
        for _ in range(20):  # the head and the body may come in separate reads
            answer += sock.recv(4096)
            if answer.endswith(b'{"status":"ok"}'):
                break
        assert answer.startswith(b"HTTP/1.1 200"), answer
        sock.sendall(b"GET /hea")  # then nothing more
        started = time.monotonic()
        assert sock.recv(1024) == b""
        assert time.monotonic() - started < 5


def test_an_empty_client_key_is_refused_at_start() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PARLAY_SERVE_")}
    code = "from parlay.cli.app import main; main()"
    done = subprocess.run(
        [sys.executable, "-c", code, "serve", "--upstream-url", "http://up/v1", "--client-key", ""],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 2
    assert "--client-key is empty" in done.stderr
    assert "Traceback" not in done.stderr


def test_worker_processes_cut_slow_heads_off_too() -> None:
    args = ("--upstream-url", "http://127.0.0.1:9/v1", "--workers", "2", "--header-timeout", "1")
    with parlay_serve(*args) as srv:
        closed_after = [float("inf")] * 4
        drips = [
            threading.Thread(target=_drip, args=(srv.port, closed_after, i), daemon=True)
            for i in range(4)
        ]
        for drip in drips:
            drip.start()
        for drip in drips:
            drip.join(DRIP_SECONDS + 10)
        assert all(seconds < 5 for seconds in closed_after), closed_after
