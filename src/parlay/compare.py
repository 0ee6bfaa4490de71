"""`parlay.compare(a, b, ...)`: sessions, contexts or a `BranchTree` side by side, as a
`Comparison` (`parlay.comparison`, re-exported here). It knows branches and sessions, so
it sits above them; the value it makes needs contexts only.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from parlay.branches import BranchTree
from parlay.comparison import Comparison, TurnFigures
from parlay.context import Context

if TYPE_CHECKING:
    from parlay.session import Session


def compare(*branches: Session | Context | BranchTree, **named: Session | Context) -> Comparison:
    """Branches side by side: sessions (named by their branch), contexts (numbered), a
    `BranchTree` (every branch in it), or any of these by keyword name."""
    contexts: dict[str, Context] = {}
    for n, item in enumerate(branches, 1):
        if isinstance(item, BranchTree):
            contexts.update(item.contexts())
        else:
            contexts[_name(item, n, contexts)] = _context(item)
    contexts.update((name, _context(item)) for name, item in named.items())
    return Comparison.of(contexts)


def _context(item: Any) -> Context:
    return item if isinstance(item, Context) else item.ctx


def _name(item: Any, n: int, taken: Iterable[str]) -> str:
    name = item.branch.name if hasattr(item, "branch") else str(n)
    return name if name not in taken else f"{name} ({n})"


__all__ = ["Comparison", "TurnFigures", "compare"]
