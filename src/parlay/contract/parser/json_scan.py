"""The JSON state machine: structural characters, the role of each value, strings with
their escapes, and atoms (numbers, literals, unquoted keys and names).

It reads tolerantly (any quote style, missing colons and commas, stray punctuation) and
routes each value by its role: a tool name, arguments (normalised as they are read), a
thought, final content, or something to skip.
"""

from __future__ import annotations

import json

from parlay.contract.parser.arguments import normalise_atom
from parlay.contract.parser.calls import CallAssembler
from parlay.contract.parser.state import Frame
from parlay.contract.parser.vocabulary import (
    ARGS_KEYS,
    ATOM_CHARS,
    CONTENT_KEYS,
    FINAL_KEYS,
    LITERALS,
    NAME_KEYS,
    QUOTES,
    THOUGHT_KEYS,
    WRAPPER_KEYS,
)

_OPERATORS = frozenset("*/%^()")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "/": "/", "\\": "\\"}


class JsonScanner(CallAssembler):
    """Reads the JSON of an action block, one structural character or string run at a time."""

    __slots__ = ()

    def _structural(self, ch: str) -> None:
        top = self._stack[-1]
        if ch in "\"'“‘”":
            is_key = top.kind == "{" and top.expect in ("key", "comma")
            if is_key and top.expect == "comma":
                self._norm_comma()
            self._begin_string(ch, is_key)
        elif ch in "{[":
            if top.kind == "{" and top.expect in ("key", "comma"):
                # A value where a key should be: read it anyway, under a made-up key so
                # the normalised arguments stay JSON.
                if top.expect == "comma":
                    self._norm_comma()
                top.key = "_"
                top.expect = "value"
                self._norm('"_": ', inner_only=True)
            self._open_value(ch)
        elif ch in "}]":
            self._close_value()
        elif ch == ":":
            if top.kind == "{" and top.expect == "colon":
                top.expect = "value"
                self._norm(": ", inner_only=True)
        elif ch == ",":
            if top.kind == "[":
                top.expect = "value"
                self._norm_comma()
            elif top.expect == "comma":
                top.expect = "key"
                self._norm_comma()
        elif ch in _OPERATORS:
            if self._record is not None and self._args_depth is not None:
                self._record.expression = self._record.expression or ch
        elif ATOM_CHARS.match(ch):
            is_key = top.kind == "{" and top.expect in ("key", "comma")
            if is_key and top.expect == "comma":
                self._norm_comma()
            self._atom = [ch]
            self._atom_is_key = is_key
            if not is_key:
                role = self._value_role()
                if role == "args_start":
                    self._begin_args()
                    role = "args"
                if role == "args":
                    self._norm_value_start()
                self._atom_role = role

    # -- value roles ----------------------------------------------------------------------
    def _value_role(self) -> str:
        """What the value about to start means, from its parent and its key."""
        if self._args_depth is not None:
            return "args"
        if not self._stack:
            return "root"
        top = self._stack[-1]
        key = (top.key or "").lower()
        if top.role in ("root", "call"):
            if key in ARGS_KEYS:
                return "args_start"
            if key in NAME_KEYS or (top.role == "root" and key in WRAPPER_KEYS):
                return "name"  # a string names the tool; an object is a call wrapper
            if top.role == "root" and key in FINAL_KEYS:
                return "final"
            if top.role == "root" and key in THOUGHT_KEYS:
                return "thought"
            return "skip"
        if top.role == "final" and key in CONTENT_KEYS:
            return "content"
        if top.role == "calls":
            return "root"
        return "skip"

    def _open_value(self, kind: str) -> None:
        if self._block_mode == "command" and not self._stack:
            self._begin_args()
            role = "args"
        else:
            role = self._value_role()
            if role == "args_start":
                self._begin_args()
                role = "args"
            elif role == "root":
                if kind == "[":
                    role = "calls"
                else:
                    self._new_record()
            elif role == "name":
                role = "call" if kind == "{" else "skip"
            elif role == "final":
                role = "final" if kind == "{" else "skip"
            elif role != "args":
                role = "skip"
        if role == "args":
            self._norm_value_start()
            self._norm(kind)
        self._stack.append(Frame(kind, role))

    def _close_value(self) -> None:
        frame = self._stack.pop()
        if frame.role == "args" and self._args_depth is not None:
            self._pending_comma = False  # a trailing comma
            if frame.kind == "{" and frame.expect in ("colon", "value"):
                # A last key without its value (`{"a": 1, "b"}`): null keeps the JSON whole.
                self._norm(": null" if frame.expect == "colon" else "null")
            self._norm("}" if frame.kind == "{" else "]")
        if self._args_depth is not None and len(self._stack) == self._args_depth:
            self._args_depth = None
        if frame.role == "root":
            self._end_record(cut=False)
        self._after_value()

    # -- strings --------------------------------------------------------------------------
    def _begin_string(self, quote: str, is_key: bool) -> None:
        self._str_quote = quote
        self._str_close = QUOTES.get(quote, quote)
        self._str_chars = []
        if is_key:
            self._str_role = "key"
            return
        role = self._value_role()
        if role == "args_start":
            self._begin_args()
            self._str_role = "args_string"
        elif role == "args":
            self._str_role = "args"
            self._norm_value_start()
            self._norm('"')
        elif role == "final":
            self._str_role = "content"
        elif role in ("name", "thought", "content"):
            self._str_role = role
        else:
            self._str_role = "skip"

    def _string_span(self, i: int) -> int:
        """Consume string characters from `i`: the index after them, or -1 to wait."""
        buf = self._buf
        close = self._str_close
        n = len(buf)
        j = i
        while j < n:
            ch = buf[j]
            if ch == "\\" or ch == close or ch == "\n" or (ch == "`" and self._block_fenced):
                break
            j += 1
        if j > i:
            self._string_chars(buf[i:j])
        if j >= n:
            self._pos = j
            return j
        ch = buf[j]
        if ch == "\\":
            if j + 1 >= n and not self._final:
                self._pos = j
                return -1
            nxt = buf[j + 1] if j + 1 < n else "\\"
            if nxt == "u":
                hexa = buf[j + 2 : j + 6]
                if len(hexa) < 4 and not self._final:
                    self._pos = j
                    return -1
                if len(hexa) == 4 and all(c in "0123456789abcdefABCDEF" for c in hexa):
                    self._string_escape_u(hexa)
                    return j + 6
                self._string_chars("u")
                return j + 2
            self._string_chars(_ESCAPES.get(nxt, nxt))
            return j + 2
        if ch == "`":
            head = buf[j : j + 3]
            if len(head) < 3 and head == "`" * len(head) and not self._final:
                self._pos = j
                return -1
            if head == "```" and self._line_start_in_block:
                # A fence at the start of a line ends the block even inside a string:
                # the model lost a quote. The block loop closes it from here.
                self._end_string_at_fence()
                return j
            self._string_chars("`")
            return j + 1
        if ch == "\n":
            self._string_chars("\n")
            self._line_start_in_block = True
            return j + 1
        if self._str_role == "content":
            self._close_quoted_json()
        self._finish_string()
        return j + 1

    def _end_string_at_fence(self) -> None:
        if self._str_role == "args":
            return  # left open: _finish_open_args closes it
        self._finish_string()

    def _string_chars(self, text: str) -> None:
        if text.strip():
            self._line_start_in_block = False
        role = self._str_role
        if role == "args":
            self._norm(json.dumps(text, ensure_ascii=False)[1:-1])
        elif role == "content":
            if not self._block_as_text:  # else the whole block is shown as it was written
                self._block_emitted = True
                self._emit_text(text)
                self._str_chars.append(text)
        elif role != "skip":
            self._str_chars.append(text)

    def _close_quoted_json(self) -> None:
        """Final content that quotes JSON and ends inside one of its strings lost the
        quote that closes it: the model wrote it unescaped, and that quote ended the
        content instead (under a grammar the rest is then cut off). Close the quoted JSON
        so the answer reads whole."""
        if self._block_as_text:
            return
        closing = quoted_json_closing("".join(self._str_chars))
        if closing:
            self._emit_text(closing)

    def _string_escape_u(self, hexa: str) -> None:
        if self._str_role == "args":
            self._norm("\\u" + hexa)
            return
        code = int(hexa, 16)
        self._string_chars("\ufffd" if 0xD800 <= code <= 0xDFFF else chr(code))

    def _finish_string(self) -> None:
        role = self._str_role
        value = "".join(self._str_chars)
        self._str_quote = None
        self._str_chars = []
        top = self._stack[-1] if self._stack else None
        if role == "key":
            if top is not None:
                top.key = value
                top.expect = "colon"
            self._norm(json.dumps(value, ensure_ascii=False), inner_only=True)
            return
        if role == "args":
            self._norm('"')
        elif role == "args_string":
            self._args_from_string(value)
        elif role == "name":
            self._set_name(value, (top.key or "") if top else "")
        elif role == "thought":
            self._add_thought(value)
        if self._args_depth is not None and len(self._stack) == self._args_depth:
            self._args_depth = None
        self._after_value()

    # -- atoms (numbers, literals, unquoted keys and names) ---------------------------------
    def _end_atom(self) -> None:
        atom = "".join(self._atom)
        self._atom = []
        top = self._stack[-1] if self._stack else None
        if atom in ("+", "-") and self._record is not None and self._args_depth is not None:
            self._record.expression = self._record.expression or atom
        if self._atom_is_key:
            if top is not None:
                top.key = atom
                top.expect = "colon"
            self._norm(json.dumps(atom, ensure_ascii=False), inner_only=True)
            return
        role = self._atom_role
        if role == "args":
            self._norm(normalise_atom(atom))
        elif role == "name" and atom not in LITERALS:
            self._set_name(atom, (top.key or "") if top else "")
        if self._args_depth is not None and len(self._stack) == self._args_depth:
            self._args_depth = None
        self._after_value()


def quoted_json_closing(content: str) -> str:
    """What closes JSON quoted in `content` when the content ends inside one of its
    strings (`returned {"status": "shipped` → `"}`), else "".

    SmolLM2, restating a tool result under the json format's grammar, escaped the inner
    quotes but not the last one, which then closed the answer: `order_status returned
    {\"status\": \"shipped on 2026-11-20, arriving Tuesday"}}`. Quotes outside braces
    are prose and not tracked.
    """
    open_brackets: list[str] = []
    in_string = escaped = False
    for ch in content:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = bool(open_brackets)
        elif ch in "{[":
            open_brackets.append("}" if ch == "{" else "]")
        elif ch in "}]" and open_brackets:
            open_brackets.pop()
    if not (in_string and open_brackets):
        return ""
    return '"' + "".join(reversed(open_brackets))
