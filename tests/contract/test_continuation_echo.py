"""The continuation around tool results is parlay's own text: a reply that only repeats
it never reaches the user (issue: generalisation, item 5). Qwen and SmolLM2, held to
words after a repeated call, answered with its last line (turn-after-a-result benchmark,
stop 26)."""

from __future__ import annotations

import pytest

from parlay.backends.base import Capabilities
from parlay.backends.scripted import ScriptedBackend
from parlay.context import AssistantMessage, ToolCall, ToolResult, UserMessage
from parlay.engine.backend import PromptedBackend
from parlay.engine.checks.own_words import continuation_words, own_passages
from parlay.engine.contract.pieces import ContractOptions
from parlay.engine.contract.render import render_contract
from parlay.request import ChatRequest, ToolChoice

from .conftest import TOOLS
from .test_own_words import run

PLAIN = Capabilities(native_tools=False, json_schema=False)
AFTER_RESULT = (
    UserMessage("What is 2 + 3?"),
    AssistantMessage("", (ToolCall("add", {"a": 2, "b": 3}, "c1"),)),
    ToolResult("c1", "add", output="5"),
)
LAST_LINE = (
    "Decide the next step: if the request asks for something no result above gives yet, "
    "call the tool for it; otherwise answer the user with this result."
)


def test_the_continuations_own_words_leave_out_the_results_and_the_request() -> None:
    options = ContractOptions()
    rendered = render_contract(ChatRequest(AFTER_RESULT, tools=TOOLS), options).messages
    passages = continuation_words(AFTER_RESULT, rendered, options).passages
    assert LAST_LINE in "".join(passages)
    assert not any("5" in p or "2 + 3" in p or "add" in p for p in passages)


def test_a_conversation_not_ending_with_results_has_no_continuation_words() -> None:
    options = ContractOptions()
    request = ChatRequest(AFTER_RESULT[:1], tools=TOOLS)
    rendered = render_contract(request, options).messages
    assert continuation_words(request.messages, rendered, options).passages == ()


def test_passages_are_what_lies_between_the_quoted_texts() -> None:
    assert own_passages("Result: 42. Answer now.", ["42"]) == ("Result: ", ". Answer now.")
    assert own_passages("all mine", []) == ("all mine",)


@pytest.mark.parametrize(
    "echo",
    [
        LAST_LINE,
        "The request asks for something no result above gives yet, call the tool for it.",
        "Decide the next step",
        # Copied in parts: the restated request, then the instruction.
        "The request: What is 2 + 3? Answer the user with this result.",
        "the  request asks for something no result above gives yet,\ncall the tool for it..",
    ],
)
@pytest.mark.parametrize("retries", [0, 2])
async def test_an_echo_of_the_continuation_is_dropped_and_an_answer_asked_for(
    echo: str, retries: int
) -> None:
    # chunk_size=3: live and hybrid text would stream before the reply is judged.
    inner = ScriptedBackend([echo, "2 + 3 is 5."], capabilities=PLAIN, chunk_size=3)
    backend = PromptedBackend(inner, max_retries=retries)
    text, finish = await run(backend, ChatRequest(AFTER_RESULT, tools=TOOLS))
    assert text == "2 + 3 is 5."
    assert finish.diagnostics is not None
    assert finish.diagnostics.rules == ("echo_filter", "words_after_drop")
    assert any("continuation" in note for note in finish.diagnostics.notes)


@pytest.mark.parametrize(
    "answer",
    [
        "Decide the next step? None is needed: 2 + 3 is 5.",
        "The result of add: 5.",
        "What is 2 + 3? It is 5.",
        "The request asked for 2 + 3, and the result above gives 5.",
        "No result above gives anything else the request asks for: 2 + 3 is 5.",
        # Clauses of the user's or the continuation's words beside the answer's own
        # (`parlay.engine.checks.echo_trim` reads a reply in clauses).
        "The result of add: 5. Anything else?",
        "The answer: 5.\nThe tool add returned it.",
        "What is 2 + 3? It is 5. Let me know if you need another sum.",
        "You asked: what is 2 + 3? The add tool says 5.",
        # In words like the instruction not to call (`tool_choice="none"`).
        "No tool is needed: 2 + 3 is 5.",
        "I cannot call a tool now, but 2 + 3 is 5.",
    ],
)
@pytest.mark.parametrize("choice", ["auto", "none"])
async def test_an_answer_that_starts_like_the_continuation_streams_whole(
    answer: str, choice: str
) -> None:
    inner = ScriptedBackend([answer], capabilities=PLAIN, chunk_size=3)
    backend = PromptedBackend(inner, max_retries=0)
    request = ChatRequest(AFTER_RESULT, tools=TOOLS, tool_choice=ToolChoice(choice))
    text, finish = await run(backend, request)
    assert text == answer
    assert finish.diagnostics is not None and "echo_filter" not in finish.diagnostics.rules


async def test_with_the_echo_filter_off_the_echo_is_handed_on() -> None:
    inner = ScriptedBackend([LAST_LINE], capabilities=PLAIN, chunk_size=3)
    backend = PromptedBackend(inner, max_retries=0, rules_off={"echo_filter"})
    text, _ = await run(backend, ChatRequest(AFTER_RESULT, tools=TOOLS))
    assert text == LAST_LINE


def test_text_longer_than_the_continuation_is_not_held_as_a_possible_repeat() -> None:
    options = ContractOptions()
    rendered = render_contract(ChatRequest(AFTER_RESULT, tools=TOOLS), options).messages
    words = continuation_words(AFTER_RESULT, rendered, options)
    assert words.may_be_repeated_by("The request asks for something")
    # Allowed words only, but far longer than anything the continuation says.
    assert not words.may_be_repeated_by("the request " * 400)
