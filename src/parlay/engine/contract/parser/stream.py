"""The incremental parser's public face: `feed`, `finish`, `result`, and the state loop."""

from __future__ import annotations

import re
from collections.abc import Callable, Collection

from parlay.context import new_call_id
from parlay.engine.contract.parser.blocks import BlockReader
from parlay.engine.contract.parser.calls import SUB_NAME, CallAssembler
from parlay.engine.contract.parser.json_scan import JsonScanner
from parlay.engine.contract.parser.recognise import MAX_INFO, TextReader
from parlay.engine.contract.parser.results import ParseResult
from parlay.engine.contract.parser.state import (
    MAX_UNDECIDED,
    THOUGHT_LIMIT,
    Frame,
    ParserState,
    new_text_delta,
    set_text,
    text_delta,
)
from parlay.engine.contract.parser.strings import StringReader
from parlay.events import Event, TextDelta

# What in a chunk of prose may start a block or must be held back: a fence or a trailing
# backtick, or `{` with only blanks before it on its line (the second pattern: for a
# chunk that starts on a blank line). `[^\S\n]*`, not `\s*`, after a newline: `\s*` would
# read a run of newlines again at each one (quadratic).
_BLOCK_MAY_START = re.compile(r"```|`\Z|\n[^\S\n]*{").search
_BLOCK_MAY_START_ON_BLANK_LINE = re.compile(r"```|`\Z|\A\s*{|\n[^\S\n]*{").search
_HELD_BACKTICKS = ("`", "``")
# What ends a fence's info string, or decides it (as `TextReader.run_info` reads it).
_INFO_STOP = re.compile(r"[\n{\[`]").search


class ActionStreamParser:
    """Feed text deltas, get events. `finish()` flushes; `result()` summarises.

    `tool_names` (optional) tells blocks whose name key is `name` apart from ordinary JSON
    in an answer: `{"name": "Ada", ...}` is text unless `Ada` is a tool.
    """

    __slots__ = ("block", "calls", "reader", "st", "strings")

    def __init__(
        self,
        tool_names: Collection[str] = (),
        *,
        id_factory: Callable[[], str] = new_call_id,
        thought_limit: int = THOUGHT_LIMIT,
    ) -> None:
        st = self.st = ParserState(tool_names, id_factory=id_factory, thought_limit=thought_limit)
        stack: list[Frame] = []
        calls = self.calls = CallAssembler(st, stack, self._read_arguments)
        strings = self.strings = StringReader(st, stack, calls)
        self.block = BlockReader(st, JsonScanner(st, stack, strings, calls))
        self.reader = TextReader(st, self.block)

    def _read_arguments(self, text: str) -> ParseResult:
        """Stringified arguments (`text` opens an object), read by a parser like this one
        as the arguments of a call named `SUB_NAME`, with ids of no use."""
        parser = ActionStreamParser(id_factory=lambda: "", thought_limit=self.st.thought_limit)
        parser.block.open_block(0, fenced=False, labeled=True)
        parser.calls.open_arguments(SUB_NAME)
        parser.feed(text)
        parser.finish()
        return parser.result()

    def feed(self, text: str) -> list[Event]:
        if (
            self.st.plain
            and text
            and "\n" not in text
            and ("`" not in text or ("```" not in text and text[-1] != "`"))
        ):
            # The hot path while prose streams: nothing held, and nothing in the chunk may
            # start a block. It goes out as the state loop would send it (inlined).
            self.st.text.append(text)
            delta = new_text_delta(TextDelta)
            set_text(delta, text)
            return [delta]
        if self.st.ended or not text:
            return []
        quick = self._quick(text)
        if quick is not None:
            return quick
        self.st.buf += text
        self._run(final=False)
        return self._after_run()

    def _quick(self, text: str) -> list[Event] | None:
        """What a chunk makes when its state settles it without the state loop, else None."""
        state = self.st.mode
        if state == "text":
            if self.st.pos == 0 and (not self.st.buf or self.st.buf in _HELD_BACKTICKS):
                return self._prose(self.st.buf + text)  # at most a backtick or two held
            return None
        if state == "block":
            return self._feed_block(text)
        if state == "code" and not self.st.buf and "`" not in text:
            # Inside a code fence shown as text, and nothing in the chunk may close it.
            self.st.text.append(text)
            return [text_delta(text)]
        if (
            state == "info"
            and _INFO_STOP(text) is None
            and _INFO_STOP(self.st.buf, self.st.pos) is None
            and len(self.st.buf) + len(text) <= self.st.pos + MAX_INFO
        ):
            self.st.buf += text  # the fence's info string goes on: nothing to decide yet
            return []
        return None

    def _feed_block(self, text: str) -> list[Event]:
        """A chunk inside an action block (`feed`'s block state)."""
        st, strings = self.st, self.strings  # as locals: this runs per chunk
        close = strings.quote and strings.close
        if (
            close
            and st.pos == len(st.buf)
            and close not in text
            and "\\" not in text
            and "`" not in text
            and "\n" not in text
            and (close != "”" or "“" not in text)
        ):
            # Inside a string with nothing pending, and nothing in the chunk ends or
            # escapes it (or may: a fence): the chunk is string content.
            strings.add(text)
            if st.buf or st.block_as_text:  # its raw text is kept (or shown)
                st.buf += text
                st.pos = len(st.buf)
                self._compact()
            return st.take()
        st.buf += text
        if not self.block.run_block(False):  # the block goes on: the usual case
            pos = st.pos
            if st.block_labeled:  # nothing of it can turn out to be text: drop it
                st.buf = st.buf[pos:]
                st.pos = 0
                st.block_start -= pos
            else:
                self._compact()
            if st.pending:
                st.flush_text()
            out = st.out
            st.out = []
            return out
        self._run(final=False)
        return self._after_run()

    def _after_run(self) -> list[Event]:
        self.st.plain = not self.st.buf and self.st.mode == "text" and not self.st.line_blank
        return self.st.take()

    def _prose(self, text: str) -> list[Event] | None:
        """`text` read from the text state with nothing held: one delta if it is prose (a
        trailing backtick or two held back, as `TextReader.run_text` does), None if it may start a
        block (the general path decides)."""
        stop = (_BLOCK_MAY_START_ON_BLANK_LINE if self.st.line_blank else _BLOCK_MAY_START)(text)
        held = ""
        if stop is not None:
            if stop.end() < len(text) or stop.group() != "`":
                return None
            # Only the backticks at the end may start a fence: hold them back.
            body = text.rstrip("`")
            text, held = body, text[len(body) :]
        if text:
            self.st.text.append(text)
            newline = text.rfind("\n")
            if newline >= 0:
                tail = text[newline + 1 :]
                self.st.line_blank = not tail or tail.isspace()
            elif self.st.line_blank and not text.isspace():
                self.st.line_blank = False
        self.st.buf = held
        self.st.pos = 0
        self.st.plain = not held and not self.st.line_blank
        if not text:
            return []
        delta = new_text_delta(TextDelta)
        set_text(delta, text)
        return [delta]

    def finish(self) -> list[Event]:
        if self.st.ended:
            return []
        self._run(final=True)
        self.st.ended = True
        self.st.plain = False
        return self.st.take()

    def result(self) -> ParseResult:
        return ParseResult(
            "".join(self.st.text),
            tuple(self.calls.calls),
            tuple(self.calls.problems),
            tuple(self.calls.thoughts),
            self.st.blocks,
        )

    def _run(self, final: bool) -> None:
        self.st.final = final
        while True:
            state = self.st.mode
            if state == "block":
                progressed = self.block.run_block(final)
            elif state == "text":
                progressed = self.reader.run_text(final)
            elif state == "info":
                progressed = self.reader.run_info(final)
            else:
                progressed = self.reader.run_code(final)
            if not progressed:
                break
        self._compact()
        if final:
            self._end_of_input()

    def _compact(self) -> None:
        """Drop consumed text, so each feed costs what it adds. A block's text is kept
        only while the block may still turn out to be text (for MAX_UNDECIDED at most)."""

        pos = self.st.pos
        state = self.st.mode
        if state == "block":
            if self.st.block_as_text:
                self.st.emit_text(self.st.buf[self.st.block_start : pos])
                self.st.block_start = pos
                keep = pos
            elif self.st.block_labeled or self.st.block_emitted:
                keep = pos
            elif pos - self.st.block_start > MAX_UNDECIDED:
                # The name, if it comes, comes too late to make this block text
                # (`CallAssembler.set_name`): it is an action, and its raw text need not be kept.
                self.st.block_labeled = True
                keep = pos
            else:
                keep = min(self.st.block_start, pos)
        elif state == "info":
            keep = min(self.st.block_start, pos)
        else:
            keep = pos
        if keep > 0:
            self.st.buf = self.st.buf[keep:]
            self.st.pos = pos - keep
            self.st.block_start -= keep

    def _end_of_input(self) -> None:
        if self.st.mode == "block":
            self.block.close_block(cut=True)
        rest = self.st.buf[self.st.pos :]
        self.st.pos = len(self.st.buf)
        self.st.mode = "text"
        self.st.emit_text(rest)
