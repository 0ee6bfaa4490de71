"""What the parser's readers share: where the reading stands, its size bounds, and the
output plumbing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import attrs

from parlay.events import Event, TextDelta, ToolCallArgsDelta

THOUGHT_LIMIT = 200
# A block whose tool name is not read within this many characters of its start is settled
# as an action, so its raw text need not be kept in case it turns out to be prose.
MAX_UNDECIDED = 4096
# Values nested deeper than this in a block are skipped (dropped, and noted in arguments).
MAX_DEPTH = 100


# A streamed reply is mostly one delta per chunk, and attrs' frozen `__init__` is most of
# what a chunk costs: these make the same objects by setting their slots directly (the
# parser's stream tests check that they equal what the classes make).
new_event = object.__new__
set_text = vars(TextDelta)["text"].__set__
_set_id = vars(ToolCallArgsDelta)["id"].__set__
_set_delta = vars(ToolCallArgsDelta)["delta"].__set__


def text_delta(text: str) -> TextDelta:
    delta = new_event(TextDelta)
    set_text(delta, text)
    return delta


def args_delta(call_id: str, text: str) -> ToolCallArgsDelta:
    delta = new_event(ToolCallArgsDelta)
    _set_id(delta, call_id)
    _set_delta(delta, text)
    return delta


# What the text reader is reading: prose, a fence's info string, an action block, or a
# code fence shown as text.
ReaderMode = Literal["text", "info", "block", "code"]
# What an open object or array of a block is: the action, a call inside a wrapper, the
# final answer, a list of calls, arguments, or something skipped.
FrameRole = Literal["root", "call", "final", "calls", "args", "skip"]


@attrs.define
class Frame:
    """One open JSON object or array."""

    kind: Literal["{", "["]
    role: FrameRole
    key: str | None = None
    # An object's key was read and its value has not ended: what comes next is the value,
    # not a key. Colons and commas are not needed to tell, so they are not read.
    awaits_value: bool = False
    members: int = 0  # values written so far (argument frames: a comma before the next)


@attrs.define
class ParserState:
    """What the readers share: the text read and not yet consumed, the mode, the block
    being read, the events and visible text emitted (each reader keeps its own state)."""

    tools: frozenset[str]
    new_id: Callable[[], str]
    thought_limit: int
    buf: str = ""
    pos: int = 0
    mode: ReaderMode = "text"
    line_blank: bool = True
    out: list[Event] = attrs.Factory(list)
    pending: list[str] = attrs.Factory(list)  # text not yet in a delta
    # Text mode, nothing held back, the line not blank: `feed` may take its fast path.
    plain: bool = False
    text: list[str] = attrs.Factory(list)
    blocks: int = 0
    ended: bool = False
    final: bool = False
    # the block being read
    block_start: int = 0
    block_fenced: bool = False
    block_labeled: bool = False
    block_as_text: bool = False
    block_emitted: bool = False
    # The block's `"type"` said it is a final answer: its `"content"` is the answer.
    typed_final: bool = False

    def take(self) -> list[Event]:
        self._flush_text()
        out, self.out = self.out, []
        return out

    def emit_text(self, text: str) -> None:
        if text:
            self.text.append(text)
            self.pending.append(text)

    def _flush_text(self) -> None:
        if self.pending:  # one delta per run of text, its pieces joined once (linear)
            self.out.append(text_delta("".join(self.pending)))
            self.pending = []

    def emit(self, event: Event) -> None:
        self._flush_text()
        self.out.append(event)

    def compact(self) -> None:
        """Drop consumed text, so each feed costs what it adds. A block's text is kept
        only while the block may still turn out to be text (for MAX_UNDECIDED at most)."""
        pos = keep = self.pos
        if self.mode == "block":
            if self.block_as_text:
                self.emit_text(self.buf[self.block_start : pos])
                self.block_start = pos
            elif not (self.block_labeled or self.block_emitted):
                if pos - self.block_start > MAX_UNDECIDED:
                    # The name, if it comes, comes too late to make this block text
                    # (`CallAssembler.set_name`): it is an action, its raw text not kept.
                    self.block_labeled = True
                else:
                    keep = min(self.block_start, pos)
        elif self.mode == "info":
            keep = min(self.block_start, pos)
        if keep > 0:
            self.buf = self.buf[keep:]
            self.pos = pos - keep
            self.block_start -= keep
