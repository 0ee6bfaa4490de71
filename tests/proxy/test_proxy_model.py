"""The official SDKs against `parlay serve` on uvicorn whose upstream is the real llama.cpp
server with SmolLM2 (no tool support of its own) behind the prompt-contract engine.

The model decides the wording; these tests assert protocol facts only: statuses, finish
and stop reasons, that calls name a declared tool and carry a JSON object, that the SDKs'
own stream accumulators accept what we send.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest
from proxy_harness import RunningServer, running
from proxy_stub import WEATHER_TOOL

from parlay import Capabilities, OpenAIBackend
from parlay.backends.local import LlamaServer
from parlay.engine.backend import PromptedBackend
from parlay.engine.checks.placeholders import is_placeholder
from parlay.server import create_app
from parlay.start import EMBEDDED_MIN_CALL_CONFIDENCE

pytestmark = pytest.mark.model

MAX = 48
# The Anthropic SDK has no `temperature` argument any more; the field still goes on the wire.
GREEDY: Any = {"temperature": 0}
WEATHER_OA: Any = WEATHER_TOOL
TIME_OA: Any = {
    "type": "function",
    "function": {
        "name": "get_time",
        "description": "Current local time in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
WEATHER_AN: Any = {
    "name": "get_weather",
    "description": "Current weather for a city.",
    "input_schema": WEATHER_OA["function"]["parameters"],
}
TIME_AN: Any = {
    "name": "get_time",
    "description": "Current local time in a city.",
    "input_schema": TIME_OA["function"]["parameters"],
}
ASK = "What is the weather in Paris?"
OA_HISTORY: Any = [
    {"role": "user", "content": ASK},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "Sunny, 21 C"},
]
AN_HISTORY: Any = [
    {"role": "user", "content": ASK},
    {
        "role": "assistant",
        "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}
        ],
    },
    {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "Sunny, 21 C"}],
    },
]


@pytest.fixture(scope="module")
def proxy(llama_server: LlamaServer) -> Iterator[RunningServer]:
    inner = OpenAIBackend(
        "smollm2",
        base_url=llama_server.base_url,
        api_key="",
        capabilities=Capabilities(native_tools=False, json_schema=True),
    )
    with running(
        create_app(
            PromptedBackend(inner, min_call_confidence=EMBEDDED_MIN_CALL_CONFIDENCE),
            models=["smollm2"],
        )
    ) as server:
        yield server


@pytest.fixture
def oa(proxy: RunningServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=proxy.url + "/v1", api_key="unused", max_retries=0, timeout=300)


@pytest.fixture
def an(proxy: RunningServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=proxy.url, api_key="unused", max_retries=0, timeout=300)


def assert_call(name: str, arguments: str, allowed: set[str]) -> None:
    assert name in allowed
    assert isinstance(json.loads(arguments), dict)


def test_openai_required_single_call(oa: openai.OpenAI) -> None:
    done = oa.chat.completions.create(
        model="smollm2",
        messages=[{"role": "user", "content": ASK}],
        tools=[WEATHER_OA, TIME_OA],
        tool_choice="required",
        parallel_tool_calls=False,
        max_tokens=MAX,
        temperature=0,
    )
    choice = done.choices[0]
    assert choice.finish_reason == "tool_calls"
    calls = choice.message.tool_calls or []
    assert len(calls) == 1
    assert_call(calls[0].function.name, calls[0].function.arguments, {"get_weather", "get_time"})
    assert done.usage is not None and done.usage.prompt_tokens > 0


def test_openai_named_tool_streams_into_the_sdk_accumulator(oa: openai.OpenAI) -> None:
    with oa.chat.completions.stream(
        model="smollm2",
        messages=[{"role": "user", "content": ASK}],
        tools=[WEATHER_OA, TIME_OA],
        tool_choice={"type": "function", "function": {"name": "get_time"}},
        max_tokens=MAX,
        temperature=0,
    ) as stream:
        kinds = [type(event).__name__ for event in stream]
        final = stream.get_final_completion()
    assert "FunctionToolCallArgumentsDeltaEvent" in kinds
    assert "FunctionToolCallArgumentsDoneEvent" in kinds
    calls = final.choices[0].message.tool_calls or []
    assert calls and all(c.function.name == "get_time" for c in calls)
    assert_call(calls[0].function.name, calls[0].function.arguments, {"get_time"})
    assert final.choices[0].finish_reason == "tool_calls"


def test_openai_tool_choice_none_streams_text(oa: openai.OpenAI) -> None:
    stream = oa.chat.completions.create(
        model="smollm2",
        messages=[{"role": "user", "content": ASK}],
        tools=[WEATHER_OA],
        tool_choice="none",
        max_tokens=MAX,
        temperature=0,
        stream=True,
    )
    text = []
    reasons = []
    for chunk in stream:
        for choice in chunk.choices:
            assert not choice.delta.tool_calls
            text.append(choice.delta.content or "")
            reasons.append(choice.finish_reason)
    assert "".join(text).strip()
    assert reasons[-1] in ("stop", "length")
    # More than one content chunk: the text streamed, it was not sent in one piece.
    assert sum(1 for t in text if t) > 1


def test_openai_continuation_and_later_turn_without_tools(oa: openai.OpenAI) -> None:
    with_tools = oa.chat.completions.create(
        model="smollm2", messages=OA_HISTORY, tools=[WEATHER_OA], max_tokens=MAX, temperature=0
    )
    without = oa.chat.completions.create(
        model="smollm2", messages=OA_HISTORY, max_tokens=MAX, temperature=0
    )
    for done in (with_tools, without):
        choice = done.choices[0]
        assert choice.finish_reason in ("stop", "length", "tool_calls")
        if choice.finish_reason == "tool_calls":
            for call in choice.message.tool_calls or []:
                # Without tools in the request, the engine knows them from the history.
                assert_call(call.function.name, call.function.arguments, {"get_weather"})
        else:
            # SmolLM2 here answers the format's stand-in ("your answer") after two retries;
            # the engine drops it rather than show it, so the text may be empty.
            assert not is_placeholder(choice.message.content or "x")


def test_openai_plain_text_final_answer(oa: openai.OpenAI) -> None:
    done = oa.chat.completions.create(
        model="smollm2",
        messages=OA_HISTORY,
        tools=[WEATHER_OA],
        tool_choice="none",
        max_tokens=MAX,
        temperature=0,
    )
    choice = done.choices[0]
    assert not choice.message.tool_calls
    assert choice.finish_reason in ("stop", "length")
    # The wording, and whether SmolLM2 writes any text at all here, is the model's: when it
    # answers with an action block anyway, the engine drops the call and the text is empty.
    assert isinstance(choice.message.content, str)


def assert_logprobs(tokens: list[Any], text: str, top: int) -> None:
    """OpenAI's `logprobs.content` for `text`: its tokens spell it, numbers are log-probs,
    at most `top` alternatives each."""
    assert tokens
    assert "".join(t.token for t in tokens) == text
    for entry in tokens:
        assert entry.logprob <= 0 and len(entry.top_logprobs) <= top
        assert all(alt.logprob <= 0 for alt in entry.top_logprobs)


@pytest.mark.parametrize("top", [3, None], ids=["top_logprobs=3", "logprobs_alone"])
def test_openai_logprobs_of_a_plain_chat(oa: openai.OpenAI, top: int | None) -> None:
    asked: Any = {"logprobs": True} if top is None else {"logprobs": True, "top_logprobs": top}
    done = oa.chat.completions.create(
        model="smollm2",
        messages=[{"role": "user", "content": "Say hello."}],
        max_tokens=16,
        temperature=0,
        **asked,
    )
    choice = done.choices[0]
    assert choice.logprobs is not None and choice.logprobs.content is not None
    assert_logprobs(choice.logprobs.content, choice.message.content or "", top or 0)


def test_openai_logprobs_streamed_with_each_chunk(oa: openai.OpenAI) -> None:
    stream = oa.chat.completions.create(
        model="smollm2",
        messages=[{"role": "user", "content": "Say hello."}],
        max_tokens=16,
        temperature=0,
        logprobs=True,
        top_logprobs=3,
        stream=True,
    )
    text, tokens = [], []
    for chunk in stream:
        for choice in chunk.choices:
            if choice.delta.content:
                # Every text chunk carries the tokens of its own text.
                assert choice.logprobs is not None and choice.logprobs.content
                text.append(choice.delta.content)
                tokens.extend(choice.logprobs.content)
    assert_logprobs(tokens, "".join(text), 3)


def logprob_tokens(oa: openai.OpenAI, stream: bool, **asked: Any) -> tuple[str, list[Any]]:
    """The content of a reply and its `logprobs.content`, whole or joined from chunks."""
    if not stream:
        choice = oa.chat.completions.create(**asked).choices[0]
        assert choice.logprobs is not None and choice.logprobs.content is not None
        return choice.message.content or "", choice.logprobs.content
    text, tokens = [], []
    for chunk in oa.chat.completions.create(**asked, stream=True):
        for choice in chunk.choices:
            if choice.delta.content:
                assert choice.logprobs is not None and choice.logprobs.content
                text.append(choice.delta.content)
                tokens.extend(choice.logprobs.content)
    return "".join(text), tokens


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_openai_logprob_bytes_rebuild_text_split_inside_characters(
    oa: openai.OpenAI, stream: bool
) -> None:
    """SmolLM2 writes a Chinese character in several byte-level tokens; llama.cpp sends
    each alternative, one such token, as "�" or "" with its exact bytes. Those bytes, not
    the stand-in's, reach the client, and the chosen tokens' bytes rebuild the text."""
    content, tokens = logprob_tokens(
        oa,
        stream,
        model="smollm2",
        messages=[
            {"role": "user", "content": "Write the Chinese word for hello, 你好, three times."}
        ],
        max_tokens=12,
        temperature=0,
        logprobs=True,
        top_logprobs=2,
    )
    assert any(ord(char) > 0x7F for char in content), f"no multi-byte text to test: {content!r}"
    assert all(entry.bytes is not None for entry in tokens)
    assert bytes(b for entry in tokens for b in entry.bytes).decode() == content
    alternatives = [alt for entry in tokens for alt in entry.top_logprobs]
    assert any(bytes(alt.bytes) != alt.token.encode() for alt in alternatives)
    for entry in tokens:
        # Greedy, so the likeliest alternative is the chosen token: the last of those that
        # llama.cpp merged into this entry, whose bytes therefore end the entry's.
        assert bytes(entry.bytes).endswith(bytes(entry.top_logprobs[0].bytes))


def test_anthropic_any_without_parallel_calls(an: anthropic.Anthropic) -> None:
    message = an.messages.create(
        model="smollm2",
        max_tokens=MAX,
        extra_body=GREEDY,
        messages=[{"role": "user", "content": ASK}],
        tools=[WEATHER_AN, TIME_AN],
        tool_choice={"type": "any", "disable_parallel_tool_use": True},
    )
    assert message.stop_reason == "tool_use"
    uses = [b for b in message.content if b.type == "tool_use"]
    assert len(uses) == 1
    assert uses[0].name in ("get_weather", "get_time") and isinstance(uses[0].input, dict)


def test_anthropic_named_tool_streams_into_get_final_message(an: anthropic.Anthropic) -> None:
    with an.messages.stream(
        model="smollm2",
        max_tokens=MAX,
        extra_body=GREEDY,
        messages=[{"role": "user", "content": ASK}],
        tools=[WEATHER_AN, TIME_AN],
        tool_choice={"type": "tool", "name": "get_weather"},
    ) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_message()
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    assert final.stop_reason == "tool_use"
    uses = [b for b in final.content if b.type == "tool_use"]
    assert uses and all(u.name == "get_weather" and isinstance(u.input, dict) for u in uses)


def test_anthropic_none_and_later_turn_without_tools(an: anthropic.Anthropic) -> None:
    plain = an.messages.create(
        model="smollm2",
        max_tokens=MAX,
        extra_body=GREEDY,
        messages=[{"role": "user", "content": ASK}],
        tools=[WEATHER_AN],
        tool_choice={"type": "none"},
    )
    assert plain.stop_reason in ("end_turn", "max_tokens")
    assert [b.type for b in plain.content] == ["text"]
    assert plain.content[0].type == "text" and plain.content[0].text.strip()
    later = an.messages.create(
        model="smollm2", max_tokens=MAX, extra_body=GREEDY, messages=AN_HISTORY
    )
    assert later.stop_reason in ("end_turn", "max_tokens", "tool_use")
    for block in later.content:
        assert block.type in ("text", "tool_use")
        if block.type == "tool_use":
            assert block.name == "get_weather" and isinstance(block.input, dict)


def test_anthropic_plain_text_final_answer_streamed(an: anthropic.Anthropic) -> None:
    with an.messages.stream(
        model="smollm2",
        max_tokens=MAX,
        extra_body=GREEDY,
        messages=AN_HISTORY,
        tools=[WEATHER_AN],
        tool_choice={"type": "none"},
    ) as stream:
        deltas = [e for e in stream if e.type == "content_block_delta"]
        final = stream.get_final_message()
    assert final.stop_reason in ("end_turn", "max_tokens")
    assert all(b.type == "text" for b in final.content)
    assert "".join(b.text for b in final.content if b.type == "text") == "".join(
        d.delta.text for d in deltas if d.delta.type == "text_delta"
    )


# -- the Responses API, same engine, same model --------------------------------------------

WEATHER_RS: Any = {
    "type": "function",
    "name": "get_weather",
    **{k: WEATHER_OA["function"][k] for k in ("description", "parameters")},
}
TIME_RS: Any = {
    "type": "function",
    "name": "get_time",
    **{k: TIME_OA["function"][k] for k in ("description", "parameters")},
}


def test_responses_required_single_call(oa: openai.OpenAI) -> None:
    done = oa.responses.create(
        model="smollm2",
        input=ASK,
        tools=[WEATHER_RS, TIME_RS],
        tool_choice="required",
        parallel_tool_calls=False,
        max_output_tokens=MAX,
        temperature=0,
    )
    assert done.status == "completed"
    calls = [item for item in done.output if item.type == "function_call"]
    assert len(calls) == 1
    assert_call(calls[0].name, calls[0].arguments, {"get_weather", "get_time"})
    assert done.usage is not None and done.usage.input_tokens > 0


def test_responses_named_tool_streams_into_the_sdk_accumulator(oa: openai.OpenAI) -> None:
    with oa.responses.stream(
        model="smollm2",
        input=ASK,
        tools=[WEATHER_RS, TIME_RS],
        tool_choice={"type": "function", "name": "get_time"},
        max_output_tokens=MAX,
        temperature=0,
    ) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_response()
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    calls = [item for item in final.output if item.type == "function_call"]
    assert [c.name for c in calls] == ["get_time"]
    assert_call(calls[0].name, calls[0].arguments, {"get_time"})


def test_responses_answer_after_a_function_call_output(oa: openai.OpenAI) -> None:
    history: Any = [
        {"role": "user", "content": ASK},
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "get_weather",
            "arguments": '{"city": "Paris"}',
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "Sunny, 21 C"},
    ]
    done = oa.responses.create(
        model="smollm2", input=history, tools=[WEATHER_RS], max_output_tokens=MAX, temperature=0
    )
    assert done.status in ("completed", "incomplete")
    calls = [item for item in done.output if item.type == "function_call"]
    for call in calls:
        assert_call(call.name, call.arguments, {"get_weather"})
    if not calls:
        # As on chat completions: the engine drops the format's stand-in ("your answer")
        # rather than show it, so the text may be empty, never the stand-in.
        assert not is_placeholder(done.output_text or "x")
