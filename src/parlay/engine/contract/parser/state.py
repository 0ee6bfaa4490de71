"""What the parser's readers share: where the reading stands, its size bounds, and the
output plumbing."""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Literal

import attrs

from parlay.context import new_call_id
from parlay.engine.contract.parser.results import ProblemKind
from parlay.events import Event, TextDelta, ToolCallArgsDelta

THOUGHT_LIMIT = 200
# A block whose tool name is not read within this many characters of its start is settled
# as an action, so its raw text need not be kept in case it turns out to be prose.
MAX_UNDECIDED = 4096
# Values nested deeper than this in a block are skipped (dropped, and noted in arguments).
MAX_DEPTH = 100

# A streamed reply is mostly one `TextDelta` per chunk, and attrs' frozen `__init__` is most
# of what a chunk of prose costs: `text_delta` makes the same object by setting the one
# slot directly; the check keeps it honest if the class ever gains a field.

_TEXT_DELTA_FIELDS = attrs.fields(TextDelta)
if not (
    len(_TEXT_DELTA_FIELDS) == 1
    and _TEXT_DELTA_FIELDS[0].name == "text"
    and _TEXT_DELTA_FIELDS[0].converter is None
    and _TEXT_DELTA_FIELDS[0].validator is None
    and not hasattr(TextDelta, "__attrs_post_init__")
):
    raise TypeError("TextDelta is no longer one plain field: update parser.state.text_delta")
new_text_delta = object.__new__
set_text = vars(TextDelta)["text"].__set__  # the slot's descriptor


def text_delta(text: str) -> TextDelta:
    """`TextDelta(text)`, without the generated `__init__`'s overhead."""
    delta = new_text_delta(TextDelta)
    set_text(delta, text)
    return delta


# The same for `ToolCallArgsDelta`: a call's string argument streams as one per chunk.
_ARGS_DELTA_FIELDS = attrs.fields(ToolCallArgsDelta)
if not (
    [f.name for f in _ARGS_DELTA_FIELDS] == ["id", "delta"]
    and all(f.converter is None and f.validator is None for f in _ARGS_DELTA_FIELDS)
    and not hasattr(ToolCallArgsDelta, "__attrs_post_init__")
):
    raise TypeError("ToolCallArgsDelta changed: update parser.state.args_delta")
_set_id = vars(ToolCallArgsDelta)["id"].__set__
_set_delta = vars(ToolCallArgsDelta)["delta"].__set__


def args_delta(call_id: str, text: str) -> ToolCallArgsDelta:
    """`ToolCallArgsDelta(call_id, text)`, without the generated `__init__`'s overhead."""
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


class Frame:
    """One open JSON object or array, and what it expects next."""

    __slots__ = ("expect", "key", "kind", "members", "role")

    def __init__(self, kind: Literal["{", "["], role: FrameRole) -> None:
        self.kind = kind
        self.role = role
        self.key: str | None = None
        self.expect = "key" if kind == "{" else "value"
        self.members = 0  # values written so far (argument frames: a comma before the next)


class Record:
    """One call object being read."""

    __slots__ = (
        "args_json",
        "args_object",
        "args_pending",
        "args_seen",
        "args_string",
        "expression",
        "id",
        "name",
        "name_key",
        "notes",
        "started",
    )

    def __init__(self) -> None:
        self.name: str | None = None
        self.name_key: str | None = None
        self.id: str | None = None
        self.started = False
        self.args_json: list[str] = []  # normalised argument JSON, all of it
        self.args_pending: list[str] = []  # normalised JSON not yet emitted (before the start)
        self.args_seen = False
        # The arguments are an object: only then do they stream (anything else is reported
        # as unreadable and the call gets `{}`, so the deltas always load to its arguments).
        self.args_object = False
        self.args_string: str | None = None  # arguments given as a JSON string
        self.notes: list[tuple[ProblemKind, str]] = []  # problems found in the arguments
        # An operator met between argument values (`2 * Math.PI`): JSON has no arithmetic,
        # and reading on would shift keys and values, so the call is reported unreadable.
        self.expression: str | None = None


class ParserState:
    """Where the reading stands and what went out: the text read and not yet consumed,
    the reader's mode, the facts of the block being read, and the events and visible text
    emitted. The four readers (`recognise.TextReader`, `json_scan.JsonScanner`,
    `strings.StringReader`, `calls.CallAssembler`) share it; each keeps its own state."""

    # Slots, not a __dict__: the scanning loops read this state per character and `feed`
    # per chunk, and slot reads are the cheapest attribute access CPython has.
    __slots__ = (
        "block_as_text",
        "block_emitted",
        "block_fenced",
        "block_labeled",
        "block_start",
        "blocks",
        "buf",
        "ended",
        "final",
        "line_blank",
        "line_start_in_block",
        "mode",
        "new_id",
        "out",
        "pending",
        "plain",
        "pos",
        "text",
        "thought_limit",
        "tools",
        "typed_final",
    )

    def __init__(
        self,
        tool_names: Collection[str] = (),
        *,
        id_factory: Callable[[], str] = new_call_id,
        thought_limit: int = THOUGHT_LIMIT,
    ) -> None:
        self.tools = frozenset(tool_names)
        self.new_id = id_factory
        self.thought_limit = thought_limit
        self.buf = ""
        self.pos = 0
        self.mode: ReaderMode = "text"
        self.line_blank = True
        self.out: list[Event] = []
        self.pending: list[str] = []
        # Text mode, nothing held back, the line not blank: `feed` may take its fast path.
        self.plain = False
        self.text: list[str] = []
        self.blocks = 0
        self.ended = False
        self.final = False
        # the block being read
        self.block_start = 0
        self.block_fenced = False
        self.block_labeled = False
        self.block_as_text = False
        self.block_emitted = False
        self.line_start_in_block = True
        # The block's `"type"` said it is a final answer: its `"content"` is the answer.
        self.typed_final = False

    # -- output ---------------------------------------------------------------------------
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


def after_value(stack: list[Frame]) -> None:
    """A value ended: its parent expects a comma next."""
    if stack:
        stack[-1].expect = "comma"
