"""OpenAI server codec: request decoding, response and stream encoding, round trips."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from parlay import (
    AssistantMessage,
    ChatRequest,
    GenerationOptions,
    InvalidRequestError,
    SystemMessage,
    ToolCall,
    ToolChoice,
    ToolResult,
    ToolSpec,
    UserMessage,
)
from parlay.backends.scripted import reply_events
from parlay.events import (
    Event,
    Finish,
    ScoredTextDelta,
    TextDelta,
    TokenChoice,
    ToolCallArgsDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)
from parlay.wire import openai_client as client
from parlay.wire import openai_server as server
from parlay.wire.reply import gather

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


def body(**extra: Any) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": "hi"}], **extra}


def test_decode_full_request() -> None:
    decoded = server.decode_request(
        {
            "model": "smol",
            "messages": [
                {"role": "developer", "content": "Be brief."},
                {"role": "system", "content": [{"type": "text", "text": "Use tools."}]},
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "Weather "},
                        {"type": "text", "text": "in Paris?"},
                    ],
                },
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
            ],
            "tools": [WEATHER],
            "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
            "parallel_tool_calls": False,
            "max_completion_tokens": 20,
            "temperature": 0,
            "stop": "END",
            "seed": 3,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
    )
    assert decoded.model == "smol" and decoded.stream and decoded.include_usage
    chat = decoded.chat
    assert chat.messages == (
        SystemMessage("Be brief."),
        SystemMessage("Use tools."),
        UserMessage("Weather in Paris?"),
        AssistantMessage("", (ToolCall("get_weather", {"city": "Paris"}, "c1"),)),
        ToolResult("c1", "get_weather", "sunny"),
    )
    assert chat.tools == (
        ToolSpec("get_weather", "Weather for a city.", WEATHER["function"]["parameters"]),
    )
    assert chat.tool_choice == ToolChoice("tool", "get_weather")
    assert chat.parallel_tool_calls is False
    assert chat.options == GenerationOptions(temperature=0.0, max_tokens=20, stop=("END",), seed=3)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (None, ToolChoice("auto")),
        ("auto", ToolChoice("auto")),
        ("none", ToolChoice("none")),
        ("required", ToolChoice("required")),
        (
            {"type": "function", "function": {"name": "get_weather"}},
            ToolChoice("tool", "get_weather"),
        ),
    ],
)
def test_decode_tool_choice(raw: Any, expected: ToolChoice) -> None:
    chat = server.decode_request(body(tools=[WEATHER], tool_choice=raw)).chat
    assert chat.tool_choice == expected


@pytest.mark.parametrize(
    ("request_body", "says"),
    [
        ({"messages": [{"role": "user", "content": "x"}]}, "`model` is required"),
        ({"model": "m"}, "`messages` must be a non-empty array"),
        ({"model": "m", "messages": []}, "`messages` must be a non-empty array"),
        (body(tool_choice="sometimes"), "`tool_choice` must be"),
        (
            body(tool_choice={"type": "function", "function": {"name": "nope"}}, tools=[WEATHER]),
            "names none of the tools",
        ),
        (
            {"model": "m", "messages": [{"role": "tool", "tool_call_id": "zz", "content": "x"}]},
            "tool_call_id",
        ),
        (
            {"model": "m", "messages": [{"role": "user", "content": [{"type": "image_url"}]}]},
            "content[0].image_url` is required",
        ),
        ({"model": "m", "messages": [{"role": "wizard", "content": "x"}]}, "`messages[0].role`"),
        (body(temperature="hot"), "`temperature` must be"),
        (body(n=2), "`n` must be 1"),
        (body(functions=[{"name": "f"}]), "send `tools`"),
        (body(top_logprobs=3), "`top_logprobs` needs `logprobs: true`"),
        (body(logprobs=False, top_logprobs=0), "`top_logprobs` needs `logprobs: true`"),
        (body(logprobs=True, top_logprobs=21), "`top_logprobs` must be an integer from 0 to 20"),
        (body(logprobs=True, top_logprobs=-1), "`top_logprobs` must be an integer from 0 to 20"),
        (body(logprobs=True, top_logprobs=2.5), "`top_logprobs` must be an integer"),
        (body(logprobs="yes"), "`logprobs` must be a boolean"),
        ([1, 2], "must be a JSON object"),
    ],
)
def test_decode_errors_say_what_to_fix(request_body: Any, says: str) -> None:
    with pytest.raises(InvalidRequestError, match=says.replace("(", r"\(").replace("[", r"\[")):
        server.decode_request(request_body)


@pytest.mark.parametrize(
    ("extra", "top"),
    [
        ({}, None),
        ({"logprobs": False}, None),
        ({"logprobs": None, "top_logprobs": None}, None),
        ({"logprobs": True}, 0),
        ({"logprobs": True, "top_logprobs": 3}, 3),
        ({"logprobs": True, "top_logprobs": 20}, 20),
    ],
)
def test_decode_logprobs(extra: dict[str, Any], top: int | None) -> None:
    assert server.decode_request(body(**extra)).chat.options.top_logprobs == top


def test_response_format_decodes() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    chat = server.decode_request(
        body(
            response_format={
                "type": "json_schema",
                "json_schema": {"name": "x", "schema": schema, "strict": True},
            }
        )
    ).chat
    assert chat.response_format is not None and chat.response_format.schema == schema


def test_client_encoding_decodes_back() -> None:
    """What parlay's own client codec sends, the server codec reads back unchanged."""
    original = ChatRequest(
        (
            SystemMessage("sys"),
            UserMessage("q"),
            AssistantMessage("thinking", (ToolCall("f", {"x": 1}, "a"), ToolCall("g", {}, "b"))),
            ToolResult("a", "f", "one"),
            ToolResult("b", "g", "two"),
            AssistantMessage("done"),
        ),
        tools=(
            ToolSpec("f", "F.", {"type": "object", "properties": {"x": {"type": "integer"}}}),
            ToolSpec("g"),
        ),
        tool_choice=ToolChoice("required"),
        parallel_tool_calls=False,
        options=GenerationOptions(temperature=0.5, max_tokens=7, stop=("x",), top_logprobs=2),
        model="m",
    )
    wire = json.loads(json.dumps(client.encode_request(original, model=None, stream=True)))
    decoded = server.decode_request(wire)
    assert decoded.chat == original
    assert decoded.stream and decoded.include_usage


TEXT_REPLY = "The weather is sunny."
CALLS_REPLY = AssistantMessage(
    "Checking.",
    (
        ToolCall("get_weather", {"city": "Paris"}, "call_a"),
        ToolCall("get_weather", {"city": "Oslo"}, "call_b"),
    ),
)


@pytest.mark.parametrize("reply", [TEXT_REPLY, CALLS_REPLY], ids=["text", "calls"])
def test_encode_response_snapshot(reply: Any, snapshot: Any) -> None:
    encoded = server.encode_response(
        gather(reply_events(reply)), model="m", id="chatcmpl-1", created=1
    )
    assert encoded == snapshot


@pytest.mark.parametrize("reply", [TEXT_REPLY, CALLS_REPLY], ids=["text", "calls"])
def test_encode_stream_snapshot(reply: Any, snapshot: Any) -> None:
    encoder = server.StreamEncoder(model="m", include_usage=True, id="chatcmpl-1", created=1)
    chunks = encoder.start()
    for event in reply_events(reply, chunk_size=8):
        chunks.extend(encoder.feed(event))
    assert chunks == snapshot


def _client_events(chunks: list[dict[str, Any]]) -> list[Any]:
    decoder = client.StreamDecoder()
    events = []
    for chunk in chunks:
        events.extend(decoder.feed(json.loads(json.dumps(chunk))))
    events.extend(decoder.finish())
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
    """Server-encoded chunks decode, with parlay's client codec, to the same reply."""
    calls = tuple(ToolCall(f"tool{i}", a, f"call_{i}") for i, a in enumerate(args))
    reply = AssistantMessage(text, calls)
    encoder = server.StreamEncoder(model="m", include_usage=True)
    chunks = encoder.start()
    for event in reply_events(reply, chunk_size=size):
        chunks.extend(encoder.feed(event))
    got = gather(_client_events(chunks))
    assert got.text == text
    assert got.calls == calls
    assert got.finish.reason == ("tool_calls" if calls else "stop")
    whole = server.encode_response(gather(reply_events(reply)), model="m")
    again = gather(client.decode_response(json.loads(json.dumps(whole))))
    assert (again.text, again.calls) == (text, calls)


def test_stream_sends_arguments_when_no_fragment_came() -> None:
    """An engine may end a call without streaming its arguments: they go out whole."""
    call = ToolCall("f", {"a": 1}, "c")
    encoder = server.StreamEncoder(model="m")
    chunks = [*encoder.start()]
    for event in (ToolCallStart("c", "f", 0), ToolCallEnd(call), Finish("tool_calls")):
        chunks.extend(encoder.feed(event))
    assert gather(_client_events(chunks)).calls == (call,)


def test_stream_arguments_are_fragments_in_order() -> None:
    encoder = server.StreamEncoder(model="m")
    out = []
    for event in (
        ToolCallStart("c", "f", 0),
        ToolCallArgsDelta("c", '{"a"'),
        ToolCallArgsDelta("c", ": 1}"),
        ToolCallEnd(ToolCall("f", {"a": 1}, "c")),
        TextDelta(""),
        Finish("stop", Usage(1, 2)),
    ):
        out.extend(encoder.feed(event))
    fragments = [
        c["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"] for c in out[:3]
    ]
    assert fragments == ["", '{"a"', ": 1}"]
    assert out[-1]["choices"][0]["finish_reason"] == "tool_calls"


def test_error_shape() -> None:
    assert server.encode_error(404, "no such model") == {
        "error": {
            "message": "no such model",
            "type": "not_found_error",
            "param": None,
            "code": None,
        }
    }


# -- log-probabilities ----------------------------------------------------------------------

# Two deltas of scored tokens, as an upstream asked for `top_logprobs` streams them; one
# token is not ASCII, so its `bytes` (UTF-8) outnumber its characters.
SCORED: list[Event] = [
    ScoredTextDelta("Hi", (TokenChoice("Hi", -0.25, (("Hi", -0.25), ("Hello", -1.5))),)),
    ScoredTextDelta(" café", (TokenChoice(" café", -2.0, ((" café", -2.0),)),)),
    Finish("stop", Usage(3, 2)),
]


def _logprobs(choice: dict[str, Any]) -> list[tuple[str, float, list[str]]]:
    return [
        (e["token"], e["logprob"], [a["token"] for a in e["top_logprobs"]])
        for e in choice["logprobs"]["content"]
    ]


def test_encode_response_logprobs_snapshot(snapshot: Any) -> None:
    encoded = server.encode_response(
        gather(SCORED), model="m", id="chatcmpl-1", created=1, top_logprobs=2
    )
    assert encoded == snapshot
    choice = encoded["choices"][0]
    assert "".join(t for t, _, _ in _logprobs(choice)) == choice["message"]["content"]
    assert choice["logprobs"]["content"][1]["bytes"] == list(" café".encode())


def test_encode_stream_logprobs_snapshot(snapshot: Any) -> None:
    encoder = server.StreamEncoder(model="m", top_logprobs=2, id="chatcmpl-1", created=1)
    chunks = encoder.start()
    for event in SCORED:
        chunks.extend(encoder.feed(event))
    assert chunks == snapshot
    # Each text chunk carries the tokens of its own delta; the others carry none.
    for chunk in chunks:
        choice = chunk["choices"][0]
        content = choice["delta"].get("content")
        if content:
            assert "".join(t for t, _, _ in _logprobs(choice)) == content
        else:
            assert choice["logprobs"] is None


def test_logprobs_not_asked_for_stay_null() -> None:
    """An upstream may score text the client did not ask about (the engine asks for its
    own reasons): the client still gets null, as before."""
    encoded = server.encode_response(gather(SCORED), model="m")
    assert encoded["choices"][0]["logprobs"] is None
    encoder = server.StreamEncoder(model="m")
    chunks = [c for event in SCORED for c in encoder.feed(event)]
    assert all(c["choices"][0]["logprobs"] is None for c in chunks)


def test_unscored_text_gets_null_and_a_mixed_reply_its_scored_tokens() -> None:
    """Text made by the engine (plain `TextDelta`) has no numbers: null, not made-up ones."""
    plain = server.encode_response(gather(reply_events(TEXT_REPLY)), model="m", top_logprobs=2)
    assert plain["choices"][0]["logprobs"] is None
    mixed_events = [TextDelta("Well: "), *SCORED]
    mixed = server.encode_response(gather(mixed_events), model="m", top_logprobs=2)
    choice = mixed["choices"][0]
    assert choice["message"]["content"] == "Well: Hi café"
    assert [t for t, _, _ in _logprobs(choice)] == ["Hi", " café"]
    encoder = server.StreamEncoder(model="m", top_logprobs=2)
    chunks = [c for event in mixed_events for c in encoder.feed(event)]
    assert chunks[0]["choices"][0]["delta"]["content"] == "Well: "
    assert chunks[0]["choices"][0]["logprobs"] is None
    assert _logprobs(chunks[1]["choices"][0])[0] == ("Hi", -0.25, ["Hi", "Hello"])


@pytest.mark.parametrize("top", [0, 1])
def test_alternatives_are_cut_to_the_count_asked_for(top: int) -> None:
    """llama.cpp sends 20 alternatives when asked for none (see the client codec)."""
    encoded = server.encode_response(gather(SCORED), model="m", top_logprobs=top)
    content = encoded["choices"][0]["logprobs"]["content"]
    assert [len(e["top_logprobs"]) for e in content] == [top, top]
    encoder = server.StreamEncoder(model="m", top_logprobs=top)
    (chunk,) = encoder.feed(SCORED[0])
    assert len(chunk["choices"][0]["logprobs"]["content"][0]["top_logprobs"]) == top


@pytest.mark.parametrize("bad", [math.nan, -math.inf])
def test_non_finite_numbers_give_null_not_invalid_json(bad: float) -> None:
    events = [ScoredTextDelta("a", (TokenChoice("a", -0.1, (("b", bad),)),)), Finish("stop")]
    encoded = server.encode_response(gather(events), model="m", top_logprobs=2)
    assert encoded["choices"][0]["logprobs"] is None
    encoder = server.StreamEncoder(model="m", top_logprobs=2)
    assert encoder.feed(events[0])[0]["choices"][0]["logprobs"] is None
    json.dumps(encoded, allow_nan=False)  # valid JSON: no NaN, no Infinity


def test_logprobs_round_trip_through_the_client_codec() -> None:
    """What the server writes, parlay's own client codec reads back as the same tokens."""
    scored = [e for e in SCORED if isinstance(e, ScoredTextDelta)]
    encoder = server.StreamEncoder(model="m", top_logprobs=2)
    chunks = encoder.start()
    for event in SCORED:
        chunks.extend(encoder.feed(event))
    streamed = [e for e in _client_events(chunks) if isinstance(e, TextDelta)]
    assert streamed == scored
    whole = server.encode_response(gather(SCORED), model="m", top_logprobs=2)
    (delta,) = [
        e for e in client.decode_response(json.loads(json.dumps(whole))) if isinstance(e, TextDelta)
    ]
    assert isinstance(delta, ScoredTextDelta)
    assert delta.tokens == tuple(t for e in scored for t in e.tokens)
