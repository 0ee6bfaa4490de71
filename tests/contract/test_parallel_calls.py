"""Several calls in one reply, in every format (issue: parallel calls were impossible by
construction: the json protocol held one action and its grammar admitted one)."""

from __future__ import annotations

import json

import pytest

from parlay import GenerationOptions, Session
from parlay.backends.base import Capabilities
from parlay.backends.scripted import ScriptedBackend
from parlay.context import AssistantMessage, ToolCall, UserMessage
from parlay.engine.backend import PromptedBackend
from parlay.engine.contract.constrain import action_schema
from parlay.engine.contract.parser import ActionStreamParser, parse
from parlay.engine.contract.pieces import ContractOptions
from parlay.engine.contract.render import project_history, render_contract
from parlay.engine.policy import TurnPolicy
from parlay.events import Event, ToolCallEnd, ToolCallStart
from parlay.request import ChatRequest, ToolChoice

from .conftest import TOOLS

GRAMMAR = Capabilities(native_tools=False, json_schema=True)
NAMES = [t.name for t in TOOLS]
TWO_CALLS = AssistantMessage(
    "", (ToolCall("get_weather", {"city": "Paris"}, "c1"), ToolCall("add", {"a": 1, "b": 2}, "c2"))
)
WRITTEN = {
    "json": '{"thought": "both", "actions": [{"tool": "get_weather", "args": {"city": "Paris"}}, '
    '{"tool": "add", "args": {"a": 1, "b": 2}}]}',
    "bare": '{"actions": [{"tool": "get_weather", "parameters": {"city": "Paris"}}, '
    '{"tool": "add", "parameters": {"a": 1, "b": 2}}]}',
    "fenced": '```json action\n{"tool": "get_weather", "parameters": {"city": "Paris"}}\n```\n'
    '```json action\n{"tool": "add", "parameters": {"a": 1, "b": 2}}\n```',
    "typed": '{"type": "tool_calls", "tools": [{"tool_name": "get_weather", "arguments": '
    '{"city": "Paris"}}, {"tool_name": "add", "arguments": {"a": 1, "b": 2}}]}',
}
ASK = "Weather in Paris, and add 1 and 2."
EXPECTED = [("get_weather", {"city": "Paris"}), ("add", {"a": 1, "b": 2})]


@pytest.mark.parametrize("fmt", ["json", "fenced"])
def test_the_grammar_admits_several_calls_only_when_parallel_calls_are_allowed(fmt: str) -> None:
    allowed = action_schema(TOOLS, TurnPolicy.of_choice(ToolChoice("auto")), fmt, parallel=True)
    one_only = action_schema(TOOLS, TurnPolicy.of_choice(ToolChoice("auto")), fmt, parallel=False)
    assert '"actions"' in json.dumps(allowed) and '"actions"' not in json.dumps(one_only)
    several = next(o for o in allowed["anyOf"] if "actions" in o.get("properties", {}))
    assert several["properties"]["actions"]["minItems"] == 1  # never a second call forced


@pytest.mark.parametrize("shape", list(WRITTEN))
def test_every_format_carries_several_calls_whole_and_streamed(shape: str) -> None:
    text = WRITTEN[shape]
    whole = parse(text, NAMES)
    assert [(c.name, c.arguments) for c in whole.calls] == EXPECTED
    for size in (1, 2, 3, 5, 8):
        parser = ActionStreamParser(NAMES)
        for i in range(0, len(text), size):
            parser.feed(text[i : i + size])
        parser.finish()
        got = parser.result()
        assert [(c.name, c.arguments) for c in got.calls] == EXPECTED
        assert got.text == whole.text


def test_each_call_streams_as_soon_as_it_is_known() -> None:
    text = WRITTEN["json"]
    first_done = text.index("}}") + 2  # the end of the first action
    parser = ActionStreamParser(NAMES)
    events: list[Event] = parser.feed(text[:first_done])
    assert [e.call.name for e in events if isinstance(e, ToolCallEnd)] == ["get_weather"]
    later = parser.feed(text[first_done:]) + parser.finish()
    assert [e.name for e in later if isinstance(e, ToolCallStart)] == ["add"]


@pytest.mark.parametrize(
    ("fmt", "shape"), [("json", "json"), ("fenced", "bare"), ("fenced", "fenced")]
)
def test_history_projects_several_calls_the_way_a_reply_writes_them(fmt: str, shape: str) -> None:
    options = ContractOptions(action_format=fmt)
    projected = project_history(
        (UserMessage("hi"), TWO_CALLS), options, constrained=shape == "bare"
    )
    reply = projected[-1].content
    assert [(c.name, c.arguments) for c in parse(reply, NAMES).calls] == EXPECTED


@pytest.mark.parametrize("parallel", [True, False])
def test_the_examples_show_two_calls_in_one_reply_only_when_allowed(parallel: bool) -> None:
    request = ChatRequest((UserMessage("hi"),), TOOLS, parallel_tool_calls=parallel)
    contract = render_contract(request, ContractOptions(action_format="json"), constrained=True)
    replies = [m.content for m in contract.messages if isinstance(m, AssistantMessage)]
    assert any(len(parse(r, NAMES).calls) == 2 for r in replies) is parallel


async def test_the_engine_hands_on_every_call_of_a_reply() -> None:
    inner = ScriptedBackend([WRITTEN["json"]], capabilities=GRAMMAR)
    events = [
        e async for e in PromptedBackend(inner).stream(ChatRequest((UserMessage(ASK),), TOOLS))
    ]
    assert [
        (e.call.name, e.call.arguments) for e in events if isinstance(e, ToolCallEnd)
    ] == EXPECTED


async def test_a_session_can_forbid_parallel_calls() -> None:
    inner = ScriptedBackend([WRITTEN["json"]], capabilities=GRAMMAR)
    session = Session(PromptedBackend(inner), options=GenerationOptions(parallel_tool_calls=False))
    reply = session.chat(ASK)
    await reply
    request = inner.requests[0]
    assert request.parallel_tool_calls is False


async def test_with_parallel_calls_off_the_grammar_holds_one_and_a_second_is_dropped() -> None:
    inner = ScriptedBackend([WRITTEN["json"]], capabilities=GRAMMAR)
    request = ChatRequest((UserMessage(ASK),), TOOLS, parallel_tool_calls=False)
    events = [e async for e in PromptedBackend(inner).stream(request)]
    assert '"actions"' not in json.dumps(inner.requests[0].response_format.schema)
    assert [e.call.name for e in events if isinstance(e, ToolCallEnd)] == ["get_weather"]
