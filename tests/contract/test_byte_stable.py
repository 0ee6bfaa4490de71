"""What parlay renders for one conversation stays the same bytes from turn to turn up to
the new messages, so a model server's prompt cache (llama.cpp's) is reused: tools,
instructions and examples first, nothing that changes per request before the history."""

from __future__ import annotations

from parlay.context import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolResult,
    UserMessage,
)
from parlay.engine.contract.pieces import ContractOptions
from parlay.engine.contract.render import render_contract
from parlay.request import ChatRequest, ToolSpec

TOOLS = (
    ToolSpec("get_weather", "Weather now.", {"type": "object", "properties": {"city": {}}}),
    ToolSpec("get_time", "Time now.", {"type": "object", "properties": {"zone": {}}}),
)
CALL = ToolCall("get_weather", {"city": "Rome"}, id="c1")


def rendered(history: list[Message], constrained: bool = False) -> list[Message]:
    request = ChatRequest(history, TOOLS)
    return list(render_contract(request, ContractOptions(), constrained=constrained).messages)


def test_turn_two_of_a_chat_starts_with_turn_ones_prompt() -> None:
    turn1 = [SystemMessage("Be brief."), UserMessage("Hi there")]
    turn2 = [*turn1, AssistantMessage("Hello."), UserMessage("What can you do?")]
    for constrained in (False, True):
        first, second = rendered(turn1, constrained), rendered(turn2, constrained)
        assert second[: len(first)] == first


def test_after_a_tool_result_only_the_last_continuation_is_rendered_anew() -> None:
    """The continuation that asks for the next step after results is the one message of
    turn 1 written differently in turn 2 (it no longer asks): everything before it, the
    system prompt and the example turns included, is the same bytes."""
    turn1 = [
        SystemMessage("Be brief."),
        UserMessage("Weather in Rome?"),
        AssistantMessage("", (CALL,)),
        ToolResult("c1", "get_weather", "sunny"),
    ]
    turn2 = [*turn1, AssistantMessage("Sunny in Rome."), UserMessage("And the time?")]
    first, second = rendered(turn1), rendered(turn2)
    assert second[: len(first) - 1] == first[:-1]
    assert "sunny" in second[len(first) - 1].content
