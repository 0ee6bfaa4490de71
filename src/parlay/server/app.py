"""The proxy: OpenAI chat completions and Anthropic messages in front of any `Backend`.

Each request is decoded into a `ChatRequest`, run through the backend, and its events
encoded back in the client's protocol: as one JSON body, or as a server-sent-event stream
that forwards every event the moment the backend yields it. Nothing is kept between
requests, so instances scale out behind any load balancer.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import aclosing, asynccontextmanager, suppress
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from parlay.backends.base import Backend
from parlay.errors import BackendError
from parlay.events import Event, Finish
from parlay.request import ChatRequest
from parlay.server.errors import Failure, ProxyError, classify
from parlay.wire import anthropic_server as anthropic
from parlay.wire import openai_server as openai
from parlay.wire.reply import ReplyBuilder

logger = logging.getLogger("parlay.server")

JSON = "application/json"
SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def _failure(exc: BaseException, where: str) -> Failure:
    """`classify(exc)`, logging what the operator needs: a traceback for a proxy bug."""
    failure = classify(exc)
    if failure.status >= 500 and failure.status not in (502, 504):
        logger.error("%s failed", where, exc_info=exc)
    elif failure.status >= 500:
        logger.warning("%s: %s", where, failure.message)
    return failure


def _json(data: Any, status: int = 200) -> Response:
    body = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode()
    return Response(body, status_code=status, media_type=JSON)


def _sse(data: Any, event: str | None = None) -> bytes:
    body = data if isinstance(data, str) else openai.dumps(data)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {body}\n\n".encode()


class _Wire:
    """What differs between the two protocols; the serving logic is shared."""

    name: str

    def decode(self, body: Any) -> tuple[ChatRequest, str, bool]:
        raise NotImplementedError

    def error(self, failure: Failure) -> Response:
        raise NotImplementedError

    def response(self, builder: ReplyBuilder, model: str, chat: ChatRequest) -> dict[str, Any]:
        raise NotImplementedError

    def stream(self, model: str, request_body: Any, chat: ChatRequest) -> _StreamWire:
        raise NotImplementedError


class _StreamWire:
    def start(self) -> bytes:
        raise NotImplementedError

    def heartbeat(self) -> bytes:
        """Bytes that keep an idle stream open without meaning anything to the client."""
        return b": keep-alive\n\n"

    def feed(self, event: Event) -> bytes:
        raise NotImplementedError

    def end(self) -> bytes:
        return b""

    def error(self, failure: Failure) -> bytes:
        raise NotImplementedError


class _OpenAIStream(_StreamWire):
    def __init__(self, model: str, include_usage: bool, top_logprobs: int | None) -> None:
        self.encoder = openai.StreamEncoder(
            model=model, include_usage=include_usage, top_logprobs=top_logprobs
        )

    def start(self) -> bytes:
        return b"".join(_sse(c) for c in self.encoder.start())

    def feed(self, event: Event) -> bytes:
        return b"".join(_sse(c) for c in self.encoder.feed(event))

    def end(self) -> bytes:
        return _sse(openai.DONE)

    def error(self, failure: Failure) -> bytes:
        # The SDK raises on a chunk holding "error"; nothing follows it.
        return _sse(openai.encode_error(failure.status, failure.message))


class _OpenAIWire(_Wire):
    name = "openai"

    def decode(self, body: Any) -> tuple[ChatRequest, str, bool]:
        decoded = openai.decode_request(body)
        return decoded.chat, decoded.model, decoded.stream

    def error(self, failure: Failure) -> Response:
        return _json(openai.encode_error(failure.status, failure.message), failure.status)

    def response(self, builder: ReplyBuilder, model: str, chat: ChatRequest) -> dict[str, Any]:
        top = chat.options.top_logprobs  # None unless the client asked for logprobs
        return openai.encode_response(builder.build(), model=model, top_logprobs=top)

    def stream(self, model: str, request_body: Any, chat: ChatRequest) -> _StreamWire:
        options = request_body.get("stream_options") or {}
        include_usage = bool(options.get("include_usage"))
        return _OpenAIStream(model, include_usage, chat.options.top_logprobs)


class _AnthropicStream(_StreamWire):
    def __init__(self, model: str) -> None:
        self.encoder = anthropic.StreamEncoder(model=model)

    def start(self) -> bytes:
        return b"".join(_sse(d, n) for n, d in self.encoder.start())

    def feed(self, event: Event) -> bytes:
        return b"".join(_sse(d, n) for n, d in self.encoder.feed(event))

    def error(self, failure: Failure) -> bytes:
        return _sse(anthropic.encode_error(failure.status, failure.message), "error")

    def heartbeat(self) -> bytes:
        return _sse({"type": "ping"}, "ping")


class _AnthropicWire(_Wire):
    name = "anthropic"

    def decode(self, body: Any) -> tuple[ChatRequest, str, bool]:
        decoded = anthropic.decode_request(body)
        return decoded.chat, decoded.model, decoded.stream

    def error(self, failure: Failure) -> Response:
        return _json(anthropic.encode_error(failure.status, failure.message), failure.status)

    def response(self, builder: ReplyBuilder, model: str, chat: ChatRequest) -> dict[str, Any]:
        return anthropic.encode_response(builder.build(), model=model)

    def stream(self, model: str, request_body: Any, chat: ChatRequest) -> _StreamWire:
        return _AnthropicStream(model)


OPENAI = _OpenAIWire()
ANTHROPIC = _AnthropicWire()


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
    ) -> None:
        self.backend = backend
        self.models = tuple(models)
        self._keys = tuple(k.encode() for k in client_keys)
        self.first_event_wait = first_event_wait
        self.heartbeat = heartbeat
        self.created = int(time.time())

    # -- checks ----------------------------------------------------------------------
    def _check_key(self, request: Request) -> None:
        if not self._keys:
            return
        presented = request.headers.get("x-api-key")
        if presented is None:
            auth = request.headers.get("authorization", "")
            scheme, _, token = auth.partition(" ")
            presented = token.strip() if scheme.lower() == "bearer" else None
        if not presented:
            raise ProxyError(
                401, "missing API key: send `Authorization: Bearer KEY` or `x-api-key: KEY`"
            )
        given = presented.encode()
        # Compare against every key without stopping early, so timing reveals nothing.
        matched = False
        for key in self._keys:
            matched |= hmac.compare_digest(given, key)
        if not matched:
            raise ProxyError(401, "invalid API key")

    def _check_model(self, model: str) -> None:
        if self.models and model not in self.models:
            raise ProxyError(
                404, f"model {model!r} is not served here; available: {', '.join(self.models)}"
            )

    # -- serving ---------------------------------------------------------------------
    async def _serve(self, wire: _Wire, request: Request) -> Response:
        try:
            self._check_key(request)
            raw = await request.body()
            try:
                body = json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                raise ProxyError(400, f"the request body is not valid JSON: {exc}") from exc
            chat, model, stream = wire.decode(body)
            self._check_model(model)
            # The upstream answers with its own configured model, whatever the alias.
            chat = chat.replace(model=None)
        except Exception as exc:
            return wire.error(_failure(exc, "decoding a request"))
        if stream:
            return await self._stream(wire, chat, model, body)
        builder = ReplyBuilder()
        async with _cancel_on_disconnect(request.receive) as watch:
            try:
                async with aclosing(self.backend.stream(chat)) as events:  # type: ignore[type-var]
                    async for event in events:
                        builder.feed(event)
            except asyncio.CancelledError:
                if not watch.gone:
                    raise
                return Response(status_code=499)  # nobody is listening any more
            except Exception as exc:
                return wire.error(_failure(exc, "a request"))
        return _json(wire.response(builder, model, chat))

    async def _stream(self, wire: _Wire, chat: ChatRequest, model: str, body: Any) -> Response:
        pump = _Pump(self.backend.stream(chat))
        # Wait a little for the first event before answering, so an upstream that is down
        # or refuses gets its real status instead of a 200 stream holding an error. A
        # backend that is merely slow (a long prompt, an engine holding a reply to judge
        # it) gets the stream started anyway, kept open by heartbeats.
        try:
            first = await pump.next(self.first_event_wait)
        except Exception as exc:
            await pump.close()
            return wire.error(_failure(exc, "a streamed request"))
        out = wire.stream(model, body, chat)
        return EventStream(_frames(out, first, pump, self.heartbeat))

    async def openai_chat(self, request: Request) -> Response:
        return await self._serve(OPENAI, request)

    async def anthropic_messages(self, request: Request) -> Response:
        return await self._serve(ANTHROPIC, request)

    async def list_models(self, request: Request) -> Response:
        try:
            self._check_key(request)
        except ProxyError as exc:
            wire = ANTHROPIC if "anthropic-version" in request.headers else OPENAI
            return wire.error(classify(exc))
        names = self.models or ("parlay",)
        if "anthropic-version" in request.headers:
            stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.created))
            data = [
                {"type": "model", "id": n, "display_name": n, "created_at": stamp} for n in names
            ]
            return _json(
                {"data": data, "has_more": False, "first_id": names[0], "last_id": names[-1]}
            )
        listing: list[dict[str, Any]] = [
            {"id": n, "object": "model", "created": self.created, "owned_by": "parlay"}
            for n in names
        ]
        return _json({"object": "list", "data": listing})

    async def health(self, request: Request) -> Response:
        return _json({"status": "ok", "backend": self.backend.name})


async def _close(events: AsyncIterator[Any]) -> None:
    close: Callable[[], Any] | None = getattr(events, "aclose", None)
    if close is not None:
        # Closing a failed stream must not mask the failure.
        with suppress(Exception):
            await close()


_END = object()  # the backend stream ended
_IDLE = object()  # no event within the wait


class _Pump:
    """Pulls the backend's events in one task of its own and hands them over, so that
    waiting for the next one can time out (to send a heartbeat) without cancelling the
    backend. One future and one timer per wait: cheaper than a task per event."""

    def __init__(self, events: AsyncIterator[Event]) -> None:
        self.events = events
        self.ready: deque[Any] = deque()
        self.waiter: asyncio.Future[None] | None = None
        self.task = asyncio.ensure_future(self._pull())

    async def _pull(self) -> None:
        try:
            async for event in self.events:
                self._put(event)
            self._put(_END)
        except Exception as exc:
            self._put(exc)
        except BaseException:
            # Cancelled: by `close()`, or from inside the backend. Either way the
            # consumer must not wait for an event that will never come.
            self._put(BackendError("the backend stream was cancelled"))
            raise

    def _put(self, item: Any) -> None:
        self.ready.append(item)
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)

    async def next(self, timeout: float) -> Any:
        """The next event, `_END`, or `_IDLE` if none came within `timeout` seconds.
        A failure of the backend is raised here."""
        if not self.ready:
            loop = asyncio.get_running_loop()
            self.waiter = waiter = loop.create_future()
            timer = loop.call_later(timeout, _wake, waiter)
            try:
                await waiter
            finally:
                timer.cancel()
                self.waiter = None
            if not self.ready:
                return _IDLE
        item = self.ready.popleft()
        if isinstance(item, Exception):
            raise item
        return item

    async def close(self) -> None:
        if not self.task.done():
            # Cancelling the pull closes the backend stream from inside.
            self.task.cancel()
            with suppress(BaseException):
                await self.task
        await _close(self.events)


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


async def _frames(
    out: _StreamWire, first: Any, pump: _Pump, heartbeat: float
) -> AsyncIterator[bytes]:
    """The SSE bytes: one write per event, heartbeats while the backend is quiet, and an
    error event if the stream fails midway."""
    finished = False
    try:
        head = out.start()
        item = first
        while True:
            if item is _END:
                break
            if item is _IDLE:
                head += out.heartbeat()
            else:
                finished = isinstance(item, Finish)
                head += out.feed(item)
            yield head
            if finished:
                break
            head = b""
            item = await pump.next(heartbeat)
        if not finished:
            yield head + out.error(
                Failure(502, "the upstream stream ended before the reply finished")
            )
            return
        yield out.end()
    except Exception as exc:
        yield out.error(_failure(exc, "a stream, midway"))
    finally:
        await pump.close()


class _Watch:
    gone = False


@asynccontextmanager
async def _cancel_on_disconnect(receive: Receive) -> AsyncIterator[_Watch]:
    """Cancel the current task if the client disconnects inside the block.

    A reply the client no longer waits for should not keep the model generating; the
    cancellation closes the backend stream and with it the upstream request.
    """
    task = asyncio.current_task()
    watch = _Watch()

    async def wait() -> None:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                watch.gone = True
                if task is not None:
                    task.cancel()
                return

    watcher = asyncio.create_task(wait())
    try:
        yield watch
    finally:
        watcher.cancel()
        if watch.gone and task is not None:
            task.uncancel()  # the cancel was ours; the server's task goes on


class EventStream(Response):
    """An SSE response that stops producing as soon as the client goes away.

    Starlette's `StreamingResponse` does the same with an anyio task group per response;
    a plain watcher task is cheaper, and the proxy pays it on every streamed request.
    When the client disconnects, the producing task is cancelled, which closes the
    backend stream and with it the upstream request (no tokens generated for nobody).
    """

    media_type = "text/event-stream"

    def __init__(self, frames: AsyncIterator[bytes]) -> None:
        self.frames = frames
        self.status_code = 200
        self.background = None
        self.init_headers(SSE_HEADERS)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            async with _cancel_on_disconnect(receive) as watch:
                try:
                    await send(
                        {"type": "http.response.start", "status": 200, "headers": self.raw_headers}
                    )
                    async for chunk in self.frames:
                        await send({"type": "http.response.body", "body": chunk, "more_body": True})
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
                except asyncio.CancelledError:
                    if not watch.gone:
                        raise
        finally:
            await _close(self.frames)


def create_app(
    backend: Backend,
    *,
    models: Sequence[str] = (),
    client_keys: Sequence[str] = (),
    first_event_wait: float = 5.0,
    heartbeat: float = 10.0,
) -> Starlette:
    """The ASGI app serving `backend`.

    `models`: names clients may ask for (empty accepts any). `client_keys`: keys clients
    must present (empty: open). `first_event_wait`: seconds a streamed request waits for
    the backend's first event before the stream starts (so early failures keep their HTTP
    status). `heartbeat`: seconds of backend silence after which a keep-alive is sent.

    Tool mode needs no state here: a later request that does not repeat the tools still
    carries the calls and results in its history, and the backend reads them from there
    (the prompt engine rebuilds the specs from the calls; a native upstream has its own).
    """
    proxy = Proxy(
        backend,
        models=models,
        client_keys=client_keys,
        first_event_wait=first_event_wait,
        heartbeat=heartbeat,
    )
    routes = [
        Route("/v1/chat/completions", proxy.openai_chat, methods=["POST"]),
        Route("/chat/completions", proxy.openai_chat, methods=["POST"]),
        Route("/v1/messages", proxy.anthropic_messages, methods=["POST"]),
        Route("/v1/models", proxy.list_models, methods=["GET"]),
        Route("/models", proxy.list_models, methods=["GET"]),
        Route("/health", proxy.health, methods=["GET"]),
    ]
    app = Starlette(routes=routes)
    app.state.proxy = proxy
    return app
