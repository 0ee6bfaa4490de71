"""The incremental parser's public face: `feed`, `finish`, `result`, and the state loop."""

from __future__ import annotations

import re

from parlay.contract.parser.recognise import MAX_INFO, TextReader
from parlay.contract.parser.results import ParseResult
from parlay.contract.parser.state import MAX_UNDECIDED, new_text_delta, set_text, text_delta
from parlay.events import Event, TextDelta

# What in a chunk of prose, read from the text state with nothing held, may start a block or
# must be held back: a fence or a trailing backtick (it may become one), or `{`/`@` with
# only whitespace before it on its line (`\s` is `str.isspace`, the text path's test);
# the second pattern is for a chunk that starts on a blank line. Any other `{`, `@` or
# backtick is text as it is. After a newline only blanks other than newlines are skipped
# (`[^\S\n]`): `\n\s*` would match the same, but tried at every newline of a run of
# them it reads the whole run each time (quadratic: 78 s for 100,000 newlines).
_BLOCK_MAY_START = re.compile(r"```|`\Z|\n[^\S\n]*[{@]").search
_BLOCK_MAY_START_ON_BLANK_LINE = re.compile(r"```|`\Z|\A\s*[{@]|\n[^\S\n]*[{@]").search
_HELD_BACKTICKS = ("`", "``")
# What ends a fence's info string, or decides it (as `_run_info` reads it).
_INFO_STOP = re.compile(r"[\n{\[`]").search


class ActionStreamParser(TextReader):
    """Feed text deltas, get events. `finish()` flushes; `result()` summarises.

    `tool_names` (optional) tells blocks whose name key is `name` apart from ordinary JSON
    in an answer: `{"name": "Ada", ...}` is text unless `Ada` is a tool. The constructor,
    and the state it sets up, is `ParserState`'s (state.py).
    """

    __slots__ = ()

    def _fresh_parser(self) -> ActionStreamParser:
        return ActionStreamParser(id_factory=lambda: "", thought_limit=self._thought_limit)

    # -- public ---------------------------------------------------------------------------
    def feed(self, text: str) -> list[Event]:
        if (
            self._plain
            and text
            and "\n" not in text
            and ("`" not in text or ("```" not in text and text[-1] != "`"))
        ):
            # The common case while prose streams: text state, nothing held, the line not
            # blank (so `{` and `@` are prose), and a chunk with no newline (the line stays
            # so), no fence and no backtick at its end that may become one. The chunk goes
            # out as it came, as the state loop would send it, at a fraction of the cost.
            # (`text_delta`, inlined: this is the hot path.)
            self._text.append(text)
            delta = new_text_delta(TextDelta)
            set_text(delta, text)
            return [delta]
        if self._ended or not text:
            return []
        state = self._state
        if state == "text":
            if self._pos == 0 and (not self._buf or self._buf in _HELD_BACKTICKS):
                # Nothing held but perhaps a backtick or two (in case they open a fence):
                # prose unless the chunk may start a block.
                prose = self._prose(self._buf + text)
                if prose is not None:
                    return prose
        elif state == "block":
            return self._feed_block(text)
        elif state == "code" and not self._buf and "`" not in text:
            # Inside a code fence shown as text, and nothing in the chunk may close it.
            self._text.append(text)
            return [text_delta(text)]
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
        return self._after_run()

    def _feed_block(self, text: str) -> list[Event]:
        """A chunk inside an action block (`feed`'s block state)."""
        close = self._str_quote and self._str_close
        if (
            close
            and self._pos == len(self._buf)
            and close not in text
            and "\\" not in text
            and "`" not in text
            and "\n" not in text
            and (close != "”" or "“" not in text)
        ):
            # Inside a string with nothing pending, and nothing in the chunk ends or
            # escapes it (or may: a fence): the chunk is string content.
            self._string_chars(text)
            if self._buf or self._block_as_text:  # its raw text is kept (or shown)
                self._buf += text
                self._pos = len(self._buf)
                self._compact()
            return self._take()
        self._buf += text
        if not self._run_block(False):  # the block goes on: the usual case
            pos = self._pos
            if self._block_labeled:  # nothing of it can turn out to be text: drop it
                self._buf = self._buf[pos:]
                self._pos = 0
                self._block_start -= pos
            else:
                self._compact()
            if self._pending:
                self._flush_text()
            out = self._out
            self._out = []
            return out
        self._run(final=False)
        return self._after_run()

    def _after_run(self) -> list[Event]:
        self._plain = not self._buf and self._state == "text" and not self._line_blank
        return self._take()

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
        self._plain = not held and not self._line_blank
        if not text:
            return []
        delta = new_text_delta(TextDelta)
        set_text(delta, text)
        return [delta]

    def finish(self) -> list[Event]:
        if self._ended:
            return []
        self._run(final=True)
        self._ended = True
        self._plain = False
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
        self._compact()
        if final:
            self._end_of_input()

    def _compact(self) -> None:
        """Drop consumed text, so each feed costs what it adds (not the whole buffer).

        Text from the block's start is kept only while the block may still turn out to
        be text (an unlabeled block before its name is read, for at most MAX_UNDECIDED
        characters) or is being decided; a block known to be text is shown as it is read.
        """
        pos = self._pos
        state = self._state
        if state == "block":
            if self._block_as_text:
                self._emit_text(self._buf[self._block_start : pos])
                self._block_start = pos
                keep = pos
            elif self._block_labeled or self._block_emitted:
                keep = pos
            elif pos - self._block_start > MAX_UNDECIDED:
                # The name, if it comes, comes too late to make this block text
                # (`_set_name`): it is an action, and its raw text need not be kept.
                self._block_labeled = True
                keep = pos
            else:
                keep = min(self._block_start, pos)
        elif state == "info" or state == "cmd_name":
            keep = min(self._block_start, pos)
        else:
            keep = pos
        if keep > 0:
            self._buf = self._buf[keep:]
            self._pos = pos - keep
            self._block_start -= keep

    def _end_of_input(self) -> None:
        if self._state == "block":
            self._close_block(cut=True)
        rest = self._buf[self._pos :]
        self._pos = len(self._buf)
        self._state = "text"
        self._emit_text(rest)
