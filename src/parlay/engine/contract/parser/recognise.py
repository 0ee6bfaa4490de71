"""Where blocks start: the text path, and fences (action blocks or code shown as text).

Text is emitted at once; only what could still turn into a block is held back, and only
until the text seen so far settles it.
"""

from __future__ import annotations

import re

import attrs

import parlay.engine.contract.parser.vocabulary as vocab
from parlay.engine.contract.parser.json_scan import JsonScanner
from parlay.engine.contract.parser.state import ParserState

# How far a `{` line, a fence info string and the blank lines between a ```` ```json ````
# fence and its `{` are read before each is settled (as prose, code or a block): what is
# held back, and read again as each chunk comes, stays bounded.
_MAX_KEY_PEEK = 48
_MAX_INFO = 40
_MAX_FENCE_GAP = 256
_TEXT_TRIGGER = re.compile(r"[`\n{]")
_INFO_STOP = re.compile(r"[\n{\[`]").search  # what ends a fence's info string
_SPACE = r"[ \t\r\n]*"
# After an object's `{`: the opening quote of its first key, if any, and the key.
_FIRST_KEY = re.compile(_SPACE + "([\"'“‘”]?)(\\w*)").match
_KIND_GAP = re.compile(_SPACE + "(?::" + _SPACE + ")?").match  # from a key to its value
# From a ```json fence to its object: blanks, and a list's `[` among them.
_FENCE_GAP = re.compile(_SPACE + r"(?:\[" + _SPACE + ")?").match


def _end(match: re.Match[str] | None) -> int:
    assert match is not None  # the patterns above match the empty string
    return match.end()


def _names_a_kind(buf: str, i: int, end: int, undecided: bool | None) -> bool | None:
    """Whether the value after a first key `"type"` (from `i`, its colon next) is a kind
    of reply the typed format writes; `undecided` if the text so far cannot tell."""
    i = _end(_KIND_GAP(buf, i, end))
    if i >= end:
        return undecided
    close = vocab.QUOTES.get(buf[i])
    if close is None:
        return False
    stop = buf.find(close, i + 1, end)
    return undecided if stop < 0 else buf[i + 1 : stop].strip().lower() in vocab.REPLY_KINDS


@attrs.define
class TextReader:
    """Reads the text between blocks, shows code fences as text, and hands each action
    block to the JSON scanner where it starts."""

    st: ParserState
    scanner: JsonScanner

    def run_text(self, final: bool) -> bool:
        st = self.st
        buf, pos = st.buf, st.pos
        while True:
            match = _TEXT_TRIGGER.search(buf, pos)
            if match is None:
                segment = buf[pos:]
                if segment and not segment.isspace():
                    st.line_blank = False
                st.emit_text(segment)
                st.pos = len(buf)
                return False
            at = match.start()
            newline = buf[at] == "\n"
            if not newline:
                decided = self._at_trigger(buf[pos:at], at, final)
                if decided is not None:
                    return decided
            st.emit_text(buf[pos : at + 1])
            st.line_blank = newline
            pos = at + 1

    def _at_trigger(self, segment: str, at: int, final: bool) -> bool | None:
        """A backtick, or a `{` at the start of a line, after `segment`: a block opens
        (True), the text so far cannot tell (False: wait for more), or it is prose (None)."""
        st = self.st
        blank = st.line_blank and (not segment or segment.isspace())
        if st.buf[at] == "`":
            head = st.buf[at : at + 3]
            if head == "```":
                st.emit_text(segment)
                st.pos = at + 3
                st.block_start = at
                st.mode = "info"
                return True
            undecided = len(head) < 3 and "```".startswith(head) and not final
        elif blank:
            verdict = self.peek_first_key(at, final)  # an action if its first key says so
            if verdict:
                st.emit_text(segment)
                self.scanner.open_block(at, at, fenced=False, labeled=False)
                return True
            undecided = verdict is None
        else:
            return None
        if not undecided:
            return None
        st.emit_text(segment)
        st.line_blank = blank
        st.pos = at
        return False

    def peek_first_key(self, at: int, final: bool) -> bool | None:
        """Does the object at `at` start with an action key? None: cannot tell yet."""
        buf = self.st.buf
        end = min(len(buf), at + _MAX_KEY_PEEK)
        undecided = None if not final and end == len(buf) else False
        first = _FIRST_KEY(buf, at + 1, end)
        assert first is not None  # it matches the empty string
        i, (quote, key) = first.end(), first.groups()
        close = vocab.QUOTES.get(quote)
        if i >= end:
            return undecided
        if close is not None and buf[i] != close:
            return False
        if key == vocab.KIND_KEY:
            return _names_a_kind(buf, i + (close is not None), end, undecided)
        return key in vocab.BLOCK_KEYS

    def run_info(self, final: bool) -> bool:
        st = self.st
        buf, start = st.buf, st.pos
        end = min(len(buf), start + _MAX_INFO)
        stop = _INFO_STOP(buf, start, end)
        if stop is None:
            if end == len(buf) and not final:
                return False  # the info string is not finished yet
            return self._fence_as_code(end)
        i = stop.start()
        info = buf[start:i].strip().lower()
        if info in vocab.ACTION_FENCES:
            self.scanner.open_block(st.block_start, i, fenced=True, labeled=True)
            return True
        if info not in vocab.JSON_FENCES or buf[i] == "`":
            return self._fence_as_code(i)
        return self._json_fence(i, final)

    def _json_fence(self, i: int, final: bool) -> bool:
        """A plain ```json fence holds an action only if its object's first key says so
        (read within _MAX_FENCE_GAP characters of blanks: past that it is code)."""
        buf = self.st.buf
        limit = i + _MAX_FENCE_GAP
        j = _end(_FENCE_GAP(buf, i, limit))
        if j < limit and j >= len(buf) and not final:
            return False
        verdict = j < limit and j < len(buf) and buf[j] == "{" and self.peek_first_key(j, final)
        if verdict is None:
            return False
        if verdict:
            self.scanner.open_block(self.st.block_start, i, fenced=True, labeled=False)
            return True
        return self._fence_as_code(i)

    def _fence_as_code(self, i: int) -> bool:
        self.st.mode = "code"
        self.st.emit_text(self.st.buf[self.st.block_start : i])
        self.st.pos = i
        return True

    def run_code(self, final: bool) -> bool:
        """Inside a non-action fence: visible text up to and including the closing fence."""
        st = self.st
        buf = st.buf
        at = buf.find("```", st.pos)
        end = len(buf) if at < 0 else at + 3
        if at < 0 and not final:
            # Keep a possible partial closing fence back.
            while end > st.pos and buf[end - 1] == "`":
                end -= 1
        st.emit_text(buf[st.pos : end])
        st.pos = end
        if at < 0:
            return False
        st.mode = "text"
        st.line_blank = False
        return True
