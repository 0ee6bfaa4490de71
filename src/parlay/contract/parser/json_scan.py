"""The JSON state machine: structural characters, the role of each value, and atoms
(numbers, literals, unquoted keys and names); strings are `strings.py`'s.

It reads tolerantly (any quote style, missing colons and commas, stray punctuation) and
routes each value by its role: a tool name, arguments (normalised as they are read), a
thought, final content, or something to skip. A value nested deeper than `MAX_DEPTH` is
skipped by counting its brackets (no frames, no recursion anywhere); in arguments it is
dropped and noted.
"""

from __future__ import annotations

from parlay.contract.parser.arguments import normalise_atom, overlong_number
from parlay.contract.parser.state import MAX_DEPTH, Frame
from parlay.contract.parser.strings import StringReader
from parlay.contract.parser.vocabulary import (
    ARGS_KEYS,
    ATOM_CHARS,
    CONTENT_KEYS,
    FINAL_KEYS,
    KIND_KEY,
    LIST_KEYS,
    LITERALS,
    NAME_KEYS,
    QUOTES,
    THOUGHT_KEYS,
    WRAPPER_KEYS,
)

_OPERATORS = frozenset("*/%^()")


class JsonScanner(StringReader):
    """Reads the JSON of an action block, one structural character or string run at a time."""

    __slots__ = ()

    def _structural(self, ch: str) -> None:
        if self._skip_depth:
            self._skipped(ch)
            return
        top = self._stack[-1]
        if ch in "\"'“‘”":
            self._begin_string(ch, top.kind == "{" and top.expect in ("key", "comma"))
        elif ch in "{[":
            if top.kind == "{" and top.expect in ("key", "comma"):
                # A value where a key should be: read it anyway, under a made-up key so
                # the normalised arguments stay JSON.
                top.key = "_"
                top.expect = "value"
                self._hold_key("_")
            self._open_value(ch)
        elif ch in "}]":
            self._close_value()
        elif ch == ":":
            if top.kind == "{" and top.expect == "colon":
                top.expect = "value"
        elif ch == ",":
            if top.kind == "[":
                top.expect = "value"
            elif top.expect == "comma":
                top.expect = "key"
        elif ch in _OPERATORS:
            if self._record is not None and self._args_depth is not None:
                self._record.expression = self._record.expression or ch
        elif ATOM_CHARS.match(ch):
            is_key = top.kind == "{" and top.expect in ("key", "comma")
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

    def _skipped(self, ch: str) -> None:
        """A character of a value nested too deep: only strings and brackets count."""
        if ch in "\"'“‘”":
            self._begin_string(ch, False)
        elif ch in "{[":
            self._skip_depth += 1
        elif ch in "}]":
            self._skip_depth -= 1
            if not self._skip_depth:
                self._after_value()

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
                # The first arguments of a call are its arguments: a second set would
                # make the streamed JSON two objects.
                record = self._record
                return "skip" if record is not None and record.args_seen else "args_start"
            if key in NAME_KEYS or (top.role == "root" and key in WRAPPER_KEYS):
                return "name"  # a string names the tool; an object is a call wrapper
            if top.role == "root" and key in FINAL_KEYS:
                return "final"
            if top.role == "root" and key in LIST_KEYS:
                return "call_list"
            if top.role == "root" and key in THOUGHT_KEYS:
                return "thought"
            if top.role == "root" and key == KIND_KEY:
                return "kind"
            if top.role == "root" and self._typed_final and key in CONTENT_KEYS:
                return "final"
            return "skip"
        if top.role == "final" and key in CONTENT_KEYS:
            return "content"
        if top.role == "calls":
            return "root"
        return "skip"

    def _open_value(self, kind: str) -> None:
        if len(self._stack) >= MAX_DEPTH:
            self._skip_too_deep()
            return
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
            elif role == "call_list":
                role = "calls" if kind == "[" else "skip"
            elif role != "args":
                role = "skip"
        if role == "args":
            record = self._record
            if record is not None and len(self._stack) == self._args_depth:
                record.args_object = kind == "{"
            self._norm_value_start()
            self._norm_member(kind)
        self._stack.append(Frame(kind, role))

    def _skip_too_deep(self) -> None:
        self._skip_depth = 1
        if self._args_depth is not None or self._value_role() == "args_start":
            self._held_key = None
            self._note(
                "unreadable_arguments",
                f"a value nested deeper than {MAX_DEPTH} levels was dropped",
            )

    def _close_value(self) -> None:
        frame = self._stack.pop()
        if frame.role == "args" and self._args_depth is not None:
            if frame.kind == "{" and frame.expect in ("colon", "value"):
                # A last key without its value, the object closed (`{"a": 1, "b"}`): null
                # keeps the key the model wrote. (Cut off instead, the key is dropped.)
                self._stack.append(frame)
                self._norm_member("null")
                self._stack.pop()
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
        self._str_fence = False
        self._str_tail = ""
        self._line_start_in_block = True  # a string's text starts a line of its own
        if self._skip_depth:
            self._str_role = "skip"
            return
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
            self._norm_member('"')
        elif role == "final":
            self._str_role = "content"
        elif role in ("name", "thought", "content", "kind"):
            self._str_role = role
        else:
            self._str_role = "skip"

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
            self._hold_key(atom)
            return
        role = self._atom_role
        if role == "args":
            note = overlong_number(atom)
            if note:
                self._note("unreadable_arguments", note)
            self._norm_member(normalise_atom(atom))
        elif role == "name" and atom not in LITERALS:
            self._set_name(atom, (top.key or "") if top else "")
        if self._args_depth is not None and len(self._stack) == self._args_depth:
            self._args_depth = None
        self._after_value()
