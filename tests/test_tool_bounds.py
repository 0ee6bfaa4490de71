"""Every tool call is bounded in time and in the size of what the model reads, whatever
the backend (an outside probe: a NaN timeout timed every call out, a tool without a
timeout could hang a session forever, a 10 MB result went whole to a native backend)."""

from __future__ import annotations

import math

import pytest

from parlay import ScriptedBackend, Session, ToolCall, ToolResult, tool
from parlay.backends.scripted import calls
from parlay.errors import InvalidRequestError, ToolDefinitionError
from parlay.tool_bounds import DEFAULT_MAX_RESULT_CHARS
from parlay.tools import DEFAULT_TOOL_TIMEOUT, Tool, cut_result


def echo(text: str) -> str:
    """Say the text back."""
    return text


@pytest.mark.parametrize("bad", [float("nan"), 0, -1, float("inf"), float("-inf")])
def test_a_session_refuses_a_tool_timeout_that_is_not_positive_finite_seconds(bad: float):
    with pytest.raises(InvalidRequestError, match="tool_timeout must be"):
        Session(ScriptedBackend(["ok"]), tool_timeout=bad)


def test_an_infinite_tool_timeout_points_at_none():
    with pytest.raises(InvalidRequestError, match="pass None for no timeout"):
        Session(ScriptedBackend(["ok"]), tool_timeout=math.inf)


@pytest.mark.parametrize("bad", [float("nan"), 0, -1, float("inf")])
def test_a_tool_refuses_a_timeout_that_is_not_positive_finite_seconds(bad: float):
    with pytest.raises(ToolDefinitionError, match="tool timeout must be"):
        Tool.from_function(echo, timeout=bad)


def test_a_session_bounds_tool_calls_by_default_and_none_only_when_asked():
    assert DEFAULT_TOOL_TIMEOUT == 120.0
    assert Session(ScriptedBackend(["ok"])).tool_timeout == DEFAULT_TOOL_TIMEOUT
    assert Session(ScriptedBackend(["ok"]), tool_timeout=None).tool_timeout is None
    assert Session(ScriptedBackend(["ok"]), tool_timeout=2.5).tool_timeout == 2.5


def test_a_ten_megabyte_result_reaches_a_native_backend_cut_with_a_note():
    @tool
    def dump() -> str:
        """A huge text."""
        return "z" * 10_000_000

    backend = ScriptedBackend([calls(("dump", {})), "ok"])
    Session(backend, tools=[dump]).query("x", "go").value  # noqa: B018
    (shown,) = [m for m in backend.requests[1].messages if isinstance(m, ToolResult)]
    assert len(shown.output) == DEFAULT_MAX_RESULT_CHARS
    assert shown.output.endswith(
        f"\n[... {10_000_000 - shown.output.count('z')} more characters cut ...]"
    )


def test_a_tool_asked_for_whole_results_is_not_cut():
    whole = Tool.from_function(
        lambda: "z" * 9000, name="whole", description="d", max_result_chars=None
    )
    assert whole.invoke(ToolCall("whole", {})).output == "z" * 9000


def test_an_error_over_the_bound_is_cut_too():
    cut = cut_result(ToolResult("1", "t", error="e" * 5000), 100)
    assert cut.error is not None and len(cut.error) == 100 and cut.error.endswith("cut ...]")


def test_a_result_within_the_bound_is_left_as_it_is():
    result = ToolResult("1", "t", output="fine")
    assert cut_result(result, 4) is result


@pytest.mark.parametrize("bad", [0, -5, 1.5, True])
def test_max_result_chars_must_be_a_positive_integer(bad: object):
    with pytest.raises(ToolDefinitionError, match="max_result_chars"):
        Tool.from_function(echo, max_result_chars=bad)  # type: ignore[arg-type]
