"""A call repeating one the history already answered never goes out under `auto`.

Found on the turn-after-a-result benchmark (`bench.bfcl.after`, tune half): Qwen in the
typed format wrote the same answered call on every try, the last went out, and a tool
runner would have run it again until its chain limit.
"""

from __future__ import annotations

from parlay.context import AssistantMessage, ToolCall, ToolResult, UserMessage
from parlay.engine.backend import PromptedBackend
from parlay.request import ChatRequest, ToolChoice

from .conftest import TOOLS
from .prompted_kit import PLAIN, PLAIN_SCHEMA, block, calls_of, run, scripted, text_of

BOTH_ANSWERED = (
    UserMessage("Weather in Rome, and add 2 and 3?"),
    AssistantMessage(
        "",
        (
            ToolCall("get_weather", {"city": "Rome"}, "call_1"),
            ToolCall("add", {"a": 2, "b": 3}, "call_2"),
        ),
    ),
    ToolResult("call_1", "get_weather", "sunny"),
    ToolResult("call_2", "add", "5"),
)


async def test_a_call_repeating_an_answered_one_is_asked_again_for_words_under_auto() -> None:
    inner = scripted(
        block("get_weather", city="Rome"),
        '{"final": {"content": "Sunny in Rome; 2 + 3 is 5."}}',
        caps=PLAIN_SCHEMA,
    )
    engine = PromptedBackend(inner, action_format="json")
    events, finish = await run(engine, ChatRequest(BOTH_ANSWERED, TOOLS))
    assert calls_of(events) == []
    assert text_of(events) == "Sunny in Rome; 2 + 3 is 5."
    assert finish.reason == "stop"
    assert [r.reason for r in finish.diagnostics.retries] == ["repeated_call"]
    assert "repeat_to_words" in finish.diagnostics.rules
    # Not held to the tools it did not repeat (Qwen called one with the same values).
    assert set(inner.requests[1].response_format.schema["properties"]) == {"final"}
    # Nor told to call: asked for the answer only, a line it cannot follow is not there
    # to copy (held to words, Qwen wrote "The request asks for something no result above
    # gives yet, call the tool for it").
    last = inner.requests[1].messages[-1].content
    assert last.endswith("Answer the user with all 2 results.") and "call" not in last


async def test_a_repeat_on_the_last_try_without_a_grammar_is_dropped_for_words() -> None:
    repeat = block("get_weather", city="Rome")
    inner = scripted(repeat, repeat, repeat, "Sunny in Rome, and 5.", caps=PLAIN)
    events, finish = await run(PromptedBackend(inner), ChatRequest(BOTH_ANSWERED, TOOLS))
    assert calls_of(events) == []
    assert text_of(events) == "Sunny in Rome, and 5."
    assert {"repeat_to_words", "words_after_drop"} <= set(finish.diagnostics.rules)
    # The one more reply is asked for under tool_choice "none".
    assert "must not call any tool" in inner.requests[3].messages[0].content


async def test_a_repeat_the_caller_forced_still_goes_out() -> None:
    # Under tool_choice "required" the caller asked for a call: the last one stands.
    repeat = block("get_weather", city="Rome")
    inner = scripted(repeat, repeat, repeat, caps=PLAIN)
    request = ChatRequest(BOTH_ANSWERED, TOOLS, ToolChoice("required"))
    events, finish = await run(PromptedBackend(inner), request)
    assert calls_of(events) == [("get_weather", {"city": "Rome"})]
    assert "repeat_to_words" not in finish.diagnostics.rules


async def test_a_new_call_after_a_result_is_not_a_repeat() -> None:
    asked = UserMessage("Weather in Rome and in Oslo, and add 2 and 3?")
    inner = scripted(block("get_weather", city="Oslo"), caps=PLAIN_SCHEMA)
    request = ChatRequest((asked, *BOTH_ANSWERED[1:]), TOOLS)
    events, finish = await run(PromptedBackend(inner), request)
    assert calls_of(events) == [("get_weather", {"city": "Oslo"})]
    assert finish.diagnostics.retries == ()


ONE_ANSWERED = (*BOTH_ANSWERED, UserMessage("And the weather in Oslo?"))


async def test_a_repeat_beside_a_new_call_is_dropped_and_the_new_call_goes_out() -> None:
    reply = block("get_weather", city="Rome") + "\n" + block("get_weather", city="Oslo")
    inner = scripted(reply, caps=PLAIN)
    events, finish = await run(PromptedBackend(inner), ChatRequest(ONE_ANSWERED, TOOLS))
    assert calls_of(events) == [("get_weather", {"city": "Oslo"})]
    assert finish.diagnostics.rules == ("repeat_beside_new",)
    assert finish.reason == "tool_calls"


async def test_with_repeat_beside_new_off_both_calls_go_out() -> None:
    reply = block("get_weather", city="Rome") + "\n" + block("get_weather", city="Oslo")
    inner = scripted(reply, caps=PLAIN)
    engine = PromptedBackend(inner, rules_off={"repeat_beside_new"})
    events, _ = await run(engine, ChatRequest(ONE_ANSWERED, TOOLS))
    assert [a["city"] for _, a in calls_of(events)] == ["Rome", "Oslo"]


async def test_a_repeat_beside_a_new_call_the_caller_forced_goes_out() -> None:
    reply = block("get_weather", city="Rome") + "\n" + block("get_weather", city="Oslo")
    inner = scripted(reply, caps=PLAIN)
    request = ChatRequest(ONE_ANSWERED, TOOLS, ToolChoice("required"))
    events, _ = await run(PromptedBackend(inner), request)
    assert [a["city"] for _, a in calls_of(events)] == ["Rome", "Oslo"]
