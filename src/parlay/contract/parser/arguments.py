"""Normalised argument JSON: arguments stream as JSON a client can load, however sloppy
the JSON the model writes.

The scanner hands over each piece of an argument value as it reads it; here atoms become
JSON literals or numbers, a missing comma or colon is supplied, a trailing comma is
dropped (a comma is only written once the next value starts), and arguments cut off
are closed.
"""

from __future__ import annotations

import json
import re

from parlay.contract.parser.state import ParserState, Record
from parlay.contract.parser.vocabulary import LITERALS
from parlay.events import ToolCallArgsDelta

_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?\Z")


def normalise_atom(atom: str) -> str:
    """An unquoted value as JSON: literals mapped, numbers kept, anything else quoted."""
    if atom in LITERALS:
        return LITERALS[atom]
    if _NUMBER.match(atom):
        return atom
    try:
        number = float(atom)
    except ValueError:
        return json.dumps(atom, ensure_ascii=False)
    if number != number or number in (float("inf"), float("-inf")):
        return "null"
    return json.dumps(int(number) if number.is_integer() and "." not in atom else number)


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
        self._pending_comma = False

    def _norm_comma(self) -> None:
        if self._args_depth is not None and len(self._stack) > self._args_depth:
            self._pending_comma = True

    def _norm_value_start(self) -> None:
        if self._args_depth is None or len(self._stack) <= self._args_depth:
            return
        top = self._stack[-1]
        if top.kind == "[" and top.expect == "comma":
            self._pending_comma = True  # two array items without a comma between them
        elif top.kind == "{" and top.expect == "colon":
            top.expect = "value"
            self._norm(": ")  # a key and its value without a colon between them

    def _norm(self, text: str, inner_only: bool = False) -> None:
        record = self._record
        if record is None or self._args_depth is None:
            return
        if inner_only and len(self._stack) <= self._args_depth:
            return
        if self._pending_comma:
            self._pending_comma = False
            text = ", " + text
        record.args_json.append(text)
        if record.started and not self._block_as_text:
            self._emit(ToolCallArgsDelta(record.id or "", text))
        else:
            record.args_pending.append(text)

    def _finish_open_args(self) -> None:
        """Close what cut-off arguments left open, so the deltas still concatenate to JSON."""
        closers: list[str] = []
        if self._str_quote is not None and self._str_role == "args":
            closers.append('"')
            self._str_quote = None
            self._after_value()
        if self._atom and self._atom_role == "args":
            closers.append(normalise_atom("".join(self._atom)))
            self._atom = []
            self._after_value()
        depth = self._args_depth or 0
        for n, frame in enumerate(reversed(self._stack[depth:])):
            # Only the innermost frame can be missing a value; outer ones hold the child.
            if n == 0 and frame.kind == "{" and frame.expect == "colon":
                closers.append(": null")
            elif n == 0 and frame.kind == "{" and frame.expect == "value":
                closers.append("null")
            closers.append("}" if frame.kind == "{" else "]")
        self._pending_comma = False
        if closers:
            self._norm("".join(closers))
        del self._stack[depth:]
        self._args_depth = None
