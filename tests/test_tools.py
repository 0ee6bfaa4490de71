import asyncio
import time
from enum import Enum
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field

from parlay import Tool, Toolbox, ToolCall, ToolDefinitionError, tool


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
