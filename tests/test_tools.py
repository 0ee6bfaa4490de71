import asyncio
import time
from enum import Enum
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field

from parlay import Tool, Toolbox, ToolCall, ToolDefinitionError, ToolResult, tool


class Address(BaseModel):
    street: str
    city: str = Field(description="City name")
    zip_code: str | None = None


class Unit(str, Enum):
    celsius = "celsius"
    fahrenheit = "fahrenheit"


def weather(
    city: Annotated[str, Field(description="City to look up")],
    unit: Literal["celsius", "fahrenheit"] = "celsius",
) -> str:
    """Current weather for a city."""
    return f"20 {unit} in {city}"


def search(query: str, limit: int = 10, tags: list[str] | None = None) -> list[str]:
    """Search the catalogue.

    Returns matching titles, best first.

    Args:
        query: Words to look for.
        limit: Most results to return.
        tags: Only items with all of these tags.
    """
    return [query] * limit


def ship(address: Address, items: dict[str, int], express: bool = False) -> str:
    """Ship items to an address.

    Args:
        address: Where to deliver.
        items: Quantity by product code.
        express: Next-day delivery.
    """
    return f"{sum(items.values())} items to {address.city}"


def matrix(rows: list[list[float]], unit: Unit = Unit.celsius) -> float:
    return sum(map(sum, rows))


async def slow(seconds: float) -> str:
    """Sleep, then answer."""
    await asyncio.sleep(seconds)
    return "done"


@pytest.mark.parametrize("fn", [weather, search, ship, matrix, slow], ids=lambda f: f.__name__)
def test_schema_from_signature(fn, snapshot):
    made = Tool.from_function(fn)
    assert made.spec.parameters == made.parameters
    assert {
        "name": made.name,
        "description": made.description,
        "parameters": made.parameters,
    } == snapshot


def test_decorator_forms():
    @tool
    def plain(x: int) -> int:
        return x

    @tool(name="renamed", description="Custom.", timeout=2)
    def other(x: int) -> int:
        return x

    assert isinstance(plain, Tool) and plain.name == "plain"
    assert other.name == "renamed" and other.description == "Custom." and other.timeout == 2
    assert plain(3) == 3  # still callable as a function


@pytest.mark.parametrize(
    ("fn_source", "fragment"),
    [
        ("def f(x): pass", "parameter 'x' has no type hint"),
        ("def f(*args: int): pass", "parameter 'args' is *args"),
        ("def f(**kw: int): pass", "parameter 'kw' is *args or **kwargs"),
        ("def f(x: int, /): pass", "parameter 'x' is positional-only"),
        ("import threading\ndef f(lock: threading.Lock): pass", "parameter 'lock' has type"),
    ],
)
def test_signature_without_schema_fails_at_definition(fn_source, fragment):
    namespace: dict[str, Any] = {}
    exec(fn_source, namespace)
    with pytest.raises(ToolDefinitionError, match=fragment.replace("*", r"\*")):
        Tool.from_function(namespace["f"])


def test_invalid_timeout_and_duplicate_names():
    with pytest.raises(ToolDefinitionError, match="timeout"):
        Tool.from_function(weather, timeout=0)
    with pytest.raises(ToolDefinitionError, match="two tools are named 'weather'"):
        Toolbox([weather, weather])


def test_arguments_are_validated_and_coerced():
    made = Tool.from_function(search)
    result = made.invoke(ToolCall("search", {"query": "tea", "limit": "2"}))
    assert result.error is None
    assert result.value == ["tea", "tea"] and result.output == '["tea", "tea"]'


def test_nested_model_arguments_arrive_as_models():
    made = Tool.from_function(ship)
    call = ToolCall(
        "ship", {"address": {"street": "1 Main", "city": "Oslo"}, "items": {"a": 2, "b": "3"}}
    )
    result = made.invoke(call)
    assert result.output == "5 items to Oslo"


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        ({}, "missing required argument 'query'"),
        ({"query": "x", "limit": "many"}, "argument 'limit': Input should be a valid integer"),
        ({"query": "x", "colour": "red"}, "unknown argument 'colour'"),
    ],
)
def test_invalid_arguments_become_error_results(arguments, fragment):
    result = Tool.from_function(search).invoke(ToolCall("search", arguments, id="c9"))
    assert result.call_id == "c9" and result.name == "search"
    assert result.error is not None and fragment in result.error
    assert result.content.startswith("Error: invalid arguments")


def test_an_invalid_argument_error_shows_few_problems_and_short_values():
    # The model reads it: a 5,000-character value or 3,000 wrong items would bury the point.
    def total(counts: list[int], label: str = "") -> int:
        """Add up the counts."""
        return sum(counts)

    made = Tool.from_function(total)
    long_value = made.invoke(ToolCall("total", {"counts": "x" * 5000}))
    assert long_value.error is not None and len(long_value.error) < 300
    assert "(5002 characters)" in long_value.error
    many = made.invoke(ToolCall("total", {"counts": ["a"] * 3000}))
    assert many.error is not None and len(many.error) < 1000
    assert many.error.endswith("and 2995 more problems")


def test_a_tool_that_raises_becomes_an_error_result():
    def broken(x: int) -> int:
        raise ValueError("no such thing")

    result = Tool.from_function(broken).invoke(ToolCall("broken", {"x": 1}))
    assert result.error == "ValueError: no such thing"


def test_timeout_becomes_an_error_result():
    made = Tool.from_function(slow, timeout=0.05)
    started = time.perf_counter()
    result = made.invoke(ToolCall("slow", {"seconds": 5}))
    assert time.perf_counter() - started < 2
    assert result.error is not None and "timed out after 0.05 s" in result.error


async def test_sync_and_async_tools_run_from_async_code():
    box = Toolbox([weather, slow])
    first = await box.arun(ToolCall("weather", {"city": "Rome"}))
    second = await box.arun(ToolCall("slow", {"seconds": 0}))
    assert first.output == "20 celsius in Rome" and second.output == "done"


async def test_unknown_tool_names_the_real_ones():
    result = await Toolbox([weather, search]).arun(ToolCall("wether", {}))
    assert result.error == "unknown tool 'wether'; the tools are: weather, search"


SCHEMA = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "A file."},
        "lines": {"type": "integer", "minimum": 1},
    },
    "required": ["path"],
    "additionalProperties": False,
}


async def read_head(**arguments: Any) -> str:
    return f"{arguments['path']}:{arguments.get('lines', 10)}"


def test_a_tool_from_a_schema_keeps_it_and_passes_arguments_as_given():
    made = Tool.from_schema("read-head", "First lines of a file.", SCHEMA, read_head)
    assert made.spec.parameters == SCHEMA and made.name == "read-head"
    result = made.invoke(ToolCall("read-head", {"path": "a.txt", "lines": 3}, id="c1"))
    assert (result.call_id, result.output) == ("c1", "a.txt:3")


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({}, "invalid arguments: missing required argument 'path'"),
        ({"path": 3}, "invalid arguments: argument 'path': 3 is not of type 'string'"),
        (
            {"path": "a", "lines": 0},
            "invalid arguments: argument 'lines': 0 is less than the minimum of 1",
        ),
        (
            {"path": "a", "mode": "r"},
            "invalid arguments: arguments: Additional properties are not allowed ('mode' was unexpected)",
        ),
    ],
)
def test_arguments_are_checked_against_the_given_schema_before_the_call(arguments, expected):
    ran: list[dict[str, Any]] = []

    def spy(**kwargs: Any) -> str:
        ran.append(kwargs)
        return "ran"

    result = Tool.from_schema("read_head", "", SCHEMA, spy).invoke(ToolCall("read_head", arguments))
    assert result.error == expected and ran == []


@pytest.mark.parametrize(
    ("name", "schema", "fragment"),
    [
        ("has space", SCHEMA, "letters, digits, '_' and '-' only"),
        ("ok", {"type": "array"}, "must describe an object"),
        ("ok", {"type": "object", "properties": {"a": {"type": "strng"}}}, "not valid JSON Schema"),
    ],
)
def test_an_unusable_schema_tool_fails_when_defined(name, schema, fragment):
    with pytest.raises(ToolDefinitionError, match=fragment):
        Tool.from_schema(name, "", schema, read_head)


def test_a_function_may_return_a_tool_result_to_set_what_the_model_sees():
    def lookup(key: str) -> ToolResult:
        if key == "missing":
            return ToolResult("", "", error="no such key; try 'a'")
        return ToolResult("", "", output="A", value={"key": key})

    made = Tool.from_function(lookup)
    bad = made.invoke(ToolCall("lookup", {"key": "missing"}, id="c1"))
    good = made.invoke(ToolCall("lookup", {"key": "a"}, id="c2"))
    assert (bad.call_id, bad.name, bad.error) == ("c1", "lookup", "no such key; try 'a'")
    assert (good.call_id, good.output, good.value) == ("c2", "A", {"key": "a"})


def test_a_toolbox_timeout_applies_to_tools_without_their_own():
    box = Toolbox([slow, Tool.from_function(slow, name="slow_own", timeout=30)])
    result = asyncio.run(box.arun(ToolCall("slow", {"seconds": 5}), timeout=0.05))
    assert result.error == "tool 'slow' timed out after 0.05 s"


def test_name_clashes_say_where_each_tool_came_from():
    class Source:
        label = "MCP server 'files'"

    other = Tool.from_schema("weather", "", {"type": "object"}, read_head, source=Source())
    with pytest.raises(ToolDefinitionError) as caught:
        Toolbox([weather, other])
    message = str(caught.value)
    assert "two tools are named 'weather' (a Python function, from MCP server 'files')" in message
    assert "prefix" in message


def test_a_tool_without_a_docstring_warns_once() -> None:
    import warnings

    from parlay import UndescribedToolWarning
    from parlay.tools import Tool

    def lookup_undocumented_xyz(key: str) -> str:
        return key

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        Tool.from_function(lookup_undocumented_xyz)
        Tool.from_function(lookup_undocumented_xyz)
        Tool.from_function(lookup_undocumented_xyz, name="other_xyz", description="Looks up.")
    found = [w for w in caught if issubclass(w.category, UndescribedToolWarning)]
    assert len(found) == 1 and "add one" in str(found[0].message)
