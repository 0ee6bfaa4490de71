"""What a model is shown of a tool: its output as text, and its argument errors in
terms of the tool's arguments (pydantic's for typed functions, jsonschema's for tools
whose schema came from elsewhere)."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ValidationError


def render_output(value: Any) -> str:
    """The text a model is shown for a tool's return value."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(value)


# What a validation error shows of the arguments: the model reads it in a retry or a tool
# result, and a 5,000-character value, or 3,000 wrong items of a list, only bury the point.
SHOWN_PROBLEMS = 5
SHOWN_VALUE_CHARS = 60


def describe_validation_error(error: ValidationError) -> str:
    """One line per problem, in terms of the tool's arguments (the first few, each value
    cut short)."""
    problems = error.errors()
    lines = []
    for problem in problems[:SHOWN_PROBLEMS]:
        where = ".".join(str(p) for p in problem["loc"]) or "(arguments)"
        if problem["type"] == "extra_forbidden":
            lines.append(f"unknown argument {where!r}")
        elif problem["type"] == "missing":
            lines.append(f"missing required argument {where!r}")
        else:
            got = _shown(problem.get("input"))
            lines.append(f"argument {where!r}: {problem['msg']} (got {got})")
    if len(problems) > SHOWN_PROBLEMS:
        lines.append(f"and {len(problems) - SHOWN_PROBLEMS} more problems")
    return "; ".join(lines)


def _shown(value: Any) -> str:
    try:
        text = repr(value)
    except ValueError:  # an int past Python's digit limit for str()
        return "a number too long to show"
    if len(text) <= SHOWN_VALUE_CHARS:
        return text
    return f"{text[: SHOWN_VALUE_CHARS - 3]}... ({len(text)} characters)"


def describe_schema_errors(errors: Iterable[Any]) -> str:
    """`jsonschema` errors in terms of the tool's arguments, one clause per problem."""
    lines = []
    for error in sorted(errors, key=lambda e: [str(p) for p in e.absolute_path]):
        where = ".".join(str(p) for p in error.absolute_path)
        if error.validator == "required" and not where:
            missing = re.search(r"'([^']*)' is a required property", error.message)
            lines.append(f"missing required argument {missing.group(1) if missing else '?'!r}")
        elif where:
            lines.append(f"argument {where!r}: {error.message}")
        else:
            lines.append(f"arguments: {error.message}")
    return "; ".join(lines)
