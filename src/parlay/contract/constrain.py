"""Constrained decoding: a JSON schema every valid action (for the allowed tools) matches.

Backends with `Capabilities.json_schema` (llama.cpp, vLLM, OpenAI) turn a
`ResponseFormat` into a grammar, so with `tool_choice` required or named the model
cannot write anything but a call. A grammar cannot produce a fence or an `@tool` line,
so under constraint every format writes its call as a bare JSON object, which the
parser reads whatever format was taught. Measured: SmolLM2-135M went from 14/20 to
18-19/20 right calls with it.
"""

from __future__ import annotations

from typing import Any

from parlay.request import ResponseFormat, ToolChoice, ToolSpec

FINAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "final": {
            "type": "object",
            "properties": {"content": {"type": "string"}},
            "required": ["content"],
        }
    },
    "required": ["final"],
}


def _parameters(spec: ToolSpec) -> dict[str, Any]:
    schema = dict(spec.parameters or {})
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    return schema


def call_schema(spec: ToolSpec, action_format: str) -> dict[str, Any]:
    if action_format == "json":
        inner = {
            "type": "object",
            "properties": {
                "tool": {"type": "string", "enum": [spec.name]},
                "args": _parameters(spec),
            },
            "required": ["tool", "args"],
        }
        return {"type": "object", "properties": {"action": inner}, "required": ["action"]}
    return {
        "type": "object",
        "properties": {
            "tool": {"type": "string", "enum": [spec.name]},
            "parameters": _parameters(spec),
        },
        "required": ["tool", "parameters"],
    }


def action_schema(
    tools: tuple[ToolSpec, ...], choice: ToolChoice, action_format: str
) -> dict[str, Any] | None:
    """The schema of a valid reply, or None when nothing should be constrained.

    Forced choices allow only calls (of the named tool); `auto` also allows a final answer
    `{"final": {"content": ...}}`; `none` is never constrained.
    """
    if choice.mode == "none" or not tools:
        return None
    allowed = [t for t in tools if choice.mode != "tool" or t.name == choice.name]
    options = [call_schema(t, action_format) for t in allowed]
    if choice.mode == "auto":
        options.append(FINAL_SCHEMA)
    return options[0] if len(options) == 1 else {"anyOf": options}


def action_response_format(
    tools: tuple[ToolSpec, ...], choice: ToolChoice, action_format: str
) -> ResponseFormat | None:
    schema = action_schema(tools, choice, action_format)
    if schema is None:
        return None
    return ResponseFormat(schema, name="action", strict=True)
