"""The log's conversations as trees: every fork under the conversation it branched from
(`parlay logs tree`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from attrs import define, field
from rich.markup import escape

from parlay._text import one_line
from parlay.store.records import LoggedResponse, LoggedSession
from parlay.store.store import Store


@define
class SessionNode:
    """A logged session, its responses (oldest first) and the sessions forked from it."""

    session: LoggedSession
    responses: list[LoggedResponse]
    children: list[SessionNode] = field(factory=list)

    def walk(self, depth: int = 0) -> Iterator[tuple[int, SessionNode]]:
        yield depth, self
        for child in self.children:
            yield from child.walk(depth + 1)

    def label(self) -> str:
        """One line for a terminal (rich markup; what was logged is escaped)."""
        s = self.session
        first = next((r.prompt for r in self.responses if r.prompt), None)
        where = ""
        if s.parent_id is not None:
            at = s.parent_response_id
            where = f" [dim]from response {at}[/]" if at is not None else " [dim]from the start[/]"
        return (
            f"[bold]{s.id[:12]}[/]{where}  {s.created_at[:19].replace('T', ' ')}  "
            f"{escape(s.backend or '?')}  {len(self.responses)} responses  "
            f"{escape(one_line(first, 40))}"
        )

    def as_dict(self) -> dict[str, Any]:
        s = self.session
        return {
            "id": s.id,
            "parent_id": s.parent_id,
            "parent_response_id": s.parent_response_id,
            "created_at": s.created_at,
            "backend": s.backend,
            "responses": [r.id for r in self.responses],
        }


def session_forest(store: Store, session: str | None = None, count: int = 20) -> list[SessionNode]:
    """The newest `count` trees (or the one holding the session `session` starts),
    each a root session with its forks."""
    sessions = store.sessions(limit=None)  # newest first
    by_id = {s.id: s for s in sessions}
    children: dict[str, list[LoggedSession]] = {}
    for s in reversed(sessions):  # children oldest first
        if s.parent_id is not None and s.parent_id in by_id:
            children.setdefault(s.parent_id, []).append(s)
    roots = [s for s in sessions if s.parent_id is None or s.parent_id not in by_id]
    if session is not None:
        matches = [s for s in sessions if s.id.startswith(session)]
        wanted = {_root(by_id, s).id for s in matches}
        roots = [r for r in roots if r.id in wanted]
    return [_node(store, r, children) for r in roots[:count]]


def _root(by_id: dict[str, LoggedSession], session: LoggedSession) -> LoggedSession:
    seen = {session.id}
    while session.parent_id is not None and session.parent_id in by_id:
        session = by_id[session.parent_id]
        if session.id in seen:  # a damaged log whose sessions name each other
            break
        seen.add(session.id)
    return session


def _node(
    store: Store, session: LoggedSession, children: dict[str, list[LoggedSession]], depth: int = 0
) -> SessionNode:
    rows = [
        r for r in store.responses(session_id=session.id, limit=None) if r.session_id == session.id
    ]
    rows.reverse()
    node = SessionNode(session, rows)
    if depth < 100:  # deeper is a damaged log, not a conversation
        node.children = [_node(store, c, children, depth + 1) for c in children.get(session.id, [])]
    return node


__all__ = ["SessionNode", "session_forest"]
