"""Call assembly: a record's name starts the call, its arguments stream, its end becomes a
`ToolCall` (or a `ParseProblem` saying why not); thoughts are collected on the way."""

from __future__ import annotations

import json
from typing import Any, Protocol

from parlay.context import ToolCall
from parlay.contract.parser.arguments import ArgumentWriter
from parlay.contract.parser.results import ParseProblem, ParseResult
from parlay.contract.parser.state import MAX_UNDECIDED, Record
from parlay.events import Event, ToolCallArgsDelta, ToolCallEnd, ToolCallStart

_SUB_NAME = "_"  # the name a stringified arguments' own parse gives its call


class WholeReader(Protocol):
    """What reading stringified arguments needs of a parser."""

    def feed(self, text: str) -> list[Event]: ...
    def finish(self) -> list[Event]: ...
    def result(self) -> ParseResult: ...


class CallAssembler(ArgumentWriter):
    """Turns the records the JSON scanner fills into call events and `ToolCall`s."""

    __slots__ = ()

    def _new_record(self) -> None:
        if self._record is not None:
            self._end_record(cut=False)
        self._record = Record()

    def _set_name(self, name: str, key: str) -> None:
        record = self._record
        if record is None or record.name is not None or not name or self._block_as_text:
            return
        record.name = name
        record.name_key = key.lower()
        if (
            not self._block_labeled
            and not self._block_emitted
            and record.name_key not in ("tool", "action", "tool_name")
            and self._tools
            and name not in self._tools
            and self._pos - self._block_start <= MAX_UNDECIDED
        ):
            # {"name": "Ada", ...} in an answer is data, not an action. (Past
            # MAX_UNDECIDED the block's raw text is no longer kept: it stays an action.)
            self._block_as_text = True
            return
        self._start_call()

    def _start_call(self) -> None:
        record = self._record
        assert record is not None and record.name is not None
        record.id = self._new_id()
        record.started = True
        self._block_emitted = True
        self._emit(ToolCallStart(record.id, record.name, len(self._calls)))
        if record.args_pending:
            self._emit(ToolCallArgsDelta(record.id, "".join(record.args_pending)))
            record.args_pending = []

    def _end_record(self, cut: bool, why: str = "was cut off") -> None:
        record = self._record
        if record is None:
            return
        dropped = self._finish_open_args() if self._args_depth is not None else ""
        self._record = None
        if record.name is None or self._block_as_text:
            if record.args_seen and not self._block_as_text:
                self._problems.append(
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
            self._problems.append(ParseProblem("unreadable_arguments", f"{record.name}: {problem}"))
        for kind, detail in record.notes:
            self._problems.append(ParseProblem(kind, f"{record.name}: {detail}"))
        if cut:
            detail = f"the {record.name} call {why}"
            if dropped:
                detail += f"; its unfinished value {dropped[:60]!r} was dropped"
            self._problems.append(ParseProblem("cut_off", detail))
        assert record.id is not None
        call = ToolCall(record.name, arguments, record.id)
        self._calls.append(call)
        self._emit(ToolCallEnd(call))

    def _args_from_string(self, value: str) -> None:
        """Arguments written as a JSON string ("stringified"): emit them as JSON."""
        record = self._record
        assert record is not None
        parsed = _stringified_arguments(value, self._fresh_parser())
        if parsed is None:
            record.args_string = value
            return
        arguments, notes = parsed
        record.args_object = True
        record.notes.extend(notes)
        self._norm(json.dumps(arguments, ensure_ascii=False))

    def _fresh_parser(self) -> WholeReader:
        """A new parser like this one, with ids of no use, for stringified arguments: the
        finished parser (`stream.ActionStreamParser`, built on this class) gives it."""
        raise NotImplementedError

    def _add_thought(self, value: str) -> None:
        if len(value) > self._thought_limit:
            detail = f"{len(value)} characters, cut to {self._thought_limit}"
            self._problems.append(ParseProblem("thought_too_long", detail))
            value = value[: self._thought_limit]
        self._thoughts.append(value)


def _stringified_arguments(
    value: str, parser: WholeReader
) -> tuple[dict[str, Any], list[tuple[str, str]]] | None:
    """Stringified arguments read by the parser itself, as a command's arguments: the same
    tolerance and the same bounds as arguments written out (linear, never raising), where
    a general JSON repair costs seconds on a string of 10,000 `{`. None: not an object."""
    text = value.lstrip()
    if not text.startswith("{"):
        return None
    parser.feed(f"@tool {_SUB_NAME} {text}")
    parser.finish()
    result = parser.result()
    if not result.calls:
        return None
    notes = []
    for problem in result.problems:
        detail = problem.detail.removeprefix(f"{_SUB_NAME}: ")
        detail = detail.replace(f"the {_SUB_NAME} call", "the call")
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
