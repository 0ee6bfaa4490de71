"""Schema-aware repair of parsed calls: unwrap a lone wrapper key, coerce scalars.

The request carries JSON schemas, not Python functions, so a pydantic model is built
from each schema (cached) and used in lax mode: `"5"` becomes `5` for an integer,
`"true"` becomes `True`, `7` becomes `"7"` for a string, a JSON string holding a list
becomes the list. What still fails is reported in terms of the tool's arguments, so the
retry can show the model the schema and the error.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Annotated, Any, Literal, Union

from attrs import frozen
from pydantic import AllowInfNan, BaseModel, ConfigDict, Field, ValidationError, create_model

from parlay.context import ToolCall
from parlay.engine.contract.parser import ARGS_KEYS
from parlay.request import ToolSpec
from parlay.tool_text import describe_validation_error

_SCALARS: dict[str, Any] = {"string": str, "integer": int, "boolean": bool, "null": type(None)}
# A number must stay one JSON can carry: lax mode reads "1e999", or a string of 4,301
# digits the parser kept, as infinity, which `arguments_json` would write as `Infinity`.
_FINITE = Annotated[float, AllowInfNan(False)]


@frozen
class Repaired:
    """A call after repair; `error` says why its arguments still fail the schema."""

    call: ToolCall
    notes: tuple[str, ...] = ()
    error: str | None = None


def _python_type(schema: Any) -> Any:
    if not isinstance(schema, dict):
        return Any
    choices = _choices_type(schema)
    if choices is not None:
        return choices
    kind = schema.get("type")
    if isinstance(kind, list):
        options = tuple(_python_type({**schema, "type": k}) for k in kind)
        return Union[options]  # noqa: UP007
    if kind in _SCALARS:
        return _SCALARS[kind]
    if kind == "number":
        return int | _FINITE
    if kind == "array":
        return list[_python_type(schema.get("items"))]  # type: ignore[misc]
    if kind == "object":
        return dict[str, Any]
    return Any


def _choices_type(schema: dict[str, Any]) -> Any:
    """The type of a schema that lists its values (`enum`, `const`, `anyOf`), else None."""
    if schema.get("enum"):
        values = tuple(v for v in schema["enum"] if isinstance(v, (str, int, float, bool)))
        if values:
            return Literal[values]
    if "const" in schema and isinstance(schema["const"], (str, int, float, bool)):
        return Literal[schema["const"]]
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            options = tuple(_python_type(s) for s in schema[key])
            return Union[options]  # noqa: UP007
    return None


@lru_cache(maxsize=256)
def _validator(name: str, schema_json: str) -> type[BaseModel] | None:
    schema = json.loads(schema_json)
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return None
    required = set(schema.get("required") or ())
    extra: Literal["forbid", "allow"] = (
        "forbid" if schema.get("additionalProperties") is False else "allow"
    )
    fields: dict[str, Any] = {}
    for key, sub in properties.items():
        if not key.isidentifier() or key.startswith("_") or key in BaseModel.__dict__:
            return None  # names pydantic cannot hold: leave these arguments alone
        annotation = _python_type(sub)
        fields[key] = (annotation, Field(...) if key in required else Field(None))
    try:
        return create_model(
            f"{name}_arguments",
            __config__=ConfigDict(extra=extra, coerce_numbers_to_str=True),
            **fields,
        )
    except Exception:  # a schema pydantic cannot express: skip coercion, keep the call
        return None


def unwrap(arguments: dict[str, Any], spec: ToolSpec) -> tuple[dict[str, Any], str | None]:
    """`{"parameters": {...}}` or `{"<tool name>": {...}}` around the real arguments."""
    properties = spec.parameters.get("properties") or {}
    if len(arguments) != 1:
        return arguments, None
    ((key, inner),) = arguments.items()
    if key in properties or not isinstance(inner, dict):
        return arguments, None
    fits = bool(inner) and set(inner) <= set(properties)
    if key in ARGS_KEYS or key in ("properties", spec.name) or fits:
        return inner, f"unwrapped arguments from {key!r}"
    return arguments, None


def _decode_strings(arguments: dict[str, Any], properties: dict[str, Any]) -> dict[str, Any]:
    """A list or object sent as a JSON string: decode it when the schema wants one."""
    out = dict(arguments)
    for key, value in arguments.items():
        sub = properties.get(key)
        if (
            isinstance(value, str)
            and isinstance(sub, dict)
            and sub.get("type") in ("array", "object")
        ):
            try:
                decoded = json.loads(value)
            except json.JSONDecodeError:
                continue
            if isinstance(decoded, (list, dict)):
                out[key] = decoded
    return out


def repair_call(call: ToolCall, spec: ToolSpec) -> Repaired:
    """Unwrap and coerce `call`'s arguments against `spec`'s schema."""
    notes: list[str] = []
    arguments, note = unwrap(call.arguments, spec)
    if note:
        notes.append(note)
    properties = spec.parameters.get("properties") or {}
    arguments = _decode_strings(arguments, properties)
    try:
        model = _validator(spec.name, json.dumps(spec.parameters, sort_keys=True, default=str))
    except Exception:
        model = None
    if model is None:
        return Repaired(ToolCall(call.name, arguments, call.id), tuple(notes))
    try:
        validated = model.model_validate(arguments)
    except ValidationError as exc:
        return Repaired(
            ToolCall(call.name, arguments, call.id), tuple(notes), describe_validation_error(exc)
        )
    dumped = validated.model_dump(exclude_unset=True)
    # In the order the model wrote them (the model's fields are in the schema's order).
    coerced = {key: dumped[key] for key in arguments if key in dumped}
    coerced |= {key: value for key, value in dumped.items() if key not in coerced}
    if coerced != arguments:
        notes.append("coerced arguments to the schema")
    return Repaired(ToolCall(call.name, coerced, call.id), tuple(notes))
