"""Few-shot examples synthesised from the request's own tools.

Example calls of the real tools teach a small model to call; two more teach when not
to: a question no tool is about, and a request that leaves out a value a tool needs
(answered with a question). Values come from the schema or a table by argument name.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from attrs import frozen

from parlay.context import ToolCall, ToolResult
from parlay.engine.contract.grounding import leaves
from parlay.request import ToolSpec

_DESCRIBED = re.compile(r"(?:\blike|e\.g\.,?|for example,?|such as)\s+([^\s,;()]+?)[.,;)]?(?:\s|$)")

# Plausible values by what an argument's name says it holds: (name words, value, another
# value); the first entry with a word in the name wins. A fitting value reads as an
# example, where the word "example" reads as a value to copy.
_VALUES: tuple[tuple[tuple[str, ...], str, str], ...] = (
    (("url", "link", "endpoint"), "https://example.com/a", "https://example.com/b"),
    (("email",), "alice@example.com", "bob@example.com"),
    (("city", "location", "place", "address", "region", "destination"), "Paris", "Lyon"),
    (("country", "nation"), "France", "Peru"),
    (("language", "lang", "locale"), "French", "German"),
    (("date", "day"), "2024-05-01", "2025-01-15"),
    (("time", "hour"), "14:00", "09:30"),
    (("year",), "2020", "2021"),
    (("month",), "May", "June"),
    (("company", "organization", "organisation", "brand"), "Acme", "Globex"),
    (("cuisine", "food", "dish", "recipe", "meal"), "Italian", "Mexican"),
    (("genre", "music", "song", "artist", "band"), "jazz", "blues"),
    (("movie", "film", "title", "book"), "Blue Skies", "Night Train"),
    (("color", "colour"), "blue", "green"),
    (("currency",), "EUR", "JPY"),
    (("symbol", "ticker", "stock"), "ACME", "GLBX"),
    (("unit",), "celsius", "fahrenheit"),
    (("path", "file", "directory", "folder", "dir"), "notes.txt", "report.txt"),
    (("command", "cmd", "shell"), "ls", "pwd"),
    (("hotel", "restaurant", "shop", "store", "venue"), "Hotel Lumen", "Cafe Nord"),
    (("id", "ids", "code", "number", "key"), "A-1042", "B-2077"),
    (("name", "user", "person", "author", "owner"), "Alice", "Bob"),
    (("query", "search", "keyword", "topic", "subject", "q"), "blue whales", "red pandas"),
    (("type", "kind", "category", "class", "mode", "status", "level"), "standard", "premium"),
    (
        ("text", "message", "content", "description", "body", "prompt", "comment"),
        "good morning",
        "see you soon",
    ),
)


def _named_value(name: str, other: bool) -> str:
    """The `_VALUES` entry for a word of `name` (snake or camel case)."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    words = set(re.split(r"[^a-z0-9]+", spaced.lower()))
    for keys, value, another in _VALUES:
        if words.intersection(keys):
            return another if other else value
    return "something else" if other else "something"


# The result every example tool returns, and so the text a copied closing answer quotes.
EXAMPLE_RESULT = {"status": "done"}
_RESULT_TEXT = json.dumps(EXAMPLE_RESULT)
EXAMPLE_ANSWERS: frozenset[str | int | float] = frozenset({_RESULT_TEXT})
# What the chain's first result hands on: numbers no one writes by chance, so a copy of
# one in a real call is told (`values_of`).
HANDED_INTEGER = 58213
HANDED_NUMBER = 582.13
_KIND_VALUES: dict[str, Any] = {"integer": 3, "number": 2.5, "boolean": True}
_OTHER_KIND_VALUES: dict[str, Any] = {"integer": 7, "number": 4.5, "boolean": False}
_MISSING = object()


@frozen
class Example:
    """A request for one tool, answered with a call of it."""

    request: str
    call: ToolCall
    thought: str


@frozen
class Ask:
    """A request for a tool without the values it needs: the reply asks for them."""

    request: str
    question: str


@frozen
class Chain:
    """A two-step example: a result arrives and the model decides the next action."""

    request: str
    first: ToolCall
    first_thought: str
    first_result: ToolResult
    second: ToolCall | None
    second_thought: str
    second_result: ToolResult | None
    answer: str


@frozen
class Pair:
    """A request for two things at once, answered with two calls in one reply; then
    their results, and the answer that reports both (for a template that shows them)."""

    request: str
    calls: tuple[ToolCall, ToolCall]
    thought: str

    @property
    def results(self) -> tuple[ToolResult, ...]:
        return tuple(ToolResult(c.id, c.name, _RESULT_TEXT) for c in self.calls)

    @property
    def answer(self) -> str:
        return " ".join(_reported(c.name) for c in self.calls)


def example_value(name: str, schema: Any) -> Any:
    if not isinstance(schema, dict):
        return "example"
    given = _schema_value(name, schema)
    if given is not _MISSING:
        return given
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    described = _DESCRIBED.search(str(schema.get("description") or ""))
    if described and kind in (None, "string"):
        # "The order number, like A-1042.": the author's own example value.
        return described.group(1).strip("'\"`")
    if isinstance(kind, str) and kind in _KIND_VALUES:
        return _KIND_VALUES[kind]
    if kind == "array":
        return [example_value(name.rstrip("s"), schema.get("items"))]
    if kind == "object":
        props = schema.get("properties") or {}
        return {k: example_value(k, v) for k, v in list(props.items())[:2]}
    return _named_value(name, other=False)


def _schema_value(name: str, schema: dict[str, Any]) -> Any:
    """The value the schema offers (an example, its default, a choice), else `_MISSING`."""
    if isinstance(schema.get("examples"), list) and schema["examples"]:
        return schema["examples"][0]
    if schema.get("default") is not None:
        return schema["default"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return example_value(name, schema[key][0])
    return _MISSING


def other_value(name: str, schema: Any) -> Any:
    """A value unlike `example_value`'s, for a second example of the same tool."""
    schema = schema if isinstance(schema, dict) else {}
    kind = schema.get("type")
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][-1]
    if isinstance(kind, str) and kind in _OTHER_KIND_VALUES:
        return _OTHER_KIND_VALUES[kind]
    if kind in ("array", "object"):
        return example_value(name, schema)
    return _named_value(name, other=True)


def example_arguments(spec: ToolSpec) -> dict[str, Any]:
    """Values for the required arguments (or the first one when none is required)."""
    properties = spec.parameters.get("properties") or {}
    required = [k for k in spec.parameters.get("required") or () if k in properties]
    chosen = required or list(properties)[:1]
    values = {key: example_value(key, properties[key]) for key in chosen[:4]}
    # Distinct numbers per argument, so the example shows which value goes where.
    for position, key in enumerate(values):
        if type(values[key]) is int and "default" not in properties[key]:
            values[key] += 2 * position
    return values


def _sentence(spec: ToolSpec) -> str:
    text = (spec.description or spec.name.replace("_", " ")).strip().split("\n")[0]
    return text.split(". ")[0].rstrip(".")


def _lowered(text: str) -> str:
    return text[:1].lower() + text[1:]


def single_example(spec: ToolSpec, index: int, *, varied: bool = False) -> Example:
    """An example call of `spec` and the user's words asking for it (what the tool does,
    then the values). `varied`: with other values, so two examples never share them (a
    small model otherwise copies the example's value instead of the user's)."""
    arguments = example_arguments(spec)
    if varied:
        properties = spec.parameters.get("properties") or {}
        arguments = {key: other_value(key, properties.get(key)) for key in arguments}
    shown = {
        k: v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
        for k, v in arguments.items()
    }
    phrase = ", ".join(f"{key.replace('_', ' ')} {value}" for key, value in shown.items())
    request = f"{_sentence(spec)}{': ' + phrase if phrase else ''}."
    call = ToolCall(spec.name, arguments, f"call_example_{index}")
    return Example(request, call, "" if varied else f"The user needs {spec.name}.")


def _reported(name: str) -> str:
    """The example's closing answer: the tool's name and its result, as it came (a small
    model copies this shape into its real answers, so it must be one worth copying)."""
    return f"{name} returned {_RESULT_TEXT}."


def _handed_value(name: str, schema: Any) -> Any:
    kind = schema.get("type") if isinstance(schema, dict) else None
    if kind in ("integer", "number"):
        return HANDED_INTEGER if kind == "integer" else HANDED_NUMBER
    return other_value(name, schema)


def chain_example(tools: tuple[ToolSpec, ...]) -> Chain:
    """With two tools or more, the first result carries the value the second call needs,
    so the example teaches reading results rather than copying the question."""
    first = single_example(tools[0], 90, varied=True)
    if len(tools) == 1:
        result = ToolResult(first.call.id, first.call.name, _RESULT_TEXT)
        answer = _reported(first.call.name)
        return Chain(first.request, first.call, first.thought, result, None, "", None, answer)
    spec = tools[1]
    arguments = example_arguments(spec)
    handed = next(iter(arguments), None)
    if handed is not None:
        arguments[handed] = _handed_value(handed, spec.parameters["properties"][handed])
    payload = json.dumps({handed: arguments[handed]} if handed else {"result": "ok"})
    second = ToolCall(spec.name, arguments, "call_example_91")
    return Chain(
        f"{first.request[:-1]}, then {_lowered(_sentence(spec))}.",
        first.call,
        f"First {tools[0].name}.",
        ToolResult(first.call.id, first.call.name, payload),
        second,
        f"Now {spec.name} with the result.",
        ToolResult(second.id, spec.name, _RESULT_TEXT),
        _reported(spec.name),
    )


def pair_example(tools: tuple[ToolSpec, ...]) -> Pair:
    """Two calls in one reply: the first two tools, or the first one twice with other
    values. Taught only where parallel calls are allowed."""
    first, alone = single_example(tools[0], 80), len(tools) == 1
    second = single_example(tools[0 if alone else 1], 81, varied=alone)
    request = f"{first.request[:-1]}, and {_lowered(second.request)}"
    return Pair(request, (first.call, second.call), "Both at once.")


def ask_example(tools: tuple[ToolSpec, ...]) -> Ask | None:
    """The first tool with a required string argument, asked for without its values."""
    for spec in tools:
        properties = spec.parameters.get("properties") or {}
        required = [
            key
            for key in spec.parameters.get("required") or ()
            if isinstance(sub := properties.get(key), dict)
            and sub.get("type") == "string"
            and not sub.keys() & {"enum", "default"}
        ]
        if required:
            named = " and ".join(key.replace("_", " ") for key in required[:2])
            return Ask(f"{_sentence(spec)}, please.", f"Sure. Which {named} should I use?")
    return None


def values_of(calls: Sequence[ToolCall]) -> frozenset[str | int | float]:
    """The values the example calls show that a real call should not carry: strings, and
    the handed numbers (a small number is as often the user's own as a copy)."""
    return frozenset(
        value
        for call in calls
        for value in leaves(call.arguments)
        if isinstance(value, str)
        or (not isinstance(value, bool) and value in (HANDED_INTEGER, HANDED_NUMBER))
    )
