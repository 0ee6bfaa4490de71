"""What a parse reports: the value types `ActionStreamParser.result()` and `parse()` return."""

from __future__ import annotations

from typing import Literal

from attrs import frozen

from parlay.context import ToolCall

ProblemKind = Literal["no_tool_name", "unreadable_arguments", "cut_off", "thought_too_long"]


@frozen
class ParseProblem:
    """Something in the reply that could not be read as intended (the retry policy acts on it)."""

    kind: ProblemKind
    detail: str = ""


@frozen
class ParseResult:
    """A whole reply, parsed: visible text, calls (arguments as written), problems."""

    text: str
    calls: tuple[ToolCall, ...]
    problems: tuple[ParseProblem, ...] = ()
    thoughts: tuple[str, ...] = ()
    blocks: int = 0
