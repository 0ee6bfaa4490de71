"""The official SDKs against the proxy on uvicorn, over a scripted backend: exact replies,
so the SDKs' own parsers and stream accumulators are checked against known content."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest
from proxy_harness import RunningServer, running

from parlay import AnthropicBackend, AssistantMessage, ScriptedBackend, ToolCall
from parlay.server import create_app

TWO_CALLS = AssistantMessage(
    "Checking both.",
    (
        ToolCall("get_weather", {"city": "Paris"}, "call_p"),
        ToolCall("get_weather", {"city": "Oslo"}, "call_o"),
    ),
)
TOOLS_OA: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]
TOOLS_AN: list[Any] = [
    {
        "name": "get_weather",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
]


def script(request: Any) -> Any:
    """Calls while the last message is the user's; a text answer after tool results."""
    last = request.messages[-1]
    if getattr(last, "role", "") == "tool":
        return "Paris is sunny, Oslo is rainy."
    return TWO_CALLS


@pytest.fixture(scope="module")
def proxy() -> Iterator[RunningServer]:
    backend = ScriptedBackend(script, chunk_size=4)
    with running(create_app(backend, models=["smol"], client_keys=["sk-test"])) as server:
        yield server


@pytest.fixture
def oa(proxy: RunningServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=proxy.url + "/v1", api_key="sk-test", max_retries=0, timeout=10)


@pytest.fixture
def an(proxy: RunningServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=proxy.url, api_key="sk-test", max_retries=0, timeout=10)


def test_openai_non_streaming(oa: openai.OpenAI) -> None:
    done = oa.chat.completions.create(
        model="smol", messages=[{"role": "user", "content": "w?"}], tools=TOOLS_OA
    )
    choice = done.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert [(c.id, c.function.arguments) for c in choice.message.tool_calls or []] == [
        ("call_p", '{"city": "Paris"}'),
        ("call_o", '{"city": "Oslo"}'),
    ]


def test_openai_stream_helper_accumulates_calls(oa: openai.OpenAI) -> None:
    with oa.chat.completions.stream(
        model="smol",
        messages=[{"role": "user", "content": "w?"}],
        tools=TOOLS_OA,
        stream_options={"include_usage": True},
    ) as stream:
        kinds = {type(e).__name__ for e in stream}
        final = stream.get_final_completion()
    assert {
        "ContentDeltaEvent",
        "FunctionToolCallArgumentsDeltaEvent",
        "FunctionToolCallArgumentsDoneEvent",
    } <= kinds
    message = final.choices[0].message
    assert message.content == "Checking both."
    assert [(c.function.name, c.function.arguments) for c in message.tool_calls or []] == [
        ("get_weather", '{"city": "Paris"}'),
        ("get_weather", '{"city": "Oslo"}'),
    ]
    assert final.choices[0].finish_reason == "tool_calls"
    assert final.usage is not None


def test_openai_continuation(oa: openai.OpenAI) -> None:
    messages: list[Any] = [
        {"role": "user", "content": "w?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_p",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_p", "content": "sunny"},
    ]
    done = oa.chat.completions.create(model="smol", messages=messages)
    assert done.choices[0].message.content == "Paris is sunny, Oslo is rainy."
    assert done.choices[0].finish_reason == "stop"


def test_openai_errors_are_sdk_exceptions(proxy: RunningServer) -> None:
    bad = openai.OpenAI(base_url=proxy.url + "/v1", api_key="wrong", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        bad.chat.completions.create(model="smol", messages=[{"role": "user", "content": "x"}])
    good = openai.OpenAI(base_url=proxy.url + "/v1", api_key="sk-test", max_retries=0)
    with pytest.raises(openai.NotFoundError):
        good.chat.completions.create(model="nope", messages=[{"role": "user", "content": "x"}])
    with pytest.raises(openai.BadRequestError):
        good.chat.completions.create(model="smol", messages=[])
    assert [m.id for m in good.models.list()] == ["smol"]


def test_anthropic_non_streaming(an: anthropic.Anthropic) -> None:
    message = an.messages.create(
        model="smol", max_tokens=10, messages=[{"role": "user", "content": "w?"}], tools=TOOLS_AN
    )
    assert message.stop_reason == "tool_use"
    assert [b.type for b in message.content] == ["text", "tool_use", "tool_use"]
    assert [b.input for b in message.content if b.type == "tool_use"] == [
        {"city": "Paris"},
        {"city": "Oslo"},
    ]


def test_anthropic_stream_helper_final_message(an: anthropic.Anthropic) -> None:
    with an.messages.stream(
        model="smol", max_tokens=10, messages=[{"role": "user", "content": "w?"}], tools=TOOLS_AN
    ) as stream:
        kinds = {e.type for e in stream}
        final = stream.get_final_message()
    assert {
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_stop",
    } <= kinds
    assert final.stop_reason == "tool_use"
    assert final.content[0].type == "text" and final.content[0].text == "Checking both."
    assert [(b.id, b.input) for b in final.content if b.type == "tool_use"] == [
        ("call_p", {"city": "Paris"}),
        ("call_o", {"city": "Oslo"}),
    ]


def test_anthropic_continuation(an: anthropic.Anthropic) -> None:
    message = an.messages.create(
        model="smol",
        max_tokens=10,
        messages=[
            {"role": "user", "content": "w?"},
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "t1",
                        "name": "get_weather",
                        "input": {"city": "Paris"},
                    }
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "sunny"}],
            },
        ],
    )
    assert message.stop_reason == "end_turn"
    assert message.content[0].type == "text"


def test_anthropic_errors_are_sdk_exceptions(proxy: RunningServer) -> None:
    bad = anthropic.Anthropic(base_url=proxy.url, api_key="wrong", max_retries=0)
    with pytest.raises(anthropic.AuthenticationError):
        bad.messages.create(model="smol", max_tokens=5, messages=[{"role": "user", "content": "x"}])
    good = anthropic.Anthropic(base_url=proxy.url, api_key="sk-test", max_retries=0)
    with pytest.raises(anthropic.NotFoundError):
        good.messages.create(
            model="nope", max_tokens=5, messages=[{"role": "user", "content": "x"}]
        )
    with pytest.raises(anthropic.BadRequestError):
        good.messages.create(model="smol", max_tokens=5, messages=[])
    assert [m.id for m in good.models.list()] == ["smol"]


@pytest.mark.parametrize("upstream_streams", [True, False])
def test_openai_clients_through_an_anthropic_upstream(
    proxy: RunningServer, upstream_streams: bool
) -> None:
    """parlay's AnthropicBackend against a real Messages server (the first proxy), behind a
    second proxy that OpenAI clients talk to: both codecs and both directions at once."""
    upstream = AnthropicBackend(
        "smol", base_url=proxy.url, api_key="sk-test", stream=upstream_streams
    )
    with running(create_app(upstream)) as front:
        oa = openai.OpenAI(base_url=front.url + "/v1", api_key="x", max_retries=0, timeout=10)
        done = oa.chat.completions.create(
            model="any", messages=[{"role": "user", "content": "w?"}], tools=TOOLS_OA
        )
        assert done.choices[0].finish_reason == "tool_calls"
        assert [(c.id, c.function.arguments) for c in done.choices[0].message.tool_calls or []] == [
            ("call_p", '{"city": "Paris"}'),
            ("call_o", '{"city": "Oslo"}'),
        ]
        with oa.chat.completions.stream(
            model="any", messages=[{"role": "user", "content": "w?"}], tools=TOOLS_OA
        ) as stream:
            final = stream.get_final_completion()
        assert final.choices[0].message.content == "Checking both."
        assert len(final.choices[0].message.tool_calls or []) == 2
