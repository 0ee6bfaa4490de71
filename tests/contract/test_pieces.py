"""Repair, refusal detection, state from history, constraint schemas."""

from __future__ import annotations

import pytest

from parlay.context import AssistantMessage, ToolCall, ToolResult, UserMessage
from parlay.engine.checks.refusal import DEFAULT_REFUSALS, detect_refusal
from parlay.engine.contract.constrain import action_schema
from parlay.engine.contract.repair import repair_call
from parlay.engine.contract.state import ToolState, tool_state
from parlay.engine.policy import TurnPolicy
from parlay.request import ToolChoice, ToolSpec

from .conftest import ADD, TOOLS, WEATHER

LISTS = ToolSpec(
    "tag",
    "Tag items.",
    {
        "type": "object",
        "properties": {
            "items": {"type": "array", "items": {"type": "integer"}},
            "label": {"type": "string"},
            "ratio": {"type": "number"},
            "flag": {"type": "boolean"},
        },
        "required": ["items"],
        "additionalProperties": False,
    },
)


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"a": "2", "b": "3"}, {"a": 2, "b": 3}),
        ({"parameters": {"a": 1, "b": 2}}, {"a": 1, "b": 2}),
        ({"add": {"a": 1, "b": 2}}, {"a": 1, "b": 2}),
        ({"a": 1, "b": 2}, {"a": 1, "b": 2}),
    ],
)
def test_repair_coerces_and_unwraps(arguments: dict, expected: dict) -> None:
    repaired = repair_call(ToolCall("add", arguments, "c"), ADD)
    assert repaired.call.arguments == expected and repaired.error is None
    assert repaired.call.id == "c"


def test_repair_decodes_strings_and_keeps_ints_for_numbers() -> None:
    call = ToolCall("tag", {"items": "[1, 2]", "label": 7, "ratio": 3, "flag": "true"})
    repaired = repair_call(call, LISTS)
    assert repaired.call.arguments == {"items": [1, 2], "label": "7", "ratio": 3, "flag": True}


def test_repair_keeps_the_order_the_model_wrote_the_arguments_in() -> None:
    # Coerced through a model whose fields are in the schema's order, they came back
    # sorted by name: a caller printing the call saw keys the model never wrote so.
    call = ToolCall("tag", {"ratio": "3", "label": 7, "items": "[1]"})
    assert list(repair_call(call, LISTS).call.arguments) == ["ratio", "label", "items"]


def test_repair_reports_what_still_fails() -> None:
    assert "missing required argument 'b'" in repair_call(ToolCall("add", {"a": 1}), ADD).error
    error = repair_call(ToolCall("tag", {"items": [1], "colour": "red"}), LISTS).error
    assert "unknown argument 'colour'" in error
    error = repair_call(ToolCall("get_weather", {"city": "X", "unit": "kelvin"}), WEATHER).error
    assert "'unit'" in error


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("I'm sorry, but I can't help with that.", "hard"),
        ("I’m sorry, but I can’t help with that.", "hard"),
        ("As an AI language model, I cannot browse the web.", "soft"),
        ("I don't have access to real-time data.", "soft"),
        ("抱歉，我无法帮助你。", "hard"),
        ("我无法访问实时天气。", "soft"),
        ("Paris is the capital of France.", None),
        ("", None),
    ],
)
def test_refusal_detection(text: str, kind: str | None) -> None:
    signal = detect_refusal(text)
    assert (signal.kind if signal else None) == kind


def test_refusal_set_is_extensible_and_immutable() -> None:
    more = DEFAULT_REFUSALS.extend(hard=["Nope, NOT doing it"])
    assert detect_refusal("nope, not doing it!", more).kind == "hard"
    assert detect_refusal("nope, not doing it!") is None


def test_state_from_history() -> None:
    call = ToolCall("add", {"a": 1, "b": 2}, "c1")
    other = ToolCall("add", {"a": 3, "b": 4}, "c2")
    user = UserMessage("sum")
    assert tool_state([]) is ToolState.FIRST_DECISION
    assert tool_state([user]) is ToolState.FIRST_DECISION
    assert tool_state([user, AssistantMessage("", (call,))]) is ToolState.CALL_EMITTED
    both = AssistantMessage("", (call, other))
    assert tool_state([user, both, ToolResult("c1", "add", "3")]) is ToolState.WAITING_FOR_RESULT
    done = [user, both, ToolResult("c1", "add", "3"), ToolResult("c2", "add", "7")]
    assert tool_state(done) is ToolState.RESULT_RECEIVED
    assert tool_state([*done, AssistantMessage("3 and 7")]) is ToolState.FINAL_ANSWER
    assert tool_state([*done, AssistantMessage("3 and 7"), user]) is ToolState.FIRST_DECISION


def test_constraint_schemas() -> None:
    assert action_schema(TOOLS, TurnPolicy.of_choice(ToolChoice("none")), "fenced") is None
    named = action_schema(TOOLS, TurnPolicy.of_choice(ToolChoice("tool", "add")), "fenced")
    assert named["properties"]["tool"] == {"type": "string", "enum": ["add"]}
    required = action_schema(TOOLS, TurnPolicy.of_choice(ToolChoice("required")), "json")
    assert len(required["anyOf"]) == 2
    assert required["anyOf"][0]["properties"]["action"]["required"] == ["tool", "args"]
    auto = action_schema(TOOLS, TurnPolicy.of_choice(ToolChoice("auto")), "fenced")
    assert len(auto["anyOf"]) == 3


@pytest.mark.parametrize(
    ("description", "value"),
    [
        ("The order number, like A-1042.", "A-1042"),
        ("City name, e.g. Paris", "Paris"),
        ("The city name", "something"),
    ],
)
def test_example_values_come_from_the_description_when_it_gives_one(
    description: str, value: str
) -> None:
    from parlay.engine.contract.examples import example_value

    assert example_value("ref", {"type": "string", "description": description}) == value


def test_the_ask_example_names_the_values_a_tool_needs() -> None:
    from parlay.engine.contract.examples import ask_example

    from .conftest import ADD, WEATHER

    ask = ask_example((ADD, WEATHER))
    assert ask is not None
    assert ask.request == "Get the current weather for a city, please."
    assert ask.question == "Sure. Which city should I use?"
    # No required free-text argument: nothing to ask for, so no such example.
    assert ask_example((ADD,)) is None


async def test_a_list_argument_sent_as_a_string_of_deep_brackets_does_not_crash_the_turn() -> None:
    # Repair decodes a string where the schema wants a list; json.loads of 100,000 "["
    # raised RecursionError, which no one caught, and the stream died mid-turn.
    from .prompted_kit import PromptedBackend, ask, block, run, scripted

    deep = "[" * 100_000
    assert repair_call(ToolCall("tag", {"items": deep}), LISTS).call.arguments == {"items": deep}
    backend = PromptedBackend(scripted(block("tag", items=deep), "Done."), max_retries=1)
    _, finish = await run(backend, ask("Tag these.", tools=(LISTS,)))
    assert finish.reason in ("stop", "tool_calls")
