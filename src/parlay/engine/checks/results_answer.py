"""The answer of last resort after tool results: the results themselves.

Under `tool_choice="none"` a reply must have text; when every try fails that, the user
reads what the tools returned, one line each, rather than an empty message
(`Diagnostics.rules` names `results_as_answer`).
"""

from __future__ import annotations

from collections.abc import Sequence

from parlay._text import one_line
from parlay.context import Message, ToolResult


def results_answer(messages: Sequence[Message], max_chars: int) -> str:
    """The results the conversation ends with, as an answer ("" when it ends otherwise);
    each output cut to `max_chars` characters."""
    lines: list[str] = []
    for result in reversed(messages):
        if not isinstance(result, ToolResult):
            break
        if result.error is not None:
            lines.append(f"{result.name} failed: {one_line(result.error, max_chars)}")
        elif not result.output.strip():
            lines.append(f"{result.name} returned nothing.")
        else:
            lines.append(f"{result.name} returned {one_line(result.output, max_chars)}")
    return "\n".join(reversed(lines))
