"""The bounds of one tool call: how long it may run, and how much of its result a model
reads. Every path shares them (native backends, the prompted engine, MCP tools and
`parlay mcp serve`), so a tool that never returns or returns 50 MB costs a bounded wait
and a bounded prompt wherever it runs."""

from __future__ import annotations

import math
from typing import Any

from attrs import evolve

from parlay.context import ToolResult
from parlay.errors import ToolDefinitionError

# What a model reads of one result at most, on every path: about 7,500 tokens, enough for
# a source file or a page that a large native model reads whole (Claude Code cuts its own
# shell output at the same length), while 10 MB never reaches a prompt. The prompted
# engine cuts further in the small models' prompts (`PromptedBackend(max_result_chars=)`,
# 4,000 by default), since their context is a few thousand tokens.
DEFAULT_MAX_RESULT_CHARS = 30_000

# How long one call may run when neither the tool nor the session says otherwise: long
# enough for a slow web fetch or a short build, short enough that a tool which never
# returns is told to the model within two minutes instead of holding the session forever.
# `timeout=None` on the session (or the tool) is how to ask for no bound at all.
DEFAULT_TOOL_TIMEOUT = 120.0


def timeout_problem(value: float | None) -> str | None:
    """What is wrong with `value` as a timeout in seconds (None: nothing, or no timeout).

    NaN slips through `value <= 0` (every comparison with it is false) and then every
    call "timed out after nan s"; infinity is refused too, so no timeout is said one way:
    None."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"must be seconds (a number), got {value!r}"
    if math.isnan(value) or value <= 0:
        return f"must be positive seconds, got {value!r}"
    if math.isinf(value):
        return "must be finite seconds; pass None for no timeout"
    return None


def validate_result_chars(_: Any, __: Any, value: int | None) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ToolDefinitionError(f"max_result_chars must be a positive integer, got {value!r}")


def cut_result(result: ToolResult, limit: int | None) -> ToolResult:
    """`result` with its output (or error) cut to `limit` characters, a note at the end
    telling the model how much is missing; the note counts within the limit.
    The Python `value` is left whole: it never goes to the model."""
    if limit is None:
        return result
    field_name = "error" if result.error is not None else "output"
    text: str = getattr(result, field_name)
    if len(text) <= limit:
        return result
    kept = limit
    while True:  # the note's digits depend on how much is cut: settle in a step or two
        note = f"\n[... {len(text) - kept} more characters cut ...]"
        if kept + len(note) <= limit or kept == 0:
            break
        kept = max(0, limit - len(note))
    return evolve(result, **{field_name: text[:kept] + note if kept else text[:limit]})


def validate_timeout(_: Any, __: Any, value: float | None) -> None:
    problem = timeout_problem(value)
    if problem is not None:
        raise ToolDefinitionError(f"tool timeout {problem}")


__all__ = [
    "DEFAULT_MAX_RESULT_CHARS",
    "DEFAULT_TOOL_TIMEOUT",
    "cut_result",
    "timeout_problem",
    "validate_result_chars",
    "validate_timeout",
]
