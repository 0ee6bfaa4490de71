"""Structured output with tools: the caller's schema survives under the action grammar
(issue: a user's format= was silently replaced by the action grammar)."""

from __future__ import annotations

import json

import jsonschema
import pytest
from pydantic import BaseModel

from parlay import Session
from parlay.backends.base import Capabilities
from parlay.backends.scripted import ScriptedBackend
from parlay.context import AssistantMessage, ToolCall, ToolResult, UserMessage
from parlay.engine.backend import PromptedBackend
from parlay.engine.contract.constrain import action_schema
from parlay.engine.policy import TurnPolicy
from parlay.request import ChatRequest, ResponseFormat, ToolChoice, ToolSpec

from .conftest import TOOLS

GRAMMAR = Capabilities(native_tools=False, json_schema=True)


class Weather(BaseModel):
    reasoning: str
    city: str
    temp: int


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def test_the_answer_option_of_the_grammar_is_the_callers_schema() -> None:
    schema = Weather.model_json_schema()
    options = action_schema(TOOLS, TurnPolicy.of_choice(ToolChoice("auto")), "json", schema)[
        "anyOf"
    ]
    answer = options[-1]
    assert set(answer["properties"]) == {"reasoning", "city", "temp"}
    # An object opening with an action key (`reasoning`) would be read as an action.
    assert next(iter(answer["properties"])) == "city"
    assert all("tool" in json.dumps(o) for o in options[:-1])


class Address(BaseModel):
    city: str


class Person(BaseModel):
    name: str
    home: Address


def test_a_callers_schema_with_nested_models_keeps_its_references_resolvable() -> None:
    # pydantic (and the openai SDK's `response_format=Model`) writes nested models as
    # `$ref: #/$defs/...`, read from the root: under `anyOf` they must move there.
    schema = Person.model_json_schema()
    assert "$defs" in schema
    for action_format in ("json", "typed"):
        grammar = action_schema(
            TOOLS, TurnPolicy.of_choice(ToolChoice("auto")), action_format, schema, parallel=True
        )
        assert "Address" in grammar["$defs"]
        assert all("$defs" not in option for option in grammar["anyOf"])
        person = {"name": "Ada", "home": {"city": "London"}}
        jsonschema.validate(person, grammar)
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate({"name": "Ada", "home": {"town": 3}}, grammar)
    assert "$defs" in schema  # the caller's own schema is left as it was


def test_a_forced_call_keeps_only_calls() -> None:
    schema = Weather.model_json_schema()
    options = action_schema(TOOLS, TurnPolicy.of_choice(ToolChoice("required")), "json", schema)
    assert "reasoning" not in json.dumps(options)


async def test_the_grammar_sent_holds_the_callers_schema_and_the_tools() -> None:
    inner = ScriptedBackend(
        ['{"city": "Oslo", "temp": 4, "reasoning": "cold"}'], capabilities=GRAMMAR
    )
    request = ChatRequest(
        (UserMessage("Weather in Oslo?"),),
        tools=TOOLS,
        response_format=ResponseFormat(Weather.model_json_schema(), name="Weather"),
    )
    events = [e async for e in PromptedBackend(inner).stream(request)]
    sent = inner.requests[0].response_format
    assert sent is not None and sent.name == "action"
    kinds = [set(o.get("properties", {})) for o in sent.schema["anyOf"]]
    assert {"city", "temp", "reasoning"} in kinds and {"type", "tool"} in kinds
    text = "".join(getattr(e, "text", "") for e in events)
    assert json.loads(text) == {"city": "Oslo", "temp": 4, "reasoning": "cold"}


def test_a_session_with_tools_parses_the_structured_answer() -> None:
    inner = ScriptedBackend(
        [
            '{"action": {"tool": "add", "args": {"a": 2, "b": 2}}}',
            '{"city": "Oslo", "temp": 4, "reasoning": "2 + 2 is 4"}',
        ],
        capabilities=GRAMMAR,
    )
    session = Session(PromptedBackend(inner), tools=[add])
    answer = session.query({"city": "Oslo"}, "How warm? Use add for 2 + 2.", format=Weather)
    assert answer.parsed == Weather(reasoning="2 + 2 is 4", city="Oslo", temp=4)
    assert [s.name for s in answer.steps if hasattr(s, "name")] == ["add"]
    for request in inner.requests:
        assert request.response_format is not None
        assert "Weather" not in request.response_format.name  # the action grammar, holding it
        assert "temp" in json.dumps(request.response_format.schema)


class Node(BaseModel):
    label: str
    children: list[Node] = []


def test_a_tool_with_a_recursive_model_gets_a_grammar_whose_references_resolve() -> None:
    from parlay.tools import Tool

    def draw(tree: Node) -> str:
        """Draw a tree."""
        return tree.label

    spec = Tool.from_function(draw).spec
    assert "$defs" in json.dumps(spec.parameters)  # a recursive model is not inlined
    grammar = action_schema((spec,), TurnPolicy.of_choice(ToolChoice("auto")), "json")
    call = {
        "action": {"tool": "draw", "args": {"tree": {"label": "a", "children": [{"label": "b"}]}}}
    }
    jsonschema.validate(call, grammar)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(
            {"action": {"tool": "draw", "args": {"tree": {"children": []}}}}, grammar
        )


def _with_item(tool: str, arg: str, item: dict) -> ToolSpec:
    # As MCP servers send them: FastMCP writes a pydantic argument as `$ref` + `$defs`.
    return ToolSpec(
        tool,
        parameters={
            "type": "object",
            "properties": {arg: {"$ref": "#/$defs/Item"}},
            "required": [arg],
            "$defs": {"Item": item},
        },
    )


BASKET_LINE = {
    "type": "object",
    "properties": {"sku": {"type": "string"}, "quantity": {"type": "integer"}},
    "required": ["sku", "quantity"],
}
TO_DO = {
    "type": "object",
    "properties": {"text": {"type": "string"}, "done": {"type": "boolean"}},
    "required": ["text", "done"],
}


def test_two_tools_naming_different_models_alike_keep_each_its_own() -> None:
    specs = (_with_item("order", "line", BASKET_LINE), _with_item("remember", "item", TO_DO))
    grammar = action_schema(
        specs, TurnPolicy.of_choice(ToolChoice("auto")), "json", Person.model_json_schema()
    )
    jsonschema.validate(
        {"action": {"tool": "order", "args": {"line": {"sku": "a1", "quantity": 2}}}}, grammar
    )
    jsonschema.validate(
        {"action": {"tool": "remember", "args": {"item": {"text": "milk", "done": False}}}},
        grammar,
    )
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(
            {"action": {"tool": "remember", "args": {"item": {"sku": "a1", "quantity": 2}}}},
            grammar,
        )
    jsonschema.validate({"name": "Ada", "home": {"city": "London"}}, grammar)
    assert specs[1].parameters["$defs"].keys() == {"Item"}  # the tool's own is left as it was


def test_tools_sharing_one_model_share_its_name() -> None:
    specs = (_with_item("order", "line", BASKET_LINE), _with_item("cancel", "line", BASKET_LINE))
    grammar = action_schema(specs, TurnPolicy.of_choice(ToolChoice("auto")), "json")
    assert grammar["$defs"] == {"Item": BASKET_LINE}


async def test_a_structured_answer_after_a_result_is_never_trimmed_into_broken_json() -> None:
    # The echo trim takes instruction clauses out of plain answers; an answer held to
    # the caller's schema is a JSON document, and a clause cut from it would break it.
    answer = {
        "city": "Oslo",
        "temp": 4,
        "reasoning": "2 + 2 is 4. Decide the next step: call another tool if the task "
        "still needs one, otherwise answer the user with this result.",
    }
    inner = ScriptedBackend([json.dumps(answer)], capabilities=GRAMMAR, chunk_size=3)
    request = ChatRequest(
        (
            UserMessage("How warm in Oslo? Use add for 2 + 2."),
            AssistantMessage("", (ToolCall("add", {"a": 2, "b": 2}, "c1"),)),
            ToolResult("c1", "add", output="4"),
        ),
        tools=TOOLS,
        response_format=ResponseFormat(Weather.model_json_schema(), name="Weather"),
    )
    events = [e async for e in PromptedBackend(inner).stream(request)]
    text = "".join(getattr(e, "text", "") for e in events)
    assert json.loads(text) == answer
