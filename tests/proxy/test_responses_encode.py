"""The Responses API encoders: whole `response` objects and the event stream, checked
for shape (snapshots), for order and sequence numbers, and for agreeing with each other."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from parlay import AssistantMessage, ToolCall
from parlay.backends.scripted import reply_events
from parlay.events import (
    Event,
    Finish,
    FinishReason,
    TextDelta,
    ToolCallArgsDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)
from parlay.wire import responses_server as server
from parlay.wire.reply import gather
from parlay.wire.responses_stream import FrameWriter, StreamEncoder

TEXT_REPLY = "The weather is sunny."
CALLS_REPLY = AssistantMessage(
    "Checking.",
    (
        ToolCall("get_weather", {"city": "Paris"}, "call_a"),
        ToolCall("spawn_agent", {"task": "Oslo"}, "call_b"),
    ),
)
REQUEST: dict[str, Any] = {
    "model": "m",
    "input": "weather?",
    "instructions": "Be brief.",
    "tools": [
        {
            "type": "function",
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
            "strict": True,
        },
        {
            "type": "namespace",
            "name": "multi_agent_v1",
            "description": "sub-agents",
            "tools": [
                {"type": "function", "name": "spawn_agent", "parameters": {"type": "object"}}
            ],
        },
        {"type": "web_search"},
    ],
    "store": False,
    "reasoning": {"summary": "auto"},
}
ECHO = server.echo_of(REQUEST)
TERMINAL = {"response.completed", "response.incomplete", "response.failed"}


def steady(data: Any) -> Any:
    """`data` with its completion time (the clock's, not the caller's) set to 0."""
    if isinstance(data, dict):
        return {
            k: (0 if k == "completed_at" and v is not None else steady(v)) for k, v in data.items()
        }
    if isinstance(data, list):
        return [steady(v) for v in data]
    return data


def encode(events: list[Event]) -> dict[str, Any]:
    return steady(
        server.encode_response(gather(events), model="m", echo=ECHO, id="resp_1", created=1)
    )


def stream(events: list[Event]) -> list[tuple[str, dict[str, Any]]]:
    encoder = StreamEncoder(model="m", echo=ECHO, id="resp_1", created=1)
    frames = encoder.start()
    for event in events:
        frames.extend(encoder.feed(event))
    return [(name, steady(data)) for name, data in frames]


def length_cut() -> list[Event]:
    return [TextDelta("The weather"), Finish("length", Usage(3, 2))]


@pytest.mark.parametrize("reply", [TEXT_REPLY, CALLS_REPLY], ids=["text", "calls"])
def test_encode_response_snapshot(reply: Any, snapshot: Any) -> None:
    assert encode(reply_events(reply)) == snapshot


def test_encode_response_incomplete_snapshot(snapshot: Any) -> None:
    encoded = encode(length_cut())
    assert encoded["status"] == "incomplete"
    assert encoded["incomplete_details"] == {"reason": "max_output_tokens"}
    assert encoded["output"][0]["status"] == "incomplete"
    assert encoded == snapshot


def test_a_content_filter_ends_the_response_incomplete_with_its_reason() -> None:
    encoded = encode([TextDelta("I"), Finish("content_filter")])
    assert encoded["incomplete_details"] == {"reason": "content_filter"}


def test_a_reply_ending_in_error_is_a_failed_response() -> None:
    encoded = encode([TextDelta("I"), Finish("error")])
    assert encoded["status"] == "failed"
    assert encoded["error"]["code"] == "server_error"


def test_error_body_snapshot(snapshot: Any) -> None:
    assert server.encode_error(400, "`previous_response_id` is not served") == snapshot


def test_namespaced_calls_go_out_under_their_own_name_with_their_namespace() -> None:
    calls = [o for o in encode(reply_events(CALLS_REPLY))["output"] if o["type"] == "function_call"]
    assert [(c["name"], c.get("namespace")) for c in calls] == [
        ("get_weather", None),
        ("spawn_agent", "multi_agent_v1"),
    ]


def test_usage_has_the_details_objects_the_sdk_reads() -> None:
    usage = encode(reply_events(TEXT_REPLY))["usage"]
    assert usage["input_tokens"] + usage["output_tokens"] == usage["total_tokens"]
    assert usage["input_tokens_details"]["cached_tokens"] == 0
    assert usage["output_tokens_details"] == {"reasoning_tokens": 0}


def test_the_response_repeats_the_request_and_keeps_nothing() -> None:
    encoded = encode(reply_events(TEXT_REPLY))
    assert encoded["instructions"] == "Be brief."
    assert encoded["tools"] == REQUEST["tools"]
    assert encoded["reasoning"] == {"summary": "auto"}
    assert encoded["store"] is False and encoded["previous_response_id"] is None
    assert encoded["object"] == "response" and encoded["id"] == "resp_1"


@pytest.mark.parametrize("reply", [TEXT_REPLY, CALLS_REPLY], ids=["text", "calls"])
def test_encode_stream_snapshot(reply: Any, snapshot: Any) -> None:
    assert stream(reply_events(reply, chunk_size=8)) == snapshot


def test_encode_stream_incomplete_snapshot(snapshot: Any) -> None:
    frames = stream(length_cut())
    assert frames[-1][0] == "response.incomplete"
    assert frames == snapshot


def test_encode_stream_error_midway_snapshot(snapshot: Any) -> None:
    encoder = StreamEncoder(model="m", echo=ECHO, id="resp_1", created=1)
    frames = [*encoder.start(), *encoder.feed(TextDelta("Hal"))]
    frames.extend(encoder.error(502, "the upstream stream was cut before the reply finished"))
    assert [name for name, _ in frames][-2:] == ["error", "response.failed"]
    assert frames == snapshot


def test_an_error_before_the_start_still_opens_the_response() -> None:
    encoder = StreamEncoder(model="m", echo=ECHO)
    names = [name for name, _ in encoder.error(503, "the server is shutting down")]
    assert names == ["response.created", "response.in_progress", "error", "response.failed"]


def check_lifecycle(frames: list[tuple[str, dict[str, Any]]]) -> None:
    """The order OpenAI's stream keeps, and the SDK's accumulator relies on."""
    names = [name for name, _ in frames]
    assert [data["sequence_number"] for _, data in frames] == list(range(len(frames)))
    assert all(data["type"] == name for name, data in frames)
    assert names[:2] == ["response.created", "response.in_progress"]
    assert names[-1] in TERMINAL and not TERMINAL & set(names[:-1])
    added: set[int] = set()
    done: set[int] = set()
    for name, data in frames:
        index = data.get("output_index")
        if name == "response.output_item.added":
            assert index not in added
            added.add(index)
        elif name == "response.output_item.done":
            assert index in added and index not in done
            done.add(index)
        elif index is not None:  # a part, delta or done event inside an item
            assert index in added and index not in done, name
    assert added == done


def test_stream_lifecycle_of_text_then_calls() -> None:
    frames = stream(reply_events(CALLS_REPLY, chunk_size=3))
    check_lifecycle(frames)
    names = [name for name, _ in frames]
    assert names[2:5] == [
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
    ]
    # the message closes before the first call opens
    first_call = names.index("response.function_call_arguments.delta") - 1
    assert names[first_call - 3 : first_call] == [
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
    ]
    assert names.count("response.function_call_arguments.done") == 2


def test_a_call_that_ends_without_a_start_is_announced_whole() -> None:
    call = ToolCall("get_weather", {"city": "Oslo"}, "call_x")
    frames = stream([ToolCallEnd(call), Finish("tool_calls")])
    check_lifecycle(frames)
    deltas = [d["delta"] for n, d in frames if n == "response.function_call_arguments.delta"]
    assert deltas == [call.arguments_json]


def test_a_call_that_never_ends_is_closed_incomplete_and_left_out_of_the_output() -> None:
    frames = stream([ToolCallStart("call_x", "get_weather", 0), Finish("stop")])
    check_lifecycle(frames)
    closed = [d["item"] for n, d in frames if n == "response.output_item.done"]
    assert [item["status"] for item in closed] == ["incomplete"]
    assert frames[-1][1]["response"]["output"] == []


def test_nothing_follows_the_terminal_event() -> None:
    encoder = StreamEncoder(model="m", echo=ECHO)
    encoder.start()
    encoder.feed(Finish("stop"))
    assert encoder.feed(TextDelta("late")) == []
    assert encoder.error(502, "late") == []


def test_a_reply_of_nothing_still_has_a_message_whole_and_streamed() -> None:
    assert [o["type"] for o in encode([Finish("stop")])["output"]] == ["message"]
    frames = stream([Finish("stop")])
    check_lifecycle(frames)
    assert [o["type"] for o in frames[-1][1]["response"]["output"]] == ["message"]


def _ids_dropped(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in item.items() if k != "id"} for item in items]


@given(
    texts=st.lists(st.text(max_size=6), max_size=4),
    calls=st.lists(
        st.dictionaries(st.text(min_size=1, max_size=4), st.integers() | st.text(max_size=5)),
        max_size=3,
    ),
    split=st.integers(min_value=1, max_value=5),
    reason=st.sampled_from(["stop", "tool_calls", "length"]),
)
def test_the_stream_ends_with_what_the_whole_reply_holds(
    texts: list[str], calls: list[dict[str, Any]], split: int, reason: FinishReason
) -> None:
    events: list[Event] = [TextDelta(t) for t in texts]
    for i, arguments in enumerate(calls):
        call = ToolCall("get_weather", arguments, f"call_{i}")
        text = call.arguments_json
        events.append(ToolCallStart(call.id, call.name, i))
        events.extend(
            ToolCallArgsDelta(call.id, text[j : j + split]) for j in range(0, len(text), split)
        )
        events.append(ToolCallEnd(call))
    events.append(Finish(reason, Usage(2, 3)))
    frames = stream(events)
    check_lifecycle(frames)
    final = frames[-1][1]["response"]
    whole = encode(events)
    for key in ("status", "usage", "incomplete_details"):
        assert final[key] == whole[key]
    assert _ids_dropped(final["output"]) == _ids_dropped(whole["output"])
    for name, data in frames:
        if name == "response.function_call_arguments.done":
            streamed = "".join(
                d["delta"]
                for n, d in frames
                if n == "response.function_call_arguments.delta" and d["item_id"] == data["item_id"]
            )
            assert json.loads(streamed) == json.loads(data["arguments"])


def test_the_frame_writer_splices_the_echo_into_exactly_the_frames_json() -> None:
    encoder = StreamEncoder(model="m", echo=ECHO)
    frames = [*encoder.start(), *encoder.feed(TextDelta("Hi")), *encoder.feed(Finish("stop"))]
    written = FrameWriter(ECHO).write(frames).decode()
    events = [block.split("\n") for block in written.strip().split("\n\n")]
    assert len(events) == len(frames)
    for (name, data), (event_line, data_line) in zip(frames, events, strict=True):
        assert event_line == f"event: {name}"
        assert json.loads(data_line.removeprefix("data: ")) == data


CALL_IDS = st.sampled_from(["c1", "c2", "c3"])
ANY_EVENT = st.one_of(
    st.builds(TextDelta, st.text(max_size=4)),
    st.builds(ToolCallStart, CALL_IDS, st.just("get_weather"), st.integers(0, 2)),
    st.builds(ToolCallArgsDelta, CALL_IDS, st.text(max_size=4)),
    st.builds(lambda i: ToolCallEnd(ToolCall("get_weather", {"n": 1}, i)), CALL_IDS),
)


@given(
    events=st.lists(ANY_EVENT, max_size=12),
    ending=st.sampled_from(["stop", "length", "content_filter", "error", None]),
)
def test_any_order_of_events_keeps_the_lifecycle(
    events: list[Event], ending: FinishReason | None
) -> None:
    """Upstreams and the engine can send a delta for a call never started, a call twice,
    text after calls: the stream stays one the SDK can accumulate."""
    encoder = StreamEncoder(model="m", echo=ECHO)
    frames = encoder.start()
    for event in events:
        frames.extend(encoder.feed(event))
    if ending is None:
        frames.extend(encoder.error(502, "cut"))
    else:
        frames.extend(encoder.feed(Finish(ending)))
    names = [name for name, _ in frames]
    if ending is None:  # an error leaves items open; the rest of the order still holds
        assert names[-2:] == ["error", "response.failed"]
        assert [d["sequence_number"] for _, d in frames] == list(range(len(frames)))
        return
    check_lifecycle(frames)
    output = frames[-1][1]["response"]["output"]
    ids = [item["id"] for item in output]
    call_ids = [item["call_id"] for item in output if item["type"] == "function_call"]
    assert len(ids) == len(set(ids)) and len(call_ids) == len(set(call_ids))
    closed = [d["item"].get("call_id") for n, d in frames if n == "response.output_item.done"]
    assert len([c for c in closed if c]) == len({c for c in closed if c})
