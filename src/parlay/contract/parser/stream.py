"""The incremental parser's public face: `feed`, `finish`, `result`, and the state loop."""

from __future__ import annotations

import re

from parlay.contract.parser.json_scan import string_stops
from parlay.contract.parser.recognise import MAX_INFO, TextReader
from parlay.contract.parser.results import ParseResult
from parlay.contract.parser.state import new_text_delta, set_text, text_delta
from parlay.events import Event, TextDelta

# What in a chunk of prose, read from the text state with nothing held, may start a block or
# must be held back: a fence or a trailing backtick (it may become one), or `{`/`@` with
# only whitespace before it on its line (`\s` is `str.isspace`, the text path's test);
# the second pattern is for a chunk that starts on a blank line. Any other `{`, `@` or
# backtick is text as it is.
_BLOCK_MAY_START = re.compile(r"```|`\Z|\n\s*[{@]").search
_BLOCK_MAY_START_ON_BLANK_LINE = re.compile(r"```|`\Z|\A\s*[{@]|\n\s*[{@]").search
_HELD_BACKTICKS = ("`", "``")
# What ends a fence's info string, or decides it (as `_run_info` reads it).
_INFO_STOP = re.compile(r"[\n{\[`]").search


class ActionStreamParser(TextReader):
    """Feed text deltas, get events. `finish()` flushes; `result()` summarises.

    `tool_names` (optional) tells blocks whose name key is `name` apart from ordinary JSON
    in an answer: `{"name": "Ada", ...}` is text unless `Ada` is a tool. The constructor,
    and the state it sets up, is `ParserState`'s (state.py).
    """

    # -- public ---------------------------------------------------------------------------
    def feed(self, text: str) -> list[Event]:
        if self._idle:
            # Text state, nothing held back: prose needs no decision and goes out as it
            # came, with the outcome the general path (`_run_text`) would give at a
            # fraction of the cost. This is what most chunks of a reply are.
            if (
                not self._line_blank
                and text
                and "\n" not in text
                and ("`" not in text or ("```" not in text and text[-1] != "`"))
            ):
                # No newline, so the line stays not blank and any `{` or `@` is prose; no
                # fence, and no backtick at the end that may become one. (`text_delta`,
                # inlined: this is the hot path.)
                self._text.append(text)
                delta = new_text_delta(TextDelta)
                set_text(delta, text)
                return [delta]
            prose = self._prose(text)
            if prose is not None:
                return prose
        if self._ended or not text:
            return []
        state = self._state
        if state == "block":
            if (
                self._str_quote is not None
                and self._pos == len(self._buf)
                and not string_stops(text, self._str_close)
            ):
                # Inside a string with nothing pending: the chunk is string content.
                if self._buf:  # the block's raw text is being kept (it may become text)
                    self._buf += text
                    self._pos = len(self._buf)
                self._string_chars(text)
                return self._take()
        elif state == "text":
            if self._pos == 0 and self._buf in _HELD_BACKTICKS:
                # Backticks held back in case they opened a fence: if this chunk does not
                # make them one, they and it are prose like any other.
                prose = self._prose(self._buf + text)
                if prose is not None:
                    return prose
        elif (
            state == "info"
            and _INFO_STOP(text) is None
            and _INFO_STOP(self._buf, self._pos) is None
            and len(self._buf) + len(text) <= self._pos + MAX_INFO
        ):
            # The fence's info string goes on (it did not end before this chunk, and
            # does not end in it): nothing to decide or emit yet.
            self._buf += text
            return []
        self._buf += text
        self._run(final=False)
        self._idle = not self._buf and self._state == "text"
        if self._pending:
            self._flush_text()
        out = self._out
        self._out = []
        return out

    def _prose(self, text: str) -> list[Event] | None:
        """`text` read from the text state with nothing held: one delta if it is prose (a
        trailing backtick or two held back, as `_run_text` does), None if it may start a
        block (the general path decides)."""
        stop = (_BLOCK_MAY_START_ON_BLANK_LINE if self._line_blank else _BLOCK_MAY_START)(text)
        held = ""
        if stop is not None:
            if stop.end() < len(text) or stop.group() != "`":
                return None
            # Only the backticks at the end may start a fence: hold them back.
            body = text.rstrip("`")
            text, held = body, text[len(body) :]
        if text:
            self._text.append(text)
            newline = text.rfind("\n")
            if newline >= 0:
                tail = text[newline + 1 :]
                self._line_blank = not tail or tail.isspace()
            elif self._line_blank and not text.isspace():
                self._line_blank = False
        self._buf = held
        self._pos = 0
        self._idle = not held
        return [text_delta(text)] if text else []

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
    def _run(self, final: bool) -> None:
        self._final = final
        while True:
            state = self._state
            if state == "block":
                progressed = self._run_block(final)
            elif state == "text":
                progressed = self._run_text(final)
            elif state == "info":
                progressed = self._run_info(final)
            elif state == "code":
                progressed = self._run_code(final)
            elif state == "cmd_name":
                progressed = self._run_cmd_name(final)
            else:
                progressed = self._run_cmd_args(final)
            if not progressed:
                break
        # Drop consumed text, so each feed costs what it adds (not the whole buffer).
        # Text from the block's start is kept only while the block may still turn out to
        # be text (an unlabeled block before its name is read) or is being decided.
        pos = self._pos
        state = self._state
        if state == "block":
            keep = (
                pos
                if self._block_labeled or (self._block_emitted and not self._block_as_text)
                else min(self._block_start, pos)
            )
        elif state == "info" or state == "cmd_name":
            keep = min(self._block_start, pos)
        else:
            keep = pos
        if keep > 0:
            self._buf = self._buf[keep:]
            self._pos = pos - keep
            self._block_start -= keep
        if final:
            self._end_of_input()

    def _end_of_input(self) -> None:
        if self._state == "block":
            self._close_block(cut=True)
        rest = self._buf[self._pos :]
        self._pos = len(self._buf)
        self._state = "text"
        self._emit_text(rest)
