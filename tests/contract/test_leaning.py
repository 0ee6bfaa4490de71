"""How much the first reply leaned to answering in words, read at the token that wrote
its kind (`Diagnostics.answer_share`)."""

from __future__ import annotations

import pytest

from parlay.context import AssistantMessage, ToolCall, ToolResult
from parlay.engine.backend import PromptedBackend
from parlay.engine.checks.confidence import DEFAULT_CALL_CONFIDENCE, answer_share
from parlay.events import TextDelta, TokenChoice, ToolCallEnd
from parlay.request import ChatRequest, ToolChoice

from .conftest import TOOLS
from .test_forced import FINAL, ScoredModel, ask, lp, run, tokens


def test_the_share_of_answering_among_answering_and_calling() -> None:
    reply = tokens('{"', ("final", [("final", 0.5), ("tool", 0.3), ("Hello", 0.2)]), '": {}}')
    # "Hello" is neither (the grammar does not admit it): 0.5 of 0.8.
    assert answer_share(reply, "json") == pytest.approx(0.625)


def test_a_token_that_writes_the_brace_and_the_word_together() -> None:
    reply = tokens(('{"tool', [('{"tool', 0.9), ('{"final', 0.1), ("{", 0.05)]), '": "x"}')
    # "{" could go on to either: it counts for neither.
    assert answer_share(reply, "json") == pytest.approx(0.1)


def test_the_typed_format_reads_the_kind_from_its_value() -> None:
    reply = tokens('{"type": "', ("tool", [("tool", 0.7), ("final", 0.3)]), '_call", "name": "x"}')
    assert answer_share(reply, "typed") == pytest.approx(0.3)


def test_nothing_to_read_is_none() -> None:
    plain = [TokenChoice('{"', 0.0), TokenChoice("final", lp(0.9))]  # no alternatives
    assert answer_share(plain, "json") is None
    assert answer_share(tokens("Hello there"), "json") is None
    assert answer_share(tokens('{"', ("final", [("final", 1.0)])), "fenced") is None
    assert answer_share([], "json") is None


async def test_the_first_replys_lean_is_in_the_diagnostics() -> None:
    first = tokens('{"', ("final", [("final", 0.6), ("tool", 0.4)]), '": {"content": "Hi"}}')
    model = ScoredModel(first, FINAL)
    _, finish = await run(PromptedBackend(model, action_format="json"), ask("hello"))
    assert finish.diagnostics is not None
    assert finish.diagnostics.answer_share == pytest.approx(0.6)


def typed_call(answering: float) -> list[TokenChoice]:
    """A typed reply calling get_weather for Paris, `answering` of the weight at its kind
    word going to `final`."""
    kind = ("tool", [("tool", 1 - answering), ("final", answering)])
    rest = '_call", "tool": {"tool_name": "get_weather", "arguments": {"city": "Paris"}}}'
    return tokens('{"type": "', kind, rest)


TYPED_FINAL = '{"type": "final", "content": "I cannot tell the weather."}'


def calls(events: list) -> list[str]:
    return [e.call.name for e in events if isinstance(e, ToolCallEnd)]


async def test_a_first_call_the_model_was_unsure_of_is_asked_again_for_words() -> None:
    model = ScoredModel(typed_call(0.4), TYPED_FINAL)
    backend = PromptedBackend(model, action_format="typed", min_call_confidence=0.8)
    events, finish = await run(backend, ask("Is Paris nice in the rain?"))
    assert calls(events) == []
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == (
        "I cannot tell the weather."
    )
    [retry] = finish.diagnostics.retries
    assert retry.reason == "unsure_call" and "60%" in retry.detail
    assert finish.diagnostics.rules == ("unsure_call", "words_fallback")
    # The answer comes under the answer-only grammar, not asked with an instruction.
    assert [r.response_format.name for r in model.requests] == ["action", "final"]


def test_the_knob_is_on_by_default() -> None:
    assert PromptedBackend(ScoredModel()).min_call_confidence == DEFAULT_CALL_CONFIDENCE > 0


@pytest.mark.parametrize(
    ("answering", "action_format", "choice", "confidence"),
    [
        (0.1, "typed", "auto", 0.8),  # sure enough of calling
        (0.1, "json", "auto", 0.8),  # the json format's kind word, read the same way
        (0.6, "typed", "required", 0.8),  # the user asked for a call
        (0.6, "typed", "auto", 0.0),  # the knob switched off
    ],
)
async def test_a_call_the_model_was_sure_enough_of_goes_on(
    answering: float, action_format: str, choice: str, confidence: float
) -> None:
    reply = typed_call(answering)
    if action_format == "json":
        kind = ("tool", [("tool", 1 - answering), ("final", answering)])
        reply = tokens('{"', kind, '": "get_weather", "args": {"city": "Paris"}}')
    backend = PromptedBackend(
        ScoredModel(reply), action_format=action_format, min_call_confidence=confidence
    )
    events, finish = await run(backend, ask("Weather in Paris?", choice))
    assert calls(events) == ["get_weather"]
    assert finish.diagnostics.rules == ()


async def test_after_a_tool_result_the_lean_is_not_judged() -> None:
    first = ask("Weather in Paris?").messages
    call = ToolCall("get_weather", {"city": "Paris"}, "call_1")
    messages = (*first, AssistantMessage("", (call,)), ToolResult("call_1", "get_weather", "rain"))
    request = ChatRequest(messages, TOOLS, ToolChoice.coerce("auto"))
    model = ScoredModel(typed_call(0.5))
    model.replies[0] = tokens(
        '{"type": "',
        ("tool", [("tool", 0.5), ("final", 0.5)]),
        '_call", "tool": {"tool_name": "add", "arguments": {"a": 1, "b": 2}}}',
    )
    events, finish = await run(PromptedBackend(model, action_format="typed"), request)
    assert calls(events) == ["add"] and "unsure_call" not in finish.diagnostics.rules


@pytest.mark.parametrize(
    ("answering", "named", "reason"),
    [
        (0.4, 0.99, "unsure_call"),  # unsure of calling, sure of the tool
        (0.01, 0.6, "forced_call"),  # sure of calling, unsure of the tool
        (0.1, 0.9, None),  # sure enough of both
    ],
)
async def test_one_knob_holds_both_how_sure_of_calling_and_how_sure_of_the_tool(
    answering: float, named: float, reason: str | None
) -> None:
    kind = ("tool", [("tool", 1 - answering), ("final", answering)])
    name = ("get", [("get", named), ("who", 1 - named)])
    rest = ('_weather", "arguments": {"city": "Paris"}}}',)
    reply = tokens('{"type": "', kind, '_call", "tool": {"tool_name": "', name, *rest)
    model = ScoredModel(reply, TYPED_FINAL)
    backend = PromptedBackend(model, action_format="typed", min_call_confidence=0.8)
    events, finish = await run(backend, ask("Weather in Paris?"))
    assert [r.reason for r in finish.diagnostics.retries] == ([reason] if reason else [])
    assert calls(events) == ([] if reason else ["get_weather"])
