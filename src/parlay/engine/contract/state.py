"""Where a conversation stands in the tool protocol, derived from its messages alone.

The proxy is stateless, so this is the only state there is. That tool history exists
does not force another call: after a final answer and a new user message the state is a
first decision again.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence

from parlay.context import AssistantMessage, Message, ToolResult


class ToolState(enum.Enum):
    FIRST_DECISION = "first_decision"  # a user (or system) message awaits an answer
    CALL_EMITTED = "call_emitted"  # the assistant's last turn holds calls, no result yet
    WAITING_FOR_RESULT = "waiting_for_result"  # some results arrived, others still due
    RESULT_RECEIVED = "result_received"  # every call of the last turn has its result
    FINAL_ANSWER = "final_answer"  # the assistant answered without calls


def has_tool_activity(messages: Sequence[Message]) -> bool:
    """Any call or result anywhere in the history."""
    return any(
        isinstance(m, ToolResult) or (isinstance(m, AssistantMessage) and m.tool_calls)
        for m in messages
    )


def tool_state(messages: Sequence[Message]) -> ToolState:
    if not messages:
        return ToolState.FIRST_DECISION
    last = messages[-1]
    if isinstance(last, AssistantMessage):
        return ToolState.CALL_EMITTED if last.tool_calls else ToolState.FINAL_ANSWER
    if not isinstance(last, ToolResult):
        return ToolState.FIRST_DECISION
    answered: set[str] = set()
    for message in reversed(messages):
        if isinstance(message, ToolResult):
            answered.add(message.call_id)
        elif isinstance(message, AssistantMessage) and message.tool_calls:
            due = {call.id for call in message.tool_calls}
            return ToolState.RESULT_RECEIVED if due <= answered else ToolState.WAITING_FOR_RESULT
        else:
            break
    return ToolState.RESULT_RECEIVED
