"""Tools from typed Python functions: JSON schema from the type hints, validated calls.

A signature that cannot become a schema fails when the tool is defined, naming the
parameter. At call time nothing raises: an unknown tool, invalid arguments, a tool that
raises or times out all become a `ToolResult` whose `error` says what went wrong, so the
tool loop can show it to the model.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import json
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, TypeVar, get_type_hints, overload

import docstring_parser
from attrs import field, frozen
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model
from pydantic.errors import PydanticSchemaGenerationError, PydanticUserError

from parlay.context import ToolCall, ToolResult
from parlay.errors import ToolDefinitionError
from parlay.request import ToolSpec

F = TypeVar("F", bound=Callable[..., Any])

_SCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_SINGLES = ("items", "additionalProperties", "not", "contains")


def _describe(fn: Callable[..., Any]) -> tuple[str, dict[str, str]]:
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
        return resolve(schema, ())
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


def _arguments_model(fn: Callable[..., Any], name: str) -> type[BaseModel]:
    signature = inspect.signature(fn)
    try:
        hints = get_type_hints(fn, include_extras=True)
    except Exception as exc:
        raise ToolDefinitionError(
            f"tool {name!r}: its type hints cannot be resolved ({exc})"
        ) from exc
    _, arg_docs = _describe(fn)
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


def render_output(value: Any) -> str:
    """The text a model is shown for a tool's return value."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(value)


def describe_validation_error(error: ValidationError) -> str:
    """One line per problem, in terms of the tool's arguments."""
    lines = []
    for problem in error.errors():
        where = ".".join(str(p) for p in problem["loc"]) or "(arguments)"
        if problem["type"] == "extra_forbidden":
            lines.append(f"unknown argument {where!r}")
        elif problem["type"] == "missing":
            lines.append(f"missing required argument {where!r}")
        else:
            lines.append(f"argument {where!r}: {problem['msg']} (got {problem.get('input')!r})")
    return "; ".join(lines)


def _validate_timeout(_: Any, __: Any, value: float | None) -> None:
    if value is not None and value <= 0:
        raise ToolDefinitionError(f"tool timeout must be positive seconds, got {value!r}")


@frozen
class Tool:
    """A Python function the model can call, with its JSON schema and its validator."""

    name: str
    description: str
    parameters: dict[str, Any] = field(hash=False)
    function: Callable[..., Any] = field(repr=False)
    arguments_model: type[BaseModel] = field(repr=False)
    timeout: float | None = field(default=None, validator=_validate_timeout)

    @classmethod
    def from_function(
        cls,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        timeout: float | None = None,
    ) -> Tool:
        if isinstance(fn, Tool):
            return fn
        if not callable(fn):
            raise ToolDefinitionError(f"a tool must be a function, got {type(fn).__name__}")
        tool_name = name or getattr(fn, "__name__", None)
        if not tool_name or not tool_name.isidentifier():
            raise ToolDefinitionError(
                f"tool name {tool_name!r} is not usable: pass name='...' (letters, digits, _)"
            )
        doc_description, _ = _describe(fn)
        model = _arguments_model(fn, tool_name)
        schema = _strip_titles(_inline_refs(model.model_json_schema()))
        schema.setdefault("properties", {})
        return cls(
            name=tool_name,
            description=description if description is not None else doc_description,
            parameters=schema,
            function=fn,
            arguments_model=model,
            timeout=timeout,
        )

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(self.name, self.description, self.parameters)

    @property
    def is_async(self) -> bool:
        return inspect.iscoroutinefunction(self.function)

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Validated and coerced keyword arguments; raises pydantic's ValidationError."""
        validated = self.arguments_model.model_validate(dict(arguments))
        return {key: getattr(validated, key) for key in type(validated).model_fields}

    async def ainvoke(self, call: ToolCall) -> ToolResult:
        """Run the tool for `call`. Never raises: failures are in `ToolResult.error`."""
        try:
            kwargs = self.validate(call.arguments)
        except ValidationError as exc:
            return ToolResult(
                call.id, self.name, error=f"invalid arguments: {describe_validation_error(exc)}"
            )
        try:
            if self.is_async:
                pending: Awaitable[Any] = self.function(**kwargs)
            else:
                pending = asyncio.to_thread(self.function, **kwargs)
            value = await asyncio.wait_for(pending, self.timeout)
        except TimeoutError:
            return ToolResult(
                call.id, self.name, error=f"tool {self.name!r} timed out after {self.timeout} s"
            )
        except Exception as exc:
            return ToolResult(call.id, self.name, error=f"{type(exc).__name__}: {exc}")
        return ToolResult(call.id, self.name, output=render_output(value), value=value)

    def invoke(self, call: ToolCall) -> ToolResult:
        from parlay._sync import run_sync

        return run_sync(self.ainvoke(call))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.function(*args, **kwargs)


@overload
def tool(fn: F, /) -> Tool: ...
@overload
def tool(
    *, name: str | None = None, description: str | None = None, timeout: float | None = None
) -> Callable[[F], Tool]: ...
def tool(
    fn: Any = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
) -> Any:
    """Make a `Tool` of a typed function: `@tool` or `@tool(name=..., timeout=...)`."""
    if fn is not None:
        return Tool.from_function(fn)

    def decorate(f: F) -> Tool:
        return Tool.from_function(f, name=name, description=description, timeout=timeout)

    return decorate


class Toolbox:
    """Tools by name: what a session offers, and how it runs a call against them."""

    def __init__(self, tools: Iterable[Tool | Callable[..., Any]] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for item in tools:
            made = Tool.from_function(item)
            if made.name in self._tools:
                raise ToolDefinitionError(f"two tools are named {made.name!r}")
            self._tools[made.name] = made

    def __iter__(self) -> Any:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    @property
    def specs(self) -> tuple[ToolSpec, ...]:
        return tuple(t.spec for t in self._tools.values())

    async def arun(self, call: ToolCall) -> ToolResult:
        found = self._tools.get(call.name)
        if found is None:
            known = ", ".join(self._tools) or "none"
            return ToolResult(
                call.id, call.name, error=f"unknown tool {call.name!r}; the tools are: {known}"
            )
        return await found.ainvoke(call)


__all__ = ["Tool", "Toolbox", "describe_validation_error", "render_output", "tool"]
