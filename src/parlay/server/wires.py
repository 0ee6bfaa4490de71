"""What differs between the two protocols the proxy serves; the serving logic is shared.

Each wire decodes a request body, and encodes a whole reply, a stream, or an error in
its own protocol's shape.
"""

from __future__ import annotations

import logging
import os
import re
from typing import Any

from starlette.responses import Response

from parlay.events import Event
from parlay.request import ChatRequest
from parlay.server.errors import Failure
from parlay.wire import anthropic_server as anthropic
from parlay.wire import openai_server as openai
from parlay.wire import responses_server as responses
from parlay.wire import responses_stream
from parlay.wire.reply import ReplyBuilder
from parlay.wire.sse import compact_json, encode_event, utf8
from parlay.wire.validate import DEFAULT_LIMITS, Limits

logger = logging.getLogger("parlay.server")

JSON = "application/json"
WORKER_HEADER = "x-parlay-worker"


def worker_headers() -> dict[str, str]:
    """Names the process that answered: with `--workers`, which worker it was."""
    return {WORKER_HEADER: str(os.getpid())}


def json_response(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    body = utf8(compact_json(data))
    return Response(
        body, status_code=status, media_type=JSON, headers={**worker_headers(), **(headers or {})}
    )


class StreamWire:
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


class Wire:
    name: str

    def decode(self, body: Any, limits: Limits = DEFAULT_LIMITS) -> tuple[ChatRequest, str, bool]:
        raise NotImplementedError

    def error_body(self, failure: Failure) -> dict[str, Any]:
        raise NotImplementedError

    def error(self, failure: Failure) -> Response:
        return json_response(self.error_body(failure), failure.status, failure.headers)

    def headers(self, request_body: Any) -> dict[str, str]:
        """Headers for the reply to a request that decoded."""
        return {}

    def response(
        self, builder: ReplyBuilder, model: str, chat: ChatRequest, request_body: Any = None
    ) -> dict[str, Any]:
        raise NotImplementedError

    def stream(self, model: str, request_body: Any, chat: ChatRequest) -> StreamWire:
        raise NotImplementedError


class _OpenAIStream(StreamWire):
    def __init__(self, model: str, include_usage: bool, top_logprobs: int | None) -> None:
        self.encoder = openai.StreamEncoder(
            model=model, include_usage=include_usage, top_logprobs=top_logprobs
        )

    def start(self) -> bytes:
        return b"".join(encode_event(c) for c in self.encoder.start())

    def feed(self, event: Event) -> bytes:
        return b"".join(encode_event(c) for c in self.encoder.feed(event))

    def end(self) -> bytes:
        return encode_event(openai.DONE)

    def error(self, failure: Failure) -> bytes:
        # The SDK raises on a chunk holding "error"; nothing follows it.
        return encode_event(openai.encode_error(failure.status, failure.message, code=failure.code))


class _OpenAIWire(Wire):
    name = "openai"

    def decode(self, body: Any, limits: Limits = DEFAULT_LIMITS) -> tuple[ChatRequest, str, bool]:
        decoded = openai.decode_request(body, limits)
        return decoded.chat, decoded.model, decoded.stream

    def error_body(self, failure: Failure) -> dict[str, Any]:
        return openai.encode_error(failure.status, failure.message, code=failure.code)

    def response(
        self, builder: ReplyBuilder, model: str, chat: ChatRequest, request_body: Any = None
    ) -> dict[str, Any]:
        top = chat.options.top_logprobs  # None unless the client asked for logprobs
        return openai.encode_response(builder.build(), model=model, top_logprobs=top)

    def stream(self, model: str, request_body: Any, chat: ChatRequest) -> StreamWire:
        options = request_body.get("stream_options") or {}
        return _OpenAIStream(model, options.get("include_usage") is True, chat.options.top_logprobs)


class _AnthropicStream(StreamWire):
    def __init__(self, model: str, thinking: bool) -> None:
        self.encoder = anthropic.StreamEncoder(model=model, thinking=thinking)

    def start(self) -> bytes:
        return b"".join(encode_event(d, n) for n, d in self.encoder.start())

    def feed(self, event: Event) -> bytes:
        return b"".join(encode_event(d, n) for n, d in self.encoder.feed(event))

    def error(self, failure: Failure) -> bytes:
        return encode_event(anthropic.encode_error(failure.status, failure.message), "error")

    def heartbeat(self) -> bytes:
        return encode_event({"type": "ping"}, "ping")


class _AnthropicWire(Wire):
    name = "anthropic"

    def decode(self, body: Any, limits: Limits = DEFAULT_LIMITS) -> tuple[ChatRequest, str, bool]:
        decoded = anthropic.decode_request(body, limits)
        return decoded.chat, decoded.model, decoded.stream

    def error_body(self, failure: Failure) -> dict[str, Any]:
        return anthropic.encode_error(failure.status, failure.message)

    def response(
        self, builder: ReplyBuilder, model: str, chat: ChatRequest, request_body: Any = None
    ) -> dict[str, Any]:
        thinking = anthropic.shows_thinking(request_body)
        return anthropic.encode_response(builder.build(), model=model, thinking=thinking)

    def stream(self, model: str, request_body: Any, chat: ChatRequest) -> StreamWire:
        return _AnthropicStream(model, anthropic.shows_thinking(request_body))


# Names the client's tools that the model was not offered (hosted and custom tools).
NOT_OFFERED_HEADER = "x-parlay-tools-not-offered"
_UNPRINTABLE = re.compile(r"[^\x20-\x7e]")


class _ResponsesStream(StreamWire):
    def __init__(self, model: str, echo: responses.Echo) -> None:
        self.encoder = responses_stream.StreamEncoder(model=model, echo=echo)
        self._frames = responses_stream.FrameWriter(echo).write

    def start(self) -> bytes:
        return self._frames(self.encoder.start())

    def feed(self, event: Event) -> bytes:
        return self._frames(self.encoder.feed(event))

    def error(self, failure: Failure) -> bytes:
        return self._frames(self.encoder.error(failure.status, failure.message, failure.code))


class _ResponsesWire(Wire):
    """OpenAI's Responses API: errors in OpenAI's shape, replies as `response` objects."""

    name = "responses"

    def decode(self, body: Any, limits: Limits = DEFAULT_LIMITS) -> tuple[ChatRequest, str, bool]:
        decoded = responses.decode_request(body, limits)
        if decoded.layout.not_offered:
            logger.debug(
                "responses: tools not offered to the model: %s",
                ", ".join(decoded.layout.not_offered),
            )
        return decoded.chat, decoded.model, decoded.stream

    def headers(self, request_body: Any) -> dict[str, str]:
        tools = request_body.get("tools")
        names = responses.tool_layout(tools if isinstance(tools, list) else None).not_offered
        # A header value is printable ASCII here; a name is the client's to choose.
        text = _UNPRINTABLE.sub("?", ", ".join(names))
        return {NOT_OFFERED_HEADER: text[:2000]} if names else {}

    def error_body(self, failure: Failure) -> dict[str, Any]:
        return openai.encode_error(failure.status, failure.message, code=failure.code)

    def response(
        self, builder: ReplyBuilder, model: str, chat: ChatRequest, request_body: Any = None
    ) -> dict[str, Any]:
        echo = responses.echo_of(request_body or {})
        return responses.encode_response(builder.build(), model=model, echo=echo)

    def stream(self, model: str, request_body: Any, chat: ChatRequest) -> StreamWire:
        return _ResponsesStream(model, responses.echo_of(request_body))


OPENAI = _OpenAIWire()
ANTHROPIC = _AnthropicWire()
RESPONSES = _ResponsesWire()


def wire_for(path: str, headers: Any) -> Wire:
    """The protocol a request without a route of its own speaks: by its path, else by
    Anthropic's version header, else OpenAI's."""
    if path.startswith("/v1/messages") or "anthropic-version" in headers:
        return ANTHROPIC
    return OPENAI
