"""Constrained decoding: a JSON schema every valid action (for the allowed tools) matches.

Backends with `Capabilities.json_schema` (llama.cpp, vLLM, OpenAI) turn a
`ResponseFormat` into a grammar, so with `tool_choice` required or named the model
cannot write anything but a call. A grammar cannot produce a fence or an `@tool` line,
so under constraint every format writes its call as a bare JSON object.
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
# The typed format's form for several calls holds two or more: one entry would leave the
# reply's kind ("tool_call" or "tool_calls") a choice the model makes carelessly.
TYPED_MIN_SEVERAL = 2


def _object(**properties: Any) -> dict[str, Any]:
    """An object schema requiring each of `properties`."""
    return {"type": "object", "properties": properties, "required": list(properties)}


FINAL_SCHEMA = _object(final=_object(content=_ANSWER_TEXT))
TYPED_FINAL_SCHEMA = _object(type={"const": "final"}, content=_ANSWER_TEXT)


def final_schema(action_format: ActionFormat) -> dict[str, Any]:
    """A plain answer in the format's reply shape."""
    return TYPED_FINAL_SCHEMA if action_format == "typed" else FINAL_SCHEMA


def _named_call(spec: ToolSpec, action_format: ActionFormat) -> dict[str, Any]:
    """One call object: the tool's name and its arguments, under the format's keys."""
    given = spec.parameters or {}
    parameters = {
        **given,
        "type": given.get("type", "object"),
        "properties": given.get("properties", {}),
    }
    name = {"type": "string", "enum": [spec.name]}
    if action_format == "typed":
        return _object(tool_name=name, arguments=parameters)
    return _object(tool=name, **{"args" if action_format == "json" else "parameters": parameters})


def _array(items: list[dict[str, Any]], min_items: int) -> dict[str, Any]:
    return {
        "type": "array",
        "items": items[0] if len(items) == 1 else {"anyOf": items},
        "minItems": min_items,
    }


def call_schema(spec: ToolSpec, action_format: ActionFormat) -> dict[str, Any]:
    """A reply making one call of `spec`."""
    call = _named_call(spec, action_format)
    if action_format == "typed":
        return _object(type={"const": "tool_call"}, tool=call)
    return _object(action=call) if action_format == "json" else call


def calls_schema(tools: list[ToolSpec], action_format: ActionFormat) -> dict[str, Any]:
    """A reply making one or more calls at once: `{"actions": [call, ...]}` (typed:
    `{"type": "tool_calls", "tools": [...]}`, two or more)."""
    calls = [_named_call(spec, action_format) for spec in tools]
    if action_format == "typed":
        return _object(type={"const": "tool_calls"}, tools=_array(calls, TYPED_MIN_SEVERAL))
    return _object(actions=_array(calls, 1))


def action_schema(
    tools: tuple[ToolSpec, ...],
    choice: ToolChoice,
    action_format: ActionFormat,
    answer: dict[str, Any] | None = None,
    *,
    parallel: bool = False,
    listed: bool = False,
) -> dict[str, Any] | None:
    """The schema of a valid reply, or None when nothing should be constrained (`none`).

    Forced choices allow only calls (of the named tool); `auto` also allows a final answer,
    or a value of the `answer` schema when the caller asked for structured output.
    `parallel` also admits several calls in one reply; `listed` only that list form.
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
    """`schema` with a property that marks no action first, where it has one: the parser
    reads an object whose first key is an action key (`thought`, `name`...) as an action,
    and grammars write properties in the schema's order."""
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
    return None if schema is None else ResponseFormat(schema, name="action", strict=True)
