"""AnthropicBackend over httpx against recorded wire shapes (respx), and its failures."""

from __future__ import annotations

import httpx
import pytest
import respx
from tests.backends.test_openai_backend import RESPX

from parlay import ChatRequest, Session, ToolCall, ToolCallTruncatedError, ToolSpec, UserMessage
from parlay.backends.anthropic import AnthropicBackend
from parlay.errors import BackendProtocolError, BackendStatusError
from parlay.wire.reply import agather

URL = "http://anthropic.test"
REQUEST = ChatRequest((UserMessage("Weather in Paris?"),), tools=(ToolSpec("get_weather"),))

STREAM = b"""event: message_start
data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":1}}}

event: ping
data: {"type":"ping"}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Let me check."}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\\"city\\": "}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\\"Paris\\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":20}}

event: message_stop
data: {"type":"message_stop"}

"""


@respx.mock
async def test_streaming_text_and_tool_use() -> None:
    route = respx.post(f"{URL}/v1/messages").mock(
        return_value=httpx.Response(
            200, content=STREAM, headers={"content-type": "text/event-stream"}
        )
    )
    backend = AnthropicBackend("claude-x", transport=RESPX, base_url=URL, api_key="k")
    reply = await agather(backend.stream(REQUEST))
    assert reply.text == "Let me check."
    assert reply.calls == (ToolCall("get_weather", {"city": "Paris"}, "toolu_1"),)
    assert reply.finish.reason == "tool_calls"
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (12, 20)
    sent = route.calls.last.request
    assert sent.headers["x-api-key"] == "k" and sent.headers["anthropic-version"]
    assert b'"stream":true' in sent.content.replace(b" ", b"")


@respx.mock
async def test_non_streaming() -> None:
    respx.post(f"{URL}/v1/messages").mock(
        return_value=httpx.Response(
            200,
            json={
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "claude-x",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "toolu_9",
                        "name": "get_weather",
                        "input": {"city": "Oslo"},
                    }
                ],
                "stop_reason": "tool_use",
                "usage": {"input_tokens": 3, "output_tokens": 4},
            },
        )
    )
    backend = AnthropicBackend("claude-x", transport=RESPX, base_url=URL, api_key="k", stream=False)
    reply = await agather(backend.stream(REQUEST))
    assert reply.calls == (ToolCall("get_weather", {"city": "Oslo"}, "toolu_9"),)


@respx.mock
async def test_status_error_keeps_status() -> None:
    respx.post(f"{URL}/v1/messages").mock(
        return_value=httpx.Response(
            529, json={"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}
        )
    )
    with pytest.raises(BackendStatusError, match="busy") as info:
        await agather(
            AnthropicBackend("c", transport=RESPX, base_url=URL, api_key="k").stream(REQUEST)
        )
    assert info.value.status_code == 529


@respx.mock
async def test_stream_without_message_stop_is_a_protocol_error() -> None:
    cut = STREAM.split(b"event: message_delta")[0]
    respx.post(f"{URL}/v1/messages").mock(
        return_value=httpx.Response(200, content=cut, headers={"content-type": "text/event-stream"})
    )
    with pytest.raises(BackendProtocolError, match="before message_stop"):
        await agather(
            AnthropicBackend("c", transport=RESPX, base_url=URL, api_key="k").stream(REQUEST)
        )


@respx.mock
def test_a_tool_use_cut_at_max_tokens_is_not_run() -> None:
    """Anthropic stops at `max_tokens` inside a tool_use block's input: the reply
    finishes "length" and the tool loop runs nothing."""
    cut = STREAM.replace(b'"\\"Paris\\"}"', b'"\\"Par"').replace(
        b'"stop_reason":"tool_use"', b'"stop_reason":"max_tokens"'
    )
    assert cut.count(b"max_tokens") == 1 and b"Paris" not in cut
    respx.post(f"{URL}/v1/messages").mock(
        return_value=httpx.Response(200, content=cut, headers={"content-type": "text/event-stream"})
    )
    ran: list[str] = []

    def get_weather(city: str) -> str:
        """Weather for a city."""
        ran.append(city)
        return "sunny"

    backend = AnthropicBackend("claude-x", transport=RESPX, base_url=URL, api_key="k")
    session = Session(backend, tools=[get_weather])
    with pytest.raises(ToolCallTruncatedError) as caught:
        session.chat("Weather in Paris?", run_tools=True).value  # noqa: B018
    assert ran == [] and caught.value.call.id == "toolu_1"
    assert caught.value.call.arguments == {"city": "Par"}  # closed where it was cut
