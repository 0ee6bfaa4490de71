"""JSON strings in an action block: their characters, escapes and ends, and what a
string's value does once read (a key, a tool name, arguments, a thought, final content).

A code fence inside a string of a fenced block counts only at the start of a raw line.
It opens or closes a code block the string holds (content), except a *bare* fence after
text ending in `}` or `]`: the model lost the closing quote, so the string, and the
action block, end there (noted `cut_off`). So fenced code in a `write_file` call reads
as meant.
"""

from __future__ import annotations

import re
from json.encoder import encode_basestring  # json.dumps(s, ensure_ascii=False), in C
from typing import Literal

import attrs

from parlay.engine.contract.parser.call_assembly import CallAssembler
from parlay.engine.contract.parser.state import ParserState
from parlay.engine.contract.parser.vocabulary import FINAL_KINDS, QUOTES

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "/": "/", "\\": "\\"}
# How far past a fence in a string its line is read to tell an info string from none.
_FENCE_PEEK = 16
# What stops a run of string content: an escape, a newline, the closing quote, and in a
# fenced block a backtick (it may start a fence). One pattern per closing quote.
_STOPS = {
    (close, fenced): re.compile("[\\\\\n" + re.escape(close) + ("`" if fenced else "") + "]").search
    for close in set(QUOTES.values())
    for fenced in (False, True)
}
_BACKTICKS = re.compile("`+")
_HEX4 = re.compile("[0-9a-fA-F]{4}")
_NEWLINE_RUN = re.compile(r"\n\s*").match
# What the open string is: a key, a tool name, arguments (or their start as one string),
# a thought, final content, the typed format's kind, or something skipped.
StringRole = Literal["key", "name", "args", "args_string", "thought", "content", "kind", "skip"]
WAIT = -1  # `StringReader.span`: an escape or a fence is cut by the end of the text read so far
FENCE_END = -2  # `StringReader.span`: a bare fence ended the block (`pos` is past it)


@attrs.define
class StringReader:
    """Reads the strings of an action block: their characters, escapes and fences, where
    each ends, and what its value does once read (`role`: set by the scanner)."""

    st: ParserState
    calls: CallAssembler
    quote: str | None = None  # the open string's quote (None: no string open)
    close: str = ""  # the quote that closes it
    role: StringRole = "skip"
    chars: list[str] = attrs.Factory(list)
    fence: bool = False  # a code fence opened inside the current string
    line_start: bool = True  # at the start of one of its raw lines (its text starts one)
    tail: str = ""  # the current string's last character other than a blank

    def begin(self, quote: str, role: StringRole) -> None:
        self.quote = quote
        self.close = QUOTES.get(quote, quote)
        self.role = role
        self.chars = []
        self.fence = False
        self.line_start = True
        self.tail = ""

    def takes_whole(self, text: str) -> bool:
        """Whether nothing in `text` may end, escape or fence the open string."""
        # As `_STOPS` reads it; `in` tests cost less than a search on a chunk's few characters.
        if self.close in text or "\\" in text or "\n" in text:
            return False
        return not self.st.block_fenced or "`" not in text

    def span(self, i: int) -> int:
        """Consume string characters from `i`: the index after them, WAIT or FENCE_END."""
        st = self.st
        buf = st.buf
        n = len(buf)
        stop = _STOPS[self.close, st.block_fenced](buf, i)
        j = n if stop is None else stop.start()
        if j > i:
            self.add(buf[i:j])
        if j >= n:
            st.pos = j
            return j
        ch = buf[j]
        if ch == "\\":
            return self._escape(j)
        if ch == "`":
            return self._backtick(j)
        if ch == "\n":  # with the blanks after it: none of them ends a line start
            run = _NEWLINE_RUN(buf, j)
            assert run is not None  # there is one at `j`
            self.add(run.group())
            self.line_start = True
            return run.end()
        if self.role == "content" and not st.block_as_text:
            # JSON quoted in the answer whose closing quote, unescaped, ended the answer
            # instead: closed, so the answer reads whole.
            st.emit_text(quoted_json_closing("".join(self.chars)))
        st.pos = j + 1  # where the value ends (a tool name's position is checked)
        self.finish()
        return j + 1

    def _escape(self, j: int) -> int:
        nxt, hexa = self.st.buf[j + 1 : j + 2], self.st.buf[j + 2 : j + 6]
        if not self.st.final and (not nxt or (nxt == "u" and len(hexa) < 4)):
            self.st.pos = j
            return WAIT
        if nxt != "u" or not _HEX4.fullmatch(hexa):
            # An unknown escape gives its character, `\u` without four hex digits a `u`.
            self.add("u" if nxt == "u" else _ESCAPES.get(nxt, nxt or "\\"))
            return j + 2
        if self.role == "args":
            self.calls.norm("\\u" + hexa)
        else:
            code = int(hexa, 16)
            self.add("\ufffd" if 0xD800 <= code <= 0xDFFF else chr(code))
        return j + 6

    def _backtick(self, j: int) -> int:
        """A backtick in a string of a fenced block: content, unless it is the block's own
        closing fence (the rule in the module docstring)."""
        if not self.line_start:  # backticks inside a line are content
            end = _BACKTICKS.match(self.st.buf, j)
            assert end is not None  # there is one at `j`
            self.add(end.group())
            return end.end()
        head = self.st.buf[j : j + 3]
        if len(head) < 3 and head == "`" * len(head) and not self.st.final:
            self.st.pos = j
            return WAIT
        if head != "```":
            self.add("`")
            return j + 1
        info = True if self.fence or self.tail not in ("}", "]") else self._fence_info(j + 3)
        if info is None:
            self.st.pos = j
            return WAIT
        if info:
            self.fence = not self.fence  # opens or closes a code block the string holds
            self.add("```")
            return j + 3
        if self.role != "args":
            self.finish()  # an argument string is closed with the arguments
        self.st.pos = j + 3
        return FENCE_END

    def _fence_info(self, k: int) -> bool | None:
        """Does the fence ending at `k` have an info string (anything but blanks before its
        line ends)? None: the text read so far does not say."""
        buf = self.st.buf
        line = buf[k : k + _FENCE_PEEK]
        end = k + len(line) - len(line.lstrip(" \t"))
        if end >= k + _FENCE_PEEK:
            return True
        if end >= len(buf):
            return False if self.st.final else None
        return buf[end] not in "\r\n"

    def add(self, text: str) -> None:
        visible = text.rstrip()
        if visible:
            self.line_start = False
            self.tail = visible[-1]
        role = self.role
        if role == "args":
            self.calls.norm(encode_basestring(text)[1:-1])
        elif role == "content" and not self.st.block_as_text:  # else shown as written
            self.st.block_emitted = True
            self.st.emit_text(text)
            self.chars.append(text)
        elif role != "skip":
            self.chars.append(text)

    def finish(self) -> None:
        """The string ended: its value does what its role says."""
        role, value, calls = self.role, "".join(self.chars), self.calls
        self.quote = None
        if role == "key":
            calls.key_read(value)
            return
        if role == "args":
            calls.norm('"')
        elif role == "args_string":
            calls.args_from_string(value)
        elif role == "name":
            calls.set_name(value)
        elif role == "thought":
            calls.add_thought(value)
        elif role == "kind":
            self.st.typed_final = value.strip().lower() in FINAL_KINDS
        calls.value_ended()


def quoted_json_closing(content: str) -> str:
    """What closes JSON quoted in `content` when it ends inside one of its strings
    (`returned {"status": "shipped` → `"}`), else "". Quotes outside braces are prose."""
    closers: list[str] = []
    in_string = escaped = False
    for ch in content:
        if escaped:
            escaped = False
        elif in_string:
            escaped = ch == "\\"
            in_string = ch != '"'
        elif ch == '"':
            in_string = bool(closers)  # a string opens only inside brackets
        elif ch in "{[":
            closers.append("}" if ch == "{" else "]")
        elif ch in "}]" and closers:
            closers.pop()
    return '"' + "".join(reversed(closers)) if in_string else ""
