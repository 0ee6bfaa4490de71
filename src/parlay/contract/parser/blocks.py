"""One action block, from its opening to its end: the block loop that feeds the JSON
scanner, and closing the block (as calls, or shown as the text it was)."""

from __future__ import annotations

from parlay.contract.parser.json_scan import JsonScanner
from parlay.contract.parser.state import Record
from parlay.contract.parser.strings import FENCE_END, WAIT
from parlay.contract.parser.vocabulary import ATOM_CHARS

_IN_STRING = "ended inside a string at a closing fence (a closing quote is missing)"


class BlockReader(JsonScanner):
    """Opens, reads and closes action blocks (fenced, bare JSON objects, command arguments)."""

    __slots__ = ()

    def _open_block(
        self,
        start: int,
        *,
        fenced: bool,
        labeled: bool,
        at: int | None = None,
        mode: str = "call",
    ) -> None:
        self._blocks += 1
        self._state = "block"
        self._block_start = start
        self._block_fenced = fenced
        self._block_labeled = labeled
        self._block_mode = mode
        self._block_as_text = False
        self._block_emitted = False
        self._stack = []
        self._record = Record() if mode == "command" else None
        self._args_depth = None
        self._held_key = None
        self._skip_depth = 0
        self._str_quote = None
        self._str_fence = False
        self._atom = []
        self._line_start_in_block = False
        self._typed_final = False
        if at is not None:
            self._pos = at

    def _run_block(self, final: bool) -> bool:
        buf = self._buf
        i = self._pos
        n = len(buf)
        while i < n:
            if self._str_quote is not None:
                i = self._string_span(i)
                if i < 0:
                    if i == FENCE_END:
                        self._close_block(cut=True, why=_IN_STRING)
                        return True
                    assert i == WAIT
                    return False  # an escape or a possible fence is cut: wait for more
                continue
            ch = buf[i]
            if ch == "`" and self._block_fenced:
                fence = self._block_fence(i, final)
                if fence is not None:
                    return fence
            if self._atom:
                if ATOM_CHARS.match(ch):
                    self._atom.append(ch)
                    i += 1
                    continue
                self._pos = i  # where the value ends (a tool name's position is checked)
                self._end_atom()
            if ch == "\n":
                self._line_start_in_block = True
                i += 1
                continue
            if ch in " \t\r":
                i += 1
                continue
            self._line_start_in_block = False
            if not self._stack:
                if ch in "{[" and not (self._block_mode == "command" and self._record is None):
                    self._open_value(ch)
                    i += 1
                    continue
                if not self._block_fenced:
                    self._pos = i
                    self._close_block(cut=False)
                    return True
                i += 1  # junk between objects in a fence
                continue
            self._structural(ch)
            i += 1
            if not self._stack and not self._block_fenced and not self._atom:
                self._pos = i
                self._close_block(cut=False)
                return True
        self._pos = i
        return False

    def _block_fence(self, i: int, final: bool) -> bool | None:
        """A backtick in a fenced block: its closing fence (True: the block ends), perhaps
        one (False: wait for more), or not (None: read on)."""
        head = self._buf[i : i + 3]
        if len(head) < 3 and head == "`" * len(head) and not final:
            self._pos = i
            return False
        if head != "```":
            return None
        if self._atom:
            self._pos = i
            self._end_atom()
        self._pos = i + 3
        self._close_block(cut=False)
        return True

    # -- block end ------------------------------------------------------------------------
    def _close_block(self, cut: bool, why: str = "was cut off") -> None:
        if self._str_quote is not None and self._str_role != "args":
            self._finish_string()
        if self._atom and not (self._atom_role == "args" and not self._atom_is_key):
            self._end_atom()
        cut = cut and (bool(self._stack) or self._args_depth is not None)
        if self._record is not None:
            self._end_record(cut=cut, why=why)
        if self._block_as_text:
            self._block_as_text = False
            self._emit_text(self._buf[self._block_start : self._pos])
        self._stack = []
        self._args_depth = None
        self._held_key = None
        self._skip_depth = 0
        self._str_quote = None
        self._str_fence = False
        self._atom = []
        self._state = "text"
        self._line_blank = not self._block_fenced
