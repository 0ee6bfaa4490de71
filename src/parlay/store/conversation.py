"""A logged conversation read back as the context to go on from (`Store.context`, `-c`).

The log keeps one row per prompt (see `parlay.store.recorder`): the prompt, every round's
calls, their results and the answer. Read in order, the rows give back what the model was
shown: the system prompt, then per prompt the user's text, each round's calls as an
assistant turn followed by their results, and the answer. A failed or cancelled turn (its
row ends in "error" or "cancelled") is left out: the session went on from the context
before it. A fork's log session names its parent and the last response of it that it
shares; its conversation is that trunk, then its own rows.

Each row's answer comes back as a computed `ModelOutputThunk` (its rounds as `steps`,
its usage, model, finish reason, diagnostics and timings from the row), which renders to
the same messages as the row: so a comparison shows the logged figures, and a session
going on from it logs only its new turns' tool results, not the old ones again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, get_args

from attrs import frozen

from parlay.context import (
    AssistantMessage,
    Context,
    Message,
    SystemMessage,
    ToolCall,
    ToolResult,
    UserMessage,
)
from parlay.context_schema import DIAGNOSTICS
from parlay.diagnostics import Diagnostics
from parlay.errors import ConfigurationError
from parlay.events import (
    Event,
    Finish,
    FinishReason,
    TextDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)
from parlay.store.records import LoggedResponse, LoggedSession
from parlay.thunk import ModelOutputThunk

if TYPE_CHECKING:
    # `Store.context` hands its work here: the store is passed in, never imported.
    from parlay.store.store import Store

# A chain of forks deeper than this is a damaged log (a session naming itself, say).
MAX_FORK_DEPTH = 1000


@frozen
class Conversation:
    session: LoggedSession
    responses: tuple[LoggedResponse, ...]  # oldest first
    trunk: Conversation | None = None  # a fork's: the parent's rows it shares


def find_conversation(store: Store, cid: str | None) -> Conversation:
    """The latest logged conversation (`cid` None), or the one whose id starts with `cid`."""
    if cid is None:
        latest = store.responses(limit=1)
        if not latest:
            raise ConfigurationError(
                f"-c: no conversation in the log ({store.where}) to continue yet"
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
    return conversation_of(store, matches[0])


def conversation_of(
    store: Store, session: LoggedSession, up_to: int | None = None, depth: int = 0
) -> Conversation:
    """`session`'s rows (those up to response `up_to`), with its trunk if it is a fork."""
    if depth > MAX_FORK_DEPTH:
        raise ConfigurationError(f"the log's sessions fork more than {MAX_FORK_DEPTH} deep")
    rows = tuple(reversed(store.responses(session_id=session.id, limit=None)))
    # `responses` matches session ids by prefix; a conversation is its own rows only.
    rows = tuple(r for r in rows if r.session_id == session.id)
    if up_to is not None:
        rows = tuple(r for r in rows if r.id is not None and r.id <= up_to)
    trunk = None
    parent = store.session(session.parent_id) if session.parent_id is not None else None
    if parent is not None:
        # A parent response of None: the fork left before the parent's first turn.
        cut = session.parent_response_id if session.parent_response_id is not None else 0
        trunk = conversation_of(store, parent, cut, depth + 1)
    return Conversation(session, rows, trunk)


def response_conversation(store: Store, response_id: int) -> Conversation:
    """The conversation up to and including response `response_id`."""
    row = store.response(response_id)
    session = store.session(row.session_id) if row is not None else None
    if row is None or session is None:
        raise ConfigurationError(f"no response {response_id} in the log ({store.where})")
    return conversation_of(store, session, response_id)


# How the log ends a turn that left the session's context as it was.
UNFINISHED = frozenset({"error", "cancelled"})


def rebuild_context(
    conversation: Conversation,
    system: str | None = None,
    on_row: Callable[[ModelOutputThunk[Any], LoggedResponse], None] | None = None,
) -> Context:
    """What the model was shown over `conversation`; `system` (-s) replaces the logged one.
    `on_row` is told each row's answer as it goes in (a recorder notes whose it is)."""
    if conversation.trunk is not None:
        ctx = rebuild_context(conversation.trunk, system, on_row)
    else:
        ctx = Context()
        system = system if system is not None else conversation.session.system
        if system:
            ctx = ctx.insert(SystemMessage(system))
    for row in conversation.responses:
        if row.finish_reason in UNFINISHED:
            continue  # a failed or cancelled turn left the session's context as it was
        if row.prompt is not None:
            ctx = ctx.insert(UserMessage(row.prompt))
        answer = logged_answer(row)
        ctx = ctx.insert(answer)
        if on_row is not None:
            on_row(answer, row)
        for result in _results_after(row):
            ctx = ctx.insert(result)
    return ctx


def _ends_calling(row: LoggedResponse) -> bool:
    """A row whose answer is its last round's calls, not words: a turn that ended asking
    for tools (a proxy's request, whose results come with the next request; a session's
    turn nobody answered). Those calls are the answer's own, their results after it."""
    return not row.text and bool(row.calls) and row.finish_reason not in UNFINISHED


def _calls(row: LoggedResponse, number: int) -> tuple[ToolCall, ...]:
    return tuple(
        ToolCall(c.name, c.arguments, id=c.call_id) for c in row.calls if c.round == number
    )


def _rounds(row: LoggedResponse) -> list[Message]:
    """Each round's calls as an assistant turn, followed by their logged results (all
    but the last round of a row that ends calling: those are the answer's own)."""
    results = {r.call_id: r for r in row.results}
    out: list[Message] = []
    numbers = sorted({c.round for c in row.calls})
    if _ends_calling(row):
        numbers = numbers[:-1]
    for number in numbers:
        calls = _calls(row, number)
        out.append(AssistantMessage("", tool_calls=calls))
        for call in calls:
            logged = results.get(call.id)
            if logged is not None:
                out.append(ToolResult(call.id, call.name, logged.output, logged.error))
    return out


def _results_after(row: LoggedResponse) -> list[ToolResult]:
    """The logged results of the calls a row ended with, as the context holds them."""
    if not _ends_calling(row):
        return []
    results = {r.call_id: r for r in row.results}
    last = _calls(row, max(c.round for c in row.calls))
    return [
        ToolResult(c.id, c.name, results[c.id].output, results[c.id].error)
        for c in last
        if c.id in results
    ]


def logged_answer(row: LoggedResponse) -> ModelOutputThunk[Any]:
    """The row's answer as a computed thunk: its rounds, its text (or the calls it ended
    with) and its figures."""
    events: list[Event] = [TextDelta(row.text)] if row.text else []
    if _ends_calling(row):
        last = _calls(row, max(c.round for c in row.calls))
        for index, call in enumerate(last):
            events += [ToolCallStart(call.id, call.name, index), ToolCallEnd(call)]
    if row.finish_reason in FINISH_REASONS:
        usage = None
        if row.prompt_tokens is not None or row.completion_tokens is not None:
            usage = Usage(row.prompt_tokens or 0, row.completion_tokens or 0)
        reason: Any = row.finish_reason
        diagnostics = _diagnostics(row.diagnostics)
        events.append(Finish(reason, usage, diagnostics=diagnostics, model=row.model))
    thunk = ModelOutputThunk.restored(events, _rounds(row))
    thunk.duration_ms, thunk.first_event_ms = row.duration_ms, row.first_event_ms
    return thunk


FINISH_REASONS = frozenset(get_args(FinishReason))


def _diagnostics(logged: dict[str, Any] | None) -> Diagnostics | None:
    """The logged diagnostics, or None when they are not this parlay's (a newer one's)."""
    if not logged:
        return None
    try:
        return DIAGNOSTICS.validate_python(logged)
    except ValueError:
        return None


def find(store: Store, key: str | int | None) -> Conversation:
    """A conversation by log-session id (a prefix; None: the latest) or by response id."""
    if isinstance(key, bool) or not isinstance(key, str | int | None):
        raise TypeError(
            f"a logged conversation is named by a session id (str) or a response id (int), "
            f"not {type(key).__name__}"
        )
    if isinstance(key, int):
        return response_conversation(store, key)
    return find_conversation(store, key)


def logged_context(store: Store, key: str | int | None) -> Context:
    return rebuild_context(find(store, key))


__all__ = [
    "UNFINISHED",
    "Conversation",
    "find",
    "find_conversation",
    "logged_context",
    "rebuild_context",
    "response_conversation",
]
