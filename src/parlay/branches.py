"""The branches of a session: every fork and replay of it, as a tree.

`session.fork()` and `session.replay()` make branches; `session.branches` shows the tree
from its root, each branch with the turn it left its parent at (counted on the contexts
as they are now, so it stays right however the branches went on). Branches hold their
sessions weakly: a branch whose session is gone and that has no branches of its own is
dropped.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator
from html import escape
from typing import TYPE_CHECKING

from parlay.comparison import Comparison
from parlay.display import page
from parlay.turns import common_ancestor

if TYPE_CHECKING:
    from parlay.context import Context
    from parlay.session import Session


# Forks may be made from several threads at once; a tree changes rarely, so one lock.
_growing = threading.Lock()


class Branch:
    """One session in its tree: a name, its parent branch, its own branches."""

    def __init__(self, name: str, session: Session, parent: Branch | None = None) -> None:
        self.name = name
        self.parent = parent
        self.children: list[Branch] = []
        self._session = weakref.ref(session)
        self._made = 0

    @property
    def session(self) -> Session | None:
        """The branch's session, or None once it was garbage-collected."""
        return self._session()

    @property
    def root(self) -> Branch:
        node = self
        while node.parent is not None:
            node = node.parent
        return node

    def child(self, session: Session, name: str | None = None) -> Branch:
        """Record `session` as a branch of this one (named `<this>.<n>` by default)."""
        with _growing:
            self.children = [c for c in self.children if c.session is not None or c.children]
            self._made += 1
            made = Branch(name or f"{self.name}.{self._made}", session, self)
            self.children.append(made)
        return made

    def walk(self, depth: int = 0) -> Iterator[tuple[int, Branch]]:
        yield depth, self
        for child in self.children:
            yield from child.walk(depth + 1)

    def __repr__(self) -> str:
        return f"<Branch {self.name}>"


class BranchTree:
    """The tree a session belongs to, from its root (`session.branches`).

    Iterating gives the live sessions' branches, parents before their branches;
    `tree["main.1"]` is a branch's session; `contexts()` maps names to contexts;
    `compare()` puts them side by side.
    """

    def __init__(self, root: Branch) -> None:
        self.root = root

    def __iter__(self) -> Iterator[Branch]:
        return (b for _, b in self.root.walk() if b.session is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    @property
    def names(self) -> list[str]:
        return [b.name for b in self]

    def __getitem__(self, name: str) -> Session:
        for branch in self:
            if branch.name == name and branch.session is not None:
                return branch.session
        raise KeyError(f"no branch {name!r}; the branches are {', '.join(self.names)}")

    def contexts(self) -> dict[str, Context]:
        return {b.name: b.session.ctx for b in self if b.session is not None}

    def forked_at(self, branch: Branch) -> int | None:
        """The turn `branch` left its parent at: the turns of the newest context both
        went through (None for the root, or a parent gone)."""
        parent = branch.parent.session if branch.parent is not None else None
        session = branch.session
        if parent is None or session is None:
            return None
        shared = common_ancestor(parent.ctx, session.ctx)
        return len(shared.turns) if shared is not None else 0

    def lines(self) -> list[tuple[int, Branch, str]]:
        out = []
        for depth, branch in self.root.walk():
            session = branch.session
            if session is None:
                out.append((depth, branch, "(gone)"))
                continue
            turns = len(session.ctx.turns)
            at = self.forked_at(branch)
            where = ""
            if branch.parent is not None and at is not None:
                where = f", from turn {at} of {branch.parent.name}"
            backend = getattr(session.backend, "name", type(session.backend).__name__)
            out.append((depth, branch, f"{turns} turns on {backend}{where}"))
        return out

    def __str__(self) -> str:
        return "\n".join(f"{'  ' * d}{b.name}: {text}" for d, b, text in self.lines())

    def __repr__(self) -> str:
        return f"<BranchTree {self.root.name}: {len(self)} branches>"

    def _repr_html_(self) -> str:
        items = "".join(
            f'<div style="margin-left:{16 * d}px">🌿 <b>{escape(b.name)}</b> '
            f"<span>{escape(text)}</span></div>"
            for d, b, text in self.lines()
        )
        return page(items)

    def compare(self) -> Comparison:
        """Every live branch side by side (`parlay.compare`)."""
        return Comparison.of(self.contexts())


__all__ = ["Branch", "BranchTree"]
