"""The immutable conversation: the persistent `Context` that holds a conversation's items
(`parlay.messages`: messages, tool calls and results, components; importable from here too).

A `Context` is a node of a persistent linked list: `insert` makes a new node that points
at the old one, so inserting is O(1), every earlier item is shared, and forking a
conversation is keeping two references. Its verbs (`turns`, `at_turn`, `diff`, `to_json`,
`from_json`, the notebook view) are handed to modules below it (`parlay.turns`,
`parlay.context_schema`, `parlay.display`), none of which needs the session.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from parlay import context_schema
from parlay import turns as turn_verbs
from parlay.display import conversation_html, page
from parlay.messages import (
    MESSAGE_TYPES,
    AssistantMessage,
    Component,
    Item,
    Message,
    SystemMessage,
    ToolCall,
    ToolResult,
    UserMessage,
    add_rendered,
    new_call_id,
)
from parlay.template_folders import TemplateFolders

if TYPE_CHECKING:
    from parlay.template_folders import Folders
    from parlay.turns import ContextDiff, Turn

_PLAIN_ITEMS = (*MESSAGE_TYPES, ToolCall)


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
        return turn_verbs.turns_of(self)

    def at_turn(self, n: int) -> Context:
        """The context as it was after turn `n` (0: before the first turn, the system
        prompt alone; -1: without the last turn). The node itself, shared, never a copy:
        O(n) at most. IndexError past the last turn."""
        return turn_verbs.at_turn(self, n)

    def diff(self, other: Context) -> ContextDiff:
        """The trunk this context shares with `other` and each side's own turns after it.
        Contexts that share no nodes (read back from JSON or the log) are compared item by
        item. In a notebook the diff shows both sides side by side."""
        return turn_verbs.diff(self, other)

    # -- keeping (parlay.context_schema) -------------------------------------------------
    def to_json(self, *, indent: int | None = None) -> str:
        """This context as a versioned JSON document that `Context.from_json` reads back
        unchanged (the schema: `parlay.context_schema`). Pending turns are run first."""
        return context_schema.to_json(self, indent=indent)

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
        folders = TemplateFolders(template_dirs, trust_template_dirs)
        return cls(context_schema.from_json(text, folders)[0])

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
            settled = add_rendered(out, item) and settled
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
        return page(conversation_html(self.messages()))


def _set(node: Context, item: Item | None, parent: Context | None, length: int) -> None:
    object.__setattr__(node, "_item", item)
    object.__setattr__(node, "_parent", parent)
    object.__setattr__(node, "_len", length)
    object.__setattr__(node, "_cache", None)


_EMPTY_STATE = object.__new__(Context)
_set(_EMPTY_STATE, None, None, 0)


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


__all__ = [
    "MESSAGE_TYPES",
    "AssistantMessage",
    "Component",
    "Context",
    "Item",
    "Message",
    "SystemMessage",
    "ToolCall",
    "ToolResult",
    "UserMessage",
    "new_call_id",
]
