"""The parser's mutable state and its output plumbing.

`ActionStreamParser` is one object built in layers, one module per job, each layer a class
adding its methods to the one below:

    ParserState (state) -> ArgumentWriter (arguments) -> CallAssembler (calls)
    -> StringReader (strings) -> JsonScanner (json_scan) -> BlockReader (blocks)
    -> TextReader (recognise) -> ActionStreamParser (stream)

Every layer reads and writes the state set up here directly rather than through
collaborator objects: the scanning loops touch it per character, so it stays one attribute
lookup away, as it was when the parser was a single class (bench/parser_bench.py guards
the throughput).
"""

from __future__ import annotations

from collections.abc import Callable, Collection

import attrs

from parlay.context import ToolCall, new_call_id
from parlay.contract.parser.results import ParseProblem
from parlay.events import Event, TextDelta, ToolCallArgsDelta

THOUGHT_LIMIT = 200
# Size bounds (defence in depth; each is documented in the package docstring):
# a block whose tool name is not read within this many characters of its start is settled
# as an action, so its raw text need not be kept in case it turns out to be prose;
MAX_UNDECIDED = 4096
# values nested deeper than this in a block are skipped (dropped, and noted in arguments).
MAX_DEPTH = 100

# A streamed reply is mostly one `TextDelta` per chunk, and attrs' generated `__init__` for a
# frozen class (a bound `object.__setattr__` fetched per call) is most of what a chunk of
# prose costs. `text_delta` makes the same object, equal and hashed alike, by setting the
# one slot directly; the check keeps it honest if the class ever gains a field.
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


class Frame:
    """One open JSON object or array, and what it expects next."""

    __slots__ = ("expect", "key", "kind", "members", "role")

    def __init__(self, kind: str, role: str) -> None:
        self.kind = kind  # "{" or "["
        self.role = role  # root | call | final | calls | args | skip
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
        self.notes: list[tuple[str, str]] = []  # (problem kind, detail) found in the arguments
        # An operator met between argument values (`2 * Math.PI`): JSON has no arithmetic,
        # and reading on would shift keys and values, so the call is reported unreadable.
        self.expression: str | None = None


class ParserState:
    """What a parse remembers between characters and between feeds, and how it emits."""

    # Slots, not a __dict__: the scanning loops and `feed` read this state per character
    # and per chunk, and slot reads are the cheapest attribute access CPython has (past 30
    # attributes an instance dict no longer shares its keys). Each layer adds no state:
    # its `__slots__` is empty. An attribute set in __init__ must be listed here.
    __slots__ = (
        "_args_depth",
        "_atom",
        "_atom_is_key",
        "_atom_role",
        "_block_as_text",
        "_block_emitted",
        "_block_fenced",
        "_block_labeled",
        "_block_mode",
        "_block_start",
        "_blocks",
        "_buf",
        "_calls",
        "_ended",
        "_final",
        "_held_key",
        "_line_blank",
        "_line_start_in_block",
        "_new_id",
        "_out",
        "_pending",
        "_plain",
        "_pos",
        "_problems",
        "_record",
        "_skip_depth",
        "_stack",
        "_state",
        "_str_chars",
        "_str_close",
        "_str_fence",
        "_str_quote",
        "_str_role",
        "_str_tail",
        "_text",
        "_thought_limit",
        "_thoughts",
        "_tools",
        "_typed_final",
    )

    def __init__(
        self,
        tool_names: Collection[str] = (),
        *,
        id_factory: Callable[[], str] = new_call_id,
        thought_limit: int = THOUGHT_LIMIT,
    ) -> None:
        self._tools = frozenset(tool_names)
        self._new_id = id_factory
        self._thought_limit = thought_limit
        self._buf = ""
        self._pos = 0
        self._state = "text"  # text | info | block | code | cmd_name | cmd_args
        self._line_blank = True
        self._out: list[Event] = []
        self._pending: list[str] = []
        # Text state, nothing held back, the line not blank: `feed` may take its fast path.
        self._plain = False
        self._text: list[str] = []
        self._calls: list[ToolCall] = []
        self._problems: list[ParseProblem] = []
        self._thoughts: list[str] = []
        self._blocks = 0
        self._ended = False
        # block state
        self._block_start = 0
        self._block_fenced = False
        self._block_labeled = False
        self._block_mode = "call"  # call | command
        self._block_as_text = False
        self._block_emitted = False
        self._stack: list[Frame] = []
        self._record: Record | None = None
        self._args_depth: int | None = None
        # An argument key read, written out only once its value starts (a key whose value
        # is cut off, or dropped, is dropped with it).
        self._held_key: str | None = None
        self._skip_depth = 0  # > 0: inside a value nested too deep, skipped
        self._str_quote: str | None = None
        self._str_role = ""
        self._str_chars: list[str] = []
        self._str_close = ""
        self._str_fence = False  # a code fence opened inside the current string
        self._str_tail = ""  # the current string's last character other than a blank
        self._atom: list[str] = []
        self._atom_is_key = False
        self._atom_role = ""
        self._line_start_in_block = True
        self._final = False
        # The block's `"type"` said it is a final answer: its `"content"` is the answer.
        self._typed_final = False

    # -- output ---------------------------------------------------------------------------
    def _take(self) -> list[Event]:
        if self._pending:
            self._flush_text()
        out, self._out = self._out, []
        return out

    def _emit_text(self, text: str) -> None:
        if text:
            self._text.append(text)
            self._pending.append(text)

    def _flush_text(self) -> None:
        # Text pieces join into one delta per run of text (joined once: linear).
        if self._pending:
            self._out.append(text_delta("".join(self._pending)))
            self._pending = []

    def _emit(self, event: Event) -> None:
        if self._pending:
            self._flush_text()
        self._out.append(event)

    # -- the JSON stack -------------------------------------------------------------------
    def _after_value(self) -> None:
        if self._stack:
            self._stack[-1].expect = "comma"
