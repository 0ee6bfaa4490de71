"""Tool mode from the history alone, so the proxy keeps no state between requests.

A client may send the tools once and, in a later turn, only the history holding the
calls and their results. For a prompted upstream the engine needs tool specs to keep
speaking the contract, so they are rebuilt from the calls the history holds.
"""

from __future__ import annotations

from typing import Any

from parlay.context import AssistantMessage
from parlay.request import ChatRequest, ToolSpec

_JSON_TYPES = (
    (bool, "boolean"),
    (int, "integer"),
    (float, "number"),
    (str, "string"),
    (list, "array"),
    (dict, "object"),
)


def _json_type(value: Any) -> str | None:
    for kind, name in _JSON_TYPES:
        if isinstance(value, kind):
            return name
    return None


def tools_from_history(request: ChatRequest) -> tuple[ToolSpec, ...]:
    """One spec per tool name called in the history, arguments typed from what was sent."""
    specs: dict[str, dict[str, Any]] = {}
    for message in request.messages:
        if not isinstance(message, AssistantMessage):
            continue
        for call in message.tool_calls:
            properties = specs.setdefault(call.name, {})
            for key, value in call.arguments.items():
                kind = _json_type(value)
                properties.setdefault(key, {"type": kind} if kind else {})
    return tuple(
        ToolSpec(
            name,
            "",
            {"type": "object", "properties": properties, "additionalProperties": True},
        )
        for name, properties in specs.items()
    )


def with_history_tools(request: ChatRequest) -> ChatRequest:
    """The request unchanged when it has tools; else with tools rebuilt from its history."""
    if request.tools:
        return request
    derived = tools_from_history(request)
    if not derived:
        return request
    return request.replace(tools=derived)
