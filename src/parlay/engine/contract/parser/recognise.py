"""Where blocks start: the text path, and fences (action blocks or code shown as text).

Text is emitted at once; only what could still turn into a block is held back, and only
until the text seen so far settles it.
"""

from __future__ import annotations

import re

from parlay.engine.contract.parser.blocks import BlockReader
from parlay.engine.contract.parser.state import ParserState
from parlay.engine.contract.parser.vocabulary import (
    ACTION_FENCES,
    BLOCK_KEYS,
    JSON_FENCES,
    KIND_KEY,
    QUOTES,
    REPLY_KINDS,
)

# How far a `{` line, a fence info string and the blank lines between a ```` ```json ````
# fence and its `{` are read before each is settled (as prose, code or a block): what is
# held back, and read again as each chunk comes, stays bounded.
_MAX_KEY_PEEK = 48
MAX_INFO = 40
_MAX_FENCE_GAP = 256
_TEXT_TRIGGER = re.compile(r"[`\n{]")
_SPACE = re.compile(r"[ \t\r\n]*")


def _after_space(text: str, start: int, end: int) -> int:
    match = _SPACE.match(text, start, max(start, end))
    assert match is not None  # `[ \t\r\n]*` matches anywhere
    return match.end()


def _names_a_kind(buf: str, i: int, end: int, final: bool) -> bool | None:
    """Whether the value after a first key `"type"` (from `i`, its colon next) is a kind
    of reply the typed format writes. None: cannot tell yet."""
    undecided = None if not final and end == len(buf) else False
    i = _after_space(buf, i, end)
    if i < end and buf[i] == ":":
        i = _after_space(buf, i + 1, end)
    if i >= end:
        return undecided
    close = QUOTES.get(buf[i])
    if close is None:
        return False
    stop = buf.find(close, i + 1, end)
    if stop < 0:
        return undecided
    return buf[i + 1 : stop].strip().lower() in REPLY_KINDS


class TextReader:
    """Reads text between blocks and recognises the start of each block (handing it to
    the block reader)."""

    __slots__ = ("block", "st")

    def __init__(self, st: ParserState, block: BlockReader) -> None:
        self.st = st
        self.block = block

    def run_text(self, final: bool) -> bool:
        buf, pos = self.st.buf, self.st.pos
        while True:
            match = _TEXT_TRIGGER.search(buf, pos)
            if match is None:
                segment = buf[pos:]
                if segment and not segment.isspace():
                    self.st.line_blank = False
                self.st.emit_text(segment)
                self.st.pos = len(buf)
                return False
            at = match.start()
            newline = buf[at] == "\n"
            if not newline:
                decided = self._at_trigger(buf[pos:at], at, final)
                if decided is not None:
                    return decided
            self.st.emit_text(buf[pos : at + 1])
            self.st.line_blank = newline
            pos = at + 1

    def _at_trigger(self, segment: str, at: int, final: bool) -> bool | None:
        """A backtick or `{` after `segment`: a block opens (True), the text so far cannot
        tell (False: wait for more), or it is prose (None)."""
        blank = self.st.line_blank and (not segment or segment.isspace())
        if self.st.buf[at] == "`":
            return self._text_backtick(segment, at, blank, final)
        if not blank:
            return None
        return self._text_brace(segment, at, final)

    def _text_brace(self, segment: str, at: int, final: bool) -> bool | None:
        """`{` at the start of a line: an action if its first key says so."""
        verdict = self.peek_first_key(at, final)
        if verdict is None:
            self.st.emit_text(segment)
            self.st.line_blank = True
            self.st.pos = at
            return False
        if verdict:
            self.st.emit_text(segment)
            self.st.pos = at
            self.block.open_block(at, fenced=False, labeled=False)
            return True
        return None

    def _text_backtick(self, segment: str, at: int, blank: bool, final: bool) -> bool | None:
        """A backtick in text: a fence opens (True), may still open (False: wait for more),
        or it is prose (None)."""
        head = self.st.buf[at : at + 3]
        if head == "```":
            self.st.emit_text(segment)
            self.st.pos = at + 3
            self.st.block_start = at
            self.st.mode = "info"
            return True
        if len(head) < 3 and "```".startswith(head) and not final:
            self.st.emit_text(segment)
            self.st.line_blank = blank
            self.st.pos = at
            return False
        return None

    def peek_first_key(self, at: int, final: bool) -> bool | None:
        """Does the object at `at` start with an action key? None: cannot tell yet."""
        buf = self.st.buf
        i = at + 1
        end = min(len(buf), at + _MAX_KEY_PEEK)
        while i < end and buf[i] in " \t\r\n":
            i += 1
        if i >= end:
            return False if (final or end < len(buf)) else None
        quote = buf[i]
        close = QUOTES.get(quote)
        if close is not None:
            i += 1
        start = i
        while i < end and (buf[i].isalnum() or buf[i] == "_"):
            i += 1
        if i >= end:
            return False if (final or end < len(buf)) else None
        key = buf[start:i]
        if close is not None and buf[i] != close:
            return False
        if key == KIND_KEY:
            return _names_a_kind(buf, i + (close is not None), end, final)
        return key in BLOCK_KEYS

    # -- fences ---------------------------------------------------------------------------
    def run_info(self, final: bool) -> bool:
        buf = self.st.buf
        start = self.st.pos
        i = start
        end = min(len(buf), start + MAX_INFO)
        while i < end and buf[i] not in "\n{[`":
            i += 1
        if i >= end:
            if end == len(buf) and not final:
                return False  # the info string is not finished yet
            return self._fence_as_code(i)
        info = buf[start:i].strip().lower()
        if info in ACTION_FENCES:
            self.block.open_block(self.st.block_start, fenced=True, labeled=True, at=i)
            return True
        if info not in JSON_FENCES or buf[i] == "`":
            return self._fence_as_code(i)
        return self._json_fence(i, final)

    def _json_fence(self, i: int, final: bool) -> bool:
        """A plain ```json fence holds an action only if its object's first key says so
        (read within _MAX_FENCE_GAP characters of blanks: past that it is code)."""
        buf = self.st.buf
        limit = i + _MAX_FENCE_GAP

        j = _after_space(buf, i, limit)
        if j < len(buf) and buf[j] == "[":
            j = _after_space(buf, j + 1, limit)
        if j >= limit:
            return self._fence_as_code(i)
        if j >= len(buf):
            return False if not final else self._fence_as_code(i)
        verdict = self.peek_first_key(j, final) if buf[j] == "{" else False
        if verdict is None:
            return False
        if verdict:
            self.block.open_block(self.st.block_start, fenced=True, labeled=False, at=i)
            return True
        return self._fence_as_code(i)

    def _fence_as_code(self, i: int) -> bool:
        self.st.mode = "code"
        self.st.emit_text(self.st.buf[self.st.block_start : i])
        self.st.pos = i
        self.st.line_blank = False
        return True

    def run_code(self, final: bool) -> bool:
        """Inside a non-action fence: visible text up to and including the closing fence."""
        buf = self.st.buf
        at = buf.find("```", self.st.pos)
        if at < 0:
            # Keep a possible partial closing fence back.
            cut = len(buf)
            while cut > self.st.pos and buf[cut - 1] == "`" and not final:
                cut -= 1
            self.st.emit_text(buf[self.st.pos : cut])
            self.st.pos = cut
            return False
        self.st.emit_text(buf[self.st.pos : at + 3])
        self.st.pos = at + 3
        self.st.mode = "text"
        self.st.line_blank = False
        return True
