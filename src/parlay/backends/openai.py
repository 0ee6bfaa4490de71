"""A backend for any OpenAI-compatible chat-completions server.

OpenAI itself, vLLM, llama.cpp's server, Ollama's `/v1`, LM Studio...: they share the
wire format, and `parlay.wire.openai_client` holds the codec.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator

import httpx

from parlay.backends._http import DEFAULT_TIMEOUT, HttpTransport
from parlay.backends.base import Capabilities, checked_base_url
from parlay.backends.offered import offered_calls_only, offered_names
from parlay.errors import BackendProtocolError
from parlay.events import Event
from parlay.request import ChatRequest
from parlay.wire import openai_client as codec

DEFAULT_BASE_URL = "https://api.openai.com/v1"
NATIVE = Capabilities(native_tools=True, json_schema=True)


class OpenAIBackend:
    """Chat completions over httpx, streaming or not, with native tools.

    `base_url` and `api_key` default to `$OPENAI_BASE_URL` and `$OPENAI_API_KEY`.
    Pass `capabilities=Capabilities(native_tools=False, json_schema=True)` for a server
    whose model has no tool support, and wrap it in `PromptedBackend`.
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
    ) -> None:
        self.model = model
        self.base_url = checked_base_url(
            base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
        )
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        all_headers = {"Accept": "application/json", **(headers or {})}
        if key:
            all_headers["Authorization"] = f"Bearer {key}"
        self._capabilities = capabilities
        self.streaming = stream
        self.http = HttpTransport(self.base_url, all_headers, timeout, transport)

    @property
    def name(self) -> str:
        return f"openai:{self.model or 'default'}@{self.base_url}"

    @property
    def capabilities(self) -> Capabilities:
        return self._capabilities

    def stream(self, request: ChatRequest) -> AsyncIterator[Event]:
        # A server may return a call to any name: only the offered ones go on.
        return offered_calls_only(self._stream(request), offered_names(request))

    async def _stream(self, request: ChatRequest) -> AsyncIterator[Event]:
        if not self.streaming:
            body = codec.encode_request(request, model=self.model, stream=False)
            data = await self.http.post_json("/chat/completions", body)
            if not isinstance(data, dict) or "choices" not in data:
                raise BackendProtocolError(
                    f"{self.base_url} answered without 'choices': {str(data)[:200]!r}"
                )
            for event in codec.decode_response(data):
                yield event
            return
        body = codec.encode_request(request, model=self.model, stream=True)
        decoder = codec.StreamDecoder()
        done = False
        async for sse in self.http.post_sse("/chat/completions", body):
            if done:
                # Read to the end of the body: a response left unread closes its
                # connection instead of returning it to the pool (a new TCP connect and
                # close per request, which the proxy bench showed as ~2 ms).
                continue
            if sse.data.strip() == "[DONE]":
                done = True
                continue
            try:
                chunk = json.loads(sse.data)
            except json.JSONDecodeError as exc:
                raise BackendProtocolError(
                    f"{self.base_url} sent a stream chunk that is not JSON: {sse.data[:200]!r}"
                ) from exc
            if isinstance(chunk, dict) and "error" in chunk:
                raise BackendProtocolError(f"{self.base_url} sent an error mid-stream: {chunk}")
            for event in decoder.feed(chunk):
                yield event
        else:
            if not done and not decoder.saw_finish_reason:
                raise BackendProtocolError(
                    f"the stream from {self.base_url} ended before the model finished"
                )
        for event in decoder.finish():
            yield event

    async def aclose(self) -> None:
        await self.http.aclose()
