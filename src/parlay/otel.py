"""OpenTelemetry spans for a session, in the GenAI semantic conventions (`pip install
'parlay[otel]'`).

`OpenTelemetryObserver().instrument(session)` traces, as they happen:

- every model call as a `chat {model}` span (kind CLIENT): `gen_ai.operation.name`
  "chat", `gen_ai.provider.name` (and the older `gen_ai.system`, as pydantic-ai sends
  both), `gen_ai.request.model` and the request's options, `gen_ai.response.model`,
  `gen_ai.response.finish_reasons`, `gen_ai.usage.input_tokens` / `output_tokens`,
  `gen_ai.response.time_to_first_chunk`, and the prompted engine's retries as span events
  (`parlay.engine.retry`, with the reason);
- every tool run as an `execute_tool {name}` span (kind INTERNAL): `gen_ai.tool.name`,
  `gen_ai.tool.call.id`, `gen_ai.tool.type`, `gen_ai.tool.description`.

Nothing secret: no API key or header is ever read, the server is named by host and port
only, and what was said (messages, tool arguments and results, retry details, error
messages) is recorded only with `capture_content=True`, the conventions' opt-in
(`gen_ai.input.messages`, `gen_ai.output.messages`, `gen_ai.tool.call.arguments`,
`gen_ai.tool.call.result`). Spans go to the global tracer provider unless one is given.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from parlay.context import AssistantMessage, Message, SystemMessage, ToolCall, ToolResult
from parlay.events import Event, Finish, TextDelta, ToolCallEnd, ToolCallStart
from parlay.request import ChatRequest
from parlay.tools import Toolbox

if TYPE_CHECKING:
    from parlay.backends.base import Backend, Capabilities
    from parlay.session import Session

SCOPE = "parlay"
# Backend name prefixes (`Backend.name`) and the provider they are, in the conventions'
# names where it has one.
PROVIDERS = {
    "openai": "openai",
    "anthropic": "anthropic",
    "local": "llama.cpp",
    "scripted": "parlay.scripted",
}


def _innermost(backend: Any) -> Any:
    while getattr(backend, "inner", None) is not None:
        backend = backend.inner
    return backend


def provider(backend: Any) -> str:
    prefix = str(getattr(_innermost(backend), "name", "")).split(":", 1)[0]
    return PROVIDERS.get(prefix, prefix or "unknown")


def request_model(backend: Any) -> str:
    inner = _innermost(backend)
    model = getattr(inner, "model", None)
    if isinstance(model, str) and model:
        return model
    name = str(getattr(inner, "name", ""))
    # "openai:default@https://host/v1": the model, never the URL (it may hold a password)
    model_part = name.split(":", 1)[1] if ":" in name else name
    return model_part.split("@", 1)[0] or "unknown"


def _server(backend: Any) -> dict[str, Any]:
    url = getattr(_innermost(backend), "base_url", None)
    if not isinstance(url, str):
        return {}
    parts = urlsplit(url)  # host and port only: never the user, password or query
    out: dict[str, Any] = {"server.address": parts.hostname or ""}
    if parts.port is not None:
        out["server.port"] = parts.port
    return out


def _parts(message: Message) -> list[dict[str, Any]]:
    if isinstance(message, ToolResult):
        return [{"type": "tool_call_response", "id": message.call_id, "response": message.content}]
    parts: list[dict[str, Any]] = []
    if message.content:
        parts.append({"type": "text", "content": message.content})
    if isinstance(message, AssistantMessage):
        parts.extend(
            {"type": "tool_call", "id": c.id, "name": c.name, "arguments": c.arguments}
            for c in message.tool_calls
        )
    return parts


def messages_json(messages: Sequence[Message]) -> str:
    """Messages in the conventions' JSON form (`gen_ai.input.messages`)."""
    shown = [
        {"role": "system" if isinstance(m, SystemMessage) else m.role, "parts": _parts(m)}
        for m in messages
    ]
    return json.dumps(shown, ensure_ascii=False, default=str)


class OpenTelemetryObserver:
    """Makes the spans; `instrument(session)` puts it on a session (and its forks)."""

    def __init__(self, tracer_provider: Any = None, *, capture_content: bool = False) -> None:
        self.tracer = trace.get_tracer(SCOPE, tracer_provider=tracer_provider)
        self.capture_content = capture_content

    def instrument(self, session: Session) -> Session:
        """Trace `session`'s model calls and tool runs from now on (forks made after
        share them). Returns the session."""
        if not isinstance(session.backend, TracedBackend):
            session.backend = TracedBackend(session.backend, self)
        if not isinstance(session.tools, TracedToolbox):
            session.tools = TracedToolbox(session.tools, self)
        return session

    def chat_span(self, backend: Any, request: ChatRequest) -> Span:
        model = request_model(backend)
        options = request.options
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": provider(backend),
            "gen_ai.system": provider(backend),
            "gen_ai.request.model": model,
            **_server(backend),
        }
        for key, value in (
            ("temperature", options.temperature),
            ("top_p", options.top_p),
            ("max_tokens", options.max_tokens),
            ("seed", options.seed),
            ("presence_penalty", options.presence_penalty),
            ("frequency_penalty", options.frequency_penalty),
        ):
            if value is not None:
                attributes[f"gen_ai.request.{key}"] = value
        if options.stop:
            attributes["gen_ai.request.stop_sequences"] = list(options.stop)
        if self.capture_content:
            attributes["gen_ai.input.messages"] = messages_json(request.messages)
        return self.tracer.start_span(f"chat {model}", kind=SpanKind.CLIENT, attributes=attributes)

    def finished(self, span: Span, finish: Finish, text: str, calls: list[ToolCall]) -> None:
        span.set_attribute("gen_ai.response.finish_reasons", [finish.reason])
        if finish.model:
            span.set_attribute("gen_ai.response.model", finish.model)
        if finish.usage is not None:
            span.set_attribute("gen_ai.usage.input_tokens", finish.usage.prompt_tokens)
            span.set_attribute("gen_ai.usage.output_tokens", finish.usage.completion_tokens)
        retries = finish.diagnostics.retries if finish.diagnostics is not None else ()
        for number, retry in enumerate(retries, 1):
            event: dict[str, Any] = {
                "parlay.retry.number": number,
                "parlay.retry.reason": retry.reason,
            }
            if self.capture_content and retry.detail:
                event["parlay.retry.detail"] = retry.detail
            span.add_event("parlay.engine.retry", event)
        if self.capture_content:
            reply = AssistantMessage(text, tuple(calls))
            span.set_attribute("gen_ai.output.messages", messages_json([reply]))

    def failed(self, span: Span, error: BaseException) -> None:
        span.set_attribute("error.type", type(error).__qualname__)
        detail = f"{type(error).__name__}: {error}" if self.capture_content else None
        span.set_status(Status(StatusCode.ERROR, detail))


class TracedBackend:
    """A backend whose every `stream` is a `chat` span; everything else is the inner's."""

    def __init__(self, inner: Backend, observer: OpenTelemetryObserver) -> None:
        self.traced = inner
        self.observer = observer

    @property
    def name(self) -> str:
        return self.traced.name

    @property
    def capabilities(self) -> Capabilities:
        return self.traced.capabilities

    def __getattr__(self, name: str) -> Any:
        if name == "traced":  # not set yet (a copy being made): no recursion
            raise AttributeError(name)
        return getattr(self.traced, name)

    def same_tracing(self, backend: Any, tools: Toolbox) -> tuple[Any, Toolbox]:
        """`backend` and `tools` traced by this backend's observer (a replay of a traced
        session is traced too)."""
        observer = self.observer
        if not isinstance(backend, TracedBackend):
            backend = TracedBackend(backend, observer)
        if not isinstance(tools, TracedToolbox):
            tools = TracedToolbox(tools, observer)
        return backend, tools

    async def stream(self, request: ChatRequest) -> AsyncIterator[Event]:
        span = self.observer.chat_span(self.traced, request)
        started, first = time.monotonic(), None
        text: list[str] = []
        calls: list[ToolCall] = []
        try:
            async for event in self.traced.stream(request):
                if first is None and isinstance(event, TextDelta | ToolCallStart):
                    first = time.monotonic()
                    span.set_attribute("gen_ai.response.time_to_first_chunk", first - started)
                if isinstance(event, TextDelta):
                    text.append(event.text)
                elif isinstance(event, ToolCallEnd):
                    calls.append(event.call)
                elif isinstance(event, Finish):
                    self.observer.finished(span, event, "".join(text), calls)
                yield event
        except BaseException as error:  # cancelled or failed: the span says so, then ends
            self.observer.failed(span, error)
            raise
        finally:
            span.end()


class TracedToolbox(Toolbox):
    """The tools of `inner`, each run an `execute_tool` span around the inner's `arun`."""

    def __init__(self, inner: Toolbox, observer: OpenTelemetryObserver) -> None:
        super().__init__(list(inner))
        self.inner = inner
        self.observer = observer

    async def arun(self, call: ToolCall, *, timeout: float | None = None) -> ToolResult:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.call.id": call.id,
            "gen_ai.tool.type": "function",
        }
        found = self.get(call.name)
        if found is not None and found.description:
            attributes["gen_ai.tool.description"] = found.description
        if self.observer.capture_content:
            attributes["gen_ai.tool.call.arguments"] = call.arguments_json
        tracer = self.observer.tracer
        with tracer.start_as_current_span(
            f"execute_tool {call.name}",
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            try:
                result = await self.inner.arun(call, timeout=timeout)
            except BaseException as error:
                self.observer.failed(span, error)
                raise
            if result.is_error:
                span.set_attribute("error.type", "tool_error")
                detail = result.error if self.observer.capture_content else None
                span.set_status(Status(StatusCode.ERROR, detail))
            if self.observer.capture_content:
                span.set_attribute("gen_ai.tool.call.result", result.content)
            return result


def instrument(
    session: Session, tracer_provider: Any = None, *, capture_content: bool = False
) -> Session:
    """`OpenTelemetryObserver(tracer_provider, capture_content=...).instrument(session)`."""
    observer = OpenTelemetryObserver(tracer_provider, capture_content=capture_content)
    return observer.instrument(session)


__all__ = [
    "OpenTelemetryObserver",
    "TracedBackend",
    "TracedToolbox",
    "instrument",
    "messages_json",
]
