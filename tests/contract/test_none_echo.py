"""Under tool_choice none, parlay's instruction not to call never comes back as the
answer (issue: generalisation, item 5). Qwen, asked for words after a tool result,
answered "No tool can be called in this turn." (turn-after-a-result benchmark, 4 of the
1,561 stored replies, stops 26 and 28), and the reply still always has text."""

from __future__ import annotations

import json

import pytest

from parlay.backends.base import Capabilities
from parlay.backends.scripted import ScriptedBackend
from parlay.context import UserMessage
from parlay.engine.backend import PromptedBackend
from parlay.request import ChatRequest, ToolChoice

from .conftest import TOOLS
from .test_own_words import AFTER_RESULT, run

PLAIN = Capabilities(native_tools=False, json_schema=False)
GRAMMAR = Capabilities(native_tools=False, json_schema=True)
FRESH = (UserMessage("What is 2 + 3?"),)
NONE = ToolChoice("none")
ECHOES = [
    "No tool can be called in this turn.",  # Qwen, stored (the retry message's words)
    "Right now you must not call any tool: answer in plain words.",  # the system rule
    "No tool can be called in this turn. Answer the user in plain words.",
    "What is 2 + 3? No tool can be called in this turn.",  # the question copied beside it
]


def answer(caps: Capabilities, text: str) -> str:
    """`text` as the model writes it: held to the answer grammar, or free."""
    return json.dumps({"final": {"content": text}}) if caps is GRAMMAR else text


@pytest.mark.parametrize("echo", ECHOES)
@pytest.mark.parametrize("caps", [PLAIN, GRAMMAR], ids=["plain", "grammar"])
@pytest.mark.parametrize("history", [AFTER_RESULT, FRESH], ids=["after-result", "fresh"])
async def test_the_instruction_not_to_call_given_back_is_asked_again_in_words(
    echo: str, caps: Capabilities, history: tuple
) -> None:
    inner = ScriptedBackend([echo, answer(caps, "2 + 3 is 5.")], capabilities=caps)
    text, finish = await run(PromptedBackend(inner), ChatRequest(history, TOOLS, NONE))
    assert text == "2 + 3 is 5."
    assert finish.diagnostics is not None
    assert finish.diagnostics.rules == ("echo_filter", "words_only")
    second = inner.requests[1]
    if caps is GRAMMAR:
        # Not shown the instruction it gave back again: the answer's shape is asked for.
        assert second.response_format is not None and second.response_format.name == "final"
        assert "No tool can be called" not in second.messages[-1].content
    else:
        assert "No tool can be called" in second.messages[-1].content


@pytest.mark.parametrize("chunk", [1, 3, 100])
async def test_an_answer_followed_by_the_instruction_keeps_the_answer(chunk: int) -> None:
    reply = "2 + 3 is 5. No tool can be called in this turn."
    inner = ScriptedBackend([reply], capabilities=PLAIN, chunk_size=chunk)
    text, finish = await run(PromptedBackend(inner), ChatRequest(FRESH, TOOLS, NONE))
    assert text == "2 + 3 is 5." and len(inner.requests) == 1
    assert finish.diagnostics is not None and finish.diagnostics.rules == ("echo_filter",)


@pytest.mark.parametrize("caps", [PLAIN, GRAMMAR], ids=["plain", "grammar"])
async def test_with_no_other_words_the_last_reply_stands_rather_than_nothing(
    caps: Capabilities,
) -> None:
    echo = ECHOES[0]
    inner = ScriptedBackend([answer(caps, echo)] * 3, capabilities=caps)
    text, finish = await run(PromptedBackend(inner), ChatRequest(FRESH, TOOLS, NONE))
    assert text == echo and len(inner.requests) == 3
    assert finish.diagnostics is not None
    assert any("the last reply stands" in note for note in finish.diagnostics.notes)


async def test_after_a_tool_result_the_results_answer_before_an_echo_would() -> None:
    inner = ScriptedBackend([ECHOES[0]] * 3, capabilities=PLAIN)
    text, finish = await run(PromptedBackend(inner), ChatRequest(AFTER_RESULT, TOOLS, NONE))
    assert text == "add returned 5"
    assert finish.diagnostics is not None and finish.diagnostics.rules[-1] == "results_as_answer"


async def test_with_the_echo_filter_off_the_instruction_is_handed_on() -> None:
    inner = ScriptedBackend([ECHOES[0]], capabilities=PLAIN)
    backend = PromptedBackend(inner, rules_off={"echo_filter"})
    text, _ = await run(backend, ChatRequest(FRESH, TOOLS, NONE))
    assert text == ECHOES[0] and len(inner.requests) == 1


# The user's words given back are the answer when no words of parlay's come with them.
REPEATS = [
    (
        "Please repeat exactly: the quick brown fox jumps over the lazy dog by the river.",
        "The quick brown fox jumps over the lazy dog by the river.",
    ),
    (
        "Quote this back: We shall fight on the beaches, we shall fight on the landing grounds.",
        "Sure: We shall fight on the beaches, we shall fight on the landing grounds.",
    ),
]


@pytest.mark.parametrize("chunk", [1, 3, 100])
@pytest.mark.parametrize(("asked", "reply"), REPEATS)
async def test_a_reply_repeating_the_users_words_is_the_answer_under_tool_choice_none(
    asked: str, reply: str, chunk: int
) -> None:
    inner = ScriptedBackend([reply, "unwanted"], capabilities=PLAIN, chunk_size=chunk)
    request = ChatRequest((UserMessage(asked),), TOOLS, NONE)
    text, finish = await run(PromptedBackend(inner), request)
    assert text == reply and len(inner.requests) == 1
    assert finish.diagnostics is not None and finish.diagnostics.rules == ()
