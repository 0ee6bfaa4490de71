"""Call assembly: a record's name starts the call, its arguments stream, its end becomes a
`ToolCall` (or a `ParseProblem` saying why not); thoughts are collected on the way."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from parlay.context import ToolCall
from parlay.engine.contract.parser.results import ParseProblem, ParseResult, ProblemKind
from parlay.engine.contract.parser.state import (
    MAX_UNDECIDED,
    Frame,
    ParserState,
    Record,
    args_delta,
)
from parlay.events import ToolCallArgsDelta, ToolCallEnd, ToolCallStart

SUB_NAME = "_"  # the name a stringified arguments' own parse gives its call


class CallAssembler:
    """Turns the records the JSON scanner fills into call events and `ToolCall`s, and
    writes each call's arguments as normalised JSON fragments as they are read."""

    __slots__ = (
        "args_depth",
        "calls",
        "held_key",
        "problems",
        "read_arguments",
        "record",
        "st",
        "stack",
        "thoughts",
    )

    def __init__(
        self, st: ParserState, stack: list[Frame], read_arguments: Callable[[str], ParseResult]
    ) -> None:
        self.st = st
        self.stack = stack  # the scanner's JSON stack: where in the arguments a value is
        # Stringified arguments, read by a new parser like the one this assembler is part of.
        self.read_arguments = read_arguments
        self.record: Record | None = None
        self.calls: list[ToolCall] = []
        self.problems: list[ParseProblem] = []
        self.thoughts: list[str] = []
        # Where the arguments' root sits on the stack while they are read.
        self.args_depth: int | None = None
        # An argument key read, written out only once its value starts (a key whose value
        # is cut off, or dropped, is dropped with it).
        self.held_key: str | None = None

    def reset_block(self) -> None:
        self.record = None
        self.args_depth = None
        self.held_key = None

    def new_record(self) -> None:
        if self.record is not None:
            self.end_record(cut=False)
        self.record = Record()

    def set_name(self, name: str, key: str) -> None:
        record = self.record
        if record is None or record.name is not None or not name or self.st.block_as_text:
            return
        record.name = name
        record.name_key = key.lower()
        if (
            not self.st.block_labeled
            and not self.st.block_emitted
            and record.name_key not in ("tool", "action", "tool_name")
            and self.st.tools
            and name not in self.st.tools
            and self.st.pos - self.st.block_start <= MAX_UNDECIDED
        ):
            # {"name": "Ada", ...} in an answer is data, not an action. (Past
            # MAX_UNDECIDED the block's raw text is no longer kept: it stays an action.)
            self.st.block_as_text = True
            return
        self.start_call()

    def open_arguments(self, name: str) -> None:
        """A call named `name` whose arguments come next, on their own (stringified)."""
        self.record = Record()
        self.record.name = name
        self.start_call()
        self.begin_args()

    def start_call(self) -> None:
        record = self.record
        assert record is not None and record.name is not None
        record.id = self.st.new_id()
        record.started = True
        self.st.block_emitted = True
        self.st.emit(ToolCallStart(record.id, record.name, len(self.calls)))
        if record.args_pending:
            self.st.emit(ToolCallArgsDelta(record.id, "".join(record.args_pending)))
            record.args_pending = []

    def end_record(self, cut: bool, why: str = "was cut off", dropped: str = "") -> None:
        """The record ends (`dropped`: what cut-off arguments lost, see
        `JsonScanner.close_block`): a call, or a problem saying why not."""
        record = self.record
        if record is None:
            return
        self.record = None
        if record.name is None or self.st.block_as_text:
            if record.args_seen and not self.st.block_as_text:
                self.problems.append(
                    ParseProblem("no_tool_name", "an action block has arguments but no tool name")
                )
            return
        arguments, problem = _arguments(record)
        if record.expression is not None:
            problem = (
                f"an expression ({record.expression!r}) where a value should be; "
                "write each argument as a plain JSON value, computed"
            )
        if problem:
            self.problems.append(ParseProblem("unreadable_arguments", f"{record.name}: {problem}"))
        for kind, detail in record.notes:
            self.problems.append(ParseProblem(kind, f"{record.name}: {detail}"))
        if cut:
            detail = f"the {record.name} call {why}"
            if dropped:
                detail += f"; its unfinished value {dropped[:60]!r} was dropped"
            self.problems.append(ParseProblem("cut_off", detail))
        assert record.id is not None
        call = ToolCall(record.name, arguments, record.id)
        self.calls.append(call)
        self.st.emit(ToolCallEnd(call))

    def args_from_string(self, value: str) -> None:
        """Arguments written as a JSON string ("stringified"): emit them as JSON."""
        record = self.record
        assert record is not None
        parsed = _stringified_arguments(value, self.read_arguments)
        if parsed is None:
            record.args_string = value
            return
        arguments, notes = parsed
        record.args_object = True
        record.notes.extend(notes)
        self.norm(json.dumps(arguments, ensure_ascii=False))

    # -- arguments ------------------------------------------------------------------
    def begin_args(self) -> None:
        record = self.record
        if record is None:
            record = self.record = Record()
        record.args_seen = True
        record.args_json = []
        record.args_pending = []
        self.args_depth = len(self.stack)
        self.held_key = None

    def _in_arg_frame(self) -> bool:
        """Inside the arguments' JSON, below their root (where keys and commas are written)."""
        depth = self.args_depth
        return depth is not None and len(self.stack) > depth

    def norm_value_start(self) -> None:
        """A value starts in the arguments: a key it follows without a colon gets one."""
        if self._in_arg_frame():
            top = self.stack[-1]
            if top.kind == "{" and top.expect == "colon":
                top.expect = "value"

    def norm_member(self, text: str) -> None:
        """Write the start of a value: the comma and key before it, then `text`."""
        if self._in_arg_frame():
            top = self.stack[-1]
            prefix = ", " if top.members else ""
            top.members += 1
            if top.kind == "{":
                key = self.held_key if self.held_key is not None else '"_"'
                prefix += key + ": "
            self.held_key = None
            text = prefix + text
        self.norm(text)

    def hold_key(self, key: str) -> None:
        if self._in_arg_frame():
            self.held_key = json.dumps(key, ensure_ascii=False)

    def norm(self, text: str) -> None:
        record = self.record
        if record is None or self.args_depth is None:
            return
        record.args_json.append(text)
        if not record.args_object:
            return  # arguments that are not an object never stream (see Record)
        if record.started and not self.st.block_as_text:
            self.st.emit(args_delta(record.id or "", text))
        else:
            record.args_pending.append(text)

    def note(self, kind: ProblemKind, detail: str) -> None:
        if self.record is not None:
            self.record.notes.append((kind, detail))

    def add_thought(self, value: str) -> None:
        if len(value) > self.st.thought_limit:
            detail = f"{len(value)} characters, cut to {self.st.thought_limit}"
            self.problems.append(ParseProblem("thought_too_long", detail))
            value = value[: self.st.thought_limit]
        self.thoughts.append(value)


def _stringified_arguments(
    value: str, read_arguments: Callable[[str], ParseResult]
) -> tuple[dict[str, Any], list[tuple[ProblemKind, str]]] | None:
    """Stringified arguments read by the parser itself: the same tolerance and the same
    bounds as arguments written out (linear, never raising), where a general JSON repair
    costs seconds on a string of 10,000 `{`. None: not an object."""
    text = value.lstrip()
    if not text.startswith("{"):
        return None
    result = read_arguments(text)
    if not result.calls:
        return None
    notes = []
    for problem in result.problems:
        detail = problem.detail.removeprefix(f"{SUB_NAME}: ")
        detail = detail.replace(f"the {SUB_NAME} call", "the call")
        notes.append((problem.kind, f"its stringified arguments: {detail}"))
    return result.calls[0].arguments, notes


def _arguments(record: Record) -> tuple[dict[str, Any], str | None]:
    if record.args_string is not None:
        return {}, f"arguments are not a JSON object: {record.args_string[:120]!r}"
    if not record.args_json:
        return {}, None
    text = "".join(record.args_json)
    try:
        # JSON by construction (arguments.py); the guard keeps a slip from escaping.
        value = json.loads(text)
    except (ValueError, RecursionError):
        return {}, f"unreadable: {text[:120]!r}"
    if value is None:
        return {}, None
    if not isinstance(value, dict):
        return {}, f"arguments are not a JSON object: {text[:120]!r}"
    return value, None
