"""`-c` / `--cid`: a logged conversation, read back as the context to go on from.

The log keeps one row per prompt (see `parlay.store.recorder`): the prompt, every round's
calls, their results and the answer. Read in order, the rows give back what the model was
shown: the system prompt, then per prompt the user's text, each round's calls as an
assistant turn followed by their results, and the answer. A failed or cancelled turn (its
row ends in "error" or "cancelled") is left out: the session went on from the context
before it.
"""

from __future__ import annotations

from attrs import frozen

from parlay.context import (
    AssistantMessage,
    Context,
    SystemMessage,
    ToolCall,
    ToolResult,
    UserMessage,
)
from parlay.errors import ConfigurationError
from parlay.store import Store
from parlay.store.records import LoggedResponse, LoggedSession


@frozen
class Conversation:
    session: LoggedSession
    responses: tuple[LoggedResponse, ...]  # oldest first


def find_conversation(store: Store, cid: str | None) -> Conversation:
    """The latest logged conversation (`cid` None), or the one whose id starts with `cid`."""
    if cid is None:
        latest = store.responses(limit=1)
        if not latest:
            raise ConfigurationError(
                f"-c: no conversation in the log ({store.path}) to continue yet"
            )
        cid = latest[0].session_id
    matches = [s for s in store.sessions(limit=None) if s.id.startswith(cid)]
    if not matches:
        raise ConfigurationError(
            f"--cid {cid}: no logged conversation has that id; `parlay logs` lists them"
        )
    if len(matches) > 1:
        raise ConfigurationError(
            f"--cid {cid}: {len(matches)} conversations start with it; give more of the id"
        )
    session = matches[0]
    rows = store.responses(session_id=session.id, limit=None)
    return Conversation(session, tuple(reversed(rows)))


# How the log ends a turn that left the session's context as it was.
UNFINISHED = frozenset({"error", "cancelled"})


def rebuild_context(conversation: Conversation, system: str | None = None) -> Context:
    """What the model was shown over `conversation`; `system` (-s) replaces the logged one."""
    ctx = Context()
    system = system if system is not None else conversation.session.system
    if system:
        ctx = ctx.insert(SystemMessage(system))
    for row in conversation.responses:
        if row.finish_reason in UNFINISHED:
            continue  # a failed or cancelled turn left the session's context as it was
        if row.prompt is not None:
            ctx = ctx.insert(UserMessage(row.prompt))
        ctx = _insert_rounds(ctx, row)
        ctx = ctx.insert(AssistantMessage(row.text))
    return ctx


def _insert_rounds(ctx: Context, row: LoggedResponse) -> Context:
    results = {r.call_id: r for r in row.results}
    for number in sorted({c.round for c in row.calls}):
        calls = tuple(
            ToolCall(c.name, c.arguments, id=c.call_id) for c in row.calls if c.round == number
        )
        ctx = ctx.insert(AssistantMessage("", tool_calls=calls))
        for call in calls:
            logged = results.get(call.id)
            if logged is not None:
                ctx = ctx.insert(ToolResult(call.id, call.name, logged.output, logged.error))
    return ctx
