"""Running the proxy on uvicorn, from a `ServerConfig`, in one process or several.

With `workers > 1`, uvicorn starts each worker as a fresh (spawned) process that builds
its own app: the settings travel to them in one environment variable, and each worker
makes its own backend and connections. Nothing else is shared, nor needs to be.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import socket
import sys
import threading
import time
from typing import Any

import attrs
from starlette.applications import Starlette

from parlay.backends.base import Backend
from parlay.backends.local import LocalBackend
from parlay.server.access_log import access_log_off_the_loop
from parlay.server.app import create_app
from parlay.server.config import ServerConfig, build_backend
from parlay.server.slow_clients import SlowClientProtocol
from parlay.wire.validate import Limits

# The settings of `parlay serve --workers N`, for the worker processes it starts.
CONFIG_ENV = "PARLAY_SERVE_CONFIG_JSON"
# After SIGTERM: replies in flight are ended at once (see `Proxy.drain`); uvicorn waits
# at most GRACE seconds for connections to close, and a process still alive after
# HARD_EXIT seconds (an event loop held by a runaway computation) exits regardless.
GRACE = 2.5
HARD_EXIT = 4.0


def app_from_config(
    config: ServerConfig,
    *,
    hard_exit_after: float | None = None,
    backend: Backend | None = None,
) -> Starlette:
    return create_app(
        backend if backend is not None else build_backend(config),
        models=config.advertised_models if config.models else (),
        client_keys=config.client_keys,
        limits=Limits(max_body_bytes=config.max_body_bytes),
        body_timeout=config.body_timeout,
        hard_exit_after=hard_exit_after,
        **config.observing(),
    )


def worker_app() -> Starlette:
    """The app of one worker process of `parlay serve --workers N` (a uvicorn factory)."""
    config = ServerConfig(**json.loads(os.environ[CONFIG_ENV]))
    app = app_from_config(config, hard_exit_after=HARD_EXIT)
    settle()
    return app


def serve(config: ServerConfig, *, log_level: str = "warning") -> None:
    """Block serving `config` until interrupted (SIGTERM ends it within 5 s)."""
    import uvicorn

    common: dict[str, Any] = {
        "host": config.host,
        "port": config.port,
        "log_level": log_level,
        "timeout_keep_alive": 30,
        "timeout_graceful_shutdown": GRACE,
        # httptools (h11 where it is missing), with the bounds on reading a request's
        # head and body that uvicorn lacks: see `slow_clients`. The loop is uvicorn's
        # "auto": uvloop when installed.
        "http": bounded_protocol(),
    }
    if config.workers > 1:
        # Spawned workers inherit the environment (which, unlike a command line, only
        # the same user can read: the keys in it stay as private as they were).
        os.environ[CONFIG_ENV] = json.dumps(attrs.asdict(config))
        target = "parlay.server.run:worker_app"
        workers = uvicorn.Config(target, factory=True, workers=config.workers, **common)
        _bound_slow_clients(workers, config)
        _serve_workers(workers)
        return
    backend = build_backend(config)
    embedded = _embedded_model(backend)
    if embedded is not None:
        threading.Thread(target=_load, args=(embedded,), name="parlay-load", daemon=True).start()
    app = app_from_config(config, hard_exit_after=HARD_EXIT, backend=backend)
    single = uvicorn.Config(app, **common)
    _bound_slow_clients(single, config)
    server = uvicorn.Server(single)
    settle()
    server.run()
    if not server.started:  # the port was taken, say: uvicorn has logged why
        raise SystemExit(3)


def _bound_slow_clients(uvicorn_config: Any, config: ServerConfig) -> None:
    """The bounds the protocol of `slow_clients` reads from the uvicorn `Config` it is given."""
    uvicorn_config.header_timeout = config.header_timeout
    uvicorn_config.body_timeout = config.body_timeout


def bounded_protocol() -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol with the bounds of `slow_clients`: on httptools (a C
    parser) when it is installed, else on h11."""
    try:
        from parlay.server.slow_clients_httptools import FastSlowClientProtocol
    except ImportError:  # httptools is missing (a platform without its wheel)
        return SlowClientProtocol
    return FastSlowClientProtocol


def settle() -> None:
    """Ready a process to serve (after uvicorn configured its logging): the access line
    written off the event loop, and what start-up made (modules, the app) moved out of
    the collector's sight: a full collection otherwise walks all of it, 25-45 ms with
    every request waiting (measured under 32 clients: 4 such pauses in 13 s)."""
    access_log_off_the_loop()
    gc.collect()
    gc.freeze()


def _embedded_model(backend: Any) -> LocalBackend | None:
    """The embedded model behind the engine (and greedy sampling), if that is what serves."""
    for _ in range(6):
        if isinstance(backend, LocalBackend):
            return backend
        backend = getattr(backend, "inner", None)
    return None


def _load(model: LocalBackend) -> None:
    """Read the embedded model now, and say when it is ready (or why it is not): the
    first request then gets an answer, not a wait of its own."""
    started = time.monotonic()
    try:
        model.load()
    except Exception as exc:  # the requests will fail the same way; say it once, now
        print(f"parlay serve: the embedded model could not be loaded: {exc}", file=sys.stderr)
        return
    took = time.monotonic() - started
    print(f"parlay serve: {model.model_path.name} loaded in {took:.1f} s; ready", file=sys.stderr)


def _serve_workers(config: Any) -> None:
    """uvicorn's multiprocess supervisor, on a listening socket that says it is TCP.

    `uvicorn.Config.bind_socket` leaves the socket's protocol at 0; accepted connections
    inherit it, and asyncio only turns Nagle off (TCP_NODELAY) on sockets whose protocol
    is IPPROTO_TCP. With Nagle on, each keep-alive request after the first waited ~40 ms
    for a delayed ACK (measured: 44 ms p50 against 0.4 ms; uvicorn issue #3149).
    """
    from uvicorn.supervisors import Multiprocess

    sock = config.bind_socket()
    if sock.family in (socket.AF_INET, socket.AF_INET6):
        sock = socket.socket(sock.family, sock.type, socket.IPPROTO_TCP, fileno=sock.detach())
    Multiprocess(config, sockets=[sock]).run()
