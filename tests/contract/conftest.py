from __future__ import annotations

from parlay.context import AssistantMessage, SystemMessage, ToolCall, ToolResult, UserMessage
from parlay.request import ToolSpec

WEATHER = ToolSpec(
    "get_weather",
    "Get the current weather for a city.",
    {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "City name"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        },
        "required": ["city"],
    },
)
ADD = ToolSpec(
    "add",
    "Add two integers.",
    {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
)
TOOLS = (WEATHER, ADD)

CALL = ToolCall("get_weather", {"city": "Rome"}, "call_1")
HISTORY = (
    SystemMessage("Be brief."),
    UserMessage("Weather in Rome, then add 2 and 3?"),
    AssistantMessage("Checking.", (CALL,)),
    ToolResult("call_1", "get_weather", '{"sky": "sunny", "celsius": 21}'),
)
FRESH = (SystemMessage("Be brief."), UserMessage("What is the weather in Rome?"))
