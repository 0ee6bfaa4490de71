"""A call cut short by the token limit is not a whole call.

The tolerant parser closes a call the budget cut (`["Civil", "Divorce"` becomes a list
of two), so a client used to see a whole call and `finish_reason: "tool_calls"`, and the
tool loop ran the tool on half a list. Now the reply finishes "length" and the loop
runs none of the round's calls.
"""

from typing import Any

import pytest

from parlay import (
    AssistantMessage,
    Finish,
    PromptedBackend,
    Session,
    ToolCallEnd,
    ToolCallTruncatedError,
    ToolLoopError,
    tool,
)
from parlay.backends.base import Backend
from parlay.context import UserMessage
from parlay.events import Event
from parlay.request import ChatRequest, ToolSpec

CUT = '{"action": {"tool": "find_cases", "args": {"kinds": ["Civil", "Divorce", "Fam'
WHOLE = '{"action": {"tool": "find_cases", "args": {"kinds": ["Civil"]}}}'
KINDS = {"type": "array", "items": {"type": "string"}}
FIND = ToolSpec(
    "find_cases", "Find court cases.", {"type": "object", "properties": {"kinds": KINDS}}
)


async def engine_events(inner: Backend) -> list[Event]:
    engine = PromptedBackend(inner, max_retries=0)
    request = ChatRequest((UserMessage("Find civil and divorce cases."),), tools=(FIND,))
    return [event async for event in engine.stream(request)]


async def test_a_call_cut_by_the_token_limit_finishes_length_not_tool_calls(
    stops_short: Any,
) -> None:
    events = await engine_events(stops_short([CUT[:30], CUT[30:]]))
    [end] = [e for e in events if isinstance(e, ToolCallEnd)]
    assert end.call.arguments == {"kinds": ["Civil", "Divorce", "Fam"]}
    finish = events[-1]
    assert isinstance(finish, Finish) and finish.reason == "length"
    assert finish.diagnostics is not None
    assert any(note.startswith("cut_off") for note in finish.diagnostics.notes)


async def test_a_whole_call_still_finishes_tool_calls(stops_short: Any) -> None:
    events = await engine_events(stops_short([WHOLE], "stop"))
    finish = events[-1]
    assert isinstance(finish, Finish) and finish.reason == "tool_calls"


async def test_a_whole_call_then_a_cut_in_words_finishes_tool_calls(stops_short: Any) -> None:
    """The limit fell after the call was written: the call is whole, so it stands."""
    events = await engine_events(stops_short([WHOLE, "\nI have looked for the cases and"]))
    assert [e.call.arguments for e in events if isinstance(e, ToolCallEnd)] == [
        {"kinds": ["Civil"]}
    ]
    finish = events[-1]
    assert isinstance(finish, Finish) and finish.reason == "tool_calls"


def test_the_tool_loop_runs_no_tool_of_a_reply_cut_inside_a_call(stops_short: Any) -> None:
    ran: list[list[str]] = []

    @tool
    def find_cases(kinds: list[str]) -> str:
        """Find court cases."""
        ran.append(kinds)
        return "3 cases"

    inner = stops_short([CUT])
    session = Session(PromptedBackend(inner, max_retries=0), tools=[find_cases])
    before = session.ctx
    with pytest.raises(ToolCallTruncatedError, match="token limit") as caught:
        session.chat("Find civil and divorce cases.", run_tools=True).value  # noqa: B018
    assert ran == []
    assert inner.asked == 1
    assert isinstance(caught.value, ToolLoopError)
    assert caught.value.call.name == "find_cases"
    last = caught.value.context.messages()[-1]
    assert isinstance(last, AssistantMessage) and last.tool_calls[0].name == "find_cases"
    assert session.ctx is before  # the failed turn is not left half-written


def test_chat_without_the_tool_loop_hands_the_cut_call_over_with_its_reason(
    stops_short: Any,
) -> None:
    @tool
    def find_cases(kinds: list[str]) -> str:
        """Find court cases."""
        raise AssertionError("chat() runs no tool")

    session = Session(PromptedBackend(stops_short([CUT]), max_retries=0), tools=[find_cases])
    thunk = session.chat("Find civil and divorce cases.")
    assert [call.name for call in thunk.tools] == ["find_cases"]
    assert thunk.finish_reason == "length"
