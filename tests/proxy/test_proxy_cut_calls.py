"""A call the token limit cut reaches SDK clients as cut: `finish_reason: "length"` for
OpenAI, `stop_reason: "max_tokens"` for Anthropic, never as a whole call."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest
from proxy_harness import RunningServer, running

from parlay import PromptedBackend
from parlay.server import create_app

SCHEMA = {"type": "object", "properties": {"kinds": {"type": "array", "items": {"type": "string"}}}}
OPENAI_TOOLS: list[Any] = [{"type": "function", "function": {"name": "find", "parameters": SCHEMA}}]
ANTHROPIC_TOOLS: list[Any] = [{"name": "find", "input_schema": SCHEMA}]
ASK: list[Any] = [{"role": "user", "content": "Find civil and divorce cases."}]


@pytest.fixture(scope="module")
def proxy(stops_short: Any) -> Iterator[RunningServer]:
    cut = stops_short(['{"action": {"tool": "find", "args": {"kinds": ["Civil", "Div'])
    engine = PromptedBackend(cut, max_retries=0)
    with running(create_app(engine, models=["m"], client_keys=["sk-test"])) as server:
        yield server


def test_openai_sdk_sees_a_cut_call_finish_length(proxy: RunningServer) -> None:
    client = openai.OpenAI(base_url=proxy.url + "/v1", api_key="sk-test", max_retries=0)
    choice = client.chat.completions.create(model="m", messages=ASK, tools=OPENAI_TOOLS).choices[0]
    assert choice.finish_reason == "length"
    assert [c.function.name for c in choice.message.tool_calls or []] == ["find"]


def test_openai_sdk_stream_helper_raises_its_length_error(proxy: RunningServer) -> None:
    """The SDK's own reading of a cut reply: it refuses to hand it over as complete."""
    client = openai.OpenAI(base_url=proxy.url + "/v1", api_key="sk-test", max_retries=0)
    stream = client.chat.completions.stream(model="m", messages=ASK, tools=OPENAI_TOOLS)
    with pytest.raises(openai.LengthFinishReasonError), stream as events:
        events.get_final_completion()


def test_anthropic_sdk_sees_a_cut_call_stop_at_max_tokens(proxy: RunningServer) -> None:
    client = anthropic.Anthropic(base_url=proxy.url, api_key="sk-test", max_retries=0)
    message = client.messages.create(model="m", max_tokens=50, messages=ASK, tools=ANTHROPIC_TOOLS)
    assert message.stop_reason == "max_tokens"
    assert [block.type for block in message.content] == ["tool_use"]
