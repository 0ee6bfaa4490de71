"""One action block, from its opening to its end: the block loop that feeds the JSON
scanner, and closing the block (as calls, or shown as the text it was)."""

from __future__ import annotations

from parlay.engine.contract.parser.json_scan import JsonScanner
from parlay.engine.contract.parser.state import ParserState
from parlay.engine.contract.parser.strings import FENCE_END, WAIT

_IN_STRING = "ended inside a string at a closing fence (a closing quote is missing)"


class BlockReader:
    """Opens, reads and closes action blocks (fenced or bare JSON objects): the loop that
    hands each character to the string reader or the scanner."""

    __slots__ = ("calls", "scanner", "st", "stack", "strings")

    def __init__(self, st: ParserState, scanner: JsonScanner) -> None:
        self.st = st
        self.scanner = scanner
        self.stack = scanner.stack
        self.strings = scanner.strings
        self.calls = scanner.calls

    def open_block(self, start: int, *, fenced: bool, labeled: bool, at: int | None = None) -> None:
        self.st.blocks += 1
        self.st.mode = "block"
        self.st.block_start = start
        self.st.block_fenced = fenced
        self.st.block_labeled = labeled
        self.st.block_as_text = False
        self.st.block_emitted = False
        self.scanner.reset_block()
        self.calls.reset_block()
        self.strings.quote = None
        self.strings.fence = False
        self.st.line_start_in_block = False
        self.st.typed_final = False
        if at is not None:
            self.st.pos = at

    def run_block(self, final: bool) -> bool:
        # The readers as locals: this loop runs per character.
        st, strings, scanner = self.st, self.strings, self.scanner
        buf, i = st.buf, st.pos
        n = len(buf)
        while i < n:
            if strings.quote is not None:
                i = strings.span(i)
                if i < 0:
                    return self._string_stopped(i)
                continue
            ch = buf[i]
            if ch == "`" and st.block_fenced:
                fence = self._block_fence(i, final)
                if fence is not None:
                    return fence
            if scanner.atom and scanner.atom_goes_on(ch, i):
                i += 1
                continue
            if ch in " \t\r\n":
                st.line_start_in_block = st.line_start_in_block or ch == "\n"
                i += 1
                continue

            st.line_start_in_block = False
            if self._structural(ch, i):
                return True
            i += 1
        st.pos = i
        return False

    def _string_stopped(self, stop: int) -> bool:
        """A string's span stopped: at a fence that ends the block (True), or at an escape
        or a possible fence the text read so far cuts (False: wait for more)."""
        if stop == FENCE_END:
            self.close_block(cut=True, why=_IN_STRING)
            return True
        assert stop == WAIT
        return False

    def _structural(self, ch: str, i: int) -> bool:
        """A character outside strings and atoms, not blank; True when the block ends."""
        if not self.stack:
            return self._outside_values(ch, i)
        self.scanner.structural(ch)
        if not self.stack and not self.st.block_fenced and not self.scanner.atom:
            return self._ends_at(i + 1)
        return False

    def _outside_values(self, ch: str, i: int) -> bool:
        """A character outside any JSON value of the block: a value opens, the block ends
        (True: not fenced), or it is junk between objects in a fence."""
        if ch in "{[":
            self.scanner.open_value(ch)
            return False
        return False if self.st.block_fenced else self._ends_at(i)

    def _ends_at(self, i: int) -> bool:
        """The block ends before `i` (True, for the block loop to return)."""
        self.st.pos = i
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
        if self.scanner.atom:
            self.st.pos = i
            self.scanner.end_atom()
        self.st.pos = i + 3
        self.close_block(cut=False)
        return True

    # -- block end ------------------------------------------------------------------------
    def close_block(self, cut: bool, why: str = "was cut off") -> None:
        if self.strings.quote is not None and self.strings.role != "args":
            self.strings.finish()
        if self.scanner.atom and not (
            self.scanner.atom_role == "args" and not self.scanner.atom_is_key
        ):
            self.scanner.end_atom()
        cut = cut and (bool(self.stack) or self.calls.args_depth is not None)
        dropped = self._finish_open_args() if self.calls.args_depth is not None else ""
        if self.calls.record is not None:
            self.calls.end_record(cut=cut, why=why, dropped=dropped)
        if self.st.block_as_text:
            self.st.block_as_text = False
            self.st.emit_text(self.st.buf[self.st.block_start : self.st.pos])
        self.stack.clear()
        self.calls.args_depth = None
        self.calls.held_key = None
        self.scanner.skip_depth = 0
        self.strings.quote = None
        self.strings.fence = False
        self.scanner.atom = []
        self.st.mode = "text"
        self.st.line_blank = not self.st.block_fenced

    def _finish_open_args(self) -> str:
        """Close what cut-off arguments left open, so the deltas still concatenate to JSON.

        Returns what was dropped (a partial atom, or a key without its value), or "".
        """
        closers: list[str] = []
        dropped = ""
        if self.strings.quote is not None and self.strings.role == "args":
            closers.append('"')
            self.strings.quote = None
        if self.scanner.atom and self.scanner.atom_role == "args":
            dropped = "".join(self.scanner.atom)
            self.scanner.atom = []
        if self.calls.held_key is not None:
            dropped = dropped or f"the key {self.calls.held_key} without its value"
            self.calls.held_key = None
        depth = self.calls.args_depth or 0
        for frame in reversed(self.stack[depth:]):
            if frame.role == "args":
                closers.append("}" if frame.kind == "{" else "]")
        if closers:
            self.calls.norm("".join(closers))
        del self.stack[depth:]
        self.calls.args_depth = None
        self.scanner.skip_depth = 0
        return dropped
