"""What a load balancer and an operator ask of a replica: `/health` (the process is
alive), `/ready` (it can answer: the model is loaded or the upstream answered, the log
takes writes, and it is not shutting down) and `/metrics`; and the middleware counting
every request for the metrics."""

from __future__ import annotations

import asyncio
import os
import time
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from parlay.backends.local import LocalBackend
from parlay.errors import BackendStatusError
from parlay.server.errors import Failure
from parlay.server.metrics import CONTENT_TYPE, Metrics
from parlay.server.turn_log import ProxyLog
from parlay.server.wires import OPENAI, json_response

if TYPE_CHECKING:
    from parlay.server.app import Proxy

# Seconds a readiness check waits for the upstream or the log; a good upstream answer
# counts for UPSTREAM_FRESH_S (probes come every few seconds).
PROBE_S = 2.0
UPSTREAM_FRESH_S = 10.0
# Paths that are not requests for the model: probes and scrapes are not counted.
UNCOUNTED = frozenset({"/health", "/ready", "/metrics"})


class CountRequests:
    """ASGI middleware: each request's route, status and seconds, into `metrics`."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in UNCOUNTED:
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # an app that raised before answering

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            self.metrics.request_done(scope["path"], status, time.perf_counter() - started)


def _innermost(backend: Any) -> Any:
    for _ in range(6):  # through the engine and greedy sampling to the model itself
        inner = getattr(backend, "inner", None)
        if inner is None:
            break
        backend = inner
    return backend


class Ops:
    """The probes and the scrape of one proxy."""

    def __init__(self, proxy: Proxy, metrics: Metrics | None, log: ProxyLog | None) -> None:
        self.proxy = proxy
        self.metrics = metrics
        self.log = log
        self._model = _innermost(proxy.backend)
        self._upstream_ok_until = 0.0

    async def health(self, request: Request) -> Response:
        """`{"status": "ok"}` for anyone (load balancers need no key); what is behind it
        only for a client with a valid key, since it names the upstream."""
        proxy = self.proxy
        if proxy.draining:
            return json_response({"status": "shutting down"}, 503)
        body: dict[str, Any] = {"status": "ok"}
        if proxy.keys and proxy.key_matches(request):
            body.update(backend=proxy.backend.name, worker=os.getpid())
        return json_response(body)

    async def ready(self, request: Request) -> Response:
        """200 when this replica can answer now; else 503 and why (no key needed: the
        reasons name nothing of the infrastructure)."""
        if self.proxy.draining:
            return json_response({"status": "not ready", "reasons": ["shutting down"]}, 503)
        reasons = [r for r in (await self._model_reason(), await self._log_reason()) if r]
        if reasons:
            return json_response({"status": "not ready", "reasons": reasons}, 503)
        return json_response({"status": "ready"})

    async def _model_reason(self) -> str | None:
        model = self._model
        if isinstance(model, LocalBackend):
            # Its client exists once llama.cpp has read the model (`LocalBackend.load`).
            loaded = getattr(model, "_backend", None) is not None
            return None if loaded else "the embedded model is loading"
        http = getattr(model, "http", None)
        if http is None or time.monotonic() < self._upstream_ok_until:
            return None
        try:
            await asyncio.wait_for(http.get_json("/models"), PROBE_S)
        except BackendStatusError:
            pass  # it answered: the server is up, whatever it thinks of the route
        except Exception:
            return "the upstream does not answer"
        self._upstream_ok_until = time.monotonic() + UPSTREAM_FRESH_S
        return None

    async def _log_reason(self) -> str | None:
        if self.log is None:
            return None
        try:
            why = await asyncio.wait_for(asyncio.to_thread(self.log.writable), PROBE_S)
        except TimeoutError:
            why = "no answer"
        return None if why is None else "the log does not take writes"

    async def scrape(self, request: Request) -> Response:
        """The metrics; with client keys set, only for a scraper presenting one."""
        assert self.metrics is not None
        if self.proxy.keys and not self.proxy.key_matches(request):
            return OPENAI.error(Failure(401, "metrics need a client key"))
        return Response(self.metrics.exposition(), media_type=CONTENT_TYPE)
