"""`parlay.otel`: spans in OpenTelemetry's GenAI conventions, read from the SDK's in-memory
exporter."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from parlay import (
    Capabilities,
    Diagnostics,
    Finish,
    GenerationOptions,
    OpenAIBackend,
    PromptedBackend,
    ScriptedBackend,
    Session,
    TextDelta,
    ToolCall,
    Usage,
)
from parlay.backends.scripted import calls
from parlay.diagnostics import RetryRecord
from parlay.events import Event
from parlay.otel import OpenTelemetryObserver, instrument
from parlay.request import ChatRequest

SECRET = "sk-test-DO-NOT-LEAK"


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def broken(a: int) -> int:
    """Always fails."""
    raise ValueError("the private reason")


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


def provider(exporter: InMemorySpanExporter) -> TracerProvider:
    made = TracerProvider()
    made.add_span_processor(SimpleSpanProcessor(exporter))
    return made


def every_value(spans: list[ReadableSpan]) -> str:
    parts = []
    for span in spans:
        parts.append(span.name)
        parts.extend(str(v) for v in (span.attributes or {}).values())
        parts.extend(str(v) for e in span.events for v in (e.attributes or {}).values())
        parts.append(str(span.status.description))
    return "\n".join(parts)


def test_a_tool_loop_is_chat_and_execute_tool_spans_with_usage(
    exporter: InMemorySpanExporter,
) -> None:
    backend = ScriptedBackend([calls(("add", {"a": 2, "b": 3})), "five"])
    session = instrument(Session(backend, tools=[add]), provider(exporter))
    session.options = GenerationOptions(temperature=0.2, max_tokens=64, seed=7)
    session.query(None, "What is 2 + 3?").value  # noqa: B018
    chat1, tool, chat2 = exporter.get_finished_spans()
    assert (chat1.name, tool.name, chat2.name) == (
        "chat scripted",
        "execute_tool add",
        "chat scripted",
    )
    assert chat1.kind is SpanKind.CLIENT and tool.kind is SpanKind.INTERNAL
    attributes = chat1.attributes or {}
    assert attributes["gen_ai.operation.name"] == "chat"
    assert attributes["gen_ai.provider.name"] == attributes["gen_ai.system"] == "parlay.scripted"
    assert attributes["gen_ai.request.model"] == "scripted"
    assert (
        attributes["gen_ai.request.temperature"] == 0.2 and attributes["gen_ai.request.seed"] == 7
    )
    assert attributes["gen_ai.request.max_tokens"] == 64
    assert attributes["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert (
        attributes["gen_ai.usage.input_tokens"] == 1 and "gen_ai.usage.output_tokens" in attributes
    )
    assert "gen_ai.response.time_to_first_chunk" in attributes
    (call,) = session.ctx[-1].steps[0].tool_calls
    assert tool.attributes == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "add",
        "gen_ai.tool.call.id": call.id,
        "gen_ai.tool.type": "function",
        "gen_ai.tool.description": "Add two integers.",
    }
    assert tool.status.status_code is StatusCode.UNSET


class RetryingBackend:
    """A backend whose reply reports two retries of the engine, as the prompted one does."""

    name = "scripted"
    capabilities = Capabilities(native_tools=True)

    async def stream(self, request: ChatRequest) -> AsyncIterator[Event]:
        retries = (RetryRecord("unknown_tool", "wrote 'ad'"), RetryRecord("bad_json", "cut"))
        yield TextDelta("ok")
        yield Finish("stop", Usage(5, 1), diagnostics=Diagnostics(retries=retries))


def test_the_engines_retries_are_span_events(exporter: InMemorySpanExporter) -> None:
    session = instrument(Session(RetryingBackend()), provider(exporter))
    session.chat("hi").value  # noqa: B018
    (span,) = exporter.get_finished_spans()
    assert [(e.name, dict(e.attributes or {})) for e in span.events] == [
        ("parlay.engine.retry", {"parlay.retry.number": 1, "parlay.retry.reason": "unknown_tool"}),
        ("parlay.engine.retry", {"parlay.retry.number": 2, "parlay.retry.reason": "bad_json"}),
    ]


def openai_backend() -> OpenAIBackend:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200,
            json={
                "id": "r1",
                "model": "gpt-test-0001",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "fine"},
                             "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11},
            },
        )  # fmt: skip

    return OpenAIBackend(
        "gpt-test",
        base_url="https://user:hunter2@api.example.com:8443/v1?token=abc",
        api_key=SECRET,
        stream=False,
        transport=httpx.MockTransport(answer),
    )


def test_nothing_secret_and_no_content_by_default(exporter: InMemorySpanExporter) -> None:
    session = instrument(Session(openai_backend(), tools=[broken]), provider(exporter))
    session.chat("my private question").value  # noqa: B018
    # a tool run that fails with a private reason
    asyncio.run(session.tools.arun(ToolCall("broken", {"a": 1}, id="c1")))
    chat, tool = exporter.get_finished_spans()
    attributes = chat.attributes or {}
    assert chat.name == "chat gpt-test" and attributes["gen_ai.provider.name"] == "openai"
    assert attributes["gen_ai.response.model"] == "gpt-test-0001"
    assert (attributes["server.address"], attributes["server.port"]) == ("api.example.com", 8443)
    assert tool.status.status_code is StatusCode.ERROR and tool.status.description is None
    assert (tool.attributes or {})["error.type"] == "tool_error"
    seen = every_value([chat, tool])
    for secret in (SECRET, "hunter2", "token=abc", "user:", "my private question", "fine",
                   "private reason", '"a": 1'):  # fmt: skip
        assert secret not in seen


def test_content_is_recorded_when_the_user_opts_in(exporter: InMemorySpanExporter) -> None:
    backend = ScriptedBackend([calls(("add", {"a": 2, "b": 3})), "five"])
    observer = OpenTelemetryObserver(provider(exporter), capture_content=True)
    session = observer.instrument(Session(backend, tools=[add], system="be exact"))
    session.query(None, "What is 2 + 3?").value  # noqa: B018
    chat1, tool, chat2 = exporter.get_finished_spans()
    sent = json.loads((chat1.attributes or {})["gen_ai.input.messages"])
    assert sent[0] == {"role": "system", "parts": [{"type": "text", "content": "be exact"}]}
    said = json.loads((chat1.attributes or {})["gen_ai.output.messages"])
    assert said[0]["parts"][0]["type"] == "tool_call" and said[0]["parts"][0]["name"] == "add"
    assert (tool.attributes or {})["gen_ai.tool.call.arguments"] == '{"a": 2, "b": 3}'
    assert (tool.attributes or {})["gen_ai.tool.call.result"] == "5"
    assert json.loads((chat2.attributes or {})["gen_ai.input.messages"])[-1]["parts"][0] == {
        "type": "tool_call_response", "id": tool.attributes["gen_ai.tool.call.id"], "response": "5",
    }  # fmt: skip


def test_a_failed_model_call_ends_its_span_as_an_error(exporter: InMemorySpanExporter) -> None:
    def fails(request: Any) -> str:
        raise RuntimeError("upstream said no")

    session = instrument(Session(ScriptedBackend(fails)), provider(exporter))
    with pytest.raises(RuntimeError):
        session.chat("hi").value  # noqa: B018
    (span,) = exporter.get_finished_spans()
    assert span.status.status_code is StatusCode.ERROR
    assert (span.attributes or {})["error.type"] == "RuntimeError"


def test_the_prompted_engine_is_named_by_the_model_behind_it(
    exporter: InMemorySpanExporter,
) -> None:
    inner = ScriptedBackend(["hello"], capabilities=Capabilities(native_tools=False))
    session = instrument(Session(PromptedBackend(inner)), provider(exporter))
    session.chat("hi").value  # noqa: B018
    (span,) = exporter.get_finished_spans()
    assert (span.attributes or {})["gen_ai.provider.name"] == "parlay.scripted"


def test_instrumenting_twice_traces_once_and_forks_are_traced(
    exporter: InMemorySpanExporter,
) -> None:
    observer = OpenTelemetryObserver(provider(exporter))
    session = observer.instrument(observer.instrument(Session(ScriptedBackend(["a", "b"]))))
    session.chat("one").value  # noqa: B018
    session.fork().chat("two").value  # noqa: B018
    assert [s.name for s in exporter.get_finished_spans()] == ["chat scripted"] * 2


def test_a_replay_of_a_traced_session_is_traced_and_reused_results_are_not_tool_runs(
    exporter: InMemorySpanExporter,
) -> None:
    def model(request: ChatRequest) -> Any:
        return calls(("add", {"a": 2, "b": 3})) if request.messages[-1].role == "user" else "five"

    session = instrument(Session(ScriptedBackend(model), tools=[add]), provider(exporter))
    session.chat("2 + 3?", run_tools=True).value  # noqa: B018
    exporter.clear()
    session.replay(ScriptedBackend(model))  # another backend, traced as the session is
    assert [s.name for s in exporter.get_finished_spans()] == [
        "chat scripted", "execute_tool add", "chat scripted",
    ]  # fmt: skip
    exporter.clear()
    session.replay(results="recorded")
    assert [s.name for s in exporter.get_finished_spans()] == ["chat scripted"] * 2
