"""Constrained decoding: a JSON schema every valid action (for the allowed tools) matches.

Backends with `Capabilities.json_schema` (llama.cpp, vLLM, OpenAI) turn a
`ResponseFormat` into a grammar, so with `tool_choice` required or named the model
cannot write anything but a call. A grammar cannot produce a fence, so under constraint
every format writes its call as a bare JSON object.
"""

from __future__ import annotations

from itertools import count
from typing import Any

from attrs import evolve

from parlay.engine.contract.parser.vocabulary import BLOCK_KEYS
from parlay.engine.contract.pieces import ActionFormat
from parlay.engine.policy import TurnPolicy
from parlay.request import ResponseFormat, ToolSpec

# An answer has at least one character, or a model may close the string at once and
# leave the user an empty message.
_ANSWER_TEXT: dict[str, Any] = {"type": "string", "minLength": 1}
# The typed format's form for several calls holds two or more: one entry would leave the
# reply's kind ("tool_call" or "tool_calls") a choice the model makes carelessly.
TYPED_MIN_SEVERAL = 2


def _object(**properties: Any) -> dict[str, Any]:
    """An object schema requiring each of `properties`."""
    return {"type": "object", "properties": properties, "required": list(properties)}


def final_schema(action_format: ActionFormat) -> dict[str, Any]:
    """A plain answer in the format's reply shape."""
    if action_format == "typed":
        return _object(type={"const": "final"}, content=_ANSWER_TEXT)
    return _object(final=_object(content=_ANSWER_TEXT))


def _named_call(spec: ToolSpec, action_format: ActionFormat) -> dict[str, Any]:
    """One call object: the tool's name and its arguments, under the format's keys."""
    parameters = dict(spec.parameters or {})
    parameters.setdefault("type", "object")
    parameters.setdefault("properties", {})
    name = {"type": "string", "enum": [spec.name]}
    if action_format == "typed":
        return _object(tool_name=name, arguments=parameters)
    return _object(tool=name, **{"args" if action_format == "json" else "parameters": parameters})


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
    array = {"type": "array", "items": calls[0] if len(calls) == 1 else {"anyOf": calls}}
    if action_format == "typed":
        return _object(type={"const": "tool_calls"}, tools={**array, "minItems": TYPED_MIN_SEVERAL})
    return _object(actions={**array, "minItems": 1})


def action_schema(
    tools: tuple[ToolSpec, ...],
    policy: TurnPolicy,
    action_format: ActionFormat,
    answer: dict[str, Any] | None = None,
    *,
    parallel: bool = False,
) -> dict[str, Any] | None:
    """The schema of a valid reply, or None when nothing should be constrained (`none`).

    Forced choices allow only calls (of the named tool); `auto` also allows a final answer,
    or a value of the `answer` schema when the caller asked for structured output.
    `parallel` also admits several calls in one reply.
    """
    if not policy.may_call or not tools:
        return None
    allowed = policy.allowed(tools)
    *parameters, answer_or_none = distinct([t.parameters or {} for t in allowed] + [answer or {}])
    allowed = [evolve(t, parameters=p) for t, p in zip(allowed, parameters, strict=True)]
    answer = answer_or_none if answer is not None else None
    options = [call_schema(t, action_format) for t in allowed]
    if parallel:
        options.append(calls_schema(allowed, action_format))
    if policy.model_decides:
        options.append(_answer_first(answer) if answer is not None else final_schema(action_format))
    return at_root(options, parameters)


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
        reordered["required"] = [k for k in order if k in schema["required"]]
    return reordered


def action_response_format(
    tools: tuple[ToolSpec, ...],
    policy: TurnPolicy,
    action_format: ActionFormat,
    *,
    answer: dict[str, Any] | None = None,
    parallel: bool = False,
) -> ResponseFormat | None:
    schema = action_schema(tools, policy, action_format, answer, parallel=parallel)
    return None if schema is None else ResponseFormat(schema, name="action", strict=True)


# Named subschemas (`$defs`): JSON Schema reads `$ref: #/$defs/Address` from the root of
# the whole schema, so where the answer schema and each tool's parameters stand side by
# side under `anyOf`, their named subschemas move to the root; and two of them naming
# different subschemas alike (two tools each with an `Item` model) must not collide.
DEFINITIONS = ("$defs", "definitions")


def distinct(schemas: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The schemas, each later one whose subschema is named like a different one before it
    renamed there (`Item` → `Item_2`), its `$ref`s with it; the same subschema under the
    same name stays shared. Schemas needing no renaming are returned as they were."""
    taken: dict[tuple[str, str], Any] = {}
    out = []
    for schema in schemas:
        renames: dict[str, str] = {}
        for key in DEFINITIONS:
            defs: Any = schema.get(key)
            for name, sub in defs.items() if isinstance(defs, dict) else ():
                if taken.get((key, name), sub) != sub:
                    free = (f"{name}_{n}" for n in count(2))
                    new = next(n for n in free if (key, n) not in taken and n not in defs)
                    renames[f"#/{key}/{name}"] = f"#/{key}/{new}"
                    name = new
                taken[(key, name)] = sub
        out.append(_renamed(schema, renames) if renames else schema)
    return out


def _renamed(node: Any, renames: dict[str, str]) -> Any:
    """`node` with every `$ref` in `renames` pointed at its new name, and those
    subschemas stored under it."""
    if isinstance(node, list):
        return [_renamed(item, renames) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "$ref" and isinstance(value, str):
            out[key] = _renamed_ref(value, renames)
        elif key in DEFINITIONS and isinstance(value, dict):
            out[key] = {
                _renamed_ref(f"#/{key}/{name}", renames).rsplit("/", 1)[1]: _renamed(sub, renames)
                for name, sub in value.items()
            }
        else:
            out[key] = _renamed(value, renames)
    return out


def _renamed_ref(ref: str, renames: dict[str, str]) -> str:
    for old, new in renames.items():
        if ref == old or ref.startswith(old + "/"):
            return new + ref[len(old) :]
    return ref


def at_root(options: list[dict[str, Any]], parameters: list[dict[str, Any]]) -> dict[str, Any]:
    """The options as one schema, their named subschemas lifted to its root. The tools'
    parameters keep theirs (a recursive model's cannot be inlined); a copy goes to the
    root too. Names are expected `distinct` already."""
    found: dict[str, dict[str, Any]] = {}
    for schema in [*options, *parameters]:
        for key in DEFINITIONS:
            if isinstance(schema.get(key), dict):
                found.setdefault(key, {}).update(schema[key])
    bare = [{k: v for k, v in option.items() if k not in DEFINITIONS} for option in options]
    schema = bare[0] if len(bare) == 1 else {"anyOf": bare}
    return {**schema, **found}
