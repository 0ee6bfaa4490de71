"""Tools from typed Python functions: JSON schema from the type hints, validated calls.

A signature that cannot become a schema fails when the tool is defined, naming the
parameter. At call time nothing raises: an unknown tool, invalid arguments, a tool that
raises or times out all become a `ToolResult` whose `error` says what went wrong, so the
tool loop can show it to the model.

Tools whose schema comes from elsewhere (an MCP server's listing) are made with
`Tool.from_schema`: the schema is kept as given and arguments are checked against it
with `jsonschema` before the call.
"""

from __future__ import annotations

import asyncio
import inspect
import re
import warnings
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from typing import Any, TypeVar, overload

from attrs import evolve, field, frozen
from pydantic import BaseModel, ValidationError

from parlay.concurrent_calls import in_thread
from parlay.context import ToolCall, ToolResult
from parlay.errors import ToolDefinitionError, UndescribedToolWarning
from parlay.request import ToolSpec
from parlay.signature import arguments_model, describe, schema_of
from parlay.tool_bounds import (
    DEFAULT_MAX_RESULT_CHARS,
    DEFAULT_TOOL_TIMEOUT,
    cut_result,
    timeout_problem,
    validate_result_chars,
    validate_timeout,
)
from parlay.tool_text import describe_schema_errors, describe_validation_error, render_output

F = TypeVar("F", bound=Callable[..., Any])


# The names chat APIs accept for functions (OpenAI: 1-64 of these characters).
_SCHEMA_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]+")


def _schema_validator(name: str, schema: dict[str, Any]) -> Any:
    import jsonschema
    from jsonschema.validators import validator_for

    cls = validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise ToolDefinitionError(
            f"tool {name!r}: its input schema is not valid JSON Schema ({exc.message})"
        ) from exc
    return cls(schema)


@frozen
class Tool:
    """A function the model can call, with its JSON schema and its validator.

    `timeout` bounds one call (None: the session's `tool_timeout`). `max_result_chars`
    bounds what the model reads of a result, on every backend: longer output is cut with
    a note saying how much is missing (None: never cut). `parallel=False`
    keeps the tool's calls from overlapping any other call of the same round. `source`
    is what provides the tool (an MCP server's `MCPTools`), closed with the toolbox.
    """

    name: str
    description: str
    parameters: dict[str, Any] = field(hash=False)
    function: Callable[..., Any] = field(repr=False)
    arguments_model: type[BaseModel] | None = field(default=None, repr=False)
    timeout: float | None = field(default=None, validator=validate_timeout)
    parallel: bool = True
    max_result_chars: int | None = field(
        default=DEFAULT_MAX_RESULT_CHARS, validator=validate_result_chars, kw_only=True
    )
    source: Any = field(default=None, eq=False, repr=False)
    _schema_validator: Any = field(default=None, eq=False, repr=False)

    @classmethod
    def from_function(
        cls,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        timeout: float | None = None,
        parallel: bool = True,
        max_result_chars: int | None = DEFAULT_MAX_RESULT_CHARS,
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
        doc_description, _ = describe(fn)
        if description is None and not doc_description:
            _warn_undescribed(tool_name)
        model = arguments_model(fn, tool_name)
        schema = schema_of(model)
        return cls(
            name=tool_name,
            description=description if description is not None else doc_description,
            parameters=schema,
            function=fn,
            arguments_model=model,
            timeout=timeout,
            parallel=parallel,
            max_result_chars=max_result_chars,
        )

    @classmethod
    def from_schema(
        cls,
        name: str,
        description: str,
        parameters: Mapping[str, Any],
        function: Callable[..., Any],
        *,
        timeout: float | None = None,
        parallel: bool = True,
        source: Any = None,
        max_result_chars: int | None = DEFAULT_MAX_RESULT_CHARS,
    ) -> Tool:
        """A tool whose JSON schema is given: arguments are checked against it as they are
        (no coercion) and passed to `function` as keywords."""
        if not _SCHEMA_TOOL_NAME.fullmatch(name):
            raise ToolDefinitionError(
                f"tool name {name!r} is not usable: letters, digits, '_' and '-' only"
            )
        schema = dict(parameters)
        if schema.get("type", "object") != "object":
            raise ToolDefinitionError(
                f"tool {name!r}: its input schema must describe an object, not "
                f"{schema.get('type')!r}"
            )
        return cls(
            name=name,
            description=description,
            parameters=schema,
            function=function,
            timeout=timeout,
            parallel=parallel,
            source=source,
            max_result_chars=max_result_chars,
            schema_validator=_schema_validator(name, schema),
        )

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(self.name, self.description, self.parameters)

    @property
    def is_async(self) -> bool:
        return inspect.iscoroutinefunction(self.function)

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Validated keyword arguments. Raises pydantic's `ValidationError` for a tool made
        from a function, `jsonschema.ValidationError` for one made from a schema."""
        if self.arguments_model is None:
            if self._schema_validator is not None:
                self._schema_validator.validate(dict(arguments))
            return dict(arguments)
        validated = self.arguments_model.model_validate(dict(arguments))
        return {key: getattr(validated, key) for key in type(validated).model_fields}

    def _checked(self, arguments: Mapping[str, Any]) -> dict[str, Any] | str:
        """The keyword arguments, or what is wrong with them."""
        if self.arguments_model is None:
            if self._schema_validator is not None:
                errors = list(self._schema_validator.iter_errors(dict(arguments)))
                if errors:
                    return describe_schema_errors(errors)
            return dict(arguments)
        try:
            return self.validate(arguments)
        except ValidationError as exc:
            return describe_validation_error(exc)

    async def ainvoke(self, call: ToolCall, *, timeout: float | None = None) -> ToolResult:
        """Run the tool for `call`. Never raises: failures are in `ToolResult.error`.

        `timeout` applies when the tool has none of its own. A function may return a
        `ToolResult` to say exactly what the model sees (its id and name are filled in).
        """
        kwargs = self._checked(call.arguments)
        if isinstance(kwargs, str):
            return ToolResult(call.id, self.name, error=f"invalid arguments: {kwargs}")
        limit = self.timeout if self.timeout is not None else timeout
        try:
            if self.is_async:
                pending: Awaitable[Any] = self.function(**kwargs)
            else:
                pending = in_thread(self.function, **kwargs)
            value = await asyncio.wait_for(pending, limit)
        except TimeoutError:
            return ToolResult(
                call.id, self.name, error=f"tool {self.name!r} timed out after {limit} s"
            )
        except Exception as exc:
            return ToolResult(call.id, self.name, error=f"{type(exc).__name__}: {exc}")
        except SystemExit as exc:  # argparse does this on bad arguments: not the caller's exit
            return ToolResult(call.id, self.name, error=f"the tool exited (code {exc.code})")
        if isinstance(value, ToolResult):
            result = evolve(value, call_id=call.id, name=self.name)
        else:
            result = ToolResult(call.id, self.name, output=render_output(value), value=value)
        return cut_result(result, self.max_result_chars)

    def invoke(self, call: ToolCall, *, timeout: float | None = None) -> ToolResult:
        from parlay._sync import run_sync

        return run_sync(self.ainvoke(call, timeout=timeout))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.function(*args, **kwargs)


@overload
def tool(fn: F, /) -> Tool: ...
@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    parallel: bool = True,
    max_result_chars: int | None = DEFAULT_MAX_RESULT_CHARS,
) -> Callable[[F], Tool]: ...
def tool(
    fn: Any = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    parallel: bool = True,
    max_result_chars: int | None = DEFAULT_MAX_RESULT_CHARS,
) -> Any:
    """Make a `Tool` of a typed function: `@tool` or `@tool(name=..., timeout=...)`.

    `parallel=False` for a tool whose calls must not overlap others (say, one that
    writes a file another call reads). `max_result_chars`: what the model reads of a
    result at most (None: all of it).
    """
    if fn is not None:
        return Tool.from_function(fn)

    def decorate(f: F) -> Tool:
        return Tool.from_function(
            f,
            name=name,
            description=description,
            timeout=timeout,
            parallel=parallel,
            max_result_chars=max_result_chars,
        )

    return decorate


def _origin(item: Tool) -> str:
    label = getattr(item.source, "label", None)
    return f"from {label}" if label else "a Python function"


class Toolbox:
    """Tools by name: what a session offers, and how it runs a call against them.

    Two tools of one name are an error naming where each came from; tools of MCP servers
    are told apart with a prefix (`MCPTools.stdio(..., prefix="fs")`).
    """

    def __init__(self, tools: Iterable[Tool | Callable[..., Any]] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for item in tools:
            made = Tool.from_function(item)
            other = self._tools.get(made.name)
            if other is not None:
                hint = ""
                if made.source is not None or other.source is not None:
                    hint = "; give an MCP server a prefix: MCPTools.stdio(..., prefix='name')"
                raise ToolDefinitionError(
                    f"two tools are named {made.name!r} ({_origin(other)}, {_origin(made)})" + hint
                )
            self._tools[made.name] = made

    def __iter__(self) -> Iterator[Tool]:
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

    @property
    def sources(self) -> list[Any]:
        """What provides the tools, each once (MCP servers), in the order of the tools."""
        seen: dict[int, Any] = {}
        for item in self._tools.values():
            if item.source is not None:
                seen.setdefault(id(item.source), item.source)
        return list(seen.values())

    async def aclose(self) -> None:
        """Close what provides the tools (stops MCP servers); Python functions stay."""
        for source in self.sources:
            closer = getattr(source, "aclose", None)
            if closer is not None:
                await closer()

    def close(self) -> None:
        from parlay._sync import run_sync

        if self.sources:
            run_sync(self.aclose())

    async def arun(self, call: ToolCall, *, timeout: float | None = None) -> ToolResult:
        """Run `call`; `timeout` applies to a tool without a timeout of its own."""
        found = self._tools.get(call.name)
        if found is None:
            known = ", ".join(self._tools) or "none"
            return ToolResult(
                call.id, call.name, error=f"unknown tool {call.name!r}; the tools are: {known}"
            )
        return await found.ainvoke(call, timeout=timeout)


__all__ = [
    "DEFAULT_TOOL_TIMEOUT",
    "Tool",
    "Toolbox",
    "cut_result",
    "describe_schema_errors",
    "describe_validation_error",
    "render_output",
    "timeout_problem",
    "tool",
]


_warned: set[str] = set()


def _warn_undescribed(name: str) -> None:
    """Once per tool name: a model picks tools by their description, and this has none."""
    if name in _warned:
        return
    _warned.add(name)
    warnings.warn(
        f"tool {name!r} has no docstring, so the model sees no description of it: add one "
        "(its first line says what the tool does) or pass description='...'",
        UndescribedToolWarning,
        stacklevel=4,
    )
