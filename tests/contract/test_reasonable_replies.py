"""What a reasonable model does must come out as it did: one test for each case the
generalisation issue found a rule breaking."""

from __future__ import annotations

import json

from parlay.context import UserMessage
from parlay.engine.backend import PromptedBackend
from parlay.engine.checks.refusal import asks_user, detect_refusal
from parlay.engine.contract.grounding import Grounds, invented_value

from .conftest import WEATHER
from .prompted_kit import PLAIN_SCHEMA, ask, block, calls_of, run, scripted, text_of


def final(text: str) -> str:
    return json.dumps({"final": {"content": text}})


def grounded(value: str, said: str) -> bool:
    return invented_value({"city": value}, WEATHER, Grounds((UserMessage(said),))) is None


async def test_a_clarifying_question_is_not_retried_as_a_refusal() -> None:
    question = "Which city? I can't check the weather without one."
    assert detect_refusal(question) is not None and asks_user(question)
    inner = scripted(final(question), caps=PLAIN_SCHEMA)
    events, finish = await run(PromptedBackend(inner), ask("What's the weather like?"))
    assert text_of(events) == question and calls_of(events) == []
    assert "refusal" not in finish.diagnostics.rules
    assert len(inner.requests) == 1


async def test_a_soft_refusal_that_asks_nothing_is_still_retried() -> None:
    inner = scripted(final("I can't check the weather."), block("get_weather", city="Rome"))
    events, finish = await run(PromptedBackend(inner), ask("Weather in Rome?"))
    assert calls_of(events) == [("get_weather", {"city": "Rome"})]
    assert finish.diagnostics.rules == ("refusal",)


def test_an_abbreviation_grounds_the_words_it_stands_for_and_back() -> None:
    assert grounded("New York City", "Weather in NYC?")
    assert grounded("NYC", "Weather in New York City?")
    assert grounded("USA", "Flights inside the United States of America")
    assert not grounded("Los Angeles", "Weather in NYC?")
    # Any two words make a two-letter "abbreviation": too loose to count.
    assert not grounded("LA", "a large apple")
