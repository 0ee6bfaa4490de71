"""Under tool_choice none a reply always has text (issue: generalisation, item 5): when
no try leaves words after tool results, the results are the answer. Qwen, asked for
words after a dropped reply, restated the user's request until the token limit cut it,
twice (turn-after-a-result benchmark, stop 28)."""

from __future__ import annotations

from typing import Any

from parlay.backends.scripted import ScriptedBackend
from parlay.context import AssistantMessage, ToolCall, ToolResult, UserMessage
from parlay.engine.backend import PromptedBackend
from parlay.engine.checks.results_answer import results_answer
from parlay.request import ChatRequest, ToolChoice

from .conftest import TOOLS
from .test_continuation_echo import AFTER_RESULT, PLAIN
from .test_echo_trim import LONG_REQUEST, REQUEST
from .test_own_words import run

TWO_RESULTS = (
    UserMessage("Add 2 and 3, then 4 and 4."),
    AssistantMessage("", (ToolCall("add", {"a": 2, "b": 3}, "c1"), ToolCall("add", {}, "c2"))),
    ToolResult("c1", "add", output="5"),
    ToolResult("c2", "add", error="missing argument a"),
)


def test_the_answer_holds_each_trailing_result_in_order() -> None:
    assert results_answer(TWO_RESULTS, 100) == "add returned 5\nadd failed: missing argument a"


def test_an_empty_or_long_output_is_said_so_or_cut() -> None:
    messages = (*AFTER_RESULT[:2], ToolResult("c1", "add", output="  "))
    assert results_answer(messages, 100) == "add returned nothing."
    long = (*AFTER_RESULT[:2], ToolResult("c1", "add", output="x" * 500))
    answer = results_answer(long, 40)
    assert answer.startswith("add returned x") and answer.endswith("…")
    assert len(answer) == len("add returned ") + 40


def test_a_conversation_not_ending_with_results_has_no_such_answer() -> None:
    assert results_answer(AFTER_RESULT[:1], 100) == ""
    assert results_answer((*AFTER_RESULT, UserMessage("thanks")), 100) == ""


async def test_a_restated_request_cut_twice_leaves_the_results(stops_short: Any) -> None:
    restated = REQUEST[:78]  # the user's words, as the continuation quotes them, cut
    inner = stops_short([restated[i : i + 3] for i in range(0, len(restated), 3)])
    text, finish = await run(
        PromptedBackend(inner, max_retries=0), ChatRequest(LONG_REQUEST, tools=TOOLS)
    )
    assert text == "add returned 5"
    assert finish.diagnostics is not None
    assert "results_as_answer" in finish.diagnostics.rules


async def test_tool_choice_none_with_no_words_answers_with_the_results() -> None:
    inner = ScriptedBackend(["", "", ""], capabilities=PLAIN)
    request = ChatRequest(AFTER_RESULT, tools=TOOLS, tool_choice=ToolChoice("none"))
    text, finish = await run(PromptedBackend(inner), request)
    assert text == "add returned 5"
    assert finish.diagnostics is not None and "results_as_answer" in finish.diagnostics.rules


async def test_an_answer_in_words_is_never_replaced() -> None:
    inner = ScriptedBackend(["2 + 3 is 5."], capabilities=PLAIN)
    request = ChatRequest(AFTER_RESULT, tools=TOOLS, tool_choice=ToolChoice("none"))
    text, finish = await run(PromptedBackend(inner), request)
    assert text == "2 + 3 is 5."
    assert finish.diagnostics is not None and "results_as_answer" not in finish.diagnostics.rules
