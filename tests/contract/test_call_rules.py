"""Rules of the user's own about calls (`CallRule`): judged after the engine's checks,
they send a call back with their sentence, are named in the diagnostics like the
engine's rules, and are switched off by name."""

from __future__ import annotations

import pytest

from parlay.context import ToolCall, UserMessage
from parlay.engine.backend import PromptedBackend
from parlay.engine.checks.retry import DEFAULT_CHECKS, CallRule
from parlay.engine.checks.retry_message import retry_instruction
from parlay.engine.contract.pieces import ContractOptions
from parlay.engine.policy import TurnPolicy
from parlay.errors import ConfigurationError
from parlay.request import ToolChoice, ToolSpec

from .conftest import TOOLS
from .prompted_kit import ask, block, calls_of, run, scripted, text_of


def no_abbreviations(call: ToolCall, tool: ToolSpec) -> str | None:
    city = call.arguments.get("city", "")
    if isinstance(city, str) and city.isupper():
        return f"write the city's full name, not {city!r}."
    return None


CITY = CallRule("full_city_names", no_abbreviations)


async def test_a_call_the_rule_rejects_is_asked_again_with_its_sentence() -> None:
    inner = scripted(block("get_weather", city="NYC"), block("get_weather", city="New York"))
    engine = PromptedBackend(inner, checks=[*DEFAULT_CHECKS, CITY])
    events, finish = await run(engine, ask("Weather in NYC?", "required"))
    assert calls_of(events) == [("get_weather", {"city": "New York"})]
    assert finish.diagnostics is not None
    assert finish.diagnostics.rules == ("full_city_names",)
    (retried,) = finish.diagnostics.retries
    assert (retried.reason, retried.detail) == (
        "full_city_names",
        CITY.check(ToolCall("get_weather", {"city": "NYC"}, "x"), TOOLS[0]),
    )
    # The model saw the rule's own sentence.
    second = inner.requests[1].messages[-1]
    assert isinstance(second, UserMessage)
    assert "write the city's full name, not 'NYC'." in second.content


async def test_under_auto_the_model_may_answer_in_words_after_the_rule_asks() -> None:
    inner = scripted(block("get_weather", city="NYC"), "Which New York do you mean?")
    engine = PromptedBackend(inner, checks=[*DEFAULT_CHECKS, CITY], constrained=False)
    events, _ = await run(engine, ask("Weather in NYC?", "auto"))
    assert calls_of(events) == [] and text_of(events) == "Which New York do you mean?"
    assert "answer to the user" in inner.requests[1].messages[-1].content


async def test_a_rule_switched_off_by_name_does_not_act() -> None:
    inner = scripted(block("get_weather", city="NYC"))
    engine = PromptedBackend(inner, checks=[*DEFAULT_CHECKS, CITY], rules_off=["full_city_names"])
    events, finish = await run(engine, ask("Weather in NYC?", "required"))
    assert calls_of(events) == [("get_weather", {"city": "NYC"})]
    assert finish.diagnostics is not None and finish.diagnostics.rules == ()
    assert CITY in engine.configure(max_retries=1).policy.checks  # kept by configure


async def test_a_rule_sees_only_calls_whose_arguments_fit() -> None:
    seen: list[dict[str, object]] = []

    def record(call: ToolCall, tool: ToolSpec) -> None:
        seen.append(dict(call.arguments))

    inner = scripted(block("get_weather", town="Rome"), block("get_weather", city="Rome"))
    engine = PromptedBackend(inner, checks=[*DEFAULT_CHECKS, CallRule("record", record)])
    await run(engine, ask("Weather in Rome?", "required"))
    assert seen == [{"city": "Rome"}]


@pytest.mark.parametrize(
    ("name", "message"),
    [("no spaces", "identifier"), ("invented_value", "parlay's own rules")],
)
def test_a_rule_with_a_bad_name_is_refused_when_made(name: str, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        CallRule(name, no_abbreviations)


def test_two_rules_of_one_name_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="two checks named full_city_names"):
        PromptedBackend(scripted(), checks=[*DEFAULT_CHECKS, CITY, CITY])


def test_rules_off_names_the_users_rules_among_the_known_ones() -> None:
    with pytest.raises(ConfigurationError, match="full_city_names"):
        PromptedBackend(scripted(), checks=[*DEFAULT_CHECKS, CITY], rules_off=["full_city_nams"])


@pytest.mark.parametrize("choice", ["auto", "required"])
def test_the_retry_message_of_a_users_rule(snapshot, choice: str) -> None:
    message = retry_instruction(
        "full_city_names",
        "write the city's full name, not 'NYC'.",
        1,
        TOOLS,
        TurnPolicy.of_choice(ToolChoice.coerce(choice)),
        ContractOptions(action_format="json"),
        TOOLS[0],
    )
    assert message == snapshot
