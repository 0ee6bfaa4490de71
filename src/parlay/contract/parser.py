"""The incremental action parser: model text in, backend events out.

One parser reads all three action syntaxes, whichever format the contract taught:

- fenced blocks: ```` ```json action ```` (or plain ```` ```json ````) holding
  `{"tool": NAME, "parameters": {...}}`, several per reply, or an array of such objects;
- a JSON object per reply: `{"thought": ..., "action": {"tool": NAME, "args": {...}}}` or
  `{"final": {"content": ...}}`, fenced or bare at the start of a line;
- a command line: `@tool NAME {json-args}`.

Reading every syntax costs nothing and makes the engine forgiving of models that drift
between them (Qwen2.5-Coder answers ```` ```json ```` whatever it is taught).

Streaming rules (the invariants the hypothesis tests check):

- the parser only decides when the text seen so far settles the question, never because
  a chunk happened to end, so every split of the same text gives the same calls, the same
  visible text and the same concatenated argument deltas as parsing it whole
  (`parse(text)` *is* one `feed` plus `finish`);
- text outside blocks is emitted at once; only what could still turn into a block is
  held back: a partial fence (```` ` ```` / ```` `` ````), a fence's info string until its
  line ends, and a `{` or `@` at the start of a line until its first key or word is read;
- a call starts (`ToolCallStart`) as soon as its name is read; its arguments stream as
  `ToolCallArgsDelta`s of *normalised* JSON (single and smart quotes re-quoted, trailing
  commas dropped, Python literals mapped), so the fragments concatenate to JSON a client
  can load even while the model writes sloppy JSON;
- nothing raises: what cannot be read becomes visible text or a `ParseProblem`.

Work is linear in the input: each character is looked at a bounded number of times, and
the buffer is compacted as text is consumed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection
from typing import Any

import json_repair
from attrs import frozen

from parlay.context import ToolCall, new_call_id
from parlay.events import Event, TextDelta, ToolCallArgsDelta, ToolCallEnd, ToolCallStart

# Keys the parser understands, with the aliases models actually use.
NAME_KEYS = frozenset({"tool", "name", "tool_name", "function", "function_name", "tool_call"})
ARGS_KEYS = frozenset(
    {
        "parameters",
        "arguments",
        "args",
        "input",
        "params",
        "tool_input",
        "tool_args",
        "kwargs",
        "action_input",
    }
)
WRAPPER_KEYS = frozenset({"action", "function", "tool_call", "call", "function_call"})
FINAL_KEYS = frozenset({"final", "final_answer"})
CONTENT_KEYS = frozenset({"content", "text", "answer", "message", "response"})
THOUGHT_KEYS = frozenset({"thought", "thoughts", "reasoning"})
# A JSON object whose first key is one of these is read as an action, not as prose.
BLOCK_KEYS = NAME_KEYS | ARGS_KEYS | WRAPPER_KEYS | FINAL_KEYS | THOUGHT_KEYS
# Fence info strings that hold actions (or may: see `_fence_kind`).
ACTION_FENCES = frozenset({"json action", "action", "tool", "tool_call", "tool_code", "function"})
JSON_FENCES = frozenset({"json", "jsonc", "json5", "javascript", "js", ""})

THOUGHT_LIMIT = 200
_MAX_KEY_PEEK = 48
_MAX_INFO = 40
_QUOTES = {'"': '"', "'": "'", "“": "”", "‘": "’", "”": "”"}
_ATOM_CHARS = re.compile(r"[A-Za-z0-9_.+\-$]")
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?\Z")
_TEXT_TRIGGER = re.compile(r"[`\n@{]")
_HARD_TRIGGER = re.compile(r"[`@{]")
_NAME_CHARS = re.compile(r"[A-Za-z0-9_.\-:/]+")
_LITERALS = {
    "true": "true",
    "false": "false",
    "null": "null",
    "True": "true",
    "False": "false",
    "None": "null",
}
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "/": "/", "\\": "\\"}


@frozen
class ParseProblem:
    """Something in the reply that could not be read as intended (the retry policy acts on it)."""

    kind: str  # "no_tool_name" | "unreadable_arguments" | "cut_off" | "thought_too_long"
    detail: str = ""


@frozen
class ParseResult:
    """A whole reply, parsed: visible text, calls (arguments as written), problems."""

    text: str
    calls: tuple[ToolCall, ...]
    problems: tuple[ParseProblem, ...] = ()
    thoughts: tuple[str, ...] = ()
    blocks: int = 0


def _escape_char(ch: str) -> str:
    return json.dumps(ch, ensure_ascii=False)[1:-1]


def _normalise_atom(atom: str) -> str:
    if atom in _LITERALS:
        return _LITERALS[atom]
    if _NUMBER.match(atom):
        return atom
    try:
        number = float(atom)
    except ValueError:
        return json.dumps(atom, ensure_ascii=False)
    if number != number or number in (float("inf"), float("-inf")):
        return "null"
    return json.dumps(int(number) if number.is_integer() and "." not in atom else number)


class _Frame:
    __slots__ = ("expect", "key", "kind", "role")

    def __init__(self, kind: str, role: str) -> None:
        self.kind = kind  # "{" or "["
        self.role = role  # root | call | final | calls | args | skip
        self.key: str | None = None
        self.expect = "key" if kind == "{" else "value"


class _Record:
    """One call object being read."""

    __slots__ = (
        "args_json",
        "args_pending",
        "args_seen",
        "args_string",
        "id",
        "name",
        "name_key",
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
        self.args_string: str | None = None  # arguments given as a JSON string


class ActionStreamParser:
    """Feed text deltas, get events. `finish()` flushes; `result()` summarises.

    `tool_names` (optional) tells blocks whose name key is `name` apart from ordinary JSON
    in an answer: `{"name": "Ada", ...}` is text unless `Ada` is a tool.
    """

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
        self._state = "text"  # text | info | block | code | cmd_name
        self._line_blank = True
        self._out: list[Event] = []
        self._pending: list[str] = []
        self._idle = True  # text state, nothing held back: `feed` may take the fast path
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
        self._stack: list[_Frame] = []
        self._record: _Record | None = None
        self._args_depth: int | None = None
        self._pending_comma = False
        self._str_quote: str | None = None
        self._str_role = ""
        self._str_chars: list[str] = []
        self._str_close = ""
        self._atom: list[str] = []
        self._atom_is_key = False
        self._atom_role = ""
        self._line_start_in_block = True
        self._final = False

    # -- public ---------------------------------------------------------------------------
    def feed(self, text: str) -> list[Event]:
        if self._idle and _HARD_TRIGGER.search(text) is None:
            # The common case while prose streams: nothing held, nothing to decide.
            # Same outcome as the general path below, at a fraction of the cost.
            if not text:
                return []
            self._text.append(text)
            newline = text.rfind("\n")
            if newline >= 0:
                tail = text[newline + 1 :]
                self._line_blank = not tail or tail.isspace()
            elif self._line_blank and not text.isspace():
                self._line_blank = False
            return [TextDelta(text)]
        if self._ended or not text:
            return []
        if (
            self._str_quote is not None
            and self._pos == len(self._buf)
            and self._state == "block"
            and not _string_stops(text, self._str_close)
        ):
            # Inside a string with nothing pending: the chunk is string content.
            if self._buf:  # the block's raw text is being kept (it may become text)
                self._buf += text
                self._pos = len(self._buf)
            self._string_chars(text)
            return self._take()
        self._buf += text
        self._run(final=False)
        self._idle = not self._buf and self._state == "text" and not self._ended
        return self._take()

    def finish(self) -> list[Event]:
        if self._ended:
            return []
        self._run(final=True)
        self._ended = True
        self._idle = False
        return self._take()

    def result(self) -> ParseResult:
        return ParseResult(
            "".join(self._text),
            tuple(self._calls),
            tuple(self._problems),
            tuple(self._thoughts),
            self._blocks,
        )

    # -- plumbing -------------------------------------------------------------------------
    def _take(self) -> list[Event]:
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
            self._out.append(TextDelta("".join(self._pending)))
            self._pending = []

    def _emit(self, event: Event) -> None:
        self._flush_text()
        self._out.append(event)

    def _compact(self) -> None:
        """Drop consumed text, so each feed costs what it adds (not the whole buffer).

        Text from the block's start is kept only while the block may still turn out to
        be text (an unlabeled block before its name is read) or is being decided.
        """
        state = self._state
        need_raw = state in ("info", "cmd_name") or (
            state == "block"
            and not self._block_labeled
            and (self._block_as_text or not self._block_emitted)
        )
        keep = min(self._block_start, self._pos) if need_raw else self._pos
        if keep > 0:
            self._buf = self._buf[keep:]
            self._pos -= keep
            self._block_start -= keep

    def _run(self, final: bool) -> None:
        self._final = final
        while True:
            state = self._state
            if state == "text":
                progressed = self._run_text(final)
            elif state == "info":
                progressed = self._run_info(final)
            elif state == "block":
                progressed = self._run_block(final)
            elif state == "code":
                progressed = self._run_code(final)
            elif state == "cmd_name":
                progressed = self._run_cmd_name(final)
            else:
                progressed = self._run_cmd_args(final)
            if not progressed:
                break
        self._compact()
        if final:
            self._end_of_input()

    def _end_of_input(self) -> None:
        if self._state == "block":
            self._close_block(cut=True)
        rest = self._buf[self._pos :]
        self._pos = len(self._buf)
        self._state = "text"
        self._emit_text(rest)

    # -- text -----------------------------------------------------------------------------
    def _run_text(self, final: bool) -> bool:
        buf, pos = self._buf, self._pos
        while True:
            match = _TEXT_TRIGGER.search(buf, pos)
            if match is None:
                segment = buf[pos:]
                if segment and not segment.isspace():
                    self._line_blank = False
                self._emit_text(segment)
                self._pos = len(buf)
                return False
            at = match.start()
            segment = buf[pos:at]
            blank = self._line_blank and (not segment or segment.isspace())
            ch = buf[at]
            if ch == "\n":
                self._emit_text(buf[pos : at + 1])
                self._line_blank = True
                pos = at + 1
                continue
            if ch == "`":
                head = buf[at : at + 3]
                if head == "```":
                    self._emit_text(segment)
                    self._pos = at + 3
                    self._block_start = at
                    self._state = "info"
                    return True
                if len(head) < 3 and "```".startswith(head) and not final:
                    self._emit_text(segment)
                    self._line_blank = blank
                    self._pos = at
                    return False
                self._emit_text(buf[pos : at + 1])
                self._line_blank = False
                pos = at + 1
                continue
            if not blank:
                self._emit_text(buf[pos : at + 1])
                self._line_blank = False
                pos = at + 1
                continue
            if ch == "@":
                head = buf[at : at + 6]
                if len(head) < 6 and "@tool ".startswith(head) and not final:
                    self._emit_text(segment)
                    self._line_blank = True
                    self._pos = at
                    return False
                if head[:5] == "@tool" and len(head) == 6 and head[5] in " \t":
                    self._emit_text(segment)
                    self._pos = at + 6
                    self._block_start = at
                    self._state = "cmd_name"
                    return True
                self._emit_text(buf[pos : at + 1])
                self._line_blank = False
                pos = at + 1
                continue
            # "{" at the start of a line: an action if its first key says so.
            verdict = self._peek_first_key(at, final)
            if verdict is None:
                self._emit_text(segment)
                self._line_blank = True
                self._pos = at
                return False
            if verdict:
                self._emit_text(segment)
                self._pos = at
                self._open_block(at, fenced=False, labeled=False)
                return True
            self._emit_text(buf[pos : at + 1])
            self._line_blank = False
            pos = at + 1

    def _peek_first_key(self, at: int, final: bool) -> bool | None:
        """Does the object at `at` start with an action key? None: cannot tell yet."""
        buf = self._buf
        i = at + 1
        end = min(len(buf), at + _MAX_KEY_PEEK)
        while i < end and buf[i] in " \t\r\n":
            i += 1
        if i >= end:
            return False if (final or end < len(buf)) else None
        quote = buf[i]
        close = _QUOTES.get(quote)
        if close is not None:
            i += 1
        start = i
        while i < end and (buf[i].isalnum() or buf[i] == "_"):
            i += 1
        if i >= end:
            return False if (final or end < len(buf)) else None
        key = buf[start:i]
        if close is not None and buf[i] != close:
            return False
        return key in BLOCK_KEYS

    # -- fences ---------------------------------------------------------------------------
    def _run_info(self, final: bool) -> bool:
        buf = self._buf
        start = self._pos
        i = start
        end = min(len(buf), start + _MAX_INFO)
        while i < end and buf[i] not in "\n{[`":
            i += 1
        if i >= end:
            if end == len(buf) and not final:
                return False  # the info string is not finished yet
            return self._fence_as_code(i)
        info = buf[start:i].strip().lower()
        if info in ACTION_FENCES:
            self._open_block(self._block_start, fenced=True, labeled=True, at=i)
            return True
        if info not in JSON_FENCES or buf[i] == "`":
            return self._fence_as_code(i)
        # A plain ```json fence holds an action only if its object's first key says so.
        j = self._skip_space(i)
        if j < len(buf) and buf[j] == "[":
            j = self._skip_space(j + 1)
        if j >= len(buf):
            return False if not final else self._fence_as_code(i)
        verdict = self._peek_first_key(j, final) if buf[j] == "{" else False
        if verdict is None:
            return False
        if verdict:
            self._open_block(self._block_start, fenced=True, labeled=False, at=i)
            return True
        return self._fence_as_code(i)

    def _skip_space(self, i: int) -> int:
        buf = self._buf
        while i < len(buf) and buf[i] in " \t\r\n":
            i += 1
        return i

    def _fence_as_code(self, i: int) -> bool:
        self._state = "code"
        self._emit_text(self._buf[self._block_start : i])
        self._pos = i
        self._line_blank = False
        return True

    def _run_code(self, final: bool) -> bool:
        """Inside a non-action fence: visible text up to and including the closing fence."""
        buf = self._buf
        at = buf.find("```", self._pos)
        if at < 0:
            # Keep a possible partial closing fence back.
            cut = len(buf)
            while cut > self._pos and buf[cut - 1] == "`" and not final:
                cut -= 1
            self._emit_text(buf[self._pos : cut])
            self._pos = cut
            return False
        self._emit_text(buf[self._pos : at + 3])
        self._pos = at + 3
        self._state = "text"
        self._line_blank = False
        return True

    # -- commands -------------------------------------------------------------------------
    def _run_cmd_name(self, final: bool) -> bool:
        buf = self._buf
        i = self._pos
        while i < len(buf) and buf[i] in " \t":
            i += 1
        match = _NAME_CHARS.match(buf, i)
        end = match.end() if match else i
        if end >= len(buf) and not final:
            return False
        name = buf[i:end]
        if not name:
            # "@tool" with no name: prose after all.
            self._state = "text"
            self._emit_text(buf[self._block_start : end])
            self._pos = end
            self._line_blank = False
            return True
        self._open_block(self._block_start, fenced=False, labeled=True, at=end, mode="command")
        self._state = "cmd_args"
        assert self._record is not None
        self._record.name = name
        self._record.name_key = "tool"
        self._start_call()
        return True

    def _run_cmd_args(self, final: bool) -> bool:
        buf = self._buf
        j = self._pos
        while j < len(buf) and buf[j] in " \t":
            j += 1
        self._pos = j
        if j >= len(buf) and not final:
            return False
        if j < len(buf) and buf[j] in "{[":
            self._state = "block"
        else:
            self._state = "block"
            self._close_block(cut=False)
        return True

    # -- blocks ---------------------------------------------------------------------------
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
        self._record = _Record() if mode == "command" else None
        self._args_depth = None
        self._pending_comma = False
        self._str_quote = None
        self._atom = []
        self._line_start_in_block = False
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
                    return False  # an escape or a possible fence is cut: wait for more
                continue
            ch = buf[i]
            if ch == "`" and self._block_fenced:
                head = buf[i : i + 3]
                if len(head) < 3 and head == "`" * len(head) and not final:
                    self._pos = i
                    return False
                if head == "```":
                    if self._atom:
                        self._end_atom()
                    self._pos = i + 3
                    self._close_block(cut=False)
                    return True
            if self._atom:
                if _ATOM_CHARS.match(ch):
                    self._atom.append(ch)
                    i += 1
                    continue
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
        elif _ATOM_CHARS.match(ch):
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
        # anything else (stray punctuation) is skipped

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
        self._stack.append(_Frame(kind, role))

    def _close_value(self) -> None:
        frame = self._stack.pop()
        if frame.role == "args" and self._args_depth is not None:
            self._pending_comma = False  # a trailing comma
            self._norm("}" if frame.kind == "{" else "]")
        if self._args_depth is not None and len(self._stack) == self._args_depth:
            self._args_depth = None
        if frame.role == "root":
            self._end_record(cut=False)
        self._after_value()

    def _after_value(self) -> None:
        if self._stack:
            self._stack[-1].expect = "comma"

    # -- strings --------------------------------------------------------------------------
    def _begin_string(self, quote: str, is_key: bool) -> None:
        self._str_quote = quote
        self._str_close = _QUOTES.get(quote, quote)
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
        elif role != "skip":
            self._str_chars.append(text)

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

    def _args_from_string(self, value: str) -> None:
        """Arguments written as a JSON string ("stringified"): emit them as JSON."""
        record = self._record
        assert record is not None
        parsed = _loads(value)
        if isinstance(parsed, dict):
            self._norm(json.dumps(parsed, ensure_ascii=False))
        else:
            record.args_string = value

    def _add_thought(self, value: str) -> None:
        if len(value) > self._thought_limit:
            detail = f"{len(value)} characters, cut to {self._thought_limit}"
            self._problems.append(ParseProblem("thought_too_long", detail))
            value = value[: self._thought_limit]
        self._thoughts.append(value)

    # -- atoms (numbers, literals, unquoted keys and names) ---------------------------------
    def _end_atom(self) -> None:
        atom = "".join(self._atom)
        self._atom = []
        top = self._stack[-1] if self._stack else None
        if self._atom_is_key:
            if top is not None:
                top.key = atom
                top.expect = "colon"
            self._norm(json.dumps(atom, ensure_ascii=False), inner_only=True)
            return
        role = self._atom_role
        if role == "args":
            self._norm(_normalise_atom(atom))
        elif role == "name" and atom not in _LITERALS:
            self._set_name(atom, (top.key or "") if top else "")
        if self._args_depth is not None and len(self._stack) == self._args_depth:
            self._args_depth = None
        self._after_value()

    # -- calls ----------------------------------------------------------------------------
    def _new_record(self) -> None:
        if self._record is not None:
            self._end_record(cut=False)
        self._record = _Record()

    def _set_name(self, name: str, key: str) -> None:
        record = self._record
        if record is None or record.name is not None or not name or self._block_as_text:
            return
        record.name = name
        record.name_key = key.lower()
        if (
            not self._block_labeled
            and not self._block_emitted
            and record.name_key not in ("tool", "action", "tool_name")
            and self._tools
            and name not in self._tools
        ):
            # {"name": "Ada", ...} in an answer is data, not an action.
            self._block_as_text = True
            return
        self._start_call()

    def _start_call(self) -> None:
        record = self._record
        assert record is not None and record.name is not None
        record.id = self._new_id()
        record.started = True
        self._block_emitted = True
        self._emit(ToolCallStart(record.id, record.name, len(self._calls)))
        if record.args_pending:
            self._emit(ToolCallArgsDelta(record.id, "".join(record.args_pending)))
            record.args_pending = []

    def _end_record(self, cut: bool) -> None:
        record = self._record
        if record is None:
            return
        if self._args_depth is not None:
            self._finish_open_args()
        self._record = None
        if record.name is None or self._block_as_text:
            if record.args_seen and not self._block_as_text:
                self._problems.append(
                    ParseProblem("no_tool_name", "an action block has arguments but no tool name")
                )
            return
        arguments, problem = _arguments(record)
        if problem:
            self._problems.append(ParseProblem("unreadable_arguments", f"{record.name}: {problem}"))
        if cut:
            self._problems.append(ParseProblem("cut_off", f"the {record.name} call was cut off"))
        assert record.id is not None
        call = ToolCall(record.name, arguments, record.id)
        self._calls.append(call)
        self._emit(ToolCallEnd(call))

    def _finish_open_args(self) -> None:
        """Close what cut-off arguments left open, so the deltas still concatenate to JSON."""
        closers: list[str] = []
        if self._str_quote is not None and self._str_role == "args":
            closers.append('"')
            self._str_quote = None
            self._after_value()
        if self._atom and self._atom_role == "args":
            closers.append(_normalise_atom("".join(self._atom)))
            self._atom = []
            self._after_value()
        depth = self._args_depth or 0
        for n, frame in enumerate(reversed(self._stack[depth:])):
            # Only the innermost frame can be missing a value; outer ones hold the child.
            if n == 0 and frame.kind == "{" and frame.expect == "colon":
                closers.append(": null")
            elif n == 0 and frame.kind == "{" and frame.expect == "value":
                closers.append("null")
            closers.append("}" if frame.kind == "{" else "]")
        self._pending_comma = False
        if closers:
            self._norm("".join(closers))
        del self._stack[depth:]
        self._args_depth = None

    # -- normalised argument JSON ---------------------------------------------------------
    def _begin_args(self) -> None:
        record = self._record
        if record is None:
            record = self._record = _Record()
        record.args_seen = True
        record.args_json = []
        record.args_pending = []
        self._args_depth = len(self._stack)
        self._pending_comma = False

    def _norm_comma(self) -> None:
        if self._args_depth is not None and len(self._stack) > self._args_depth:
            self._pending_comma = True

    def _norm_value_start(self) -> None:
        if self._args_depth is None or len(self._stack) <= self._args_depth:
            return
        top = self._stack[-1]
        if top.kind == "[" and top.expect == "comma":
            self._pending_comma = True  # two array items without a comma between them
        elif top.kind == "{" and top.expect == "colon":
            top.expect = "value"
            self._norm(": ")  # a key and its value without a colon between them

    def _norm(self, text: str, inner_only: bool = False) -> None:
        record = self._record
        if record is None or self._args_depth is None:
            return
        if inner_only and len(self._stack) <= self._args_depth:
            return
        if self._pending_comma:
            self._pending_comma = False
            text = ", " + text
        record.args_json.append(text)
        if record.started and not self._block_as_text:
            self._emit(ToolCallArgsDelta(record.id or "", text))
        else:
            record.args_pending.append(text)

    # -- block end ------------------------------------------------------------------------
    def _close_block(self, cut: bool) -> None:
        if self._str_quote is not None and self._str_role != "args":
            self._finish_string()
        if self._atom and not (self._atom_role == "args" and not self._atom_is_key):
            self._end_atom()
        cut = cut and (bool(self._stack) or self._args_depth is not None)
        if self._record is not None:
            self._end_record(cut=cut)
        if self._block_as_text:
            self._block_as_text = False
            self._emit_text(self._buf[self._block_start : self._pos])
        self._stack = []
        self._args_depth = None
        self._str_quote = None
        self._atom = []
        self._state = "text"
        self._line_blank = not self._block_fenced


def _string_stops(text: str, close: str) -> bool:
    """Whether `text` holds a character that ends or escapes a string (or may: a fence)."""
    return (
        close in text
        or "\\" in text
        or "`" in text
        or "\n" in text
        or (close == "”" and "“" in text)
    )


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        try:
            return json_repair.loads(text)
        except Exception:  # json_repair is tolerant, not total
            return None


def _arguments(record: _Record) -> tuple[dict[str, Any], str | None]:
    if record.args_string is not None:
        return {}, f"arguments are not a JSON object: {record.args_string[:120]!r}"
    if not record.args_json:
        return {}, None
    text = "".join(record.args_json)
    value = _loads(text)
    if isinstance(value, str):
        value = _loads(value)
    if value is None or value == "":
        return {}, None if text.strip() in ("null", '""') else f"unreadable: {text[:120]!r}"
    if not isinstance(value, dict):
        return {}, f"arguments are not a JSON object: {text[:120]!r}"
    return value, None


def parse(text: str, tool_names: Collection[str] = (), **options: Any) -> ParseResult:
    """Parse a whole reply: the same as feeding it in one piece and finishing."""
    parser = ActionStreamParser(tool_names, **options)
    parser.feed(text)
    parser.finish()
    return parser.result()
