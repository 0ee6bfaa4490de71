"""The proxy: OpenAI chat completions and Responses, and Anthropic messages, in front of
any `Backend`.

Each request is read (bounded), checked and decoded into a `ChatRequest` before anything
goes upstream, run through the backend, and its events encoded back in the client's
protocol: as one JSON body, or as a server-sent-event stream that forwards every event
the moment the backend yields it. Every answer, errors and unknown routes included, is
in the client's protocol. Nothing is kept between requests, so instances scale out
behind any load balancer.
"""

from __future__ import annotations

import asyncio
import hmac
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import aclosing
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from parlay.backends.base import Backend
from parlay.backends.bounds import loops_end_the_turn
from parlay.backends.offered import allowed_calls_only
from parlay.backends.tokens import count_tokens
from parlay.engine.contract.fit import FitNote, fit_here
from parlay.events import Event
from parlay.request import ChatRequest
from parlay.server.body import read_body
from parlay.server.errors import SHUTTING_DOWN, Failure, ProxyError, classify, log_failure
from parlay.server.fit_headers import fit_headers
from parlay.server.metrics import Metrics
from parlay.server.ops import CountRequests, Ops
from parlay.server.shutdown import drain_lifespan
from parlay.server.slow_clients import DEFAULT_BODY_TIMEOUT
from parlay.server.streaming import DRAIN, EventStream, Pump, cancel_on_disconnect, frames
from parlay.server.turn_log import ProxyLog
from parlay.server.turn_watch import TurnWatch
from parlay.server.wires import ANTHROPIC, OPENAI, RESPONSES, Wire, json_response, wire_for
from parlay.store import Store
from parlay.store.records import engine_of
from parlay.wire import anthropic_server as anthropic_codec
from parlay.wire.reply import ReplyBuilder
from parlay.wire.validate import DEFAULT_LIMITS, Limits, load_json

# Bodies above this size are parsed and checked in a worker thread, so that one large
# request cannot hold the event loop (and every other client) for its whole check.
THREAD_DECODE_BYTES = 256 * 1024
# How a token count was made: tokenizer, upstream or estimate.
COUNT_HEADER = "x-parlay-token-count"


class Proxy:
    """The request handlers, bound to one backend and one set of settings."""

    def __init__(
        self,
        backend: Backend,
        *,
        models: Sequence[str] = (),
        client_keys: Sequence[str] = (),
        first_event_wait: float = 5.0,
        heartbeat: float = 10.0,
        limits: Limits = DEFAULT_LIMITS,
        body_timeout: float | None = DEFAULT_BODY_TIMEOUT,
        watch: TurnWatch | None = None,
    ) -> None:
        self.backend = backend
        self.watch = watch
        self.models = tuple(models)
        self.keys = tuple(k.encode() for k in client_keys)
        self.first_event_wait = first_event_wait
        self.heartbeat = heartbeat
        self.limits = limits
        self.body_timeout = body_timeout
        self.created = int(time.time())
        self.draining = False
        self._pumps: set[Pump] = set()
        self._whole: set[asyncio.Task[Any]] = set()

    # -- checks ----------------------------------------------------------------------
    def key_matches(self, request: Request) -> bool | None:
        """Whether the request presents a valid key; None when it presents none."""
        presented = request.headers.get("x-api-key")
        if presented is None:
            auth = request.headers.get("authorization", "")
            scheme, _, token = auth.partition(" ")
            presented = token.strip() if scheme.lower() == "bearer" else None
        if not presented:
            return None
        given = presented.encode("utf-8", "replace")
        # Compare against every key without stopping early, so timing reveals nothing.
        matched = False
        for key in self.keys:
            matched |= hmac.compare_digest(given, key)
        return matched

    def _check_key(self, request: Request) -> None:
        if not self.keys:
            return
        matched = self.key_matches(request)
        if matched is None:
            raise ProxyError(
                401, "missing API key: send `Authorization: Bearer KEY` or `x-api-key: KEY`"
            )
        if not matched:
            raise ProxyError(401, "invalid API key")

    def _check_model(self, model: str) -> None:
        if self.models and model not in self.models:
            raise ProxyError(
                404, f"model {model!r} is not served here; available: {', '.join(self.models)}"
            )

    # -- serving ---------------------------------------------------------------------
    def _decode(self, wire: Wire, raw: bytes) -> tuple[Any, ChatRequest, str, bool]:
        body = load_json(raw, self.limits)
        chat, model, stream = wire.decode(body, self.limits)
        return body, chat, model, stream

    async def _serve(self, wire: Wire, request: Request) -> Response:
        if self.draining:
            return wire.error(SHUTTING_DOWN)
        if self.watch is not None:
            self.watch.arrived(request)
        try:
            self._check_key(request)
            raw = await read_body(request, self.limits.max_body_bytes, self.body_timeout)
            if len(raw) > THREAD_DECODE_BYTES:
                decoded = await asyncio.to_thread(self._decode, wire, raw)
            else:
                decoded = self._decode(wire, raw)
            body, chat, model, stream = decoded
            self._check_model(model)
            # The upstream answers with its own configured model, whatever the alias.
            chat = chat.replace(model=None)
        except Exception as exc:
            return wire.error(log_failure(exc, "decoding a request"))
        fitting = FitNote()  # filled by the engine when it fits its contract to the window
        fit_here.set(fitting)
        if stream:
            reply = await self._stream(wire, request, chat, model, body)
        else:
            reply = await self._whole_reply(wire, request, chat, model, body)
        extra = {**wire.headers(body), **fit_headers(fitting)}
        if extra:
            reply.headers.update(extra)
        return reply

    def _events(self, chat: ChatRequest) -> AsyncIterator[Event]:
        """The backend's events, less any call to a tool the client did not offer (the
        built-in backends drop those themselves; a backend of the user's own may not),
        and a reply stopped in a loop ending as a finished turn."""
        events = allowed_calls_only(self.backend.stream(chat), chat)
        events = loops_end_the_turn(events)
        return events if self.watch is None else self.watch.watch(events, chat)

    async def _whole_reply(
        self, wire: Wire, request: Request, chat: ChatRequest, model: str, body: Any
    ) -> Response:
        builder = ReplyBuilder()
        task = asyncio.current_task()
        assert task is not None
        self._whole.add(task)
        try:
            async with cancel_on_disconnect(request.receive) as watch:
                try:
                    async with aclosing(self._events(chat)) as events:  # type: ignore[type-var]
                        async for event in events:
                            builder.feed(event)
                except asyncio.CancelledError:
                    if watch.gone:
                        return Response(status_code=499)  # nobody is listening any more
                    if not self.draining:
                        raise
                    task.uncancel()  # the cancel was `drain`'s: answer, then go
                    return wire.error(SHUTTING_DOWN)
                except Exception as exc:
                    return wire.error(log_failure(exc, "a request"))
        finally:
            self._whole.discard(task)
        return json_response(wire.response(builder, model, chat, body))

    async def _stream(
        self, wire: Wire, request: Request, chat: ChatRequest, model: str, body: Any
    ) -> Response:
        pump = Pump(self._events(chat))
        self._pumps.add(pump)

        async def cleanup() -> None:
            self._pumps.discard(pump)
            await pump.close()

        # Wait a little for the first event before answering, so an upstream that is down
        # or refuses gets its real status instead of a 200 stream holding an error. A
        # backend that is merely slow (a long prompt, an engine holding a reply to judge
        # it) gets the stream started anyway, kept open by heartbeats. The connection is
        # watched meanwhile: a client gone while the engine holds its first output ends
        # the upstream request now, not at the first write.
        watch = None
        try:
            async with cancel_on_disconnect(request.receive) as watch:
                first = await pump.next(self.first_event_wait)
        except asyncio.CancelledError:
            await cleanup()
            if watch is None or not watch.gone:
                raise
            return Response(status_code=499)  # nobody is listening any more
        except Exception as exc:
            await cleanup()
            return wire.error(log_failure(exc, "a streamed request"))
        if first is DRAIN:
            await cleanup()
            return wire.error(SHUTTING_DOWN)
        out = wire.stream(model, body, chat)
        return EventStream(frames(out, first, pump, self.heartbeat), cleanup)

    def drain(self) -> None:
        """Shutting down: end every reply in flight with a 503 in its own protocol (an
        error event for a stream) and refuse new ones, instead of waiting for them."""
        self.draining = True
        for pump in list(self._pumps):
            pump.interrupt()
        for task in list(self._whole):
            task.cancel()

    async def openai_chat(self, request: Request) -> Response:
        return await self._serve(OPENAI, request)

    async def openai_responses(self, request: Request) -> Response:
        return await self._serve(RESPONSES, request)

    async def anthropic_messages(self, request: Request) -> Response:
        return await self._serve(ANTHROPIC, request)

    async def anthropic_count_tokens(self, request: Request) -> Response:
        """`/v1/messages/count_tokens`: the input tokens of a Messages request, as the model
        behind the proxy would see it (the rendered contract in prompted mode), counted by
        its tokenizer or the upstream where they can, else estimated; the header
        `x-parlay-token-count` says which."""
        if self.draining:
            return ANTHROPIC.error(SHUTTING_DOWN)
        try:
            self._check_key(request)
            raw = await read_body(request, self.limits.max_body_bytes, self.body_timeout)
            body = load_json(raw, self.limits)
            decoded = anthropic_codec.decode_request(body, self.limits, counting=True)
            self._check_model(decoded.model)
            count = await count_tokens(self.backend, decoded.chat.replace(model=None))
        except Exception as exc:
            return ANTHROPIC.error(log_failure(exc, "counting tokens"))
        return json_response(
            {"input_tokens": count.tokens}, headers={COUNT_HEADER: count.method.value}
        )

    async def list_models(self, request: Request) -> Response:
        anthropic_shape = "anthropic-version" in request.headers
        try:
            self._check_key(request)
        except ProxyError as exc:
            return (ANTHROPIC if anthropic_shape else OPENAI).error(classify(exc))
        names = self.models or ("parlay",)
        if anthropic_shape:
            stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.created))
            data = [
                {"type": "model", "id": n, "display_name": n, "created_at": stamp} for n in names
            ]
            return json_response(
                {"data": data, "has_more": False, "first_id": names[0], "last_id": names[-1]}
            )
        listing: list[dict[str, Any]] = [
            {"id": n, "object": "model", "created": self.created, "owned_by": "parlay"}
            for n in names
        ]
        return json_response({"object": "list", "data": listing})


_ROUTE_HINT = (
    "POST /v1/chat/completions, POST /v1/responses, POST /v1/messages, "
    "POST /v1/messages/count_tokens, GET /v1/models, GET /health, GET /ready or GET /metrics"
)


async def _http_error(request: Request, exc: Exception) -> Response:
    """404 and 405 in the protocol the path suggests, not Starlette's plain text."""
    assert isinstance(exc, HTTPException)
    wire = wire_for(request.url.path, request.headers)
    path = request.url.path[:200]
    if exc.status_code == 405:
        message = f"{request.method} is not allowed on {path}; this server serves {_ROUTE_HINT}"
    elif exc.status_code == 404:
        message = f"there is no route {path}; this server serves {_ROUTE_HINT}"
    else:
        message = str(exc.detail)
    failure = Failure(exc.status_code, message)
    return json_response(wire.error_body(failure), exc.status_code, dict(exc.headers or {}))


async def _crash(request: Request, exc: Exception) -> Response:
    """A bug in the proxy still answers in the client's protocol (the traceback is logged
    by the server)."""
    wire = wire_for(request.url.path, request.headers)
    return wire.error(classify(exc))


def _routes(proxy: Proxy, ops: Ops) -> list[Route]:
    scrape = [Route("/metrics", ops.scrape, methods=["GET"])] if ops.metrics else []
    return [
        *scrape,
        Route("/v1/chat/completions", proxy.openai_chat, methods=["POST"]),
        Route("/chat/completions", proxy.openai_chat, methods=["POST"]),
        Route("/v1/responses", proxy.openai_responses, methods=["POST"]),
        Route("/responses", proxy.openai_responses, methods=["POST"]),
        Route("/v1/messages", proxy.anthropic_messages, methods=["POST"]),
        Route("/v1/messages/count_tokens", proxy.anthropic_count_tokens, methods=["POST"]),
        Route("/v1/models", proxy.list_models, methods=["GET"]),
        Route("/models", proxy.list_models, methods=["GET"]),
        Route("/health", ops.health, methods=["GET"]),
        Route("/ready", ops.ready, methods=["GET"]),
    ]


def create_app(
    backend: Backend,
    *,
    models: Sequence[str] = (),
    client_keys: Sequence[str] = (),
    first_event_wait: float = 5.0,
    heartbeat: float = 10.0,
    limits: Limits = DEFAULT_LIMITS,
    body_timeout: float | None = DEFAULT_BODY_TIMEOUT,
    hard_exit_after: float | None = None,
    metrics: bool = False,
    log: Store | None = None,
) -> Starlette:
    """The ASGI app serving `backend`.

    `models`: names clients may ask for (empty accepts any). `client_keys`: keys clients
    must present (empty: open). `first_event_wait`: seconds a streamed request waits for
    the backend's first event before the stream starts (so early failures keep their HTTP
    status). `heartbeat`: seconds of backend silence after which a keep-alive is sent.
    `limits`: bounds on a request (body size, nesting, messages, max_tokens).
    `body_timeout`: seconds a request's whole body may take to arrive (408 beyond; None:
    no bound, for a server that bounds it itself).
    `hard_exit_after`: seconds after SIGTERM at which the process exits whatever it is
    doing (for `parlay serve`; leave None when the app is embedded in a larger program).
    `metrics`: serve `GET /metrics` (Prometheus; `server.metrics`). `log`: write every
    answered request to this log (`server.turn_log`).

    Under a server that runs the lifespan (uvicorn does), SIGTERM ends every reply in
    flight at once with a 503 in its own protocol, streams with an error event.

    Tool mode needs no state here: a later request that does not repeat the tools still
    carries the calls and results in its history, and the backend reads them from there
    (the prompt engine rebuilds the specs from the calls; a native upstream has its own).
    """
    metered = Metrics(engine_of(backend.name) or "native") if metrics else None
    logged = ProxyLog(log, metered.log_unwritten.inc if metered else None) if log else None
    watch = TurnWatch(backend.name, metered, logged) if metered or logged else None
    proxy = Proxy(
        backend,
        models=models,
        client_keys=client_keys,
        first_event_wait=first_event_wait,
        heartbeat=heartbeat,
        limits=limits,
        body_timeout=body_timeout,
        watch=watch,
    )
    ops = Ops(proxy, metered, logged)
    app = Starlette(
        routes=_routes(proxy, ops),
        middleware=[Middleware(CountRequests, metrics=metered)] if metered else [],
        exception_handlers={HTTPException: _http_error, Exception: _crash},
        lifespan=drain_lifespan(proxy.drain, hard_exit_after),
    )
    app.state.proxy = proxy
    return app
