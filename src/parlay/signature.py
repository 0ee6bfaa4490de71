"""From a typed Python function to a tool's JSON schema and its pydantic validator.

A signature that cannot become a schema fails here, naming the parameter and what to do.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, get_type_hints

import docstring_parser
from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.errors import PydanticSchemaGenerationError, PydanticUserError

from parlay.errors import ToolDefinitionError

_SCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_SINGLES = ("items", "additionalProperties", "not", "contains")


def describe(fn: Callable[..., Any]) -> tuple[str, dict[str, str]]:
    doc = docstring_parser.parse(inspect.getdoc(fn) or "")
    parts = [p for p in (doc.short_description, doc.long_description) if p]
    return "\n\n".join(parts), {p.arg_name: p.description or "" for p in doc.params}


def _inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """Replace `$ref`s by their definitions (models read inline schemas more reliably).

    Recursive models keep their `$defs`, since they cannot be inlined.
    """
    defs = schema.get("$defs", {})

    def resolve(node: Any, seen: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [resolve(x, seen) for x in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            name = ref.removeprefix("#/$defs/")
            if name in seen:
                raise RecursionError(name)
            target = dict(defs[name])
            rest = {k: v for k, v in node.items() if k != "$ref"}
            return resolve({**target, **rest}, (*seen, name))
        return {k: resolve(v, seen) for k, v in node.items() if k != "$defs"}

    try:
        inlined: dict[str, Any] = resolve(schema, ())
        return inlined
    except RecursionError:
        return schema


def _strip_titles(node: Any) -> Any:
    """Drop pydantic's generated `title`s: noise in a prompt, never a constraint."""
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title":
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: _strip_titles(sub) for name, sub in value.items()}
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [_strip_titles(sub) for sub in value]
        elif key in _SCHEMA_SINGLES:
            out[key] = _strip_titles(value)
        else:
            out[key] = value
    return out


def arguments_model(fn: Callable[..., Any], name: str) -> type[BaseModel]:
    signature = inspect.signature(fn)
    try:
        hints = get_type_hints(fn, include_extras=True)
    except Exception as exc:
        raise ToolDefinitionError(
            f"tool {name!r}: its type hints cannot be resolved ({exc})"
        ) from exc
    _, arg_docs = describe(fn)
    fields: dict[str, Any] = {}
    for param in signature.parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ToolDefinitionError(
                f"tool {name!r}: parameter {param.name!r} is *args or **kwargs, which has no "
                "JSON schema; declare each argument by name"
            )
        if param.kind is param.POSITIONAL_ONLY:
            raise ToolDefinitionError(
                f"tool {name!r}: parameter {param.name!r} is positional-only; tools are called "
                "with keyword arguments"
            )
        if param.name not in hints:
            raise ToolDefinitionError(
                f"tool {name!r}: parameter {param.name!r} has no type hint; add one (str, int, "
                "a Literal, a pydantic model...) so its JSON schema can be made"
            )
        default = ... if param.default is param.empty else param.default
        info = Field(default=default)
        if arg_docs.get(param.name):
            info = Field(default=default, description=arg_docs[param.name])
        fields[param.name] = (hints[param.name], info)
        try:
            create_model("probe", **{param.name: fields[param.name]}).model_json_schema()
        except (PydanticSchemaGenerationError, PydanticUserError, TypeError) as exc:
            raise ToolDefinitionError(
                f"tool {name!r}: parameter {param.name!r} has type {hints[param.name]!r}, "
                f"which has no JSON schema; use JSON-friendly types or a pydantic model "
                f"({type(exc).__name__})"
            ) from exc
    model_name = "".join(part.capitalize() for part in name.split("_")) + "Arguments"
    return create_model(model_name, __config__=ConfigDict(extra="forbid"), **fields)


def schema_of(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema a model is shown: references inlined, pydantic's titles dropped."""
    schema: dict[str, Any] = _strip_titles(_inline_refs(model.model_json_schema()))
    schema.setdefault("properties", {})
    return schema
