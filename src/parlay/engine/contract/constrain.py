"""Constrained decoding: a JSON schema every valid action (for the allowed tools) matches.

Backends with `Capabilities.json_schema` (llama.cpp, vLLM, OpenAI) turn a
`ResponseFormat` into a grammar, so with `tool_choice` required or named the model
cannot write anything but a call. A grammar cannot produce a fence, so under constraint
every format writes its call as a bare JSON object.
"""

from __future__ import annotations

from typing import Any

from attrs import evolve

from parlay.engine.contract import definitions
from parlay.engine.contract.parser.vocabulary import BLOCK_KEYS
from parlay.engine.contract.pieces import ActionFormat
from parlay.request import ResponseFormat, ToolChoice, ToolSpec

# An answer has at least one character, or a model may close the string at once and
# leave the user an empty message.
_ANSWER_TEXT: dict[str, Any] = {"type": "string", "minLength": 1}
FINAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "final": {
            "type": "object",
            "properties": {"content": _ANSWER_TEXT},
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


TYPED_FINAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"type": {"const": "final"}, "content": _ANSWER_TEXT},
    "required": ["type", "content"],
}
# The typed format's form for several calls holds two or more: its kind is the model's
# choice, which a model makes carelessly when one entry would do
# (bench/results/parallel-probe.md).

TYPED_MIN_SEVERAL = 2


def final_schema(action_format: ActionFormat) -> dict[str, Any]:
    """A plain answer in the format's reply shape."""
    return TYPED_FINAL_SCHEMA if action_format == "typed" else FINAL_SCHEMA


def _typed_entry(spec: ToolSpec) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "tool_name": {"type": "string", "enum": [spec.name]},
            "arguments": _parameters(spec),
        },
        "required": ["tool_name", "arguments"],
    }


def _typed_schema(kind: str, key: str, value: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"type": {"const": kind}, key: value},
        "required": ["type", key],
    }


def _named_call(spec: ToolSpec, action_format: ActionFormat) -> dict[str, Any]:
    """One call object: the tool's name and its arguments (`args` in the json format)."""
    key = "args" if action_format == "json" else "parameters"
    return {
        "type": "object",
        "properties": {"tool": {"type": "string", "enum": [spec.name]}, key: _parameters(spec)},
        "required": ["tool", key],
    }


def call_schema(spec: ToolSpec, action_format: ActionFormat) -> dict[str, Any]:
    """A reply making one call of `spec`."""
    if action_format == "typed":
        return _typed_schema("tool_call", "tool", _typed_entry(spec))
    inner = _named_call(spec, action_format)
    if action_format == "json":
        return {"type": "object", "properties": {"action": inner}, "required": ["action"]}
    return inner


def calls_schema(tools: list[ToolSpec], action_format: ActionFormat) -> dict[str, Any]:
    """A reply making one or more calls at once: `{"actions": [call, ...]}` (typed:
    `{"type": "tool_calls", "tools": [...]}`, two or more)."""
    if action_format == "typed":
        entries = [_typed_entry(spec) for spec in tools]
        several = {
            "type": "array",
            "items": entries[0] if len(entries) == 1 else {"anyOf": entries},
            "minItems": TYPED_MIN_SEVERAL,
        }
        return _typed_schema("tool_calls", "tools", several)
    items = [_named_call(spec, action_format) for spec in tools]
    return {
        "type": "object",
        "properties": {
            "actions": {
                "type": "array",
                "items": items[0] if len(items) == 1 else {"anyOf": items},
                "minItems": 1,
            }
        },
        "required": ["actions"],
    }


def action_schema(
    tools: tuple[ToolSpec, ...],
    choice: ToolChoice,
    action_format: ActionFormat,
    answer: dict[str, Any] | None = None,
    *,
    parallel: bool = False,
    listed: bool = False,
) -> dict[str, Any] | None:
    """The schema of a valid reply, or None when nothing should be constrained.

    Forced choices allow only calls (of the named tool); `auto` also allows a final answer:
    `{"final": {"content": ...}}`, or a JSON value of the `answer` schema when the caller
    asked for structured output (the parser reads such an object as the answer's text,
    which the caller then parses); `none` is never constrained. `parallel` also admits
    several calls in one reply (`calls_schema`); without it, exactly one call. `listed`
    (with `parallel`) admits only that list form, for one call too.
    """
    if choice.mode == "none" or not tools:
        return None
    allowed = [t for t in tools if choice.mode != "tool" or t.name == choice.name]
    *parameters, answer_or_none = definitions.distinct(
        [t.parameters or {} for t in allowed] + [answer or {}]
    )
    allowed = [evolve(t, parameters=p) for t, p in zip(allowed, parameters, strict=True)]
    answer = answer_or_none if answer is not None else None
    if parallel and listed:
        options = [calls_schema(allowed, action_format)]
    else:
        options = [call_schema(t, action_format) for t in allowed]
        if parallel:
            options.append(calls_schema(allowed, action_format))
    if choice.mode == "auto":
        options.append(_answer_first(answer) if answer is not None else final_schema(action_format))
    return definitions.at_root(options, parameters)


def _answer_first(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with a property that marks no action first, where it has one.

    The parser takes an object whose first key is an action key (`thought`, `name`...) for
    an action, and grammars write properties in the schema's order: `{"reasoning": ...,
    "answer": ...}` would be read as an action's thought and lost, `{"answer": ...,
    "reasoning": ...}` is read as the answer. JSON objects are unordered, so the caller's
    parse is the same.
    """
    properties = schema.get("properties")
    if schema.get("type") != "object" or not isinstance(properties, dict):
        return schema
    first = [k for k in properties if k.lower() not in BLOCK_KEYS]
    if not first or first[0] == next(iter(properties)):
        return schema
    order = first + [k for k in properties if k not in first]
    reordered = {**schema, "properties": {k: properties[k] for k in order}}
    if isinstance(schema.get("required"), list):
        required = schema["required"]
        reordered["required"] = [k for k in order if k in required]
    return reordered


def action_response_format(
    tools: tuple[ToolSpec, ...],
    choice: ToolChoice,
    action_format: ActionFormat,
    *,
    answer: dict[str, Any] | None = None,
    parallel: bool = False,
    listed: bool = False,
) -> ResponseFormat | None:
    schema = action_schema(tools, choice, action_format, answer, parallel=parallel, listed=listed)
    if schema is None:
        return None
    return ResponseFormat(schema, name="action", strict=True)
