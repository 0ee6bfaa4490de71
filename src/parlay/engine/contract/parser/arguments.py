"""Arguments as JSON a client can load, however sloppy the model's.

The call assembler (`calls.py`) writes a comma only before a second value and a key only
once its value starts, so what it writes is JSON by construction. Cut-off repair never
invents a value: an atom the cut ends is dropped with its key (`2.` may have been `2.5`),
a cut string is closed (its text has streamed), and `cut_off` names what was dropped.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from parlay.engine.contract.parser.state import Record
from parlay.engine.contract.parser.vocabulary import LITERALS

_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?\Z")
# An atom longer than this is kept as the string the model wrote, never read as a number:
# no real argument has 100 digits, and Python refuses to read an int of 4,300 (and reading
# long ones costs quadratic time).
MAX_NUMBER_CHARS = 100
_NUMERIC = re.compile(r"[-+]?\.?\d")


def normalise_atom(atom: str) -> str:
    """An unquoted value as JSON: literals mapped, numbers kept, anything else quoted;
    NaN and infinities become null, as JavaScript writes them in JSON."""
    if atom in LITERALS:
        return LITERALS[atom]
    if len(atom) > MAX_NUMBER_CHARS:
        return json.dumps(atom, ensure_ascii=False)
    try:
        number = float(atom)
    except ValueError:
        return json.dumps(atom, ensure_ascii=False)
    if not math.isfinite(number):
        return "null"
    if _NUMBER.match(atom):
        return atom
    if number.is_integer() and "." not in atom and abs(number) < 2**53:
        return str(int(number))
    return repr(number)


def overlong_number(atom: str) -> str | None:
    """A note for an atom kept as a string because it is too long to be a number."""
    if len(atom) > MAX_NUMBER_CHARS and _NUMERIC.match(atom):
        return f"a number of {len(atom)} characters was kept as a string"
    return None


def arguments_of(record: Record) -> tuple[dict[str, Any], str | None]:
    """A finished record's arguments, and what was wrong with them if anything."""
    if record.args_string is not None:
        return {}, f"arguments are not a JSON object: {record.args_string[:120]!r}"
    if not record.args_json:
        return {}, None
    text = "".join(record.args_json)
    try:
        # JSON by construction; the guard keeps a slip from escaping.
        value = json.loads(text)
    except (ValueError, RecursionError):
        return {}, f"unreadable: {text[:120]!r}"
    if value is None:
        return {}, None
    if not isinstance(value, dict):
        return {}, f"arguments are not a JSON object: {text[:120]!r}"
    return value, None
