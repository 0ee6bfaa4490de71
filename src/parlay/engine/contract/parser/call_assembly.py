"""Call assembly: a record's name starts the call, its arguments stream as normalised JSON
as they are read, its end becomes a `ToolCall` (or a `ParseProblem` saying why not);
thoughts are collected on the way.

The arguments are JSON a client can load, however sloppy the model's: a comma is written
only before a second value and a key only once its value starts, so what is written is
JSON by construction. Cut-off repair never invents a value: an atom the cut ends is
dropped with its key (`2.` may have been `2.5`), a cut string is closed (its text has
streamed), and `cut_off` names what was dropped.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

import attrs

from parlay.context import ToolCall
from parlay.engine.contract.parser.results import ParseProblem, ParseResult, ProblemKind
from parlay.engine.contract.parser.state import MAX_UNDECIDED, Frame, ParserState, args_delta
from parlay.engine.contract.parser.vocabulary import LITERALS
from parlay.events import ToolCallArgsDelta, ToolCallEnd, ToolCallStart

SUB_NAME = "_"  # the name a stringified arguments' own parse gives its call
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?\Z")
# An atom longer than this is kept as the string the model wrote, never read as a number:
# no real argument has 100 digits; Python refuses an int of 4,300 (and long ones cost
# quadratic time).
MAX_NUMBER_CHARS = 100
_NUMERIC = re.compile(r"[-+]?\.?\d")


@attrs.define
class Record:
    """One call object being read."""

    name: str | None = None
    id: str | None = None  # from the call's start on
    args_json: list[str] = attrs.Factory(list)  # normalised argument JSON
    args_seen: bool = False
    # The arguments are an object: only then do they stream (anything else is reported
    # as unreadable and the call gets `{}`, so the deltas always load to its arguments).
    args_object: bool = False
    args_string: str | None = None  # arguments given as a JSON string
    notes: list[tuple[ProblemKind, str]] = attrs.Factory(list)  # problems in the arguments
    # An operator met between argument values (`2 * Math.PI`): JSON has no arithmetic,
    # and reading on would shift keys and values, so the call is reported unreadable.
    expression: str | None = None


@attrs.define
class CallAssembler:
    """Turns the records the JSON scanner fills into call events and `ToolCall`s."""

    st: ParserState
    read: Callable[[str], ParseResult]  # stringified arguments, by a parser like this one's
    stack: list[Frame] = attrs.Factory(list)  # the scanner's: where in the arguments we are
    record: Record | None = None
    calls: list[ToolCall] = attrs.Factory(list)
    problems: list[ParseProblem] = attrs.Factory(list)
    thoughts: list[str] = attrs.Factory(list)
    args_depth: int | None = None  # where the arguments' root sits on the stack
    # An argument key read, written out only once its value starts (a key whose value is
    # cut off, or dropped, is dropped with it).
    held_key: str | None = None

    def new_record(self) -> None:
        self.end_record(cut=False)
        self.record = Record()

    def open_arguments(self, name: str) -> None:
        """A call named `name` whose arguments come next, on their own (stringified)."""
        self.record = Record(name)
        self.start_call()
        self.begin_args()

    def set_name(self, name: str) -> None:
        record, st = self.record, self.st
        if record is None or record.name is not None or not name or st.block_as_text:
            return
        record.name = name
        key = (self.stack[-1].key or "").lower()  # a name is read inside an object
        if (
            not st.block_labeled
            and not st.block_emitted
            and key not in ("tool", "action", "tool_name")
            and st.tools
            and name not in st.tools
            and st.pos - st.block_start <= MAX_UNDECIDED
        ):
            # {"name": "Ada", ...} in an answer is data, not an action. (Past
            # MAX_UNDECIDED the block's raw text is no longer kept: it stays an action.)
            st.block_as_text = True
            return
        self.start_call()

    def start_call(self) -> None:
        record = self.record
        assert record is not None and record.name is not None
        record.id = self.st.new_id()
        self.st.block_emitted = True
        self.st.emit(ToolCallStart(record.id, record.name, len(self.calls)))
        if record.args_object and record.args_json:  # what streamed before the name
            self.st.emit(ToolCallArgsDelta(record.id, "".join(record.args_json)))

    def end_record(self, cut: bool, why: str = "was cut off", dropped: str = "") -> None:
        """The record ends, as a call or a problem (`dropped`: what a cut value lost)."""
        record, self.record = self.record, None
        if record is None or self.st.block_as_text:
            return
        if record.name is None:
            if record.args_seen:
                detail = "an action block has arguments but no tool name"
                self.problems.append(ParseProblem("no_tool_name", detail))
            return
        arguments, problem = _arguments(record)
        if record.expression is not None:
            problem = (
                f"an expression ({record.expression!r}) where a value should be; "
                "write each argument as a plain JSON value, computed"
            )
        if problem:
            record.notes.insert(0, ("unreadable_arguments", problem))
        for kind, detail in record.notes:
            self.problems.append(ParseProblem(kind, f"{record.name}: {detail}"))
        if cut:
            dropped = f"; its unfinished value {dropped[:60]!r} was dropped" if dropped else ""
            self.problems.append(ParseProblem("cut_off", f"the {record.name} call {why}{dropped}"))
        assert record.id is not None
        call = ToolCall(record.name, arguments, record.id)
        self.calls.append(call)
        self.st.emit(ToolCallEnd(call))

    def args_from_string(self, value: str) -> None:
        """Arguments written as a JSON string, read by a parser like this one: linear and
        never raising, where a general JSON repair costs seconds on 10,000 `{`."""
        record = self.record
        assert record is not None
        text = value.lstrip()
        result = self.read(text) if text.startswith("{") else None
        if result is None or not result.calls:
            record.args_string = value
            return
        record.args_object = True
        for problem in result.problems:
            detail = problem.detail.removeprefix(f"{SUB_NAME}: ")
            detail = detail.replace(f"the {SUB_NAME} call", "the call")
            record.notes.append((problem.kind, f"its stringified arguments: {detail}"))
        self.norm(json.dumps(result.calls[0].arguments, ensure_ascii=False))

    def add_thought(self, value: str) -> None:
        if len(value) > self.st.thought_limit:
            detail = f"{len(value)} characters, cut to {self.st.thought_limit}"
            self.problems.append(ParseProblem("thought_too_long", detail))
            value = value[: self.st.thought_limit]
        self.thoughts.append(value)

    def begin_args(self) -> None:
        record = self.record
        if record is None:
            record = self.record = Record()
        record.args_seen = True  # and only now: a record's arguments begin once, from empty
        self.args_depth = len(self.stack)
        self.held_key = None

    def value_ended(self) -> None:
        """A value ended (the arguments, if it was them): its parent expects a key next."""
        if self.args_depth is not None and len(self.stack) == self.args_depth:
            self.args_depth = None
        if self.stack:
            self.stack[-1].awaits_value = False

    def key_read(self, key: str) -> None:
        top = self.stack[-1]  # a key is read inside an object
        top.key, top.awaits_value = key, True
        if self.args_depth is not None and len(self.stack) > self.args_depth:
            self.held_key = json.dumps(key, ensure_ascii=False)

    def atom(self, atom: str) -> None:
        """An unquoted argument value, written as JSON (see `_atom_json`)."""
        if len(atom) > MAX_NUMBER_CHARS and _NUMERIC.match(atom):
            detail = f"a number of {len(atom)} characters was kept as a string"
            self.note("unreadable_arguments", detail)
        self.norm_member(_atom_json(atom))

    def norm_member(self, text: str) -> None:
        """Write the start of a value: the comma and key before it, then `text`."""
        if self.args_depth is not None and len(self.stack) > self.args_depth:
            top = self.stack[-1]
            prefix = ", " if top.members else ""
            top.members += 1
            if top.kind == "{":
                prefix += (self.held_key if self.held_key is not None else '"_"') + ": "
            self.held_key = None
            text = prefix + text
        self.norm(text)

    def norm(self, text: str) -> None:
        record = self.record
        if record is None or self.args_depth is None:
            return
        record.args_json.append(text)
        if not record.args_object:
            return  # arguments that are not an object never stream (see Record)
        if record.id is not None:  # else it goes out when the call starts
            self.st.emit(args_delta(record.id, text))

    def note(self, kind: ProblemKind, detail: str) -> None:
        if self.record is not None:
            self.record.notes.append((kind, detail))

    def operator(self, op: str) -> None:
        """An arithmetic operator: in arguments, the call is reported unreadable."""
        if self.record is not None and self.args_depth is not None:
            self.record.expression = self.record.expression or op


def _atom_json(atom: str) -> str:
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


def _arguments(record: Record) -> tuple[dict[str, Any], str | None]:
    """A finished record's arguments, and what was wrong with them if anything."""
    if record.args_string is not None:
        return {}, f"arguments are not a JSON object: {record.args_string[:120]!r}"
    if not record.args_json:
        return {}, None
    text = "".join(record.args_json)
    try:
        value = json.loads(text)  # JSON by construction; the guard keeps a slip from escaping
    except (ValueError, RecursionError):
        return {}, f"unreadable: {text[:120]!r}"
    if value is None or isinstance(value, dict):  # null: no arguments
        return value or {}, None
    return {}, f"arguments are not a JSON object: {text[:120]!r}"
