"""An upstream that answers JSON of another shape than its protocol's (a list for a chunk,
a number for a tool's name, an index that is text, 1e400, nesting 200,000 deep) is the
upstream's protocol error: a 502 in the client's own protocol, or an error event once a
stream has begun; before, each of these was a 500 "internal error in the proxy", and a
session got an AttributeError."""

from __future__ import annotations

import json
from functools import partial
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parlay import AnthropicBackend, Capabilities, OpenAIBackend, PromptedBackend, ToolCall
from parlay.backends.reply_shape import decoded
from parlay.errors import BackendProtocolError, ParlayError
from parlay.events import ToolCallStart
from parlay.server import create_app
from parlay.wire import anthropic_client, openai_client

TOOL = {"type": "object", "properties": {}}


def _chunks(*chunks: Any) -> bytes:
    return b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)


def _call(**fields: Any) -> dict[str, Any]:
    call = {"index": 0, "id": "c", "function": {"name": "t0", "arguments": "{}"}, **fields}
    return {"choices": [{"delta": {"tool_calls": [call]}}]}


OPENAI_STREAMS = {
    "a chunk that is a list": _chunks([1]),
    "choices that hold a number": _chunks({"choices": [1]}),
    "usage that is text": _chunks({"choices": [], "usage": "x"}),
    "a delta that is text": _chunks({"choices": [{"delta": "hi"}]}),
    "a finish reason that is a list": _chunks(
        {"choices": [{"delta": {}, "finish_reason": ["stop"]}]}
    ),
    "a call index that is text": _chunks(_call(index="x")),
    "a call index of 1e400": b'data: {"choices": [{"delta": {"tool_calls": [{"index": 1e400}]}}]}\n\n',
    "a tool name that is a number": _chunks(_call(function={"name": 5, "arguments": "{}"})),
    "a chunk nested 200,000 deep": b"data: " + b"[" * 200_000 + b"\n\n",
}


def _event(data: Any) -> bytes:
    return b"event: e\ndata: " + json.dumps(data).encode() + b"\n\n"


STARTED = _event({"type": "message_start", "message": {"id": "m", "usage": {"input_tokens": 1}}})
ANTHROPIC_STREAMS = {
    "a block that is text": STARTED
    + _event({"type": "content_block_start", "index": 0, "content_block": "text"}),
    "a message that is a number": _event({"type": "message_start", "message": 5}),
    "usage that is a list": STARTED
    + _event({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": [1]}),
    "a tool name that is a number": STARTED
    + _event(
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "t", "name": 7, "input": {}},
        }
    ),
}


async def _ask(backend: Any, path: str, body: dict[str, Any]) -> httpx.Response:
    app = create_app(backend)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://p") as client:
        return await client.post(path, json=body)


def _answering(body: bytes, kind: str = "text/event-stream") -> httpx.MockTransport:
    return httpx.MockTransport(
        lambda request: httpx.Response(200, headers={"content-type": kind}, content=body)
    )


@pytest.mark.parametrize("mode", ["native", "prompted"])
@pytest.mark.parametrize("streamed", [False, True])
@pytest.mark.parametrize("sent", list(OPENAI_STREAMS), ids=list(OPENAI_STREAMS))
async def test_an_openai_upstream_of_another_shape_is_a_502_in_the_clients_protocol(
    sent: str, streamed: bool, mode: str
) -> None:
    caps = Capabilities(native_tools=mode == "native", json_schema=True)
    transport = _answering(OPENAI_STREAMS[sent] + b"data: [DONE]\n\n")
    upstream = OpenAIBackend("m", base_url="http://up/v1", transport=transport, capabilities=caps)
    backend = upstream if mode == "native" else PromptedBackend(upstream)
    tools = [{"type": "function", "function": {"name": "t0", "parameters": TOOL}}]
    messages = [{"role": "user", "content": "hi"}]
    body = {"model": "m", "messages": messages, "tools": tools, "stream": streamed}
    answer = await _ask(backend, "/v1/chat/completions", body)
    assert answer.status_code == 502, answer.text
    assert answer.json()["error"]["type"] == "upstream_error"


@pytest.mark.parametrize("sent", list(ANTHROPIC_STREAMS), ids=list(ANTHROPIC_STREAMS))
async def test_an_anthropic_upstream_of_another_shape_is_a_502_in_the_clients_protocol(
    sent: str,
) -> None:
    transport = _answering(ANTHROPIC_STREAMS[sent])
    upstream = AnthropicBackend("claude", base_url="http://up", transport=transport)
    tools = [{"name": "t0", "input_schema": TOOL}]
    messages = [{"role": "user", "content": "hi"}]
    body = {"model": "m", "max_tokens": 9, "messages": messages, "tools": tools, "stream": True}
    answer = await _ask(upstream, "/v1/messages", body)
    assert answer.status_code == 502, answer.text
    assert answer.json()["type"] == "error"


async def test_a_whole_reply_whose_tool_name_is_a_list_is_a_protocol_error() -> None:
    reply = {"type": "message", "content": [{"type": "tool_use", "id": "t", "name": ["t0"]}]}
    transport = _answering(json.dumps(reply).encode(), "application/json")
    upstream = AnthropicBackend("claude", base_url="http://up", transport=transport, stream=False)
    body = {"model": "m", "max_tokens": 9, "messages": [{"role": "user", "content": "hi"}]}
    assert (await _ask(upstream, "/v1/messages", body)).status_code == 502


def test_a_call_or_its_start_with_a_name_that_is_not_text_is_refused() -> None:
    with pytest.raises(TypeError):
        ToolCall(5)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        ToolCallStart("c1", ["t0"], 0)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        ToolCallStart(7, "t0", 0)  # type: ignore[arg-type]


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**64), 2**64) | st.floats() | st.text(max_size=5),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=4), c, max_size=3),
    max_leaves=10,
)


def _either(shape: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return shape | JSON


CALLS = st.fixed_dictionaries({}, optional={
    "index": _either(st.integers(0, 3)), "id": _either(st.just("c1")),
    "function": _either(st.fixed_dictionaries({}, optional={
        "name": _either(st.sampled_from(["t0", "t"])),
        "arguments": _either(st.sampled_from(['{"a":', " 1}", ""])),
    })),
})  # fmt: skip
DELTAS = st.fixed_dictionaries({}, optional={
    "content": _either(st.sampled_from(["hi", "<think>", "</think>"])), "reasoning_content": JSON,
    "tool_calls": _either(st.lists(_either(CALLS), max_size=3)),
})  # fmt: skip
CHUNKS = st.fixed_dictionaries({}, optional={
    "model": JSON, "usage": JSON, "timings": JSON,
    "choices": _either(st.lists(_either(st.fixed_dictionaries({}, optional={
        "delta": _either(DELTAS),
        "finish_reason": _either(st.sampled_from(["stop", "tool_calls", None])),
    })), max_size=2)),
})  # fmt: skip
EVENTS = st.fixed_dictionaries(
    {"type": st.sampled_from(["message_start", "content_block_start", "content_block_delta",
                              "content_block_stop", "message_delta", "message_stop"])},
    optional={"index": JSON, "message": JSON, "usage": JSON,
              "content_block": _either(st.fixed_dictionaries(
                  {"type": st.sampled_from(["text", "tool_use", "thinking"])},
                  optional={"id": JSON, "name": JSON, "input": JSON, "text": JSON})),
              "delta": _either(st.fixed_dictionaries(
                  {"type": st.sampled_from(["text_delta", "input_json_delta", "thinking_delta"])},
                  optional={"text": JSON, "partial_json": JSON, "stop_reason": JSON}))},
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(_either(CHUNKS), max_size=6), st.lists(EVENTS, max_size=8), JSON)
def test_the_decoders_read_any_json_or_raise_a_protocol_error(
    chunks: list[Any], events: list[Any], whole: Any
) -> None:
    chat, messages = openai_client.StreamDecoder(), anthropic_client.StreamDecoder()
    reads = [partial(chat.feed, chunk) for chunk in chunks] + [chat.finish]
    reads += [partial(messages.feed, event) for event in events]
    if isinstance(whole, dict):
        reads += [partial(openai_client.decode_response, whole)]
        reads += [partial(anthropic_client.decode_response, whole)]
    try:
        for read in reads:
            decoded(read, "http://up", None)
    except ParlayError as exc:
        assert isinstance(exc, BackendProtocolError)
