"""The official SDKs read a reasoning model's reply through the proxy: its `<think>` block
arrives as the protocol's reasoning (thinking blocks, chat `reasoning_content`, a
Responses reasoning item), never as answer text; reasoning and tool search sent back
are accepted."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest
from proxy_harness import RunningServer, running

from parlay import PromptedBackend, ScriptedBackend
from parlay.server import create_app

THOUGHT = "the user wants a greeting"
ANSWER = "Hello there."


@pytest.fixture(scope="module")
def proxy() -> Iterator[RunningServer]:
    # A plain-chat reasoning model behind the engine, its reply streamed in small chunks
    # so that the tags split across them.
    inner = ScriptedBackend(lambda _: f"<think>{THOUGHT}</think>\n\n{ANSWER}", chunk_size=3)
    backend = PromptedBackend(inner, constrained=False)
    with running(create_app(backend, models=["smol"], client_keys=["sk-test"])) as server:
        yield server


@pytest.fixture
def an(proxy: RunningServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=proxy.url, api_key="sk-test", max_retries=0, timeout=10)


@pytest.fixture
def oa(proxy: RunningServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=proxy.url + "/v1", api_key="sk-test", max_retries=0, timeout=10)


HI: list[Any] = [{"role": "user", "content": "hi"}]
THINKING: Any = {"type": "enabled", "budget_tokens": 1024}


def test_anthropic_sdk_stream_gets_a_thinking_block_and_clean_text(an: anthropic.Anthropic) -> None:
    with an.messages.stream(model="smol", max_tokens=64, messages=HI, thinking=THINKING) as s:
        message = s.get_final_message()
    assert [b.type for b in message.content] == ["thinking", "text"]
    assert message.content[0].thinking == THOUGHT  # type: ignore[union-attr]
    assert message.content[1].text == ANSWER  # type: ignore[union-attr]


def test_anthropic_sdk_without_thinking_asked_gets_the_answer_only(an: anthropic.Anthropic) -> None:
    message = an.messages.create(model="smol", max_tokens=64, messages=HI)
    assert [(b.type, getattr(b, "text", "")) for b in message.content] == [("text", ANSWER)]


def test_anthropic_sdk_thinking_sent_back_without_signature_is_accepted(
    an: anthropic.Anthropic,
) -> None:
    messages: Any = [
        *HI,
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "x", "signature": ""},
                                          {"type": "text", "text": "Hi."}]},
        {"role": "user", "content": "again"},
    ]  # fmt: skip
    message = an.messages.create(model="smol", max_tokens=64, messages=messages, thinking=THINKING)
    assert message.content[-1].text == ANSWER  # type: ignore[union-attr]


def test_anthropic_sdk_tool_search_round_trip_is_not_refused(an: anthropic.Anthropic) -> None:
    schema = {"type": "object", "properties": {}}
    tools: Any = [
        {"name": "ToolSearch", "input_schema": schema},
        {"name": "Grep", "input_schema": schema, "defer_loading": True},
        {"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"},
    ]
    messages: Any = [
        *HI,
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "ToolSearch", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
            "content": [{"type": "tool_reference", "tool_name": "Grep"}]}]},
    ]  # fmt: skip
    message = an.messages.create(model="smol", max_tokens=64, messages=messages, tools=tools)
    assert message.content[-1].text == ANSWER  # type: ignore[union-attr]


def test_openai_sdk_chat_stream_gets_reasoning_content_apart(oa: openai.OpenAI) -> None:
    stream = oa.chat.completions.create(model="smol", messages=HI, stream=True)
    text, thought = "", ""
    for chunk in stream:
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        text += delta.content or ""
        thought += (delta.model_extra or {}).get("reasoning_content") or ""
    assert (text, thought) == (ANSWER, THOUGHT)


def test_openai_sdk_chat_whole_reply_has_reasoning_content(oa: openai.OpenAI) -> None:
    message = oa.chat.completions.create(model="smol", messages=HI).choices[0].message
    assert message.content == ANSWER
    assert (message.model_extra or {}).get("reasoning_content") == THOUGHT


def test_responses_sdk_gets_a_reasoning_item(oa: openai.OpenAI) -> None:
    response = oa.responses.create(model="smol", input="hi")
    assert [item.type for item in response.output] == ["reasoning", "message"]
    assert response.output_text == ANSWER
    with oa.responses.stream(model="smol", input="hi") as stream:
        final = stream.get_final_response()
    assert final.output_text == ANSWER
    reasoning = final.output[0]
    assert reasoning.type == "reasoning"
    assert reasoning.summary[0].text == THOUGHT


def test_responses_sdk_reasoning_sent_back_encrypted_is_accepted(oa: openai.OpenAI) -> None:
    items: Any = [
        {"role": "user", "content": "hi"},
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "opaque"},
        {"role": "assistant", "content": "Hi."},
        {"role": "user", "content": "again"},
    ]
    response = oa.responses.create(
        model="smol", input=items, include=["reasoning.encrypted_content"], store=False
    )
    assert response.output_text == ANSWER
