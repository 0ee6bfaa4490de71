"""`reads_as_english`: the gate that keeps `unrelated_call` to requests and tools in one
language, so a request in another language never loses its call to a word count."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from parlay.context import UserMessage
from parlay.engine.checks.language import reads_as_english
from parlay.engine.checks.relevance import unrelated_tools
from parlay.request import ToolSpec

WEATHER = ToolSpec(
    "get_current_weather", "Retrieves the current weather conditions for a specified city."
)


@pytest.mark.parametrize(
    "text",
    [
        "What's the weather in Los Angeles?",  # "los" is outnumbered by English words
        "Flights to Rio de Janeiro",
        "play me cha cha cha by käärijä",  # a name with letters English does not use
        "Open settings",  # no sign either way: judged
        "Schedule my next gym session",
        "",
    ],
)
def test_english_requests_read_as_english(text: str) -> None:
    assert reads_as_english(text)


@pytest.mark.parametrize(
    "text",
    [
        # BFCL live_parallel (tune half): a call BFCL expects, to an English tool.
        "¿Podrías decirme las condiciones actuales del clima en Cancún, QR, Playa del Carmen?",
        "Hallo, ukuran XS tidak ada ya?",
        "Peux-tu me donner la météo actuelle pour Paris ?",
        "Wie ist das Wetter in Berlin?",
        "Olá, tudo bem?",
        "我想创建一个workspace",
        "Какая погода в Москве?",
        "Translate וואב מאכסטו into English",  # more Hebrew words than English ones
    ],
)
def test_requests_in_other_languages_do_not(text: str) -> None:
    assert not reads_as_english(text)


def test_a_request_in_another_language_makes_no_tool_unrelated() -> None:
    spanish = "¿Podrías decirme las condiciones actuales del clima en Cancún?"
    assert unrelated_tools([UserMessage(spanish)], (WEATHER,)) == frozenset()
    # The same request in English shares "current" and "conditions" with the tool.
    english = "Could you tell me the current weather conditions in Cancún?"
    assert unrelated_tools([UserMessage(english)], (WEATHER,)) == frozenset()
    assert unrelated_tools([UserMessage("What colour is the sea?")], (WEATHER,)) == {
        "get_current_weather"
    }


def test_tools_described_in_another_language_make_no_tool_unrelated() -> None:
    tiempo = ToolSpec("obtener_tiempo", "Devuelve el tiempo actual de una ciudad.")
    assert unrelated_tools([UserMessage("What colour is the sea?")], (tiempo,)) == frozenset()


@given(st.text(max_size=300))
def test_no_text_makes_it_raise(text: str) -> None:
    assert reads_as_english(text) in (True, False)
