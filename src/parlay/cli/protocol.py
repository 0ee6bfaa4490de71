"""The command line's tool protocol: show each call, ask before each call.

Written as a `SessionToolCallingProtocol` subclass, as a user would write their own: the
hooks see every call, whether the CLI's loop or a session's `query` runs it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from rich.console import Console
from rich.markup import escape

from parlay.context import ToolCall, ToolResult
from parlay.session import Session, SessionToolCallingProtocol

DECLINED = "the user declined this tool call; do not retry it, answer without it"

Approver = Callable[[ToolCall], bool]


class Printer(Protocol):
    """Where the tool lines go: a rich `Console`, or the `WaitStatus` that owns the
    spinner on it (so a line never lands in the spinner's)."""

    def print(self, text: str, /) -> None: ...


def describe_call(call: ToolCall) -> str:
    return f"{call.name}({call.arguments_json})"


class CliSession(SessionToolCallingProtocol, Session):
    """A session whose tool calls can be shown on stderr and approved one by one."""

    def __init__(
        self,
        *args: Any,
        debug: Printer | None = None,
        approver: Approver | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.debug = debug
        self.approver = approver
        self.calls_made: list[tuple[ToolCall, ToolResult]] = []

    def call_tool(self, call: ToolCall) -> ToolResult:
        if self.debug is not None:
            self.debug.print(f"[cyan]tool call[/] {escape(describe_call(call))}  [dim]{call.id}[/]")
        if self.approver is not None and not self.approver(call):
            # A refusal is a result like any other: the model is told, and moves on.
            result = self.tool_call_result(call, ToolResult(call.id, call.name, error=DECLINED))
        else:
            result = super().call_tool(call)
        self.calls_made.append((call, result))
        if self.debug is not None:
            if result.is_error:
                self.debug.print(f"[red]tool error[/] {call.name}: {escape(str(result.error))}")
            else:
                self.debug.print(f"[green]tool result[/] {call.name}: {escape(result.output)}")
        return result


def stdin_approver(console: Console, read_line: Callable[[], str]) -> Approver:
    """Asks on stderr, reads the answer from stdin: only 'y' or 'yes' approves."""

    def approve(call: ToolCall) -> bool:
        # The escaped bracket keeps the hint from being read as rich markup (it would vanish).
        console.print(f"Run tool [bold]{escape(describe_call(call))}[/]? \\[y/N] ", end="")
        answer = read_line()
        if not answer:
            console.print()  # stdin closed: treat as "no"
        return answer.strip().lower() in ("y", "yes")

    return approve
