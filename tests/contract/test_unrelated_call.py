"""`unrelated_call` (opt-in): a call to a tool that shares no word with the request is
answered in words instead; a call to a tool the request names, in any words it shares,
goes on."""

from __future__ import annotations

import json

import pytest

from parlay.context import AssistantMessage, ToolResult, UserMessage
from parlay.engine.backend import PromptedBackend
from parlay.engine.checks.relevance import unrelated_tools
from parlay.engine.checks.rules import HEURISTICS_OPT_IN, OPT_IN
from parlay.request import ToolSpec

from .conftest import CALL, TOOLS
from .prompted_kit import PLAIN_SCHEMA, ask, block, calls_of, run, scripted, text_of

# The only tool of a BFCL live_irrelevance question Qwen called for a triangle's area.
BMI = ToolSpec("determine_body_mass_index", "Calculate body mass index given weight and height.")


def final(text: str) -> str:
    return json.dumps({"final": {"content": text}})


def test_it_is_opt_in_and_not_among_the_heuristics_that_did_not_earn_their_place() -> None:
    assert "unrelated_call" in OPT_IN and "unrelated_call" not in HEURISTICS_OPT_IN


@pytest.mark.parametrize(
    ("request_text", "unrelated"),
    [
        # BFCL live_irrelevance, tune half: the call Qwen made with the only tool offered.
        ("Calculate the area of a triangle, base 10 m and height 5 m.", set()),  # "height"
        ("What's the color of the sea?", {"determine_body_mass_index"}),
        ("Weather in Paris?", {"determine_body_mass_index"}),
        ("My weight is 70 kg and I am 1.80 m tall: what is my mass index?", set()),
        ("on", set()),  # no word to compare: nothing is judged unrelated
    ],
)
def test_a_tool_is_unrelated_when_it_shares_no_word_with_the_request(
    request_text: str, unrelated: set[str]
) -> None:
    assert unrelated_tools([UserMessage(request_text)], (BMI,)) == unrelated


def test_a_request_in_other_words_is_judged_unrelated_which_keeps_the_rule_opt_in() -> None:
    # The cost named in `rules.OPT_IN` and the docs: a right call any model would make.
    weather = ToolSpec("get_weather", "Get the current weather for a city.")
    assert unrelated_tools([UserMessage("Is it raining in Rome?")], (weather,)) == {"get_weather"}
    assert "unrelated_call" in OPT_IN


def test_numbers_the_request_and_a_tool_share_do_not_relate_them() -> None:
    # calculate_sum(37.8651, 119.5383) for a forecast at those coordinates.
    total = ToolSpec("calculate_sum", "Add 2 numbers.", {"type": "object", "properties": {}})
    request = "Fetch the forecast for 37.8651 N, 119.5383 W for the next 2 days"
    assert unrelated_tools([UserMessage(request)], (total,)) == {"calculate_sum"}


def test_word_forms_relate_a_request_to_a_tool() -> None:
    assert unrelated_tools([UserMessage("How weathery is Rome?")], TOOLS) == {"add"}


def test_after_a_tool_result_no_tool_is_judged() -> None:
    messages = [UserMessage("Weather in Rome, then the sum?"), AssistantMessage("", (CALL,))]
    messages.append(ToolResult("call_1", "get_weather", "sunny"))
    assert unrelated_tools(messages, TOOLS) == frozenset()


async def test_an_unrelated_call_is_answered_in_words_under_the_answer_grammar() -> None:
    inner = scripted(block("add", a=2, b=3), final("The sea is blue."), caps=PLAIN_SCHEMA)
    backend = PromptedBackend(inner, rules_on=["unrelated_call"])
    events, finish = await run(backend, ask("What's the colour of the sea?"))
    assert calls_of(events) == [] and text_of(events) == "The sea is blue."
    assert finish.diagnostics.rules == ("unrelated_call", "words_fallback")
    assert [r.response_format.name for r in inner.requests] == ["action", "final"]


async def test_as_shipped_the_unrelated_call_goes_on() -> None:
    inner = scripted(block("add", a=2, b=3), caps=PLAIN_SCHEMA)
    events, finish = await run(PromptedBackend(inner), ask("What's the colour of the sea?"))
    assert calls_of(events) == [("add", {"a": 2, "b": 3})]
    assert finish.diagnostics.rules == ()


async def test_a_call_the_request_names_goes_on() -> None:
    inner = scripted(block("get_weather", city="Paris"), caps=PLAIN_SCHEMA)
    backend = PromptedBackend(inner, rules_on=["unrelated_call"])
    events, finish = await run(backend, ask("What's the weather in Paris?"))
    assert calls_of(events) == [("get_weather", {"city": "Paris"})]
    assert len(inner.requests) == 1 and finish.diagnostics.rules == ()


async def test_a_reply_with_one_related_call_keeps_all_its_calls() -> None:
    reply = block("get_weather", city="Paris") + "\n" + block("add", a=2, b=3)
    inner = scripted(reply, caps=PLAIN_SCHEMA)
    backend = PromptedBackend(inner, rules_on=["unrelated_call"])
    events, _ = await run(backend, ask("What's the weather in Paris?"))
    assert [name for name, _ in calls_of(events)] == ["get_weather", "add"]


@pytest.mark.parametrize("choice", ["required", "add"])
async def test_a_forced_choice_is_never_judged(choice: str) -> None:
    inner = scripted(block("add", a=2, b=3), caps=PLAIN_SCHEMA)
    backend = PromptedBackend(inner, rules_on=["unrelated_call"])
    events, finish = await run(backend, ask("What's the colour of the sea?", choice))
    assert calls_of(events) == [("add", {"a": 2, "b": 3})]
    assert "unrelated_call" not in finish.diagnostics.rules


async def test_with_words_fallback_off_the_model_is_asked_and_its_last_call_stands() -> None:
    inner = scripted(*[block("add", a=2, b=3)] * 3, caps=PLAIN_SCHEMA)
    backend = PromptedBackend(inner, rules_on=["unrelated_call"], rules_off=["words_fallback"])
    events, finish = await run(backend, ask("Sum up the colour of the sea?"))
    assert "does not look like it does what the user asks" in inner.requests[1].messages[-1].content
    assert [r.response_format.name for r in inner.requests] == ["action"] * 3
    assert calls_of(events) == [("add", {"a": 2, "b": 3})]
    assert finish.diagnostics.rules == ("unrelated_call", "unrelated_call")
