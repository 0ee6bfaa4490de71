"""PromptedBackend over a scripted plain-chat model: retries, fallbacks and what a retry shows."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from parlay.context import AssistantMessage, ToolResult, UserMessage
from parlay.engine.backend import PromptedBackend
from parlay.errors import BackendStatusError
from parlay.events import (
    Event,
    Finish,
    TextDelta,
    ToolCallStart,
)
from parlay.request import ChatRequest, ToolChoice

from .conftest import CALL, TOOLS
from .prompted_kit import PLAIN_SCHEMA, ask, block, calls_of, run, scripted, text_of


async def test_a_call_repeating_an_answered_one_is_retried() -> None:
    history = (
        UserMessage("Weather in Rome, then add 2 and 3?"),
        AssistantMessage("", (CALL,)),
        ToolResult("call_1", "get_weather", "sunny"),
    )
    inner = scripted(block("get_weather", city="Rome"), block("add", a=2, b=3), caps=PLAIN_SCHEMA)
    request = ChatRequest(history, TOOLS, ToolChoice("required"))
    events, finish = await run(PromptedBackend(inner, action_format="fenced"), request)
    assert calls_of(events) == [("add", {"a": 2, "b": 3})]
    assert [r.reason for r in finish.diagnostics.retries] == ["repeated_call"]
    assert "already called get_weather" in inner.requests[1].messages[-1].content
    # Under a grammar the retry leaves the repeated tool out.
    one = inner.requests[1].response_format.schema["anyOf"][0]
    assert one["properties"]["tool"]["enum"] == ["add"]


async def test_parallel_tool_calls_off_keeps_the_first_call() -> None:
    inner = scripted(block("get_weather", city="Paris") + "\n" + block("add", a=1, b=2))
    request = ChatRequest((UserMessage("Paris weather, 1+2"),), TOOLS, parallel_tool_calls=False)
    events, finish = await run(PromptedBackend(inner), request)
    assert calls_of(events) == [("get_weather", {"city": "Paris"})]
    assert not any(isinstance(e, ToolCallStart) and e.name == "add" for e in events)
    assert any("parallel_tool_calls is off" in n for n in finish.diagnostics.notes)


async def test_retries_and_diagnostics_are_logged_under_parlay(caplog) -> None:
    inner = scripted("no call", block("add", a=1, b=2))
    with caplog.at_level("DEBUG", logger="parlay"):
        await run(PromptedBackend(inner), ask("1+2", "required"))
    records = [r for r in caplog.records if r.name.startswith("parlay")]
    assert any("retry 1/2: no_call" in r.getMessage() for r in records)
    assert any("contract injected" in r.getMessage() for r in records)


class RejectsSchemas:
    """A plain-chat server that cannot turn some JSON schemas into grammars (HTTP 400)."""

    name = "picky"
    capabilities = PLAIN_SCHEMA

    def __init__(self) -> None:
        self.requests: list[ChatRequest] = []

    async def stream(self, request: ChatRequest) -> AsyncIterator[Event]:
        self.requests.append(request)
        if request.response_format is not None:
            raise BackendStatusError("grammar failed", status_code=400)
        yield TextDelta(block("add", a=1, b=2))
        yield Finish("stop")


async def test_a_rejected_action_schema_falls_back_to_unconstrained() -> None:
    inner = RejectsSchemas()
    events, finish = await run(PromptedBackend(inner), ask("1+2", "required"))
    assert calls_of(events) == [("add", {"a": 1, "b": 2})]
    assert not finish.diagnostics.constrained
    assert "rejected the action schema" in finish.diagnostics.notes[0]
    assert [r.response_format is not None for r in inner.requests] == [True, False]


async def test_constrained_true_does_not_hide_a_rejected_schema() -> None:
    with pytest.raises(BackendStatusError):
        await run(PromptedBackend(RejectsSchemas(), constrained=True), ask("1+2"))


async def test_a_looping_single_tool_is_steered_to_a_final_answer() -> None:
    history = (UserMessage("Weather in Rome?"), AssistantMessage("", (CALL,)))
    history = (*history, ToolResult("call_1", "get_weather", "sunny"))
    inner = scripted(
        block("get_weather", city="Rome"),
        '{"type": "final", "content": "Sunny in Rome."}',
        caps=PLAIN_SCHEMA,
    )
    request = ChatRequest(history, (TOOLS[0],))
    events, finish = await run(PromptedBackend(inner), request)
    assert calls_of(events) == [] and text_of(events) == "Sunny in Rome."
    assert [r.reason for r in finish.diagnostics.retries] == ["repeated_call"]
    assert inner.requests[0].response_format.name == "action"
    assert set(inner.requests[1].response_format.schema["properties"]) == {"type", "content"}


async def test_a_value_copied_from_the_examples_is_retried_with_a_way_out() -> None:
    # The few-shot call of get_weather shows city "Paris"; the user never said it.
    inner = scripted(block("get_weather", city="Paris"), "Which city should I use?")
    events, finish = await run(PromptedBackend(inner), ask("What's the weather like?"))
    assert calls_of(events) == []
    assert text_of(events) == "Which city should I use?"
    assert [(r.reason, r.detail) for r in finish.diagnostics.retries] == [
        ("example_value", 'city="Paris"')
    ]
    retry = inner.requests[1].messages
    assert "comes from the examples" in retry[-1].content and "ask for it" in retry[-1].content
    # Asked again without the examples, the copied reply or the value: nothing to copy.
    assert [type(m).__name__ for m in retry] == ["SystemMessage", "UserMessage", "UserMessage"]
    assert "Paris" not in retry[-1].content


async def test_a_value_the_user_gave_is_not_taken_for_a_copy() -> None:
    inner = scripted(block("get_weather", city="Paris"))
    events, finish = await run(PromptedBackend(inner), ask("Weather in paris today?"))
    assert calls_of(events) == [("get_weather", {"city": "Paris"})]
    assert finish.diagnostics.retries == ()


async def test_under_auto_the_unknown_tool_retry_allows_answering_without_a_tool() -> None:
    inner = scripted(block("search_web", q="LangChain"), "LangChain is a Python library.")
    events, finish = await run(PromptedBackend(inner), ask("What is LangChain?"))
    assert calls_of(events) == [] and "LangChain" in text_of(events)
    assert [r.reason for r in finish.diagnostics.retries] == ["unknown_tool"]
    message = inner.requests[1].messages[-1].content
    assert "get_weather, add" in message and "answer without a tool" in message


async def test_a_forced_choice_retry_still_demands_the_call() -> None:
    inner = scripted(block("search_web", q="x"), block("add", a=1, b=2))
    _, finish = await run(PromptedBackend(inner), ask("1+2", "required"))
    message = inner.requests[1].messages[-1].content
    assert "answer without a tool" not in message and "corrected tool call" in message
    assert [r.reason for r in finish.diagnostics.retries] == ["unknown_tool"]


async def test_a_value_copied_twice_leaves_only_an_answer_to_the_grammar() -> None:
    inner = scripted(
        block("get_weather", city="Paris"),
        block("get_weather", city="Paris"),
        '{"final": {"content": "Which city?"}}',
        caps=PLAIN_SCHEMA,
    )
    events, finish = await run(PromptedBackend(inner), ask("How is the weather?"))
    assert calls_of(events) == [] and text_of(events) == "Which city?"
    assert [r.reason for r in finish.diagnostics.retries] == ["example_value"] * 2
    assert [r.response_format.name for r in inner.requests] == ["action", "action", "final"]


async def test_a_reply_that_only_repeats_the_retry_message_is_dropped() -> None:
    # No earlier answer to fall back to: parlay's own instruction must not reach the user.
    inner = scripted(block("add", a="many", b=2), "Write the corrected tool call now.", "4.")
    events, finish = await run(PromptedBackend(inner, max_retries=1), ask("What is 2 plus 2?"))
    assert calls_of(events) == [] and text_of(events) == "4."
    assert "dropped a reply that only repeated the retry message" in finish.diagnostics.notes
    # Then asked for words alone, with the retry message out of sight.
    assert "Write the corrected" not in str(inner.requests[2].messages)


async def test_a_real_answer_after_a_retry_is_shown() -> None:
    inner = scripted(block("add", a="many", b=2), "I need two whole numbers to add.")
    events, _ = await run(PromptedBackend(inner, max_retries=1), ask("What is 2 plus 2?"))
    assert text_of(events) == "I need two whole numbers to add."
