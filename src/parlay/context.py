"""The immutable conversation: items, and the persistent `Context` that holds them.

A `Context` is a node of a persistent linked list: `insert` makes a new node that points
at the old one, so inserting is O(1), every earlier item is shared, and forking a
conversation is keeping two references.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from attrs import field, frozen

from parlay.image import Image

if TYPE_CHECKING:
    from parlay.template_folders import Folders
    from parlay.turns import ContextDiff, Turn


def new_call_id() -> str:
    return "call_" + uuid.uuid4().hex[:24]


def _calls_tuple(value: Any) -> tuple[ToolCall, ...]:
    return tuple(value)


def _images_tuple(value: Any) -> tuple[Image, ...]:
    return tuple(value)


def _names_tuple(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(value)


def _freeze_arguments(value: Mapping[str, Any] | None) -> dict[str, Any]:
    return dict(value or {})


@frozen
class SystemMessage:
    content: str
    role = "system"


@frozen
class UserMessage:
    """What the user said: text, and any images after it."""

    content: str
    images: tuple[Image, ...] = field(default=(), converter=_images_tuple)
    role = "user"

    @classmethod
    def of(cls, parts: str | Iterable[str | Image]) -> UserMessage:
        """A message from a str, or from texts and `Image`s (texts joined by newlines)."""
        if isinstance(parts, str):
            return cls(parts)
        items = list(parts)
        texts = [p for p in items if isinstance(p, str)]
        images = [p for p in items if isinstance(p, Image)]
        if len(texts) + len(images) != len(items):
            raise TypeError("a user message is made of str and parlay.Image parts only")
        return cls("\n".join(texts), tuple(images))


@frozen
class ToolCall:
    """A call the model asked for: `arguments` is the parsed JSON object."""

    name: str
    arguments: dict[str, Any] = field(factory=dict, converter=_freeze_arguments, hash=False)
    id: str = field(factory=new_call_id)

    @property
    def arguments_json(self) -> str:
        return json.dumps(self.arguments, ensure_ascii=False)


@frozen
class AssistantMessage:
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = field(default=(), converter=_calls_tuple)
    role = "assistant"


@frozen
class ToolResult:
    """The outcome of one tool call. `error` is set when the tool could not give an output.

    `value` keeps the Python object the tool returned (not compared, not sent to models);
    `output` is the text the model sees.
    """

    call_id: str
    name: str
    output: str = ""
    error: str | None = None
    value: Any = field(default=None, eq=False, repr=False)
    # Images the tool gave beside its text (a screenshot, a file it read).
    images: tuple[Image, ...] = field(default=(), converter=_images_tuple)
    # Deferred tools this result names (a tool search's `tool_reference` blocks): the
    # history, not the server, says which tools the model is shown from here on.
    references: tuple[str, ...] = field(default=(), converter=_names_tuple)
    role = "tool"

    @property
    def is_error(self) -> bool:
        return self.error is not None

    @property
    def content(self) -> str:
        """What the model is shown: the output, or the error spelt out."""
        if self.error is not None:
            return f"Error: {self.error}"
        return self.output


Message = SystemMessage | UserMessage | AssistantMessage | ToolResult
MESSAGE_TYPES = (SystemMessage, UserMessage, AssistantMessage, ToolResult)
_PLAIN_ITEMS = (*MESSAGE_TYPES, ToolCall)


@runtime_checkable
class Component(Protocol):
    """Anything that can stand in a context and render to chat messages.

    `Instruction` and `ModelOutputThunk` are components; users can write their own.
    """

    def as_messages(self) -> tuple[Message, ...]: ...


Item = Message | ToolCall | Component


class Context:
    """An immutable conversation. `insert` returns a new context and shares this one.

    `len(ctx)` counts items (messages, calls, results, model outputs), not turns: a turn
    that ran a tool is several items. `len(ctx.turns)` counts turns; `ctx.at_turn(n)` is
    the context as it was after turn n, `ctx.diff(other)` where two contexts part, and
    `to_json()` / `Context.from_json(text)` keep one in a file.
    """

    __slots__ = ("_cache", "_item", "_len", "_parent")

    _item: Item | None
    _parent: Context | None
    _len: int
    _cache: tuple[Message, ...] | None

    def __init__(self, items: Any = ()) -> None:
        node = _EMPTY_STATE
        for item in items:
            node = node.insert(item)
        _set(self, node._item, node._parent, node._len)

    @classmethod
    def _node(cls, parent: Context, item: Item) -> Context:
        node = object.__new__(cls)
        _set(node, item, parent, parent._len + 1)
        return node

    def insert(self, item: Item) -> Context:
        """A new context with `item` appended. O(1); this context is unchanged."""
        if isinstance(item, str):
            raise TypeError(
                "Context.insert takes a message or component, not a str: "
                "wrap text in UserMessage(...) or SystemMessage(...)"
            )
        if not isinstance(item, _PLAIN_ITEMS) and not isinstance(item, Component):
            raise TypeError(
                f"cannot insert {type(item).__name__} into a Context: expected a message, "
                "a ToolCall, a ToolResult or a component with as_messages()"
            )
        return Context._node(self, item)

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "_cache":
            object.__setattr__(self, name, value)
            return
        raise AttributeError("Context is immutable: use insert(), which returns a new context")

    def __len__(self) -> int:
        """The number of items, not of turns (`len(ctx.turns)` counts those)."""
        return self._len

    def __bool__(self) -> bool:
        return True

    @property
    def last(self) -> Item | None:
        """The newest item, or None for an empty context."""
        return self._item

    @property
    def parent(self) -> Context | None:
        """The context before the newest item (None for an empty context)."""
        return self._parent

    def reversed_items(self) -> Iterator[Item]:
        """Items newest-first, without materializing the list."""
        node: Context | None = self
        while node is not None and node._item is not None:
            yield node._item
            node = node._parent

    def __iter__(self) -> Iterator[Item]:
        return iter(self.items())

    def items(self) -> list[Item]:
        """Items oldest-first."""
        out = list(self.reversed_items())
        out.reverse()
        return out

    def __getitem__(self, index: int) -> Item:
        if -self._len <= index < 0:  # from the end: walk back, build no list
            node = self
            for _ in range(-index - 1):
                node = node._parent  # type: ignore[assignment]
            return node._item  # type: ignore[return-value]
        return self.items()[index]

    # -- turns, time travel, comparing (parlay.turns) -------------------------------------
    @property
    def turns(self) -> tuple[Turn, ...]:
        """The turns, oldest first: each starts with what the user sent (a message or an
        instruction) and holds what followed, up to the next. `len(ctx.turns)` counts
        turns where `len(ctx)` counts items. O(n)."""
        from parlay.turns import turns_of

        return turns_of(self)

    def at_turn(self, n: int) -> Context:
        """The context as it was after turn `n` (0: before the first turn, the system
        prompt alone; -1: without the last turn). The node itself, shared, never a copy:
        O(n) at most. IndexError past the last turn."""
        from parlay.turns import at_turn

        return at_turn(self, n)

    def diff(self, other: Context) -> ContextDiff:
        """The trunk this context shares with `other` and each side's own turns after it.
        Contexts that share no nodes (read back from JSON or the log) are compared item by
        item. In a notebook the diff shows both sides side by side."""
        from parlay.turns import diff

        return diff(self, other)

    # -- keeping (parlay.context_json) ---------------------------------------------------
    def to_json(self, *, indent: int | None = None) -> str:
        """This context as a versioned JSON document that `Context.from_json` reads back
        unchanged (the schema: `parlay.context_json`). Pending turns are run first."""
        from parlay.context_json import to_json

        return to_json(self, indent=indent)

    @classmethod
    def from_json(
        cls,
        text: str | bytes,
        *,
        template_dirs: Folders = (),
        trust_template_dirs: bool = False,
    ) -> Context:
        """The context a `to_json` document holds; its model outputs come back computed.
        An instruction naming a template folder is refused unless the folder is one of
        `template_dirs` or you trust the document (`trust_template_dirs=True`)."""
        from parlay.context_json import from_json

        return from_json(text, template_dirs=template_dirs, trust_template_dirs=trust_template_dirs)

    def shares(self, other: Context) -> bool:
        """True when `other` is this context or one of its ancestors (nothing was copied)."""
        node: Context | None = self
        while node is not None:
            if node is other:
                return True
            node = node._parent
        return False

    def find_call(self, call_id: str) -> ToolCall | None:
        """The tool call with this id, searching newest-first."""
        for item in self.reversed_items():
            for call in _calls_of(item):
                if call.id == call_id:
                    return call
        return None

    def messages(self) -> tuple[Message, ...]:
        """The chat messages a backend sends, oldest-first.

        Components render to their messages; loose `ToolCall` items join the assistant
        message before them (or form one) so every call sits on an assistant turn.
        Rendering extends the nearest rendered ancestor, so a session that renders every
        turn pays for the new items only.
        """
        if self._cache is not None:
            return self._cache
        pending: list[Item] = []
        node: Context | None = self
        base: tuple[Message, ...] = ()
        while node is not None and node._item is not None:
            if node._cache is not None:
                base = node._cache
                # The newest rendering replaces its ancestor's, keeping memory linear.
                node._cache = None
                break
            pending.append(node._item)
            node = node._parent
        out = list(base)
        settled = True
        for item in reversed(pending):
            if isinstance(item, ToolCall):
                previous = out[-1] if out else None
                if isinstance(previous, AssistantMessage):
                    out[-1] = AssistantMessage(previous.content, (*previous.tool_calls, item))
                else:
                    out.append(AssistantMessage("", (item,)))
            elif isinstance(item, MESSAGE_TYPES):
                out.append(item)
            else:
                settled = settled and _is_settled(item)
                out.extend(item.as_messages())
        result = tuple(out)
        if settled:
            self._cache = result
        elif node is not None and node._item is not None:
            node._cache = base
        return result

    def __repr__(self) -> str:
        # Both counts: `len(ctx)` is items, while `fork(at=n)` and `at_turn(n)` count turns.
        turns = len(self.turns)
        return f"<Context {self._len} items, {turns} turn{'' if turns == 1 else 's'}>"

    def _repr_html_(self) -> str:
        """The conversation as turns, for notebooks (`parlay.display`)."""
        from parlay.display import conversation_html, page

        return page(conversation_html(self.messages()))


def _set(node: Context, item: Item | None, parent: Context | None, length: int) -> None:
    object.__setattr__(node, "_item", item)
    object.__setattr__(node, "_parent", parent)
    object.__setattr__(node, "_len", length)
    object.__setattr__(node, "_cache", None)


_EMPTY_STATE = object.__new__(Context)
_set(_EMPTY_STATE, None, None, 0)


def _is_settled(item: Item) -> bool:
    return bool(getattr(item, "is_computed", True))


def _calls_of(item: Item) -> tuple[ToolCall, ...]:
    if isinstance(item, ToolCall):
        return (item,)
    if isinstance(item, AssistantMessage):
        return item.tool_calls
    if isinstance(item, MESSAGE_TYPES):
        return ()
    if getattr(item, "is_computed", True):
        calls: list[ToolCall] = []
        for message in item.as_messages():
            if isinstance(message, AssistantMessage):
                calls.extend(message.tool_calls)
        return tuple(calls)
    return ()
