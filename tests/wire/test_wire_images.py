"""Images on the wire: each protocol's image forms decode into `Image` (bounded), and the
native client codecs send them on in the upstream's own form."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from parlay import AssistantMessage, ChatRequest, Image, ToolCall, ToolResult, UserMessage
from parlay.errors import InvalidRequestError
from parlay.wire import anthropic_client, openai_client
from parlay.wire import anthropic_request as anthropic
from parlay.wire import openai_request as chat
from parlay.wire import responses_request as responses
from parlay.wire.images import MAX_IMAGE_BYTES

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4
B64 = base64.b64encode(PNG).decode()
DATA_URL = f"data:image/png;base64,{B64}"
INLINE = Image("image/png", B64)
REMOTE = Image(url="https://example.com/cat.png")
ANTHROPIC_PNG = {
    "type": "image",
    "source": {"type": "base64", "media_type": "image/png", "data": B64},
}
ANTHROPIC_URL = {"type": "image", "source": {"type": "url", "url": REMOTE.url}}
READ = {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "/a.png"}}


def anthropic_messages(*messages: dict[str, Any]) -> tuple[Any, ...]:
    body = {"model": "m", "max_tokens": 10, "messages": list(messages)}
    return anthropic.decode_request(body).chat.messages


# -- decoding ------------------------------------------------------------------------------


def test_an_anthropic_user_turn_keeps_its_base64_and_url_images() -> None:
    content = [{"type": "text", "text": "What is this?"}, ANTHROPIC_PNG, ANTHROPIC_URL]
    got = anthropic_messages({"role": "user", "content": content})
    assert got == (UserMessage("What is this?", (INLINE, REMOTE)),)


def test_claude_codes_read_of_a_png_is_a_tool_result_with_an_image() -> None:
    # What Claude Code sends after its Read tool opened a PNG (issue 49).
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": [ANTHROPIC_PNG]}
    got = anthropic_messages(
        {"role": "user", "content": "read a.png"},
        {"role": "assistant", "content": [READ]},
        {"role": "user", "content": [result]},
    )
    assert got[-1] == ToolResult("toolu_1", "Read", "", images=(INLINE,))


def test_a_chat_completions_image_url_part_reads_data_and_http_urls() -> None:
    content = [
        {"type": "text", "text": "Compare"},
        {"type": "image_url", "image_url": {"url": DATA_URL, "detail": "low"}},
        {"type": "image_url", "image_url": {"url": REMOTE.url}},
    ]
    body = {"model": "m", "messages": [{"role": "user", "content": content}]}
    assert chat.decode_request(body).chat.messages == (UserMessage("Compare", (INLINE, REMOTE)),)


def test_a_chat_completions_tool_message_may_hold_an_image() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "shot", "arguments": "{}"}}
    image = {"type": "image_url", "image_url": {"url": DATA_URL}}
    body = {
        "model": "m",
        "messages": [
            {"role": "user", "content": "look"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": [image]},
        ],
    }
    assert chat.decode_request(body).chat.messages[-1] == ToolResult("c1", "shot", images=(INLINE,))


def test_codex_exec_dash_i_sends_an_input_image_in_the_first_user_message() -> None:
    content = [
        {"type": "input_image", "image_url": DATA_URL},
        {"type": "input_text", "text": "describe it"},
    ]
    body = {"model": "m", "input": [{"type": "message", "role": "user", "content": content}]}
    got = responses.decode_request(body).chat.messages
    assert got == (UserMessage("describe it", (INLINE,)),)


def test_codexs_view_image_result_is_an_input_image_in_function_call_output() -> None:
    call = {"type": "function_call", "call_id": "c1", "name": "view_image", "arguments": "{}"}
    output = {
        "type": "function_call_output",
        "call_id": "c1",
        "output": [{"type": "input_image", "image_url": DATA_URL}],
    }
    body = {"model": "m", "input": [{"role": "user", "content": "see"}, call, output]}
    got = responses.decode_request(body).chat.messages
    assert got[-1] == ToolResult("c1", "view_image", images=(INLINE,))


def test_an_image_over_the_size_cap_is_a_400_naming_the_limit() -> None:
    big = "A" * ((MAX_IMAGE_BYTES // 3 + 1) * 4)
    block = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": big}}
    with pytest.raises(InvalidRequestError, match=r"content\[0\]\.source\.data.*limit here"):
        anthropic_messages({"role": "user", "content": [block]})
    part = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{big}"}}
    with pytest.raises(InvalidRequestError, match="limit here"):
        chat.decode_request({"model": "m", "messages": [{"role": "user", "content": [part]}]})


@pytest.mark.parametrize(
    ("part", "says"),
    [
        ({"type": "image_url", "image_url": {"url": "data:image/png;base64,@@@@"}}, "base64"),
        ({"type": "image_url", "image_url": {"url": "data:text/plain;base64,QUJD"}}, "image/"),
        ({"type": "image_url", "image_url": {"url": "data:image/png,raw"}}, "base64"),
        ({"type": "image_url", "image_url": {"url": "file:///etc/passwd"}}, "http"),
        ({"type": "input_image", "file_id": "file_1"}, "keeps no state"),
    ],
    ids=["bad base64", "not an image type", "not base64", "a file url", "a stored file"],
)
def test_a_malformed_image_part_is_refused_with_what_to_fix(part: Any, says: str) -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": [part]}]}
    with pytest.raises(InvalidRequestError, match=says):
        chat.decode_request(body)


def test_an_image_in_a_system_or_assistant_message_is_refused() -> None:
    part = {"type": "image_url", "image_url": {"url": DATA_URL}}
    body = {"model": "m", "messages": [{"role": "system", "content": [part]}]}
    with pytest.raises(InvalidRequestError, match="images go in user messages"):
        chat.decode_request(body)


def test_image_from_path_guesses_the_media_type(tmp_path: Path) -> None:
    path = tmp_path / "cat.png"
    path.write_bytes(PNG)
    image = Image.from_path(path)
    assert image == INLINE
    assert image.size == len(PNG)
    assert Image.from_url(DATA_URL) == INLINE


# -- native passthrough ----------------------------------------------------------------

SHOT = ToolCall("shot", {}, "c1")
WITH_RESULT_IMAGE = ChatRequest(
    [
        UserMessage("What is this?", (INLINE,)),
        AssistantMessage("", (SHOT, ToolCall("shot", {}, "c2"))),
        ToolResult("c1", "shot", "a screenshot", images=(REMOTE,)),
        ToolResult("c2", "shot", "", images=(INLINE,)),
    ]
)


def test_an_openai_upstream_gets_tool_result_images_in_a_user_message_after_the_results() -> None:
    sent = openai_client.encode_request(WITH_RESULT_IMAGE, model="m", stream=False)["messages"]
    assert sent[0]["content"] == [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": DATA_URL}},
    ]
    # Both tool messages still follow the call, text only; then one user message.
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "tool", "user"]
    assert sent[2]["content"] == "a screenshot"
    assert sent[4]["content"][1:] == [
        {"type": "image_url", "image_url": {"url": REMOTE.url}},
        {"type": "image_url", "image_url": {"url": DATA_URL}},
    ]


def test_an_anthropic_upstream_gets_images_inside_the_user_turn_and_the_tool_result() -> None:
    _, turns = anthropic_client.encode_messages(WITH_RESULT_IMAGE)
    assert turns[0]["content"] == [{"type": "text", "text": "What is this?"}, ANTHROPIC_PNG]
    first, second = turns[2]["content"]
    assert first["content"] == [{"type": "text", "text": "a screenshot"}, ANTHROPIC_URL]
    assert second["content"] == [ANTHROPIC_PNG]


def test_a_message_without_images_is_sent_as_before() -> None:
    request = ChatRequest([UserMessage("hi"), AssistantMessage("", (SHOT,))])
    request = request.replace(messages=(*request.messages, ToolResult("c1", "shot", "ok")))
    sent = openai_client.encode_request(request, model="m", stream=False)["messages"]
    assert sent[0] == {"role": "user", "content": "hi"}
    assert sent[-1] == {"role": "tool", "tool_call_id": "c1", "content": "ok"}
    _, turns = anthropic_client.encode_messages(request)
    assert turns[0]["content"] == [{"type": "text", "text": "hi"}]
    assert turns[-1]["content"][0]["content"] == "ok"
