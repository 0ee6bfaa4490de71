"""Call assembly: a record's name starts the call, its arguments stream as normalised JSON
fragments as they are read, its end becomes a `ToolCall` (or a `ParseProblem` saying why
not); thoughts are collected on the way."""

from __future__ import annotations

import json
from collections.abc import Callable

from parlay.context import ToolCall
from parlay.engine.contract.parser.arguments import arguments_of, normalise_atom, overlong_number
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
    """Turns the records the JSON scanner fills into call events and `ToolCall`s."""

    __slots__ = (
        "args_depth", "calls", "held_key", "problems", "read", "record", "st", "stack", "thoughts"
    )  # fmt: skip

    def __init__(
        self, st: ParserState, stack: list[Frame], read: Callable[[str], ParseResult]
    ) -> None:
        self.st = st
        self.stack = stack  # the scanner's JSON stack: where in the arguments a value is
        self.read = read  # stringified arguments, read by a new parser like this one's
        self.record: Record | None = None
        self.calls: list[ToolCall] = []
        self.problems: list[ParseProblem] = []
        self.thoughts: list[str] = []
        # Where the arguments' root sits on the stack while they are read.
        self.args_depth: int | None = None
        # An argument key read, written out only once its value starts (a key whose value
        # is cut off, or dropped, is dropped with it).
        self.held_key: str | None = None

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
        key = (self.stack[-1].key or "").lower() if self.stack else ""
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
        record.started = True
        self.st.block_emitted = True
        self.st.emit(ToolCallStart(record.id, record.name, len(self.calls)))
        if record.args_pending:
            self.st.emit(ToolCallArgsDelta(record.id, "".join(record.args_pending)))
            record.args_pending = []

    def end_record(self, cut: bool, why: str = "was cut off", dropped: str = "") -> None:
        """The record ends (`dropped`: what cut-off arguments lost): a call, or a problem
        saying why not."""
        record, self.record = self.record, None
        if record is None or self.st.block_as_text:
            return
        if record.name is None:
            if record.args_seen:
                detail = "an action block has arguments but no tool name"
                self.problems.append(ParseProblem("no_tool_name", detail))
            return
        arguments, problem = arguments_of(record)
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
            detail = f"the {record.name} call {why}"
            if dropped:
                detail += f"; its unfinished value {dropped[:60]!r} was dropped"
            self.problems.append(ParseProblem("cut_off", detail))
        assert record.id is not None
        call = ToolCall(record.name, arguments, record.id)
        self.calls.append(call)
        self.st.emit(ToolCallEnd(call))

    def args_from_string(self, value: str) -> None:
        """Arguments written as a JSON string ("stringified"), read by the parser itself:
        the same tolerance and bounds as arguments written out (linear, never raising),
        where a general JSON repair costs seconds on a string of 10,000 `{`."""
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

    def value_ended(self) -> None:
        """A value ended: the arguments, if it was them; its parent expects a comma next."""
        if self.args_depth is not None and len(self.stack) == self.args_depth:
            self.args_depth = None
        if self.stack:
            self.stack[-1].expect = "comma"

    def key_read(self, key: str) -> None:
        if self.stack:
            self.stack[-1].key = key
            self.stack[-1].expect = "colon"
        if self.args_depth is not None and len(self.stack) > self.args_depth:
            self.held_key = json.dumps(key, ensure_ascii=False)

    def atom(self, atom: str) -> None:
        """An unquoted argument value, written as JSON."""
        note = overlong_number(atom)
        if note:
            self.note("unreadable_arguments", note)
        self.norm_member(normalise_atom(atom))

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

    def operator(self, op: str) -> None:
        """An arithmetic operator: in arguments, the call is reported unreadable."""
        if self.record is not None and self.args_depth is not None:
            self.record.expression = self.record.expression or op
