"""Turns of a context, the context as it was after one, and where two contexts part.

A turn starts with what the user sent (a `UserMessage`, an `Instruction`, or a component
of the user's own that renders to a user message) and holds everything up to the next
such item: the model's output, tool calls and results inserted by hand, a `respond()`.
Items before the first turn (a system prompt) are the preamble, `ctx.at_turn(0)`.

Everything here walks the context's linked nodes once and hands back nodes that exist:
`at_turn(n)` is the very context the conversation passed through, shared, never copied.
Below `parlay.context`, whose verbs these are: nothing here needs the session.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from attrs import frozen

from parlay.comparison import Comparison
from parlay.components import Instruction
from parlay.messages import MESSAGE_TYPES, Item, ToolCall, UserMessage

if TYPE_CHECKING:
    # The context's verbs live here: this module walks its nodes, never makes one.
    from parlay.context import Context


def starts_turn(item: Item) -> bool:
    """Whether `item` is something the user sent, which opens a turn."""
    if isinstance(item, UserMessage | Instruction):
        return True
    if isinstance(item, (*MESSAGE_TYPES, ToolCall)) or hasattr(item, "is_computed"):
        return False  # a model's output, or a message that is not the user's
    rendered = item.as_messages()
    return bool(rendered) and isinstance(rendered[0], UserMessage)


@frozen(eq=False)
class Turn:
    """One turn: the item that started it and what followed, up to the next turn.

    `before` is the context just before the turn, `after` the context at its end (both
    nodes the conversation passed through). `number` counts from 1.
    """

    number: int
    before: Context
    after: Context

    @property
    def items(self) -> tuple[Item, ...]:
        """The turn's items, oldest first: the one that started it, then the rest."""
        found: list[Item] = []
        node: Context | None = self.after
        while node is not None and node is not self.before and node.last is not None:
            found.append(node.last)
            node = node.parent
        found.reverse()
        return tuple(found)

    @property
    def start(self) -> Item:
        """What the user sent."""
        return self.items[0]

    @property
    def outputs(self) -> tuple[Any, ...]:
        """The model's outputs in the turn (`ModelOutputThunk`s), oldest first."""
        return tuple(i for i in self.items if hasattr(i, "is_computed"))

    def __repr__(self) -> str:
        return f"<Turn {self.number}: {len(self.items)} items>"


def _start_nodes(ctx: Context) -> list[Context]:
    """The nodes whose item starts a turn, oldest first."""
    starts: list[Context] = []
    node: Context | None = ctx
    while node is not None and node.last is not None:
        if starts_turn(node.last):
            starts.append(node)
        node = node.parent
    starts.reverse()
    return starts


def turns_of(ctx: Context) -> tuple[Turn, ...]:
    starts = _start_nodes(ctx)
    ends = [s.parent for s in starts[1:]] + ([ctx] if starts else [])
    return tuple(
        Turn(n, _before(start), end or ctx)
        for n, (start, end) in enumerate(zip(starts, ends, strict=True), 1)
    )


def _before(start: Context) -> Context:
    parent = start.parent
    assert parent is not None  # a node holding an item always has one, the empty context
    return parent


def at_turn(ctx: Context, n: int) -> Context:
    """The context after turn `n` (0: the preamble; negative counts from the end)."""
    starts = _start_nodes(ctx)
    total = len(starts)
    wanted = n + total if n < 0 else n
    if not 0 <= wanted <= total:
        raise IndexError(f"turn {n} of a context with {total} turns (0 is before the first)")
    if wanted == total:
        return ctx
    return _before(starts[wanted])


def _same(a: Item, b: Item) -> bool:
    """The same item, or equal ones (contexts read back from JSON or the log share no
    nodes): equal messages, or outputs and components that rendered to the same."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, (*MESSAGE_TYPES, ToolCall, Instruction)):
        return bool(a == b)
    if getattr(a, "is_computed", True) and getattr(b, "is_computed", True):
        try:
            return bool(a.as_messages() == b.as_messages())  # type: ignore[union-attr]
        except Exception:  # a failed turn has no messages: it matches nothing
            return False
    return False


def common_length(a: Context, b: Context) -> int:
    """How many leading items `a` and `b` have in common."""
    if a.shares(b) or b.shares(a):  # one is the other's ancestor: O(n), no items built
        return min(len(a), len(b))
    shared = 0
    for x, y in zip(a.items(), b.items(), strict=False):
        if not _same(x, y):
            break
        shared += 1
    return shared


def common_ancestor(a: Context, b: Context) -> Context | None:
    """The newest node both `a` and `b` pass through (by identity: nothing compared)."""
    x: Context | None = ancestor(a, len(b))
    y: Context | None = ancestor(b, len(a))
    while x is not None and y is not None and x is not y:
        x, y = x.parent, y.parent
    return x if x is y else None


def ancestor(ctx: Context, length: int) -> Context:
    """The node of `ctx` that holds its first `length` items."""
    node = ctx
    while len(node) > length:
        assert node.parent is not None
        node = node.parent
    return node


@frozen(eq=False)
class ContextDiff:
    """Two contexts compared: the trunk they share (up to the last turn both have whole)
    and each side's own turns after it. `shared_items` counts the leading items in common,
    which may run into a turn the two then answered differently."""

    trunk: Context
    left: tuple[Turn, ...]
    right: tuple[Turn, ...]
    shared_items: int

    @property
    def trunk_turns(self) -> int:
        return len(self.trunk.turns)

    @property
    def identical(self) -> bool:
        return not self.left and not self.right

    def __iter__(self) -> Iterator[tuple[Turn | None, Turn | None]]:
        """The own turns side by side, padded with None where one side has fewer."""
        for n in range(max(len(self.left), len(self.right))):
            yield (
                self.left[n] if n < len(self.left) else None,
                self.right[n] if n < len(self.right) else None,
            )

    def __repr__(self) -> str:
        return (
            f"<ContextDiff trunk {self.trunk_turns} turns; "
            f"{len(self.left)} own turns left, {len(self.right)} right>"
        )

    def _repr_html_(self) -> str:
        return Comparison.of({"left": self.left_context, "right": self.right_context})._repr_html_()

    @property
    def left_context(self) -> Context:
        return self.left[-1].after if self.left else self.trunk

    @property
    def right_context(self) -> Context:
        return self.right[-1].after if self.right else self.trunk


def diff(left: Context, right: Context) -> ContextDiff:
    shared = common_length(left, right)
    left_turns, right_turns = turns_of(left), turns_of(right)
    # The trunk ends at the last turn whose items both sides have whole: a turn both
    # started with the same message but answered apart is each side's own.
    whole = 0
    for a, b in zip(left_turns, right_turns, strict=False):
        if len(a.after) > shared or len(b.after) > shared:
            break
        whole += 1
    trunk = left_turns[whole - 1].after if whole else ancestor(left, _preamble(left, shared))
    return ContextDiff(trunk, left_turns[whole:], right_turns[whole:], shared)


def _preamble(ctx: Context, shared: int) -> int:
    """The shared part of the preamble (the items before the first turn)."""
    return min(shared, len(at_turn(ctx, 0)))


__all__ = [
    "ContextDiff",
    "Turn",
    "at_turn",
    "common_ancestor",
    "diff",
    "starts_turn",
    "turns_of",
]
