"""Call assembly: a record's name starts the call, its arguments stream, its end becomes a
`ToolCall` (or a `ParseProblem` saying why not); thoughts are collected on the way."""

from __future__ import annotations

import json
from typing import Any

import json_repair

from parlay.context import ToolCall
from parlay.contract.parser.arguments import ArgumentWriter
from parlay.contract.parser.results import ParseProblem
from parlay.contract.parser.state import Record
from parlay.events import ToolCallArgsDelta, ToolCallEnd, ToolCallStart


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
        ):
            # {"name": "Ada", ...} in an answer is data, not an action.
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

    def _end_record(self, cut: bool) -> None:
        record = self._record
        if record is None:
            return
        if self._args_depth is not None:
            self._finish_open_args()
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
        if cut:
            self._problems.append(ParseProblem("cut_off", f"the {record.name} call was cut off"))
        assert record.id is not None
        call = ToolCall(record.name, arguments, record.id)
        self._calls.append(call)
        self._emit(ToolCallEnd(call))

    def _args_from_string(self, value: str) -> None:
        """Arguments written as a JSON string ("stringified"): emit them as JSON."""
        record = self._record
        assert record is not None
        parsed = _loads(value)
        if isinstance(parsed, dict):
            self._norm(json.dumps(parsed, ensure_ascii=False))
        else:
            record.args_string = value

    def _add_thought(self, value: str) -> None:
        if len(value) > self._thought_limit:
            detail = f"{len(value)} characters, cut to {self._thought_limit}"
            self._problems.append(ParseProblem("thought_too_long", detail))
            value = value[: self._thought_limit]
        self._thoughts.append(value)


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        try:
            return json_repair.loads(text)
        except Exception:  # json_repair is tolerant, not total
            return None


def _arguments(record: Record) -> tuple[dict[str, Any], str | None]:
    if record.args_string is not None:
        return {}, f"arguments are not a JSON object: {record.args_string[:120]!r}"
    if not record.args_json:
        return {}, None
    text = "".join(record.args_json)
    value = _loads(text)
    if isinstance(value, str):
        value = _loads(value)
    if value is None or value == "":
        return {}, None if text.strip() in ("null", '""') else f"unreadable: {text[:120]!r}"
    if not isinstance(value, dict):
        return {}, f"arguments are not a JSON object: {text[:120]!r}"
    return value, None
