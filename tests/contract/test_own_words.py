"""Answers, not placeholders: parlay's own words never reach a user, and
tool_choice="none" always answers in words (issue: generalisation, item 5)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from parlay.backends.base import Capabilities
from parlay.backends.scripted import ScriptedBackend
from parlay.context import AssistantMessage, ToolCall, ToolResult, UserMessage
from parlay.engine.backend import PromptedBackend
from parlay.engine.checks.placeholders import (
    PLACEHOLDERS,
    is_debris,
    is_placeholder,
    leading_debris,
    may_become_placeholder,
)
from parlay.events import Event, Finish, TextDelta
from parlay.request import ChatRequest, ToolChoice

from .conftest import TOOLS

PLAIN = Capabilities(native_tools=False, json_schema=False)
GRAMMAR = Capabilities(native_tools=False, json_schema=True)
TEMPLATES = Path(__file__).resolve().parents[2] / "templates" / "contract"
AFTER_RESULT = (
    UserMessage("What is 2 + 3?"),
    AssistantMessage("", (ToolCall("add", {"a": 2, "b": 3}, "c1"),)),
    ToolResult("c1", "add", output="5"),
)


async def run(backend: PromptedBackend, request: ChatRequest) -> tuple[str, Finish]:
    events: list[Event] = [e async for e in backend.stream(request)]
    finish = events[-1]
    assert isinstance(finish, Finish)
    return "".join(e.text for e in events if isinstance(e, TextDelta)), finish


def test_the_list_of_stand_ins_covers_every_format_template() -> None:
    written = set()
    for path in (TEMPLATES / "formats").glob("*/instructions.j2"):
        text = path.read_text()
        written |= set(re.findall(r':\s*"([^"{}]+)"', text))  # values
        written |= set(re.findall(r'\{"([A-Z_]+)"', text))  # upper-case keys
    written.add("TOOL_NAME")
    # The typed format's kinds are the protocol's own literals, not stand-ins to fill.
    assert written - {"tool_call", "tool_calls", "final"} <= set(PLACEHOLDERS)


@pytest.mark.parametrize("stand_in", PLACEHOLDERS)
@pytest.mark.parametrize("shape", ["json", "text", "quoted"])
async def test_no_stand_in_reaches_the_user_after_a_tool_result(stand_in: str, shape: str) -> None:
    written = {
        "json": json.dumps({"final": {"content": stand_in}}),
        "text": stand_in,
        "quoted": f'"{stand_in}."',
    }[shape]
    inner = ScriptedBackend([written, "2 + 3 is 5."], capabilities=PLAIN)
    text, finish = await run(PromptedBackend(inner), ChatRequest(AFTER_RESULT, tools=TOOLS))
    assert text == "2 + 3 is 5."
    assert finish.diagnostics is not None
    assert [r.reason for r in finish.diagnostics.retries] == ["placeholder_answer"]


@pytest.mark.parametrize("stand_in", PLACEHOLDERS)
async def test_a_stand_in_with_no_retry_left_is_dropped_not_shown(stand_in: str) -> None:
    inner = ScriptedBackend([stand_in, "2 + 3 is 5."], capabilities=PLAIN, chunk_size=2)
    backend = PromptedBackend(inner, max_retries=0)  # live: text would stream at once
    text, finish = await run(backend, ChatRequest(AFTER_RESULT, tools=TOOLS))
    # Dropped, then asked once more for words (tool_choice none), with nothing to repeat.
    assert text == "2 + 3 is 5."
    assert finish.diagnostics is not None
    assert any("stand-in" in note for note in finish.diagnostics.notes)
    assert finish.diagnostics.rules == ("echo_filter", "words_after_drop")
    assert "must not call any tool" in inner.requests[1].messages[0].content


async def test_a_stand_in_again_after_the_words_request_leaves_the_results_and_no_loop() -> None:
    inner = ScriptedBackend(["your answer", "your answer"], capabilities=PLAIN)
    backend = PromptedBackend(inner, max_retries=0)
    text, finish = await run(backend, ChatRequest(AFTER_RESULT, tools=TOOLS))
    # No words came from the model: the answer of last resort is what the tool returned.
    assert text == "add returned 5" and len(inner.requests) == 2
    assert finish.diagnostics is not None
    assert finish.diagnostics.rules == ("echo_filter", "words_after_drop", "results_as_answer")
    assert any("the tool results are the answer" in n for n in finish.diagnostics.notes)


async def test_with_results_as_answer_off_no_words_leave_an_empty_reply() -> None:
    inner = ScriptedBackend(["your answer", "your answer"], capabilities=PLAIN)
    backend = PromptedBackend(inner, max_retries=0, rules_off={"results_as_answer"})
    text, _ = await run(backend, ChatRequest(AFTER_RESULT, tools=TOOLS))
    assert text == "" and len(inner.requests) == 2


async def test_words_after_drop_off_leaves_the_dropped_reply_empty() -> None:
    inner = ScriptedBackend(["your answer"], capabilities=PLAIN)
    backend = PromptedBackend(inner, max_retries=0, rules_off={"words_after_drop"})
    text, _ = await run(backend, ChatRequest(AFTER_RESULT, tools=TOOLS))
    assert text == "" and len(inner.requests) == 1


async def test_a_live_answer_that_only_starts_like_a_stand_in_streams_whole() -> None:
    inner = ScriptedBackend(["Your answer is 5."], capabilities=PLAIN, chunk_size=3)
    backend = PromptedBackend(inner, max_retries=0)
    text, _ = await run(backend, ChatRequest(AFTER_RESULT, tools=TOOLS))
    assert text == "Your answer is 5."


@pytest.mark.parametrize(
    ("text", "whole", "start"),
    [
        ("your answer", True, True),
        ('  "Your answer." ', True, True),
        ("VALUE", True, True),
        ("Your", False, True),
        ("Your answer is 5.", False, False),
        ("Yes", False, False),
        ("The VALUE is 3", False, False),
    ],
)
def test_stand_ins_are_told_from_answers(text: str, whole: bool, start: bool) -> None:
    assert is_placeholder(text) is whole
    assert may_become_placeholder(text) is start


async def test_tool_choice_none_is_never_constrained() -> None:
    """Held to the answer grammar, SmolLM2 answered "weather in Paris?" with "Paris"."""
    inner = ScriptedBackend(["Hi."], capabilities=GRAMMAR)
    request = ChatRequest((UserMessage("hi"),), tools=TOOLS, tool_choice=ToolChoice("none"))
    text, finish = await run(PromptedBackend(inner), request)
    assert inner.requests[0].response_format is None and text == "Hi."
    assert finish.diagnostics is not None and not finish.diagnostics.constrained


ACTION = json.dumps({"action": {"tool": "add", "args": {"a": 2, "b": 3}}})


@pytest.mark.parametrize("caps", [PLAIN, GRAMMAR], ids=["plain", "grammar"])
@pytest.mark.parametrize("first", [ACTION, "", "  \n"], ids=["call", "nothing", "whitespace"])
async def test_a_reply_without_words_under_tool_choice_none_is_asked_again_in_words(
    caps: Capabilities, first: str
) -> None:
    """Qwen wrote an action under tool_choice none: stripped of it, nothing was left. A
    reply under none always has text: one that wrote nothing is asked again too."""
    inner = ScriptedBackend([first, "I can add them: 2 + 3 is 5."], capabilities=caps)
    request = ChatRequest((UserMessage("2 + 3?"),), tools=TOOLS, tool_choice=ToolChoice("none"))
    text, finish = await run(PromptedBackend(inner), request)
    assert text == "I can add them: 2 + 3 is 5."
    assert finish.diagnostics is not None
    assert [r.reason for r in finish.diagnostics.retries] == ["words_only"]
    assert "No tool can be called" in inner.requests[1].messages[-1].content


async def test_the_last_try_for_words_is_held_to_the_answer_grammar() -> None:
    """After a tool result SmolLM2 wrote the same call three times under tool_choice
    none: the last attempt is held to a grammar that only admits an answer."""
    answer = json.dumps({"final": {"content": "2 + 3 is 5."}})
    inner = ScriptedBackend([ACTION, ACTION, answer], capabilities=GRAMMAR)
    request = ChatRequest(AFTER_RESULT, tools=TOOLS, tool_choice=ToolChoice("none"))
    text, finish = await run(PromptedBackend(inner, action_format="json"), request)
    assert text == "2 + 3 is 5."
    assert finish.diagnostics is not None
    assert [r.reason for r in finish.diagnostics.retries] == ["words_only", "words_only"]
    formats = [r.response_format for r in inner.requests]
    assert formats[0] is None and formats[1] is None
    assert formats[2] is not None and formats[2].name == "final"
    # Not shown the format's stand-in to copy, nor the calls it kept writing: the one
    # action left is the history's own.
    last = "\n".join(m.content for m in inner.requests[2].messages)
    assert "your answer" not in last and last.count('"action"') == 1


@pytest.mark.parametrize("debris", [",", "}} ", '{"', " . ", "}}\n```"])
async def test_a_reply_of_punctuation_or_action_debris_is_no_answer(debris: str) -> None:
    """docs/tool-results.md's manual insert printed `,` on the embedded model, and
    `parlay prompt "What is 7 times 6?"` answered `}} ...`: a reply without one letter or
    digit is asked again, never handed over as the answer."""
    inner = ScriptedBackend([debris, "2 + 3 is 5."], capabilities=PLAIN)
    text, finish = await run(PromptedBackend(inner), ChatRequest(AFTER_RESULT, tools=TOOLS))
    assert text == "2 + 3 is 5."
    assert finish.diagnostics is not None
    assert [r.reason for r in finish.diagnostics.retries] == ["placeholder_answer"]


async def test_debris_with_no_retry_left_falls_back_to_the_results() -> None:
    inner = ScriptedBackend([",", "}}"], capabilities=PLAIN, chunk_size=1)
    backend = PromptedBackend(inner, max_retries=0)  # live: text would stream at once
    text, finish = await run(backend, ChatRequest(AFTER_RESULT, tools=TOOLS))
    assert text == "add returned 5"
    assert finish.diagnostics is not None
    assert any("only punctuation" in note for note in finish.diagnostics.notes)


@pytest.mark.parametrize(
    ("text", "debris"),
    [(",", True), ("}} ", True), ("", False), ("  ", False), ("5", False),
     ("Yes.", False), ("日本", False), ("...", True)],
)  # fmt: skip
def test_debris_is_told_from_short_answers(text: str, debris: bool) -> None:
    assert is_debris(text) is debris


@pytest.mark.parametrize("max_retries", [0, 2])  # live, and hybrid
async def test_an_actions_leftover_braces_before_an_answer_are_not_shown(
    max_retries: int,
) -> None:
    # `parlay prompt "What is 12 + 30?" -T tools.py` answered `}} 42 42 42 ...`: the
    # braces that close an action are no part of the answer.
    inner = ScriptedBackend(['}} "\n2 + 3 is 5.'], capabilities=PLAIN, chunk_size=1)
    backend = PromptedBackend(inner, max_retries=max_retries)
    text, _ = await run(backend, ChatRequest(AFTER_RESULT, tools=TOOLS))
    assert text == "2 + 3 is 5."


@pytest.mark.parametrize(
    ("text", "cut"),
    [("}} 42", 3), ('"}}, 42', 5), ("]\n5", 2), ("42 }", 0), ('"Quoted," she said', 0),
     ("(5)", 0), ("", 0)],
)  # fmt: skip
def test_leading_debris_is_only_closing_syntax(text: str, cut: int) -> None:
    assert leading_debris(text) == cut
