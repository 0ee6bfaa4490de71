"""What is wrong with a context document, in a few words: the item that cannot be
written and where in it, or the first problems of a file that cannot be read.

A context document is written and read by `parlay.context_schema`; its errors say where
the fault is, and stay short whatever the size of what is at fault.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError
from pydantic_core import to_json

from parlay._text import one_line

# A broken file may hold thousands of bad items: the error shows the first few and a count.
SHOWN_PROBLEMS = 5


def lone_surrogate(value: Any, path: str) -> tuple[str, str] | None:
    """Where in `value` (JSON-like: str, dict, list, tuple) the first lone surrogate is
    (`path` extended: `arguments.q`, `value[1].k`), and which character it is."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as bad:
            return path, bad.object[bad.start]
        return None
    if isinstance(value, dict):
        for key, inner in value.items():
            where = f"{path}.{key}" if path else str(key)
            found = lone_surrogate(key, f"{where} (the key)") or lone_surrogate(inner, where)
            if found is not None:
                return found
    if isinstance(value, list | tuple):
        for index, inner in enumerate(value):
            found = lone_surrogate(inner, f"{path}[{index}]")
            if found is not None:
                return found
    return None


def surrogate_problem(path: str, char: str) -> str:
    shown = one_line(path, 120) or "text"
    return (
        f"its {shown} holds a lone surrogate ({char!r}), which is not Unicode text and "
        "has no UTF-8 form; replace it before saving (say, "
        "text.encode('utf-8', 'replace').decode('utf-8'))"
    )


def _why(value: Any, what: str, exc: Exception) -> str:
    found = lone_surrogate(value, "")
    if found is not None:
        return surrogate_problem(*found)
    return f"the {what} holds a value with no JSON form: {one_line(str(exc), 300)}"


def unwritable(records: Sequence[dict[str, Any]], meta: Any, exc: Exception) -> str:
    """Why a document of `records` (items as the document holds them) and `meta` could
    not be written: the first item that fails on its own, and where in it (or the meta,
    if no item fails)."""
    for index, record in enumerate(records):
        try:
            to_json(record)
        except ValueError as failed:  # pydantic's serialization error
            why = _why(record, record["kind"].replace("_", " "), failed)
            return f"item {index} ({record['kind']}) cannot be written: {why}"
    return f"the document's meta cannot be written: {_why({'meta': meta}, 'meta', exc)}"


def validation_problems(exc: ValidationError) -> str:
    """The first few problems pydantic found in a document, and how many more."""
    errors = exc.errors(include_url=False, include_context=False)
    lines = [f"{len(errors)} problem{'s' if len(errors) != 1 else ''}"]
    for error in errors[:SHOWN_PROBLEMS]:
        where = ".".join(str(part) for part in error["loc"]) or "the document"
        seen = one_line(repr(error.get("input")), 80)
        lines.append(f"  {one_line(where, 120)}: {one_line(error['msg'], 200)} (input: {seen})")
    if len(errors) > SHOWN_PROBLEMS:
        lines.append(f"  ...and {len(errors) - SHOWN_PROBLEMS} more")
    return "\n".join(lines)
