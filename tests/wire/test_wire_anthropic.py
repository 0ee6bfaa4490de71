"""Anthropic codecs, both directions: decoding, encoding, snapshots and round trips."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from parlay import (
    AssistantMessage,
    ChatRequest,
    GenerationOptions,
    InvalidRequestError,
    ResponseFormat,
    SystemMessage,
    ToolCall,
    ToolChoice,
    ToolResult,
    ToolSpec,
    UserMessage,
)
from parlay.backends.scripted import reply_events
from parlay.errors import BackendStatusError
from parlay.events import Finish, ToolCallEnd, ToolCallStart
from parlay.wire import anthropic_client as client
from parlay.wire import anthropic_server as server
from parlay.wire.reply import gather

WEATHER = {
    "name": "get_weather",
    "description": "Weather for a city.",
    "input_schema": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}


def body(**extra: Any) -> dict[str, Any]:
    return {
        "model": "m",
        "max_tokens": 10,
        "messages": [{"role": "user", "content": "hi"}],
        **extra,
    }


def test_decode_full_request() -> None:
    decoded = server.decode_request(
        {
            "model": "smol",
            "max_tokens": 30,
            "system": [
                {"type": "text", "text": "Be brief."},
                {"type": "text", "text": "Use tools."},
            ],
            "messages": [
                {"role": "user", "content": "Weather in Paris and Oslo?"},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": "Checking."},
                        {
                            "type": "tool_use",
                            "id": "t1",
                            "name": "get_weather",
                            "input": {"city": "Paris"},
                        },
                        {
                            "type": "tool_use",
                            "id": "t2",
                            "name": "get_weather",
                            "input": {"city": "Oslo"},
                        },
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "t1", "content": "sunny"},
                        {
                            "type": "tool_result",
                            "tool_use_id": "t2",
                            "content": [{"type": "text", "text": "no such city"}],
                            "is_error": True,
                        },
                        {"type": "text", "text": "And tomorrow?"},
                    ],
                },
            ],
            "tools": [WEATHER],
            "tool_choice": {"type": "any", "disable_parallel_tool_use": True},
            "stop_sequences": ["END"],
            "temperature": 0,
            "stream": True,
        }
    )
    assert decoded.model == "smol" and decoded.stream
    chat = decoded.chat
    assert chat.messages == (
        SystemMessage("Be brief.\n\nUse tools."),
        UserMessage("Weather in Paris and Oslo?"),
        AssistantMessage(
            "Checking.",
            (
                ToolCall("get_weather", {"city": "Paris"}, "t1"),
                ToolCall("get_weather", {"city": "Oslo"}, "t2"),
            ),
        ),
        ToolResult("t1", "get_weather", "sunny"),
        ToolResult("t2", "get_weather", error="no such city"),
        UserMessage("And tomorrow?"),
    )
    assert chat.tools == (ToolSpec("get_weather", "Weather for a city.", WEATHER["input_schema"]),)
    assert chat.tool_choice == ToolChoice("required")
    assert chat.parallel_tool_calls is False
    assert chat.options == GenerationOptions(temperature=0.0, max_tokens=30, stop=("END",))


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"type": "auto"}, ToolChoice("auto")),
        ({"type": "any"}, ToolChoice("required")),
        ({"type": "none"}, ToolChoice("none")),
        ({"type": "tool", "name": "get_weather"}, ToolChoice("tool", "get_weather")),
    ],
)
def test_decode_tool_choice(raw: Any, expected: ToolChoice) -> None:
    assert (
        server.decode_request(body(tools=[WEATHER], tool_choice=raw)).chat.tool_choice == expected
    )


@pytest.mark.parametrize(
    ("request_body", "says"),
    [
        (
            {"model": "m", "messages": [{"role": "user", "content": "x"}]},
            "`max_tokens` is required",
        ),
        ({"max_tokens": 1, "messages": [{"role": "user", "content": "x"}]}, "`model` is required"),
        ({"model": "m", "max_tokens": 1, "messages": []}, "non-empty array"),
        (body(tool_choice="any"), "`tool_choice` must be an object"),
        (body(tool_choice={"type": "sometimes"}), "auto, any, tool or none"),
        (body(tools=[{"name": "x"}]), "input_schema"),
        (
            {
                "model": "m",
                "max_tokens": 1,
                "messages": [
                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "q"}]}
                ],
            },
            "no earlier tool_use",
        ),
        (
            {
                "model": "m",
                "max_tokens": 1,
                "messages": [{"role": "user", "content": [{"type": "image"}]}],
            },
            "content[0].source` is required",
        ),
        (
            {"model": "m", "max_tokens": 1, "messages": [{"role": "tool", "content": "x"}]},
            "use user, assistant or system",
        ),
        (
            {
                "model": "m",
                "max_tokens": 1,
                "messages": [{"role": "system", "content": [{"type": "image"}]}],
            },
            "system turns hold text blocks",
        ),
        (body(output_config={"format": {"type": "xml"}}), "json_schema"),
    ],
)
def test_decode_errors_say_what_to_fix(request_body: Any, says: str) -> None:
    with pytest.raises(InvalidRequestError, match=says.replace("[", r"\[")):
        server.decode_request(request_body)


def test_client_encoding_decodes_back() -> None:
    """parlay's Anthropic client codec and the server codec agree on every field."""
    original = ChatRequest(
        (
            SystemMessage("sys"),
            UserMessage("q"),
            AssistantMessage("thinking", (ToolCall("f", {"x": 1}, "a"), ToolCall("g", {}, "b"))),
            ToolResult("a", "f", "one"),
            ToolResult("b", "g", error="boom"),
            UserMessage("next"),
            AssistantMessage("done"),
            UserMessage("bye"),
        ),
        tools=(
            ToolSpec("f", "F.", {"type": "object", "properties": {"x": {"type": "integer"}}}),
            ToolSpec("g"),
        ),
        tool_choice=ToolChoice("tool", "f"),
        parallel_tool_calls=False,
        options=GenerationOptions(temperature=0.5, max_tokens=7, stop=("x",)),
        response_format=ResponseFormat({"type": "object", "properties": {"a": {"type": "string"}}}),
        model="m",
    )
    wire = json.loads(json.dumps(client.encode_request(original, model=None, stream=True)))
    assert wire["output_config"]["format"]["type"] == "json_schema"
    assert [t["role"] for t in wire["messages"]] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    decoded = server.decode_request(wire)
    assert decoded.chat == original


TEXT_REPLY = "The weather is sunny."
CALLS_REPLY = AssistantMessage(
    "Checking.",
    (
        ToolCall("get_weather", {"city": "Paris"}, "toolu_a"),
        ToolCall("get_weather", {"city": "Oslo"}, "toolu_b"),
    ),
)


@pytest.mark.parametrize("reply", [TEXT_REPLY, CALLS_REPLY], ids=["text", "calls"])
def test_encode_response_snapshot(reply: Any, snapshot: Any) -> None:
    assert server.encode_response(gather(reply_events(reply)), model="m", id="msg_1") == snapshot


@pytest.mark.parametrize("reply", [TEXT_REPLY, CALLS_REPLY], ids=["text", "calls"])
def test_encode_stream_snapshot(reply: Any, snapshot: Any) -> None:
    encoder = server.StreamEncoder(model="m", id="msg_1")
    frames = encoder.start()
    for event in reply_events(reply, chunk_size=8):
        frames.extend(encoder.feed(event))
    assert frames == snapshot


def _decode_frames(frames: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    decoder = client.StreamDecoder()
    events = []
    for name, data in frames:
        assert data["type"] == name
        events.extend(decoder.feed(json.loads(json.dumps(data))))
    assert decoder.stopped
    return events


@given(
    text=st.text(max_size=40),
    args=st.lists(
        st.dictionaries(
            st.text(min_size=1, max_size=5), st.integers() | st.text(max_size=8), max_size=3
        ),
        max_size=3,
    ),
    size=st.integers(min_value=0, max_value=9),
)
def test_stream_round_trip(text: str, args: list[dict[str, Any]], size: int) -> None:
    calls = tuple(ToolCall(f"tool{i}", a, f"toolu_{i}") for i, a in enumerate(args))
    reply = AssistantMessage(text, calls)
    encoder = server.StreamEncoder(model="m")
    frames = encoder.start()
    for event in reply_events(reply, chunk_size=size):
        frames.extend(encoder.feed(event))
    got = gather(_decode_frames(frames))
    assert (got.text, got.calls) == (text, calls)
    assert got.finish.reason == ("tool_calls" if calls else "stop")
    whole = server.encode_response(gather(reply_events(reply)), model="m")
    again = gather(client.decode_response(json.loads(json.dumps(whole))))
    assert (again.text, again.calls) == (text, calls)


def test_stream_block_indexes_are_consecutive_and_closed() -> None:
    encoder = server.StreamEncoder(model="m")
    frames = encoder.start()
    for event in reply_events(CALLS_REPLY, chunk_size=3):
        frames.extend(encoder.feed(event))
    starts = [d["index"] for n, d in frames if n == "content_block_start"]
    stops = [d["index"] for n, d in frames if n == "content_block_stop"]
    assert starts == stops == [0, 1, 2]
    assert [n for n, _ in frames][-2:] == ["message_delta", "message_stop"]


def test_call_end_without_fragments_sends_whole_input() -> None:
    call = ToolCall("f", {"a": [1, 2]}, "toolu_x")
    encoder = server.StreamEncoder(model="m")
    frames = encoder.start()
    for event in (ToolCallStart("toolu_x", "f", 0), ToolCallEnd(call), Finish("tool_calls")):
        frames.extend(encoder.feed(event))
    assert gather(_decode_frames(frames)).calls == (call,)


def test_stream_error_event_becomes_an_exception() -> None:
    decoder = client.StreamDecoder()
    with pytest.raises(BackendStatusError) as info:
        list(
            decoder.feed(
                {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}
            )
        )
    assert info.value.status_code == 529


def test_error_shape() -> None:
    assert server.encode_error(401, "bad key") == {
        "type": "error",
        "error": {"type": "authentication_error", "message": "bad key"},
    }


def test_claude_code_system_message_inside_messages_keeps_its_place() -> None:
    """Claude Code sends a `role: "system"` message inside `messages` whenever its Agent
    tool is offered; it was refused with a 400 ("messages[1].role is 'system'")."""
    decoded = server.decode_request(
        {
            "model": "m",
            "max_tokens": 64000,
            "system": [
                {
                    "type": "text",
                    "text": "You are Claude Code.",
                    "cache_control": {"type": "ephemeral"},
                }
            ],
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "run echo hi"}]},
                {"role": "system", "content": [{"type": "text", "text": "Agents available: x."}]},
                {"role": "user", "content": "go on"},
            ],
        }
    )
    assert decoded.chat.messages == (
        SystemMessage("You are Claude Code."),
        UserMessage("run echo hi"),
        SystemMessage("Agents available: x."),
        UserMessage("go on"),
    )


def test_system_turns_fold_into_the_system_prompt_for_an_anthropic_upstream() -> None:
    """Anthropic's API takes system text only in `system` (inside `messages` only under a
    beta an upstream may not have), so a system turn in the middle is folded there."""
    request = ChatRequest(
        (SystemMessage("first"), UserMessage("q"), SystemMessage("later"), UserMessage("r"))
    )
    system, turns = client.encode_messages(request)
    assert system == "first\n\nlater"
    assert [t["role"] for t in turns] == ["user"]
    assert [b["text"] for b in turns[0]["content"]] == ["q", "r"]
