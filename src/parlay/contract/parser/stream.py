"""The incremental parser's public face: `feed`, `finish`, `result`, and the state loop."""

from __future__ import annotations

import re

from parlay.contract.parser.json_scan import string_stops
from parlay.contract.parser.recognise import TextReader
from parlay.contract.parser.results import ParseResult
from parlay.events import Event, TextDelta

_HARD_TRIGGER = re.compile(r"[`@{]")


class ActionStreamParser(TextReader):
    """Feed text deltas, get events. `finish()` flushes; `result()` summarises.

    `tool_names` (optional) tells blocks whose name key is `name` apart from ordinary JSON
    in an answer: `{"name": "Ada", ...}` is text unless `Ada` is a tool. The constructor,
    and the state it sets up, is `ParserState`'s (state.py).
    """

    # -- public ---------------------------------------------------------------------------
    def feed(self, text: str) -> list[Event]:
        if self._idle and _HARD_TRIGGER.search(text) is None:
            # The common case while prose streams: nothing held, nothing to decide.
            # Same outcome as the general path below, at a fraction of the cost.
            if not text:
                return []
            self._text.append(text)
            newline = text.rfind("\n")
            if newline >= 0:
                tail = text[newline + 1 :]
                self._line_blank = not tail or tail.isspace()
            elif self._line_blank and not text.isspace():
                self._line_blank = False
            return [TextDelta(text)]
        if self._ended or not text:
            return []
        if (
            self._str_quote is not None
            and self._pos == len(self._buf)
            and self._state == "block"
            and not string_stops(text, self._str_close)
        ):
            # Inside a string with nothing pending: the chunk is string content.
            if self._buf:  # the block's raw text is being kept (it may become text)
                self._buf += text
                self._pos = len(self._buf)
            self._string_chars(text)
            return self._take()
        self._buf += text
        self._run(final=False)
        self._idle = not self._buf and self._state == "text" and not self._ended
        return self._take()

    def finish(self) -> list[Event]:
        if self._ended:
            return []
        self._run(final=True)
        self._ended = True
        self._idle = False
        return self._take()

    def result(self) -> ParseResult:
        return ParseResult(
            "".join(self._text),
            tuple(self._calls),
            tuple(self._problems),
            tuple(self._thoughts),
            self._blocks,
        )

    # -- the state loop -------------------------------------------------------------------
    def _compact(self) -> None:
        """Drop consumed text, so each feed costs what it adds (not the whole buffer).

        Text from the block's start is kept only while the block may still turn out to
        be text (an unlabeled block before its name is read) or is being decided.
        """
        state = self._state
        need_raw = state in ("info", "cmd_name") or (
            state == "block"
            and not self._block_labeled
            and (self._block_as_text or not self._block_emitted)
        )
        keep = min(self._block_start, self._pos) if need_raw else self._pos
        if keep > 0:
            self._buf = self._buf[keep:]
            self._pos -= keep
            self._block_start -= keep

    def _run(self, final: bool) -> None:
        self._final = final
        while True:
            state = self._state
            if state == "text":
                progressed = self._run_text(final)
            elif state == "info":
                progressed = self._run_info(final)
            elif state == "block":
                progressed = self._run_block(final)
            elif state == "code":
                progressed = self._run_code(final)
            elif state == "cmd_name":
                progressed = self._run_cmd_name(final)
            else:
                progressed = self._run_cmd_args(final)
            if not progressed:
                break
        self._compact()
        if final:
            self._end_of_input()

    def _end_of_input(self) -> None:
        if self._state == "block":
            self._close_block(cut=True)
        rest = self._buf[self._pos :]
        self._pos = len(self._buf)
        self._state = "text"
        self._emit_text(rest)
