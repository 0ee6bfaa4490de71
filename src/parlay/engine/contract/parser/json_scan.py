"""The JSON of an action block, from its opening to its end: structural characters, the
role of each value, and atoms (numbers, literals, unquoted keys and names); strings are
`strings.py`'s.

It reads tolerantly (any quote style, missing colons and commas, stray punctuation) and
routes each value by its role: a tool name, arguments (normalised as they are read), a
thought, final content, or something to skip. A value nested deeper than `MAX_DEPTH` is
skipped by counting its brackets (no frames, no recursion anywhere); in arguments it is
dropped and noted.
"""

from __future__ import annotations

from typing import Literal

import attrs

import parlay.engine.contract.parser.vocabulary as vocab
from parlay.engine.contract.parser.call_assembly import CallAssembler
from parlay.engine.contract.parser.state import MAX_DEPTH, Frame, FrameRole, ParserState
from parlay.engine.contract.parser.strings import FENCE_END, WAIT, StringReader, StringRole
from parlay.engine.contract.parser.vocabulary import ATOM_CHARS, LITERALS

_OPERATORS = frozenset("*/%^()")
_QUOTE_CHARS = "\"'“‘”"
_IN_STRING = "ended inside a string at a closing fence (a closing quote is missing)"
# What a value about to start means, from its parent and its key.
ValueRole = Literal[
    "args", "args_start", "root", "name", "final", "call_list", "thought", "kind", "content", "skip"
]  # fmt: skip
# What an object or array opening in each role is, as a `{` and as a `[` (else skipped).
_FRAME_ROLES: dict[ValueRole, tuple[FrameRole, FrameRole]] = {
    "args_start": ("args", "args"),
    "args": ("args", "args"),
    "root": ("root", "calls"),
    "name": ("call", "skip"),  # an object where the tool's name goes is a call wrapper
    "final": ("final", "skip"),
    "call_list": ("skip", "calls"),
}
# What a string starting in each role is (else skipped).
_STRING_ROLES: dict[ValueRole, StringRole] = {
    "args_start": "args_string", "args": "args", "final": "content", "content": "content",
    "name": "name", "thought": "thought", "kind": "kind",
}  # fmt: skip


@attrs.define
class JsonScanner:
    """Reads an action block's JSON; strings go to the string reader, what each value is
    for to the call assembler."""

    st: ParserState
    stack: list[Frame]  # the open objects and arrays of the block
    strings: StringReader
    calls: CallAssembler
    atom: list[str] = attrs.Factory(list)  # a number, literal or unquoted word being read
    atom_role: ValueRole | Literal["key"] = "skip"  # what the atom is: a key, or a value's role
    skip_depth: int = 0  # > 0: inside a value nested too deep, skipped

    def open_block(self, start: int, at: int, *, fenced: bool, labeled: bool) -> None:
        """A block starting at `start` (its fence or its `{`), its JSON read from `at`."""
        # The readers' own state was reset when the last block closed.
        st = self.st
        st.blocks += 1
        st.mode = "block"
        st.block_start, st.pos = start, at
        st.block_fenced = fenced
        st.block_labeled = labeled
        st.block_emitted = st.typed_final = False

    def run_block(self, final: bool) -> bool:
        st, strings = self.st, self.strings  # as locals: this loop runs per character
        buf, i = st.buf, st.pos
        n = len(buf)
        while i < n:
            if strings.quote is not None:
                i = strings.span(i)
                if i == WAIT:
                    return False
                if i == FENCE_END:
                    self.close_block(cut=True, why=_IN_STRING)
                    return True
                continue
            ch = buf[i]
            if ch == "`" and st.block_fenced:
                fence = self._block_fence(i, final)
                if fence is not None:
                    return fence
            if self.atom and self.atom_goes_on(ch, i):
                i += 1
                continue
            if ch in " \t\r\n":
                i += 1
                continue
            if self._structural(ch, i):
                return True
            i += 1
        st.pos = i
        return False

    def _structural(self, ch: str, i: int) -> bool:
        """A character outside strings and atoms, not blank; True when a bare block ends with
        its value (it opens at its `{`; a fenced block skips what is outside its value)."""
        if not self.stack:
            if ch in "{[":
                self.open_value(ch)
            return False
        self.structural(ch)
        if self.stack or self.st.block_fenced:
            return False
        self.st.pos = i + 1
        self.close_block(cut=False)
        return True

    def _block_fence(self, i: int, final: bool) -> bool | None:
        """A backtick in a fenced block: its closing fence (True: the block ends), perhaps
        one (False: wait for more), or not (None: read on)."""
        head = self.st.buf[i : i + 3]
        if len(head) < 3 and head == "`" * len(head) and not final:
            self.st.pos = i
            return False
        if head != "```":
            return None
        if self.atom:
            self.st.pos = i
            self.end_atom()
        self.st.pos = i + 3
        self.close_block(cut=False)
        return True

    def close_block(self, cut: bool, why: str = "was cut off") -> None:
        strings, calls, st = self.strings, self.calls, self.st
        if strings.quote is not None and strings.role != "args":
            strings.finish()
        if self.atom and self.atom_role != "args":
            self.end_atom()
        dropped, depth = "".join(self.atom), calls.args_depth  # a cut argument value, if any
        cut = cut and (bool(self.stack) or depth is not None)
        if depth is not None:
            # Close what cut-off arguments left open, so the deltas still concatenate to
            # JSON; a key without its value is dropped with it.
            if not dropped and calls.held_key is not None:
                dropped = f"the key {calls.held_key} without its value"
            closers = '"' if strings.quote is not None else ""
            closers += "".join("}" if f.kind == "{" else "]" for f in reversed(self.stack[depth:]))
            if closers:
                calls.norm(closers)
        calls.end_record(cut=cut, why=why, dropped=dropped)
        if st.block_as_text:
            st.block_as_text = False
            st.emit_text(st.buf[st.block_start : st.pos])
        self.stack.clear()
        calls.args_depth = calls.held_key = None
        self.skip_depth = 0
        strings.quote = None
        self.atom = []
        st.mode = "text"
        st.line_blank = not st.block_fenced

    def structural(self, ch: str) -> None:
        if self.skip_depth:
            self._skipped(ch)
            return
        top = self.stack[-1]
        wants_key = top.kind == "{" and not top.awaits_value
        if ch in _QUOTE_CHARS:
            self.begin_string(ch, wants_key)
        elif ch in "{[":
            if wants_key:
                # A value where a key should be: read it anyway, under a made-up key so
                # the normalised arguments stay JSON.
                self.calls.key_read("_")
            self.open_value(ch)
        elif ch in "}]":
            self.close_value()
        elif ch in _OPERATORS:
            self.calls.operator(ch)
        elif ATOM_CHARS.match(ch):
            self.atom = [ch]
            role = "key" if wants_key else self._start_value()
            self.atom_role = "args" if role == "args_start" else role

    def _skipped(self, ch: str) -> None:
        """A character of a value nested too deep: only strings and brackets count."""
        if ch in _QUOTE_CHARS:
            self.begin_string(ch, False)
        elif ch in "{[":
            self.skip_depth += 1
        elif ch in "}]":
            self.skip_depth -= 1
            if not self.skip_depth:
                self.calls.value_ended()

    def value_role(self) -> ValueRole:
        if self.calls.args_depth is not None:
            return "args"
        if not self.stack:
            return "root"
        top = self.stack[-1]
        key = (top.key or "").lower()
        if top.role == "root" or top.role == "call":
            return self._member_role(top.role == "root", key)
        if top.role == "final" and key in vocab.CONTENT_KEYS:
            return "content"
        return "root" if top.role == "calls" else "skip"

    def _member_role(self, at_root: bool, key: str) -> ValueRole:
        """The role of the value under `key` in an action object (or a call inside one)."""
        if key in vocab.ARGS_KEYS:
            # The first arguments of a call are its arguments: a second set would make
            # the streamed JSON two objects.
            record = self.calls.record
            return "skip" if record is not None and record.args_seen else "args_start"
        if key in vocab.NAME_KEYS or (at_root and key in vocab.WRAPPER_KEYS):
            return "name"  # a string names the tool; an object is a call wrapper
        if not at_root:
            return "skip"
        if key in vocab.FINAL_KEYS:
            return "final"
        if key in vocab.LIST_KEYS:
            return "call_list"
        if key in vocab.THOUGHT_KEYS:
            return "thought"
        if key == vocab.KIND_KEY:
            return "kind"
        return "final" if self.st.typed_final and key in vocab.CONTENT_KEYS else "skip"

    def _start_value(self) -> ValueRole:
        """The role of the value starting here; the start of a call's arguments begins them."""
        role = self.value_role()
        if role == "args_start":
            self.calls.begin_args()
        return role

    def open_value(self, kind: str) -> None:
        if len(self.stack) >= MAX_DEPTH:
            self.skip_depth = 1
            if self.calls.args_depth is not None or self.value_role() == "args_start":
                self.calls.held_key = None
                detail = f"a value nested deeper than {MAX_DEPTH} levels was dropped"
                self.calls.note("unreadable_arguments", detail)
            return
        bracket: Literal["{", "["] = "{" if kind == "{" else "["
        value = self._start_value()
        if value == "root" and bracket == "{":
            self.calls.new_record()
        role = _FRAME_ROLES.get(value, ("skip", "skip"))[bracket == "["]
        if role == "args":
            record = self.calls.record
            if record is not None and len(self.stack) == self.calls.args_depth:
                record.args_object = bracket == "{"
            self.calls.norm_member(bracket)
        self.stack.append(Frame(bracket, role))

    def close_value(self) -> None:
        frame = self.stack.pop()
        calls = self.calls
        if frame.role == "args" and calls.args_depth is not None:
            if frame.kind == "{" and frame.awaits_value:
                # A last key without its value, the object closed (`{"a": 1, "b"}`): null
                # keeps the key the model wrote. (Cut off instead, the key is dropped.)
                self.stack.append(frame)
                calls.norm_member("null")
                self.stack.pop()
            calls.norm("}" if frame.kind == "{" else "]")
        calls.value_ended()
        if frame.role == "root":
            calls.end_record(cut=False)

    def begin_string(self, quote: str, is_key: bool) -> None:
        if self.skip_depth or is_key:
            self.strings.begin(quote, "skip" if self.skip_depth else "key")
            return
        role = self._start_value()
        if role == "args":
            self.calls.norm_member('"')
        self.strings.begin(quote, _STRING_ROLES.get(role, "skip"))

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
        if atom in ("+", "-"):
            self.calls.operator(atom)
        if self.atom_role == "key":
            self.calls.key_read(atom)
            return
        if self.atom_role == "args":
            self.calls.atom(atom)
        elif self.atom_role == "name" and atom not in LITERALS:
            self.calls.set_name(atom)
        self.calls.value_ended()
