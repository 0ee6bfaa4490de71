"""check_call: each call repaired and its issues listed, before the retry policy judges."""

from __future__ import annotations

from parlay.context import ToolCall, UserMessage
from parlay.engine.checks.checked_calls import answered_calls, check_call
from parlay.engine.contract.pieces import ContractOptions
from parlay.engine.contract.render import render_contract
from parlay.request import ChatRequest

from .conftest import HISTORY, TOOLS

SPECS = {t.name: t for t in TOOLS}


def contract_for(*messages):
    return render_contract(ChatRequest(messages, TOOLS), ContractOptions())


def kinds(checked) -> list[str]:
    return [issue.kind for issue in checked.issues]


def test_a_good_call_is_repaired_and_has_no_issue() -> None:
    contract = contract_for(UserMessage("Add 2 and 3"))
    checked = check_call(ToolCall("add", {"a": "2", "b": 3}), SPECS, contract, frozenset())
    assert checked.call.arguments == {"a": 2, "b": 3} and checked.issues == ()


def test_unknown_tool_bad_arguments_and_made_up_values_are_issues() -> None:
    contract = contract_for(UserMessage("Add two numbers"))
    assert kinds(check_call(ToolCall("mul", {}), SPECS, contract, frozenset())) == ["unknown_tool"]
    bad = check_call(ToolCall("add", {"a": "two"}), SPECS, contract, frozenset())
    assert kinds(bad) == ["invalid_arguments"]
    invented = check_call(ToolCall("get_weather", {"city": "Oslo"}), SPECS, contract, frozenset())
    assert kinds(invented) == ["invented_value"] and invented.issues[0].argument == "city"
    off = check_call(
        ToolCall("get_weather", {"city": "Oslo"}), SPECS, contract, frozenset(), check_values=False
    )
    assert off.issues == ()


def test_a_call_the_history_answered_is_a_repeat() -> None:
    contract = contract_for(*HISTORY)
    answered = answered_calls(HISTORY)
    checked = check_call(ToolCall("get_weather", {"city": "Rome"}), SPECS, contract, answered)
    assert kinds(checked) == ["repeated_call"]
    assert answered == {("get_weather", '{"city": "Rome"}')}
