"""A backend for Anthropic's Messages API (and servers that speak it), over HTTP."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from functools import partial

import httpx

from parlay.backends._http import DEFAULT_TIMEOUT, HttpTransport
from parlay.backends.base import Capabilities, checked_base_url
from parlay.backends.offered import allowed_calls_only
from parlay.backends.reply_shape import decoded
from parlay.backends.tokens import CountMethod, TokenCount, estimate
from parlay.backends.window import ContextWindow
from parlay.errors import SHAPE_ERRORS, BackendProtocolError, BackendStatusError
from parlay.events import Event
from parlay.request import ChatRequest
from parlay.wire import anthropic_client as codec

DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"
# Structured outputs: `output_config.format` with a JSON schema.
NATIVE = Capabilities(native_tools=True, json_schema=True)


class AnthropicBackend:
    """Messages over HTTP, streaming or not, with native tools.

    `base_url` and `api_key` default to `$ANTHROPIC_BASE_URL` and `$ANTHROPIC_API_KEY`;
    like Anthropic's SDK, the base URL has no `/v1` (requests go to `{base_url}/v1/messages`).
    `transport` as for `OpenAIBackend`.
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        capabilities: Capabilities = NATIVE,
        stream: bool = True,
        timeout: httpx.Timeout | float | None = DEFAULT_TIMEOUT,
        headers: dict[str, str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        context_window: int | None = None,
    ) -> None:
        self.model = model
        self.base_url = checked_base_url(
            base_url or os.environ.get("ANTHROPIC_BASE_URL") or DEFAULT_BASE_URL
        )
        key = api_key if api_key is not None else os.environ.get("ANTHROPIC_API_KEY")
        all_headers = {
            "Accept": "application/json",
            "anthropic-version": API_VERSION,
            **(headers or {}),
        }
        if key:
            all_headers["x-api-key"] = key
        self._capabilities = capabilities
        self.streaming = stream
        self.http = HttpTransport(self.base_url, all_headers, timeout, transport)
        self._has_counter = True  # until the server shows it has no count_tokens
        # Anthropic's API does not say a model's window: only what the operator gives.
        self._window = ContextWindow(context_window, "set") if context_window else None

    @property
    def name(self) -> str:
        return f"anthropic:{self.model or 'default'}@{self.base_url}"

    @property
    def capabilities(self) -> Capabilities:
        return self._capabilities

    def stream(self, request: ChatRequest) -> AsyncIterator[Event]:
        # A server may return a call to any name: only the offered ones go on.
        return allowed_calls_only(self._stream(request), request)

    async def _stream(self, request: ChatRequest) -> AsyncIterator[Event]:
        body = codec.encode_request(request, model=self.model, stream=self.streaming)
        if not body.get("model"):
            raise BackendProtocolError("the Anthropic backend needs a model name")
        if not self.streaming:
            data = await self.http.post_json("/v1/messages", body)
            if not isinstance(data, dict) or data.get("type") != "message":
                raise BackendProtocolError(
                    f"{self.base_url} answered something that is not a message: {str(data)[:200]!r}"
                )
            for event in decoded(
                partial(codec.decode_response, data), self.base_url, data, self.http.secrets
            ):
                yield event
            return
        decoder = codec.StreamDecoder()
        async for sse in self.http.post_sse("/v1/messages", body):
            if decoder.stopped:
                continue  # read to the end so the connection returns to the pool
            event_data = codec.decode_sse_data(sse.data, self.base_url)
            for event in decoded(
                partial(decoder.feed, event_data), self.base_url, event_data, self.http.secrets
            ):
                yield event
        if not decoder.stopped:
            raise BackendProtocolError(f"the stream from {self.base_url} ended before message_stop")

    async def context_window(self) -> ContextWindow | None:
        """The window given as `context_window=` (None: not known, nothing is fitted)."""
        return self._window

    async def count_tokens(self, request: ChatRequest) -> TokenCount:
        """The upstream's own count (`/v1/messages/count_tokens`); the estimate where it
        has none (it is not asked again)."""
        if not self._has_counter:
            return estimate(request)
        body = codec.encode_request(request, model=self.model, stream=False)
        for key in ("max_tokens", "stream", "temperature", "top_p", "stop_sequences"):
            body.pop(key, None)
        try:
            data = await self.http.post_json("/v1/messages/count_tokens", body)
            return TokenCount(int(data["input_tokens"]), CountMethod.UPSTREAM)
        except BackendStatusError as exc:
            if exc.status_code not in (404, 405):
                raise
        except SHAPE_ERRORS:
            pass
        self._has_counter = False
        return estimate(request)

    async def aclose(self) -> None:
        await self.http.aclose()
