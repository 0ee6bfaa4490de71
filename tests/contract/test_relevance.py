"""Plain answers to requests that name what a tool does: spotted, and asked once more."""

from __future__ import annotations

import json

import pytest

from parlay.context import AssistantMessage, ToolResult, UserMessage
from parlay.engine.backend import PromptedBackend
from parlay.engine.checks.relevance import content_words, fitting_tool
from parlay.engine.checks.rules import HEURISTICS_OPT_IN
from parlay.engine.contract.examples import EXAMPLE_RESULT
from parlay.request import ToolSpec

from .conftest import CALL, TOOLS
from .prompted_kit import PLAIN_SCHEMA, ask, block, calls_of, run, scripted, text_of

EVENT_DATE = ToolSpec(
    "get_event_date",
    "Retrieve the date of a historical event.",
    {"type": "object", "properties": {"event": {"type": "string"}}, "required": ["event"]},
)


def final(text: str) -> str:
    return json.dumps({"final": {"content": text}})


def test_names_split_into_words_and_filler_goes() -> None:
    assert content_words("geo_distance.calculate") == {"geo", "distance", "calculate"}
    assert content_words("hotelRoomPricing") == {"hotel", "room", "pricing"}
    assert content_words("What is the date of the signing?") == {"date", "signing"}


@pytest.mark.parametrize(
    ("request_text", "expected"),
    [
        ("What's the current weather in Rome?", "get_weather"),  # name + description
        ("When was the date of the event in Lisbon?", "get_event_date"),
        ("Thanks for the weather!", None),  # one shared word is too weak a sign
        ("Write me a poem about the sea.", None),
        ("罗马现在的天气怎么样？", None),  # other languages share no words: never flagged
    ],
)
def test_the_tool_a_request_names(request_text: str, expected: str | None) -> None:
    found = fitting_tool([UserMessage(request_text)], (*TOOLS, EVENT_DATE))
    assert (found.name if found else None) == expected


def test_after_a_result_a_plain_answer_is_expected() -> None:
    messages = [UserMessage("What's the current weather in Rome?"), AssistantMessage("", (CALL,))]
    messages.append(ToolResult("call_1", "get_weather", "sunny"))
    assert fitting_tool(messages, TOOLS) is None


async def test_an_answer_from_memory_is_asked_again_naming_the_tool() -> None:
    inner = scripted(
        final("It was signed on 25 May 1995."),
        block("get_event_date", event="signing of the Treaty of Lisbon"),
        caps=PLAIN_SCHEMA,
    )
    question = "When was the Treaty of Lisbon signed? I need the date of that event."
    events, finish = await run(
        PromptedBackend(inner, rules_on=HEURISTICS_OPT_IN), ask(question, tools=(EVENT_DATE,))
    )
    assert calls_of(events) == [("get_event_date", {"event": "signing of the Treaty of Lisbon"})]
    assert text_of(events) == ""  # the first answer was held, then dropped
    assert [(r.reason, r.detail) for r in finish.diagnostics.retries] == [
        ("missed_tool", "get_event_date")
    ]
    message = inner.requests[1].messages[-1].content
    assert "get_event_date looks like it does what the user asks" in message
    assert "Retrieve the date of a historical event" in message
    assert "give your answer again" in message


async def test_a_second_plain_answer_stands() -> None:
    inner = scripted(final("Sunny, I think."), final("Sunny in Rome."), caps=PLAIN_SCHEMA)
    events, finish = await run(
        PromptedBackend(inner, rules_on=HEURISTICS_OPT_IN),
        ask("What's the current weather in Rome?"),
    )
    assert calls_of(events) == [] and text_of(events) == "Sunny in Rome."
    assert [r.reason for r in finish.diagnostics.retries] == ["missed_tool"]
    assert len(inner.requests) == 2


async def test_a_call_made_up_after_the_nudge_gives_way_to_an_answer() -> None:
    inner = scripted(
        final("Probably sunny."),
        block("get_weather", city="Springfield"),
        final("Which city do you mean?"),
        caps=PLAIN_SCHEMA,
    )
    events, finish = await run(
        PromptedBackend(inner, rules_on=HEURISTICS_OPT_IN), ask("What's the current weather?")
    )
    assert calls_of(events) == [] and text_of(events) == "Which city do you mean?"
    assert [r.reason for r in finish.diagnostics.retries] == ["missed_tool", "invented_value"]
    # Asked where the value came from (not yet held to words: the value may be known).
    assert [r.response_format.name for r in inner.requests] == ["action"] * 3
    assert "city that no one in this conversation gave" in inner.requests[2].messages[-1].content


@pytest.mark.parametrize("choice", ["none", "required"])
async def test_only_auto_is_nudged(choice: str) -> None:
    inner = scripted(final("Sunny."), block("get_weather", city="Rome"), caps=PLAIN_SCHEMA)
    _, finish = await run(
        PromptedBackend(inner), ask("What's the current weather in Rome?", choice)
    )
    assert "missed_tool" not in [r.reason for r in finish.diagnostics.retries]


async def test_check_missed_calls_off() -> None:
    inner = scripted(final("Sunny."), caps=PLAIN_SCHEMA)
    backend = PromptedBackend(inner, check_missed_calls=False)
    events, finish = await run(backend, ask("What's the current weather in Rome?"))
    assert text_of(events) == "Sunny." and finish.diagnostics.retries == ()
    assert backend.configure(max_retries=1).check_missed_calls is False


async def test_a_second_answer_repeating_the_message_gives_way_to_the_first() -> None:
    # Qwen on BFCL answered the nudge with its last line: "The tool call, or your answer
    # to the user."
    inner = scripted(
        final("Sunny, I think."),
        final("The tool call, or your answer to the user."),
        caps=PLAIN_SCHEMA,
    )
    events, finish = await run(
        PromptedBackend(inner, rules_on=HEURISTICS_OPT_IN),
        ask("What's the current weather in Rome?"),
    )
    assert calls_of(events) == [] and text_of(events) == "Sunny, I think."
    assert [r.reason for r in finish.diagnostics.retries] == ["missed_tool"]
    assert "the reply repeated the retry message: the first answer stands" in (
        finish.diagnostics.notes
    )


async def test_pretending_to_have_called_the_named_tool_leads_to_the_call() -> None:
    # The whole Qwen sequence: an answer from memory, the nudge, the examples' made-up
    # result given as the named tool's, then the call.
    pretended = f"get_event_date returned {json.dumps(EXAMPLE_RESULT)}."
    inner = scripted(
        final("It was signed on 25 May 1995."),
        final(pretended),
        block("get_event_date", event="Treaty of Lisbon signing"),
        caps=PLAIN_SCHEMA,
    )
    question = "When was the Treaty of Lisbon signed? I need the date of that event."
    events, finish = await run(
        PromptedBackend(inner, rules_on=HEURISTICS_OPT_IN),
        ask(question, tools=(*TOOLS, EVENT_DATE)),
    )
    assert calls_of(events) == [("get_event_date", {"event": "Treaty of Lisbon signing"})]
    assert text_of(events) == ""
    assert [r.reason for r in finish.diagnostics.retries] == ["missed_tool", "pretended_call"]


async def test_on_the_last_attempt_too_a_repeated_message_gives_way_to_the_first_answer() -> None:
    inner = scripted(
        final("Sunny, I think."),
        final("The tool call, or your answer to the user."),
        caps=PLAIN_SCHEMA,
    )
    backend = PromptedBackend(inner, rules_on=HEURISTICS_OPT_IN, max_retries=1)
    events, finish = await run(backend, ask("What's the current weather in Rome?"))
    assert text_of(events) == "Sunny, I think."
    # The last attempt holds its short text back to tell an echo.
    assert finish.diagnostics.streaming == "hybrid/hybrid"
