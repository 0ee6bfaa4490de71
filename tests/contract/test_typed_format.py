"""The typed reply format: `{"type": "tool_call" | "tool_calls" | "final", ...}`.

Its kind comes first, as a value: that is what let Qwen2.5-Coder choose several calls
(bench/results/parallel-probe.md). The parser must read it only when the value names a
kind, since `{"type": ...}` is the first member of much ordinary JSON.
"""

from __future__ import annotations

import json

import pytest

from parlay.backends.base import Capabilities
from parlay.backends.scripted import ScriptedBackend
from parlay.context import AssistantMessage, ToolCall, ToolResult, UserMessage
from parlay.engine.backend import PromptedBackend
from parlay.engine.contract.constrain import action_schema
from parlay.engine.contract.parser import parse
from parlay.engine.contract.pieces import ContractOptions
from parlay.engine.contract.render import project_history, render_contract
from parlay.engine.policy import TurnPolicy
from parlay.events import ToolCallEnd
from parlay.request import ChatRequest, ToolChoice

from .conftest import TOOLS
from .test_parser_stream import run_chunked

NAMES = [t.name for t in TOOLS]
TYPED = ContractOptions(action_format="typed")
GRAMMAR = Capabilities(native_tools=False, json_schema=True)
TWO = (
    '{"type": "tool_calls", "tools": [{"tool_name": "get_weather", "arguments": '
    '{"city": "Paris"}}, {"tool_name": "add", "arguments": {"a": 1, "b": 2}}]}'
)
ONE = '{"type": "tool_call", "tool": {"tool_name": "add", "arguments": {"a": 1, "b": 2}}}'
ANSWER = '{"type": "final", "content": "It is sunny in Paris."}'


def streamed(text: str, size: int) -> tuple[str, list[tuple[str, dict]]]:
    """The text shown and the calls, `text` fed in chunks of `size` (with the stream's
    order checks of `run_chunked`)."""
    (shown, _, _, ends), _ = run_chunked(text, list(range(size, len(text), size)))
    return shown, [(name, arguments) for _, name, arguments in ends]


@pytest.mark.parametrize("size", [1, 2, 3, 7, 1000])
def test_typed_replies_are_read_whole_and_streamed(size: int) -> None:
    assert streamed(TWO, size) == (
        "",
        [("get_weather", {"city": "Paris"}), ("add", {"a": 1, "b": 2})],
    )
    assert streamed(ONE, size) == ("", [("add", {"a": 1, "b": 2})])
    assert streamed(ANSWER, size) == ("It is sunny in Paris.", [])


@pytest.mark.parametrize(
    "prose",
    [
        '{"type": "object", "properties": {"city": {"type": "string"}}}',
        '{"type": "tool", "name": "hammer"}',
        '{"type": 3, "tool": {"tool_name": "add"}}',
        '{"tools": ["hammer", "saw"]}',
    ],
)
def test_json_whose_type_names_no_reply_kind_stays_prose(prose: str) -> None:
    for size in (1, 4, 1000):
        assert streamed(prose, size) == (prose, [])


def test_the_kind_is_read_in_any_quote_and_spacing() -> None:
    text = "{ 'type' :  'tool_call', 'tool': {'tool_name': 'add', 'arguments': {'a': 1, 'b': 2}}}"
    assert [(c.name, c.arguments) for c in parse(text, NAMES).calls] == [("add", {"a": 1, "b": 2})]


def test_a_content_key_is_an_answer_only_after_a_final_kind() -> None:
    # Without `"type": "final"` first, a stray "content" in a call object is no answer.
    text = (
        '{"type": "tool_call", "content": "ignored", "tool": {"tool_name": "add", "arguments": {}}}'
    )
    result = parse(text, NAMES)
    assert result.text == "" and [c.name for c in result.calls] == ["add"]


def test_the_grammar_asks_two_or_more_entries_of_the_several_form() -> None:
    allowed = action_schema(TOOLS, TurnPolicy.of_choice(ToolChoice("auto")), "typed", parallel=True)
    one_only = action_schema(
        TOOLS, TurnPolicy.of_choice(ToolChoice("auto")), "typed", parallel=False
    )
    kinds = [o["properties"]["type"]["const"] for o in allowed["anyOf"]]
    assert kinds == ["tool_call", "tool_call", "tool_calls", "final"]
    several = allowed["anyOf"][2]["properties"]["tools"]
    assert several["minItems"] == 2
    assert "tool_calls" not in json.dumps(one_only)


def test_history_projects_calls_and_answers_in_the_typed_shape() -> None:
    history = (
        UserMessage("Weather in Paris, and add 1 and 2."),
        AssistantMessage(
            "",
            (
                ToolCall("get_weather", {"city": "Paris"}, "c1"),
                ToolCall("add", {"a": 1, "b": 2}, "c2"),
            ),
        ),
        ToolResult("c1", "get_weather", "sunny"),
        ToolResult("c2", "add", "3"),
        AssistantMessage("Sunny; 3."),
        UserMessage("Thanks"),
    )
    projected = project_history(history, TYPED, constrained=True)
    replies = [m.content for m in projected if isinstance(m, AssistantMessage)]
    assert [json.loads(r)["type"] for r in replies] == ["tool_calls", "final"]
    assert [c.name for c in parse(replies[0], NAMES).calls] == ["get_weather", "add"]


def test_the_examples_show_every_kind_when_parallel_calls_are_allowed() -> None:
    request = ChatRequest((UserMessage("hi"),), TOOLS, parallel_tool_calls=True)
    contract = render_contract(request, TYPED, constrained=True)
    kinds = {
        json.loads(m.content)["type"] for m in contract.messages if isinstance(m, AssistantMessage)
    }
    assert kinds == {"tool_call", "tool_calls", "final"}


async def test_the_engine_hands_on_both_calls_of_a_typed_reply() -> None:
    inner = ScriptedBackend([TWO], capabilities=GRAMMAR)
    engine = PromptedBackend(inner, action_format="typed")
    request = ChatRequest((UserMessage("Weather in Paris, and add 1 and 2."),), TOOLS)
    events = [e async for e in engine.stream(request)]
    assert [e.call.name for e in events if isinstance(e, ToolCallEnd)] == ["get_weather", "add"]
    sent = inner.requests[0].response_format.schema
    assert {o["properties"]["type"]["const"] for o in sent["anyOf"]} == {
        "tool_call",
        "tool_calls",
        "final",
    }


TWICE = (
    '{"type": "tool_calls", "tools": [{"tool_name": "add", "arguments": {"a": 1, "b": 2}}, '
    '{"tool_name": "add", "arguments": {"a": 1, "b": 2}}]}'
)
ASK_ONCE = ChatRequest((UserMessage("Add 1 and 2."),), TOOLS)


async def released_calls(engine: PromptedBackend) -> tuple[list[str], tuple[str, ...]]:
    events = [e async for e in engine.stream(ASK_ONCE)]
    finish = events[-1]
    calls = [e.call.name for e in events if isinstance(e, ToolCallEnd)]
    return calls, finish.diagnostics.rules  # type: ignore[union-attr]


async def test_one_call_written_twice_in_one_reply_goes_out_once() -> None:
    # The typed grammar's plural form holds two calls or more: a model with one call to
    # make wrote it twice.
    engine = PromptedBackend(ScriptedBackend([TWICE], capabilities=GRAMMAR), action_format="typed")
    assert await released_calls(engine) == (["add"], ("duplicate_calls",))


async def test_duplicate_calls_is_a_rule_that_can_be_switched_off() -> None:
    inner = ScriptedBackend([TWICE], capabilities=GRAMMAR)
    engine = PromptedBackend(inner, action_format="typed", rules_off={"duplicate_calls"})
    assert await released_calls(engine) == (["add", "add"], ())


async def test_two_calls_of_one_tool_with_other_values_both_go_out() -> None:
    two = TWICE.replace('"b": 2}}]}', '"b": 5}}]}')
    engine = PromptedBackend(ScriptedBackend([two], capabilities=GRAMMAR), action_format="typed")
    assert await released_calls(engine) == (["add", "add"], ())


async def test_other_formats_keep_a_call_written_twice() -> None:
    # Measured only where the typed grammar forces the second call; the json form's list
    # holds one call or more, so a repeat there is the model's own.
    twice = '{"actions": [{"tool": "add", "args": {"a": 1, "b": 2}}, {"tool": "add", "args": {"a": 1, "b": 2}}]}'
    engine = PromptedBackend(ScriptedBackend([twice], capabilities=GRAMMAR), action_format="json")
    assert await released_calls(engine) == (["add", "add"], ())
