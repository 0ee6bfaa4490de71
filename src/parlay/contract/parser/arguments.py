"""Normalised argument JSON: arguments stream as JSON a client can load, however sloppy
the JSON the model writes.

The scanner hands over each piece of an argument value as it reads it; here atoms become
JSON literals or numbers, a missing comma or colon is supplied, a trailing comma is
dropped, and arguments cut off are closed. What is written is JSON by construction: a
comma is written before a frame's second and later values (never for a stray comma), a
key only once its value starts, an atom only once it ends.

Cut-off repair never merges or invents values: a number, literal or bare word the cut
ends is dropped with its key (`[1, 2.` gives `[1]`: `2.` may have been `2.5`); so is a key
whose value never started. A string the cut ends is closed where it was cut: its text has
already streamed. The `cut_off` problem names what was dropped.
"""

from __future__ import annotations

import json
import math
import re

from parlay.contract.parser.state import ParserState, Record, args_delta
from parlay.contract.parser.vocabulary import LITERALS

_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?\Z")
# An atom longer than this is kept as the string the model wrote, never read as a number:
# no real argument has 100 digits, and Python refuses to read an int of 4,300 (and reading
# long ones costs quadratic time).
MAX_NUMBER_CHARS = 100
_NUMERIC = re.compile(r"[-+]?\.?\d")


def normalise_atom(atom: str) -> str:
    """An unquoted value as JSON: literals mapped, numbers kept, anything else quoted.

    NaN and infinities (`NaN`, `Infinity`, `1e999`) become null, as JavaScript writes them
    in JSON; an atom over `MAX_NUMBER_CHARS` characters is kept as a string.
    """
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


class ArgumentWriter(ParserState):
    """Writes the current call's arguments as normalised JSON fragments."""

    __slots__ = ()

    def _begin_args(self) -> None:
        record = self._record
        if record is None:
            record = self._record = Record()
        record.args_seen = True
        record.args_json = []
        record.args_pending = []
        self._args_depth = len(self._stack)
        self._held_key = None

    def _in_arg_frame(self) -> bool:
        """Inside the arguments' JSON, below their root (where keys and commas are written)."""
        depth = self._args_depth
        return depth is not None and len(self._stack) > depth

    def _norm_value_start(self) -> None:
        """A value starts in the arguments: a key it follows without a colon gets one."""
        if self._in_arg_frame():
            top = self._stack[-1]
            if top.kind == "{" and top.expect == "colon":
                top.expect = "value"

    def _norm_member(self, text: str) -> None:
        """Write the start of a value: the comma and key before it, then `text`."""
        if self._in_arg_frame():
            top = self._stack[-1]
            prefix = ", " if top.members else ""
            top.members += 1
            if top.kind == "{":
                key = self._held_key if self._held_key is not None else '"_"'
                prefix += key + ": "
            self._held_key = None
            text = prefix + text
        self._norm(text)

    def _hold_key(self, key: str) -> None:
        if self._in_arg_frame():
            self._held_key = json.dumps(key, ensure_ascii=False)

    def _norm(self, text: str) -> None:
        record = self._record
        if record is None or self._args_depth is None:
            return
        record.args_json.append(text)
        if not record.args_object:
            return  # arguments that are not an object never stream (see Record)
        if record.started and not self._block_as_text:
            self._emit(args_delta(record.id or "", text))
        else:
            record.args_pending.append(text)

    def _note(self, kind: str, detail: str) -> None:
        if self._record is not None:
            self._record.notes.append((kind, detail))

    def _finish_open_args(self) -> str:
        """Close what cut-off arguments left open, so the deltas still concatenate to JSON.

        Returns what was dropped (a partial atom, or a key without its value), or "".
        """
        closers: list[str] = []
        dropped = ""
        if self._str_quote is not None and self._str_role == "args":
            closers.append('"')
            self._str_quote = None
        if self._atom and self._atom_role == "args":
            dropped = "".join(self._atom)
            self._atom = []
        if self._held_key is not None:
            dropped = dropped or f"the key {self._held_key} without its value"
            self._held_key = None
        depth = self._args_depth or 0
        for frame in reversed(self._stack[depth:]):
            if frame.role == "args":
                closers.append("}" if frame.kind == "{" else "]")
        if closers:
            self._norm("".join(closers))
        del self._stack[depth:]
        self._args_depth = None
        self._skip_depth = 0
        return dropped
