"""Snapshots of every rendering: each format x each tool_choice x with/without history."""

from __future__ import annotations

import pytest

from parlay.context import AssistantMessage, ToolCall, ToolResult, UserMessage
from parlay.engine.checks.retry_message import retry_instruction
from parlay.engine.contract.pieces import FORMATS, ContractOptions, render_results
from parlay.engine.contract.render import render_contract
from parlay.engine.contract.state import ToolState
from parlay.engine.policy import TurnPolicy
from parlay.request import ChatRequest, ToolChoice, ToolSpec

from .conftest import FRESH, HISTORY, TOOLS

CHOICES = {
    "auto": ToolChoice("auto"),
    "none": ToolChoice("none"),
    "required": ToolChoice("required"),
    "named": ToolChoice("tool", "add"),
}


def show(messages) -> str:
    return "\n".join(f"<<{m.role}>>\n{m.content}" for m in messages)


@pytest.mark.parametrize("history", [False, True], ids=["fresh", "history"])
@pytest.mark.parametrize("choice", list(CHOICES))
@pytest.mark.parametrize("fmt", FORMATS)
def test_rendering(snapshot, fmt: str, choice: str, history: bool) -> None:
    request = ChatRequest(HISTORY if history else FRESH, TOOLS, CHOICES[choice])
    contract = render_contract(request, ContractOptions(action_format=fmt))
    assert show(contract.messages) == snapshot
    assert contract.tool_history is history
    # No tool roles reach a plain-chat model.
    assert all(m.role in ("system", "user", "assistant") for m in contract.messages)
    assert all(not getattr(m, "tool_calls", ()) for m in contract.messages)


@pytest.mark.parametrize("fmt", FORMATS)
def test_constrained_auto_teaches_the_final_object(snapshot, fmt: str) -> None:
    contract = render_contract(
        ChatRequest(FRESH, TOOLS), ContractOptions(action_format=fmt), constrained=True
    )
    assert show(contract.messages) == snapshot


@pytest.mark.parametrize("history", [False, True], ids=["fresh", "history"])
@pytest.mark.parametrize("fmt", ["json", "typed"])
def test_the_answer_only_grammar_is_not_shown_a_stand_in_to_copy(
    snapshot, fmt: str, history: bool
) -> None:
    # The retry held to the answer-only grammar renders the turn under tool_choice none,
    # constrained. Shown `{"final": {"content": "your answer"}}`, SmolLM2 wrote "your
    # answer" on 11 of 60 such retries of the benchmark's tune half (the echo filter
    # dropped it, another reply was asked for), and on none when not shown: the grammar
    # already writes the answer's shape.
    request = ChatRequest(HISTORY if history else FRESH, TOOLS, CHOICES["none"])
    options = ContractOptions(action_format=fmt, few_shot=False)
    contract = render_contract(request, options, constrained=True)
    system = contract.messages[0].content
    assert "your answer" not in system and "TOOL_NAME" not in system
    assert "Right now you must not call any tool" in system
    assert show(contract.messages) == snapshot
    # Unconstrained, nothing writes the shape for the model: it is shown.
    unconstrained = render_contract(request, options).messages[0].content
    assert "your answer" in unconstrained


def test_later_turn_without_tools_keeps_tool_mode(snapshot) -> None:
    request = ChatRequest((*HISTORY, AssistantMessage("Sunny, 21 C."), UserMessage("And Oslo?")))
    contract = render_contract(request, ContractOptions())
    assert contract.tools_from_history
    assert [t.name for t in contract.tools] == ["get_weather"]
    assert contract.state is ToolState.FIRST_DECISION
    assert show(contract.messages) == snapshot


def test_results_empty_error_and_large_are_worded_the_same_way(snapshot) -> None:
    results = [
        ToolResult("c1", "search", ""),
        ToolResult("c2", "search", error="timeout after 5 s"),
        ToolResult("c3", "fetch", "x" * 120),
    ]
    text = render_results(results, ContractOptions(max_result_chars=50), show_ids=True)
    assert "(the tool returned nothing)" in text
    assert "ERROR: timeout after 5 s" in text
    assert "[... 70 more characters cut ...]" in text
    assert text == snapshot


def test_waiting_for_more_results(snapshot) -> None:
    calls = (ToolCall("add", {"a": 1, "b": 2}, "c1"), ToolCall("add", {"a": 3, "b": 4}, "c2"))
    request = ChatRequest(
        (UserMessage("two sums"), AssistantMessage("", calls), ToolResult("c1", "add", "3")),
        TOOLS,
    )
    contract = render_contract(request, ContractOptions())
    assert contract.state is ToolState.WAITING_FOR_RESULT
    assert show(contract.messages[-2:]) == snapshot


def test_user_template_folder_overrides(tmp_path) -> None:
    folder = tmp_path / "contract" / "formats" / "fenced"
    folder.mkdir(parents=True)
    (folder / "instructions.j2").write_text("CALL TOOLS LIKE THIS: <my own format>")
    contract = render_contract(
        ChatRequest(FRESH, TOOLS), ContractOptions(template_dir=str(tmp_path), few_shot=False)
    )
    assert "CALL TOOLS LIKE THIS: <my own format>" in contract.messages[0].content


def test_few_shot_off_has_no_example_turns() -> None:
    contract = render_contract(ChatRequest(FRESH, TOOLS), ContractOptions(few_shot=False))
    assert [m.role for m in contract.messages] == ["system", "user"]


def test_few_shot_has_single_calls_a_no_tool_answer_and_a_chain() -> None:
    contract = render_contract(ChatRequest(FRESH, TOOLS), ContractOptions())
    assistant = [m.content for m in contract.messages if m.role == "assistant"]
    calls = [a for a in assistant if "```json action" in a]
    plain = [a for a in assistant if "```" not in a]
    assert len(calls) >= 3  # one per tool and the chain's steps
    assert len(plain) >= 2  # the no-tool answer and the chain's final answer
    assert any("Result of" in m.content for m in contract.messages if m.role == "user")


@pytest.mark.parametrize("fmt", FORMATS)
def test_constrained_forced_with_history_shows_the_grammar_shape(snapshot, fmt: str) -> None:
    request = ChatRequest(HISTORY, TOOLS, ToolChoice("required"))
    contract = render_contract(request, ContractOptions(action_format=fmt), constrained=True)
    assistant = [m.content for m in contract.messages if m.role == "assistant"]
    # Every assistant turn is one JSON object, as the grammar will force.
    assert all(a.startswith("{") and "```" not in a and "@tool" not in a for a in assistant)
    assert show(contract.messages) == snapshot


RETRY_REASONS = {
    "no_call": "",
    "wrong_tool": "get_weather",
    "refusal": "I cannot",
    "unreadable": "no tool name in the action",
    "unknown_tool": "search_web",
    "repeated_call": "get_weather",
    "example_value": 'city="Paris"',
    "example_answer": '{"status": "done"}',
    "pretended_call": "get_weather",
    "invented_value": 'city="Springfield"',
    "unsure_call": "60% of its weight on calling",
    "invalid_arguments": "a: Input should be a valid integer",
}


ARGUMENTS = {
    "example_value": "city",
    "invented_value": "city",
}


@pytest.mark.parametrize("attempt", [1, 2])
@pytest.mark.parametrize("choice", ["auto", "named"])
@pytest.mark.parametrize("reason", list(RETRY_REASONS))
def test_retry_messages(snapshot, reason: str, choice: str, attempt: int) -> None:
    # What the model reads after a reply that could not be used: a reviewed diff per wording.
    tool = TOOLS[1] if reason == "invalid_arguments" else TOOLS[0]
    message = retry_instruction(
        reason,
        RETRY_REASONS[reason],
        attempt,
        TOOLS,
        TurnPolicy.of_choice(CHOICES[choice]),
        ContractOptions(action_format="json"),
        tool,
        constrained=True,
        argument=ARGUMENTS.get(reason, ""),
    )
    assert message == snapshot


def test_a_continuation_template_can_restate_the_request_its_results_serve(tmp_path) -> None:
    folder = tmp_path / "contract"
    folder.mkdir()
    (folder / "continuation.j2").write_text("RESULTS FOR: {{ request }}")
    later = (
        *HISTORY,
        AssistantMessage("Rome is sunny."),
        UserMessage("And in Oslo?"),
        AssistantMessage("", (ToolCall("get_weather", {"city": "Oslo"}, "call_2"),)),
        ToolResult("call_2", "get_weather", '{"sky": "grey"}'),
    )
    options = ContractOptions(template_dir=str(tmp_path), few_shot=False)
    contract = render_contract(ChatRequest(later, TOOLS), options)
    continuations = [m.content for m in contract.messages if "RESULTS FOR" in m.content]
    # Only the continuation the model answers now restates a request: the latest one.
    assert continuations == ["RESULTS FOR:", "RESULTS FOR: And in Oslo?"]


def test_a_fewshot_template_can_show_the_pair_example_answered_with_both_results(
    tmp_path,
) -> None:
    folder = tmp_path / "contract"
    folder.mkdir()
    (folder / "fewshot.j2").write_text(
        "<<user>>\n{{ pair.request }}\n<<assistant>>\n{{ render_calls(pair.calls) }}\n"
        "<<user>>\n{{ render_results(pair.results) }}\n<<assistant>>\n{{ pair.answer }}\n"
    )
    options = ContractOptions(template_dir=str(tmp_path))
    contract = render_contract(ChatRequest(FRESH, TOOLS, parallel_tool_calls=True), options)
    texts = [m.content for m in contract.messages]
    results = next(t for t in texts if t.startswith("Result 1 of get_weather"))
    assert "Result 2 of add" in results
    both = 'get_weather returned {"status": "done"}. add returned {"status": "done"}.'
    assert texts[texts.index(results) + 1] == both


@pytest.mark.parametrize("restate", [True, False])
def test_the_continuation_answered_now_restates_the_request_unless_switched_off(
    restate: bool,
) -> None:
    options = ContractOptions(few_shot=False, restate_request=restate)
    contract = render_contract(ChatRequest(HISTORY, TOOLS), options)
    last = contract.messages[-1].content
    assert last.startswith("Result of get_weather")
    assert ("The request: Weather in Rome, then add 2 and 3?" in last) is restate


def test_a_second_tool_with_a_blank_description_does_not_crash_the_examples() -> None:
    # The chain example lowers the first letter of the second tool's first sentence: a
    # description of spaces only made that sentence empty, and rendering raised IndexError.
    blank = ToolSpec("lookup", "   ", {"type": "object", "properties": {"q": {"type": "string"}}})
    request = ChatRequest(FRESH, (TOOLS[0], blank), ToolChoice("auto"))
    contract = render_contract(request, ContractOptions())
    assert any("then ." in m.content for m in contract.messages if m.role == "user")
