"""A call to a tool that was not offered never leaves a backend (issue 37, item 3)."""

from __future__ import annotations

import httpx
import pytest
import respx
from tests.backends.test_openai_backend import RESPX
from tests.contract.prompted_kit import ask, block, calls_of, run, scripted, text_of

from parlay import AnthropicBackend, OpenAIBackend, PromptedBackend
from parlay.backends.offered import OfferedGate, offered_calls_only, offered_names
from parlay.context import AssistantMessage, ToolCall, ToolResult, UserMessage
from parlay.events import Event, Finish, TextDelta, ToolCallArgsDelta, ToolCallEnd, ToolCallStart
from parlay.request import ChatRequest

BASE = "http://upstream.test"


def _call_events(name: str, call_id: str, index: int) -> list[Event]:
    call = ToolCall(name, {"a": 1}, call_id)
    return [ToolCallStart(call_id, name, index), ToolCallArgsDelta(call_id, '{"a": 1}'),
            ToolCallEnd(call)]  # fmt: skip


def _through_gate(events: list[Event], offered: set[str]) -> list[Event]:
    gate = OfferedGate(offered)
    return [out for event in events for out in gate.feed(event)]


def test_a_call_to_an_unoffered_tool_is_dropped_and_the_others_renumbered() -> None:
    events = [
        *_call_events("add", "c1", 0),
        *_call_events("get_weather", "c2", 1),
        Finish("tool_calls"),
    ]
    out = _through_gate(events, {"get_weather"})
    starts = [e for e in out if isinstance(e, ToolCallStart)]
    assert [(s.name, s.index) for s in starts] == [("get_weather", 0)]
    assert not any(isinstance(e, ToolCallArgsDelta) and e.id == "c1" for e in out)
    finish = out[-1]
    assert isinstance(finish, Finish) and finish.reason == "tool_calls"  # one call is left
    assert finish.diagnostics is not None and finish.diagnostics.unoffered_tools == ("add",)
    assert not any(isinstance(e, TextDelta) for e in out)


def test_a_reply_of_unoffered_calls_only_becomes_an_answer_naming_them() -> None:
    events = [TextDelta("Sure."), *_call_events("add", "c1", 0), Finish("tool_calls")]
    out = _through_gate(events, {"get_weather"})
    assert not any(isinstance(e, (ToolCallStart, ToolCallEnd)) for e in out)
    text = "".join(e.text for e in out if isinstance(e, TextDelta))
    assert text.startswith("Sure.\n\n") and "add" in text and "not available" in text
    finish = out[-1]
    assert isinstance(finish, Finish) and finish.reason == "stop"


def test_a_later_turn_that_repeats_no_tool_list_offers_the_tools_of_its_history() -> None:
    call = ToolCall("get_weather", {"city": "Rome"}, "call_1")
    history = (
        UserMessage("Rome?"),
        AssistantMessage("", (call,)),
        ToolResult("call_1", "get_weather", "sunny"),
    )
    assert offered_names(ChatRequest(history)) == {"get_weather"}
    assert offered_names(ask("hi")) == {"get_weather", "add"}


async def test_closing_the_gate_closes_the_stream_it_reads() -> None:
    closed: list[bool] = []

    async def upstream():  # type: ignore[no-untyped-def]
        try:
            yield TextDelta("a")
            yield TextDelta("b")
        finally:
            closed.append(True)

    gated = offered_calls_only(upstream(), set())
    assert await gated.__anext__() == TextDelta("a")
    await gated.aclose()  # type: ignore[attr-defined]
    assert closed == [True]


async def test_engine_retries_spent_on_an_unoffered_tool_end_in_an_answer_naming_it() -> None:
    inner = scripted(*[block("search_web", q="x")] * 3)
    events, finish = await run(PromptedBackend(inner), ask("Search the web for parlay"))
    assert calls_of(events) == []
    assert "search_web" in text_of(events)
    assert [r.reason for r in finish.diagnostics.retries] == ["unknown_tool", "unknown_tool"]
    assert finish.reason == "stop" and finish.diagnostics.unoffered_tools == ("search_web",)


@pytest.mark.parametrize("choice", ["auto", "required"])
async def test_engine_without_the_unknown_tool_rule_still_never_hands_on_the_call(
    choice: str,
) -> None:
    inner = scripted(block("search_web", q="x") + "\n" + block("add", a=1, b=2))
    engine = PromptedBackend(inner, rules_off=["unknown_tool"])
    events, finish = await run(engine, ask("1+2, and search the web", choice))
    assert calls_of(events) == [("add", {"a": 1, "b": 2})]
    assert [e.index for e in events if isinstance(e, ToolCallStart)] == [0]
    assert finish.reason == "tool_calls" and finish.diagnostics.unoffered_tools == ("search_web",)


@respx.mock
async def test_openai_upstream_calling_an_unoffered_tool_gives_an_answer() -> None:
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{}"}}
        ],
    }
    body = {"choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}]}
    respx.post(f"{BASE}/v1/chat/completions").mock(return_value=httpx.Response(200, json=body))
    backend = OpenAIBackend("m", transport=RESPX, base_url=f"{BASE}/v1", api_key="", stream=False)
    events = [e async for e in backend.stream(ask("weather?", tools=ask("x").tools[:1]))]
    assert calls_of(events) == [] and "add" in text_of(events)
    assert isinstance(events[-1], Finish) and events[-1].reason == "stop"


@respx.mock
async def test_anthropic_upstream_calling_an_unoffered_tool_gives_an_answer() -> None:
    body = {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "model": "m",
        "content": [{"type": "tool_use", "id": "tu_1", "name": "add", "input": {"a": 1}}],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 3, "output_tokens": 4},
    }
    respx.post(f"{BASE}/v1/messages").mock(return_value=httpx.Response(200, json=body))
    backend = AnthropicBackend("m", transport=RESPX, base_url=BASE, api_key="k", stream=False)
    events = [e async for e in backend.stream(ask("weather?", tools=ask("x").tools[:1]))]
    assert calls_of(events) == [] and "add" in text_of(events)
    assert isinstance(events[-1], Finish) and events[-1].reason == "stop"
