"""The portal: the one loop synchronous calls run on, for the life of the process."""

from __future__ import annotations

import sys
import threading

import pytest

from parlay import Session, SessionToolCallingProtocol
from parlay.backends.scripted import ScriptedBackend, calls
from parlay.context import ToolResult


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def leave(code: int) -> int:
    """Exit the process (what a careless tool can do)."""
    sys.exit(code)


def a_new_session_answers(within: float = 10) -> bool:
    """Whether a fresh session's sync call returns (in a daemon thread: if the portal is
    gone it never would, and the test must fail rather than hang)."""
    answers: list[str] = []
    thread = threading.Thread(
        target=lambda: answers.append(Session(ScriptedBackend(["still here"])).chat("hi").value),
        daemon=True,
    )
    thread.start()
    thread.join(within)
    return answers == ["still here"]


class Interrupting(SessionToolCallingProtocol, Session):
    def call_tool(self, call):  # type: ignore[no-untyped-def]
        raise KeyboardInterrupt


def test_a_hook_raising_keyboard_interrupt_reaches_the_caller_and_the_portal_goes_on() -> None:
    session = Interrupting(ScriptedBackend([calls(("add", {"a": 1, "b": 2})), "done"]), tools=[add])
    with pytest.raises(KeyboardInterrupt):
        session.query("x", "go").value  # noqa: B018
    # Before, the portal thread had died with it and this call waited forever.
    assert a_new_session_answers()


def test_a_tool_calling_sys_exit_is_an_error_result_not_the_callers_exit() -> None:
    # argparse exits on bad arguments: a CLI wrapped as a tool does so when a model errs.
    session = Session(ScriptedBackend([calls(("leave", {"code": 2})), "done"]), tools=[leave])
    answer = session.query("x", "go")
    assert answer.value == "done"
    [result] = [m for m in answer.steps if isinstance(m, ToolResult)]
    assert result.error == "the tool exited (code 2)"
    assert a_new_session_answers()
