"""The JSON state machine: structural characters, the role of each value, and atoms
(numbers, literals, unquoted keys and names); strings are `strings.py`'s.

It reads tolerantly (any quote style, missing colons and commas, stray punctuation) and
routes each value by its role: a tool name, arguments (normalised as they are read), a
thought, final content, or something to skip. A value nested deeper than `MAX_DEPTH` is
skipped by counting its brackets (no frames, no recursion anywhere); in arguments it is
dropped and noted.
"""

from __future__ import annotations

from typing import Literal

from parlay.engine.contract.parser.arguments import normalise_atom, overlong_number
from parlay.engine.contract.parser.calls import CallAssembler
from parlay.engine.contract.parser.state import (
    MAX_DEPTH,
    Frame,
    FrameRole,
    ParserState,
    after_value,
)
from parlay.engine.contract.parser.strings import StringReader
from parlay.engine.contract.parser.vocabulary import (
    ARGS_KEYS,
    ATOM_CHARS,
    CONTENT_KEYS,
    FINAL_KEYS,
    KIND_KEY,
    LIST_KEYS,
    LITERALS,
    NAME_KEYS,
    THOUGHT_KEYS,
    WRAPPER_KEYS,
)

_OPERATORS = frozenset("*/%^()")
# What a value about to start means, from its parent and its key.
ValueRole = Literal[
    "args", "args_start", "root", "name", "final", "call_list", "thought", "kind", "content",
    "skip",
]  # fmt: skip


class JsonScanner:
    """Reads the JSON of an action block, one structural character at a time, and says
    what each value is for (a tool name, arguments, a thought, final content)."""

    __slots__ = (
        "atom",
        "atom_is_key",
        "atom_role",
        "calls",
        "skip_depth",
        "st",
        "stack",
        "strings",
    )

    def __init__(
        self, st: ParserState, stack: list[Frame], strings: StringReader, calls: CallAssembler
    ) -> None:
        self.st = st
        self.stack = stack  # the open objects and arrays of the block
        self.strings = strings
        self.calls = calls
        self.atom: list[str] = []  # a number, literal or unquoted word being read
        self.atom_is_key = False
        self.atom_role = ""
        self.skip_depth = 0  # > 0: inside a value nested too deep, skipped

    def reset_block(self) -> None:
        self.stack.clear()
        self.atom = []
        self.skip_depth = 0

    def structural(self, ch: str) -> None:
        if self.skip_depth:
            self._skipped(ch)
            return
        top = self.stack[-1]
        if ch in "\"'“‘”":
            self.begin_string(ch, top.kind == "{" and top.expect in ("key", "comma"))
        elif ch in "{[":
            if top.kind == "{" and top.expect in ("key", "comma"):
                # A value where a key should be: read it anyway, under a made-up key so
                # the normalised arguments stay JSON.
                top.key = "_"
                top.expect = "value"
                self.calls.hold_key("_")
            self.open_value(ch)
        elif ch in "}]":
            self.close_value()
        elif ch in ":,":
            _punctuate(top, ch)
        elif ch in _OPERATORS:
            if self.calls.record is not None and self.calls.args_depth is not None:
                self.calls.record.expression = self.calls.record.expression or ch
        elif ATOM_CHARS.match(ch):
            self._begin_atom(top, ch)

    def _begin_atom(self, top: Frame, ch: str) -> None:
        """A number, literal or unquoted word starts: a key, or a value of some role."""
        is_key = top.kind == "{" and top.expect in ("key", "comma")
        self.atom = [ch]
        self.atom_is_key = is_key
        if not is_key:
            role = self.value_role()
            if role == "args_start":
                self.calls.begin_args()
                role = "args"
            if role == "args":
                self.calls.norm_value_start()
            self.atom_role = role

    def _skipped(self, ch: str) -> None:
        """A character of a value nested too deep: only strings and brackets count."""
        if ch in "\"'“‘”":
            self.begin_string(ch, False)
        elif ch in "{[":
            self.skip_depth += 1
        elif ch in "}]":
            self.skip_depth -= 1
            if not self.skip_depth:
                after_value(self.stack)

    def value_role(self) -> ValueRole:
        """What the value about to start means, from its parent and its key."""
        if self.calls.args_depth is not None:
            return "args"
        if not self.stack:
            return "root"
        top = self.stack[-1]
        key = (top.key or "").lower()
        if top.role in ("root", "call"):
            return self._member_role(top.role == "root", key)
        if top.role == "final" and key in CONTENT_KEYS:
            return "content"
        if top.role == "calls":
            return "root"
        return "skip"

    def _member_role(self, at_root: bool, key: str) -> ValueRole:
        """The role of the value under `key` in an action object (or a call inside one)."""
        if key in ARGS_KEYS:
            # The first arguments of a call are its arguments: a second set would make
            # the streamed JSON two objects.
            record = self.calls.record
            return "skip" if record is not None and record.args_seen else "args_start"
        if key in NAME_KEYS or (at_root and key in WRAPPER_KEYS):
            return "name"  # a string names the tool; an object is a call wrapper
        if not at_root:
            return "skip"
        if key in FINAL_KEYS:
            return "final"
        if key in LIST_KEYS:
            return "call_list"
        if key in THOUGHT_KEYS:
            return "thought"
        if key == KIND_KEY:
            return "kind"
        return "final" if self.st.typed_final and key in CONTENT_KEYS else "skip"

    def open_value(self, kind: str) -> None:

        if len(self.stack) >= MAX_DEPTH:
            self._skip_too_deep()
            return
        bracket: Literal["{", "["] = "{" if kind == "{" else "["
        role = self._frame_role(bracket)
        if role == "args":
            record = self.calls.record
            if record is not None and len(self.stack) == self.calls.args_depth:
                record.args_object = bracket == "{"
            self.calls.norm_value_start()
            self.calls.norm_member(bracket)
        self.stack.append(Frame(bracket, role))

    def _frame_role(self, kind: Literal["{", "["]) -> FrameRole:
        """What the object or array opening here is (starting a call's record or its
        arguments on the way)."""
        role = self.value_role()
        if role == "args_start":
            self.calls.begin_args()
            return "args"
        if role == "root":
            if kind == "[":
                return "calls"
            self.calls.new_record()
            return "root"
        if role == "name":
            return "call" if kind == "{" else "skip"
        if role == "final":
            return "final" if kind == "{" else "skip"
        if role == "call_list":
            return "calls" if kind == "[" else "skip"
        return "args" if role == "args" else "skip"

    def _skip_too_deep(self) -> None:
        self.skip_depth = 1
        if self.calls.args_depth is not None or self.value_role() == "args_start":
            self.calls.held_key = None
            self.calls.note(
                "unreadable_arguments",
                f"a value nested deeper than {MAX_DEPTH} levels was dropped",
            )

    def close_value(self) -> None:
        frame = self.stack.pop()
        if frame.role == "args" and self.calls.args_depth is not None:
            if frame.kind == "{" and frame.expect in ("colon", "value"):
                # A last key without its value, the object closed (`{"a": 1, "b"}`): null
                # keeps the key the model wrote. (Cut off instead, the key is dropped.)
                self.stack.append(frame)
                self.calls.norm_member("null")
                self.stack.pop()
            self.calls.norm("}" if frame.kind == "{" else "]")
        if self.calls.args_depth is not None and len(self.stack) == self.calls.args_depth:
            self.calls.args_depth = None
        if frame.role == "root":
            self.calls.end_record(cut=False)
        after_value(self.stack)

    # -- strings --------------------------------------------------------------------------
    def begin_string(self, quote: str, is_key: bool) -> None:
        self.strings.begin(quote)
        self.st.line_start_in_block = True  # a string's text starts a line of its own
        if self.skip_depth:
            self.strings.role = "skip"
            return
        if is_key:
            self.strings.role = "key"
            return
        role = self.value_role()
        if role == "args_start":
            self.calls.begin_args()
            self.strings.role = "args_string"
        elif role == "args":
            self.strings.role = "args"
            self.calls.norm_value_start()
            self.calls.norm_member('"')
        elif role == "final":
            self.strings.role = "content"
        elif role in ("name", "thought", "content", "kind"):
            self.strings.role = role
        else:
            self.strings.role = "skip"

    def atom_goes_on(self, ch: str, i: int) -> bool:
        """Whether `ch`, at `i`, goes on the atom being read; if not, the atom ends there
        (where it ends is kept: a tool name's position is checked)."""
        if ATOM_CHARS.match(ch):
            self.atom.append(ch)
            return True
        self.st.pos = i
        self.end_atom()
        return False

    def end_atom(self) -> None:

        atom = "".join(self.atom)
        self.atom = []
        top = self.stack[-1] if self.stack else None
        if (
            atom in ("+", "-")
            and self.calls.record is not None
            and self.calls.args_depth is not None
        ):
            self.calls.record.expression = self.calls.record.expression or atom
        if self.atom_is_key:
            if top is not None:
                top.key = atom
                top.expect = "colon"
            self.calls.hold_key(atom)
            return
        role = self.atom_role
        if role == "args":
            note = overlong_number(atom)
            if note:
                self.calls.note("unreadable_arguments", note)
            self.calls.norm_member(normalise_atom(atom))
        elif role == "name" and atom not in LITERALS:
            self.calls.set_name(atom, (top.key or "") if top else "")
        if self.calls.args_depth is not None and len(self.stack) == self.calls.args_depth:
            self.calls.args_depth = None
        after_value(self.stack)


def _punctuate(top: Frame, ch: str) -> None:
    """A colon or a comma: the open object or array expects what comes after it."""
    if ch == ":":
        if top.kind == "{" and top.expect == "colon":
            top.expect = "value"
    elif top.kind == "[":
        top.expect = "value"
    elif top.expect == "comma":
        top.expect = "key"
