"""A backend for any OpenAI-compatible chat-completions server.

OpenAI itself, vLLM, llama.cpp's server, Ollama's `/v1`, LM Studio...: they share the
wire format, and `parlay.wire.openai_client` holds the codec.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from functools import partial
from typing import Any

import httpx

from parlay.backends._http import DEFAULT_TIMEOUT, HttpTransport
from parlay.backends.base import Capabilities, checked_base_url
from parlay.backends.model_timings import FirstTokenClock, log_timings
from parlay.backends.offered import allowed_calls_only
from parlay.backends.reply_shape import decoded
from parlay.backends.tokens import CountMethod, TokenCount, estimate
from parlay.backends.window import ContextWindow, ask_upstream
from parlay.errors import (
    SHAPE_ERRORS,
    BackendProtocolError,
    BackendStatusError,
    ConfigurationError,
)
from parlay.events import Event
from parlay.request import ChatRequest
from parlay.wire import openai_client as codec

DEFAULT_BASE_URL = "https://api.openai.com/v1"
NATIVE = Capabilities(native_tools=True, json_schema=True)


class OpenAIBackend:
    """Chat completions over HTTP, streaming or not, with native tools.

    `base_url` and `api_key` default to `$OPENAI_BASE_URL` and `$OPENAI_API_KEY`.
    Pass `capabilities=Capabilities(native_tools=False, json_schema=True)` for a server
    whose model has no tool support, and wrap it in `PromptedBackend`. `context_window`:
    the model's window in tokens (None: asked of the server once, see `context_window()`).
    `transport`: an `httpx.AsyncBaseTransport` to send through (a mock in tests, a proxy
    of your own); without one, parlay's own HTTP/1.1 client, or httpx where the
    environment names a proxy for the server.
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
            base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
        )
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        all_headers = {"Accept": "application/json", **(headers or {})}
        if key:
            all_headers["Authorization"] = f"Bearer {key}"
        self._capabilities = capabilities
        self.streaming = stream
        self.http = HttpTransport(self.base_url, all_headers, timeout, transport)
        self._has_tokenizer = True  # until the server shows it has no /tokenize
        self._listed: list[str] | None = None  # the server's models, once asked
        # The model's window: given, or asked of the server once (None: it did not say).
        self._window: ContextWindow | None = (
            ContextWindow(context_window, "set") if context_window else None
        )
        self._window_asked = context_window is not None

    @property
    def name(self) -> str:
        return f"openai:{self.model or 'default'}@{self.base_url}"

    @property
    def capabilities(self) -> Capabilities:
        return self._capabilities

    async def served_model(self) -> str | None:
        """The model to name: the one given, else the one the server lists at `/models`
        (asked once). A server that lists several is an error naming them; one that lists
        none, or has no listing, gets requests without a model, as before."""
        if self.model is not None:
            return self.model
        if self._listed is None:
            self._listed = await self._list_models()
        if len(self._listed) > 1:
            names = ", ".join(self._listed[:20]) + (", ..." if len(self._listed) > 20 else "")
            raise ConfigurationError(
                f"{self.base_url} serves {len(self._listed)} models ({names}): name one, "
                f"as MODEL@{self.base_url} with -m, $PARLAY_MODEL, or OpenAIBackend(model=...)"
            )
        return self._listed[0] if self._listed else None

    async def _list_models(self) -> list[str]:
        try:
            listing = await self.http.get_json("/models")
        except (BackendStatusError, BackendProtocolError):
            return []
        data = listing.get("data") if isinstance(listing, dict) else None
        if not isinstance(data, list):
            return []
        return [str(m["id"]) for m in data if isinstance(m, dict) and m.get("id")]

    def stream(self, request: ChatRequest) -> AsyncIterator[Event]:
        # A server may return a call to any name: only the offered ones go on.
        return allowed_calls_only(self._stream(request), request)

    async def _stream(self, request: ChatRequest) -> AsyncIterator[Event]:
        if request.model is None and self.model is None:
            request = request.replace(model=await self.served_model())
        if not self.streaming:
            async for event in self._whole(request):
                yield event
            return
        body = codec.encode_request(request, model=self.model, stream=True)
        decoder = codec.StreamDecoder()
        clock = FirstTokenClock()
        try:
            async for event in self._read_stream(body, decoder):
                clock.saw_event()
                yield event
        finally:  # a reply the engine cut short still says when its first token came
            clock.log(self.base_url)
        log_timings(decoder.timings, self.base_url)
        for event in decoded(decoder.finish, self.base_url, "its stream's end", self.http.secrets):
            yield event

    async def _read_stream(
        self, body: dict[str, Any], decoder: codec.StreamDecoder
    ) -> AsyncIterator[Event]:
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
            chunk = self._chunk(sse.data)
            for event in decoded(
                partial(decoder.feed, chunk), self.base_url, chunk, self.http.secrets
            ):
                yield event
        else:
            if not done and not decoder.saw_finish_reason:
                raise BackendProtocolError(
                    f"the stream from {self.base_url} ended before the model finished"
                )

    async def _whole(self, request: ChatRequest) -> AsyncIterator[Event]:
        """The reply of a request that does not stream."""
        body = codec.encode_request(request, model=self.model, stream=False)
        data = await self.http.post_json("/chat/completions", body)
        if not isinstance(data, dict) or "choices" not in data:
            raise BackendProtocolError(
                f"{self.base_url} answered without 'choices': {str(data)[:200]!r}"
            )
        for event in decoded(
            partial(codec.decode_response, data), self.base_url, data, self.http.secrets
        ):
            yield event

    def _chunk(self, data: str) -> Any:
        """One stream chunk's JSON; an error for one that is not JSON or reports an error."""
        try:
            chunk = json.loads(data)
        except (json.JSONDecodeError, RecursionError) as exc:
            raise BackendProtocolError(
                f"{self.base_url} sent a stream chunk that is not JSON: {data[:200]!r}"
            ) from exc
        if isinstance(chunk, dict) and "error" in chunk:
            raise BackendProtocolError(f"{self.base_url} sent an error mid-stream: {chunk}")
        return chunk

    async def context_window(self) -> ContextWindow | None:
        """The model's window: as given, else from the server's own endpoints, asked once
        (`parlay.backends.window.ask_upstream`)."""
        if not self._window_asked:
            self._window_asked = True
            self._window = await ask_upstream(self.http, self.base_url, self.model)
        return self._window

    async def count_tokens(self, request: ChatRequest) -> TokenCount:
        """With llama.cpp's server: its own chat template and tokenizer over the prompt the
        model would see (`/apply-template`, then `/tokenize`); a server without them
        (OpenAI's, vLLM's) gets the estimate, and is not asked again."""
        if not self._has_tokenizer:
            return estimate(request)
        body = codec.encode_request(request, model=self.model, stream=False)
        template: dict[str, Any] = {k: body[k] for k in ("messages", "tools") if k in body}
        root = server_root(self.base_url)
        try:
            applied = await self.http.post_json(f"{root}/apply-template", template)
            tokenized = await self.http.post_json(
                f"{root}/tokenize", {"content": applied["prompt"], "add_special": True}
            )
            return TokenCount(len(tokenized["tokens"]), CountMethod.TOKENIZER)
        except (BackendStatusError, BackendProtocolError, *SHAPE_ERRORS):
            self._has_tokenizer = False
            return estimate(request)

    async def aclose(self) -> None:
        await self.http.aclose()


def server_root(base_url: str) -> str:
    """The server's own address under an OpenAI-style `/v1` base URL (llama.cpp keeps its
    tokenizer endpoints there)."""
    root = base_url.rstrip("/")
    return root.removesuffix("/v1")
