"""What the parser's readers share: where the reading stands, its size bounds, and the
output plumbing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import attrs

from parlay.engine.contract.parser.results import ProblemKind
from parlay.events import Event, TextDelta, ToolCallArgsDelta

THOUGHT_LIMIT = 200
# A block whose tool name is not read within this many characters of its start is settled
# as an action, so its raw text need not be kept in case it turns out to be prose.
MAX_UNDECIDED = 4096
# Values nested deeper than this in a block are skipped (dropped, and noted in arguments).
MAX_DEPTH = 100


def _slot_setters(cls: type, *names: str) -> list[Callable[[Any, str], None]]:
    """The slot setters of an attrs class whose fields are exactly the plain `names`."""
    fields = attrs.fields(cls)
    plain = not any(f.converter or f.validator for f in fields)
    if [f.name for f in fields] != list(names) or not plain or hasattr(cls, "__attrs_post_init__"):
        raise TypeError(f"{cls.__name__} changed: update parser.state's delta makers")
    return [vars(cls)[name].__set__ for name in names]


# A streamed reply is mostly one delta per chunk, and attrs' frozen `__init__` is most of
# what a chunk of prose costs: these make the same objects by setting the slots directly.
new_text_delta = object.__new__
(set_text,) = _slot_setters(TextDelta, "text")
_set_id, _set_delta = _slot_setters(ToolCallArgsDelta, "id", "delta")


def text_delta(text: str) -> TextDelta:
    delta = new_text_delta(TextDelta)
    set_text(delta, text)
    return delta


def args_delta(call_id: str, text: str) -> ToolCallArgsDelta:
    delta = new_text_delta(ToolCallArgsDelta)
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
    """One open JSON object or array, and what it expects next."""

    kind: Literal["{", "["]
    role: FrameRole
    expect: Literal["key", "colon", "value", "comma"]
    key: str | None = None
    members: int = 0  # values written so far (argument frames: a comma before the next)


@attrs.define
class Record:
    """One call object being read."""

    name: str | None = None
    id: str | None = None
    started: bool = False
    args_json: list[str] = attrs.Factory(list)  # normalised argument JSON, all of it
    args_pending: list[str] = attrs.Factory(list)  # of it, not yet emitted (before the start)
    args_seen: bool = False
    # The arguments are an object: only then do they stream (anything else is reported
    # as unreadable and the call gets `{}`, so the deltas always load to its arguments).
    args_object: bool = False
    args_string: str | None = None  # arguments given as a JSON string
    notes: list[tuple[ProblemKind, str]] = attrs.Factory(list)  # problems in the arguments
    # An operator met between argument values (`2 * Math.PI`): JSON has no arithmetic,
    # and reading on would shift keys and values, so the call is reported unreadable.
    expression: str | None = None


@attrs.define
class ParserState:
    """Where the reading stands and what went out: the text read and not yet consumed, the
    reader's mode, the block being read, the events and visible text emitted. The readers
    share it; each keeps its own state."""

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
    line_start_in_block: bool = True
    # The block's `"type"` said it is a final answer: its `"content"` is the answer.
    typed_final: bool = False

    def take(self) -> list[Event]:
        if self.pending:
            self.flush_text()
        out, self.out = self.out, []
        return out

    def emit_text(self, text: str) -> None:
        if text:
            self.text.append(text)
            self.pending.append(text)

    def flush_text(self) -> None:
        # Text pieces join into one delta per run of text (joined once: linear).
        if self.pending:
            self.out.append(text_delta("".join(self.pending)))
            self.pending = []

    def emit(self, event: Event) -> None:
        if self.pending:
            self.flush_text()
        self.out.append(event)
