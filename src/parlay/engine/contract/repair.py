"""Schema-aware repair of parsed calls: unwrap a lone wrapper key, coerce scalars.

The request carries JSON schemas, not Python functions, so a pydantic model is built
from each schema (cached) and used in lax mode: `"5"` becomes `5` for an integer,
`"true"` becomes `True`, `7` becomes `"7"` for a string, a JSON string holding a list
becomes the list. What still fails is reported in terms of the tool's arguments, so the
retry can show the model the schema and the error.
"""

from __future__ import annotations

import contextlib
import json
from functools import lru_cache
from typing import Annotated, Any, Literal, Union

from attrs import frozen
from pydantic import AllowInfNan, BaseModel, ConfigDict, Field, ValidationError, create_model

from parlay.context import ToolCall
from parlay.engine.contract.parser import ARGS_KEYS
from parlay.request import ToolSpec
from parlay.tool_text import describe_validation_error

# A number must stay one JSON can carry: lax mode reads "1e999", or a string of 4,301
# digits the parser kept, as infinity, which `arguments_json` would write as `Infinity`.
_FINITE = Annotated[float, AllowInfNan(False)]
_KINDS: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": int | _FINITE,
    "boolean": bool,
    "null": type(None),
    "object": dict[str, Any],
}


@frozen
class Repaired:
    """A call after repair; `error` says why its arguments still fail the schema."""

    call: ToolCall
    notes: tuple[str, ...] = ()
    error: str | None = None


def _python_type(schema: Any) -> Any:
    """The Python type of a JSON schema: the values it allows (`enum`, `const`, `anyOf`)
    where it names them, else its `type`."""
    if not isinstance(schema, dict):
        return Any
    if schema.get("enum"):
        values = tuple(v for v in schema["enum"] if isinstance(v, (str, int, float, bool)))
        if values:
            return Literal[values]
    if "const" in schema and isinstance(schema["const"], (str, int, float, bool)):
        return Literal[schema["const"]]
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return Union[tuple(_python_type(s) for s in schema[key])]  # noqa: UP007
    kind: Any = schema.get("type")
    if isinstance(kind, list):
        return Union[tuple(_python_type({**schema, "type": k}) for k in kind)]  # noqa: UP007
    if kind == "array":
        return list[_python_type(schema.get("items"))]  # type: ignore[misc]
    return _KINDS.get(kind, Any)


@lru_cache(maxsize=256)
def _validator(name: str, schema_json: str) -> type[BaseModel] | None:
    """A pydantic model of the arguments, None where pydantic cannot hold them (names it
    reserves, a schema it cannot express): those arguments are left alone."""
    schema = json.loads(schema_json)
    properties = schema.get("properties")
    if not isinstance(properties, dict) or any(
        not key.isidentifier() or key.startswith("_") or key in BaseModel.__dict__
        for key in properties
    ):
        return None
    required = set(schema.get("required") or ())
    fields: dict[str, Any] = {
        key: (_python_type(sub), Field(...) if key in required else Field(None))
        for key, sub in properties.items()
    }
    closed = schema.get("additionalProperties") is False
    config = ConfigDict(extra="forbid" if closed else "allow", coerce_numbers_to_str=True)
    try:
        return create_model(f"{name}_arguments", __config__=config, **fields)
    except Exception:
        return None


def _unwrap(arguments: dict[str, Any], spec: ToolSpec) -> tuple[dict[str, Any], list[str]]:
    """`{"parameters": {...}}` or `{"<tool name>": {...}}` around the real arguments."""
    properties = spec.parameters.get("properties") or {}
    if len(arguments) != 1:
        return arguments, []
    ((key, inner),) = arguments.items()
    if key in properties or not isinstance(inner, dict):
        return arguments, []
    named = key in ARGS_KEYS or key in ("properties", spec.name)
    if named or (inner and set(inner) <= set(properties)):
        return inner, [f"unwrapped arguments from {key!r}"]
    return arguments, []


def _decode_strings(arguments: dict[str, Any], properties: dict[str, Any]) -> dict[str, Any]:
    """A list or object sent as a JSON string: decoded where the schema wants one (JSON
    too deep to decode stays a string)."""
    out = dict(arguments)
    for key, value in arguments.items():
        sub = properties.get(key)
        kind = sub.get("type") if isinstance(sub, dict) else None
        if isinstance(value, str) and kind in ("array", "object"):
            with contextlib.suppress(ValueError, RecursionError):
                decoded = json.loads(value)
                if isinstance(decoded, (list, dict)):
                    out[key] = decoded
    return out


def repair_call(call: ToolCall, spec: ToolSpec) -> Repaired:
    """Unwrap and coerce `call`'s arguments against `spec`'s schema."""
    arguments, notes = _unwrap(call.arguments, spec)
    arguments = _decode_strings(arguments, spec.parameters.get("properties") or {})
    try:
        model = _validator(spec.name, json.dumps(spec.parameters, sort_keys=True, default=str))
    except Exception:
        model = None
    unwrapped = ToolCall(call.name, arguments, call.id)
    if model is None:
        return Repaired(unwrapped, tuple(notes))
    try:
        dumped = model.model_validate(arguments).model_dump(exclude_unset=True)
    except ValidationError as exc:
        return Repaired(unwrapped, tuple(notes), describe_validation_error(exc))
    # In the order the model wrote them (the model's fields are in the schema's order).
    coerced = {key: dumped[key] for key in arguments if key in dumped}
    coerced |= {key: value for key, value in dumped.items() if key not in coerced}
    if coerced != arguments:
        notes.append("coerced arguments to the schema")
    return Repaired(ToolCall(call.name, coerced, call.id), tuple(notes))
