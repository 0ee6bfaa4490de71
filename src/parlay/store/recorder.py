"""Writes a session's completed turns to the log (`Session(..., log=True)`).

One row per prompt, as llm logs a chain: a turn is recorded when its thunk completes
(the prompt, the final text, usage, model, timings and diagnostics, every tool call of
every round, and the tool results the model saw, both those from the turn's own tool
loop and those inserted into the context since the previous turn by `call_tool`,
`tool_call_result` or a hand-made `ctx.insert`). A turn that ends by calling tools leaves
its row open: the `respond()` turns that carry the results back extend that row (calls,
results, the answer, summed usage) instead of adding rows with no prompt.
"""

from __future__ import annotations

import threading
import uuid
import warnings
from collections.abc import Sequence

import attrs

from parlay.context import AssistantMessage, Context, Item, ToolCall, ToolResult
from parlay.errors import TurnCancelledError
from parlay.observers import CompletedTurn, elapsed_ms
from parlay.store.records import model_of
from parlay.store.store import LoggedCall, LoggedResponse, LoggedResult, LoggedSession, Store


@attrs.define
class _OpenRow:
    """A logged prompt whose tool loop is still going: the next `respond()` extends it."""

    id: int
    rounds: int
    started: float


def prompt_text(item: Item | None) -> str | None:
    """The text a turn's input showed the model (None for `respond()`)."""
    if item is None:
        return None
    content = getattr(item, "content", None)
    if isinstance(content, str):
        return content
    messages = getattr(item, "as_messages", None)
    if messages is not None:
        return "\n\n".join(str(getattr(m, "content", "")) for m in messages())
    return repr(item)


def results_since_last_turn(ctx: Context) -> list[ToolResult]:
    """Tool results inserted after the newest model turn in `ctx`, oldest first."""
    found: list[ToolResult] = []
    for item in ctx.reversed_items():
        if isinstance(item, ToolResult):
            found.append(item)
        elif not isinstance(item, ToolCall | AssistantMessage) and hasattr(item, "is_computed"):
            break  # the previous model turn: its results were logged with it
    found.reverse()
    return found


class TurnRecorder:
    """Logs one session's turns into a `Store` under one log-session id.

    A turn observer: `Session(..., log=True)` subscribes one, or pass your own with
    `Session(..., observers=[TurnRecorder(store)])`. The session calls it in a worker
    thread, so the SQLite write never runs on the event loop.
    """

    def __init__(
        self,
        store: Store,
        *,
        source: str = "python",
        backend: str | None = None,
        system: str | None = None,
        tools: Sequence[str] = (),
    ) -> None:
        self.store = store
        self.session = LoggedSession(uuid.uuid4().hex, "", source, backend, system, tuple(tools))
        self.last_response_id: int | None = None
        self._open: _OpenRow | None = None
        # The row of each turn's output (by identity), so a fork can name the last
        # response its context shares (`forked`). Held while the recorder lives, as the
        # session's context holds them anyway.
        self._rows: dict[int, tuple[object, int, str]] = {}
        # Turns of one session may complete at once (async verbs run side by side).
        self._lock = threading.Lock()

    @property
    def session_id(self) -> str:
        return self.session.id

    def __call__(self, turn: CompletedTurn) -> None:
        """Write the completed turn. A log failure warns; it never fails the turn."""
        prompt = prompt_text(turn.item)
        with self._lock:
            # A new prompt always starts a row; only a `respond()` continues the open one.
            extending = self._open if prompt is None else None
            self.last_response_id = None
            self._open = None
            first_round = extending.rounds if extending is not None else 0
            try:
                response = self.response(turn, first_round)
                if extending is not None:
                    duration = elapsed_ms(extending.started, turn.finished)
                    response = attrs.evolve(response, duration_ms=duration)
                    self.store.extend_response(extending.id, response)
                    row_id, started = extending.id, extending.started
                else:
                    row_id = self.store.add_response(response, self.session)
                    started = turn.started
            except Exception as exc:
                warnings.warn(f"parlay could not log a turn: {exc}", RuntimeWarning, stacklevel=2)
                return
            self.last_response_id = row_id
            self._rows[id(turn.thunk)] = (turn.thunk, row_id, self.session.id)
            if turn.succeeded and turn.thunk.tools:
                rounds = max((c.round for c in response.calls), default=first_round) + 1
                self._open = _OpenRow(row_id, rounds, started)

    def remember(self, item: object, response_id: int, session_id: str | None = None) -> None:
        """Note that `item` (an answer in a context rebuilt from the log) is the row
        `response_id` of log session `session_id` (None: this recorder's)."""
        with self._lock:
            self._rows[id(item)] = (item, response_id, session_id or self.session.id)

    def response_for(self, ctx: Context) -> tuple[int, str] | None:
        """The newest logged response whose output `ctx` holds, and its log session."""
        with self._lock:
            for item in ctx.reversed_items():
                known = self._rows.get(id(item))
                if known is not None and known[0] is item:
                    return known[1], known[2]
        return None

    def forked(self, ctx: Context) -> TurnRecorder:
        """A recorder for a fork whose context is `ctx`: a log session of its own that
        names its parent and the last response of it `ctx` shares. The parent is the log
        session that wrote that response: this one, or one this one forked from when
        the fork goes back past this one's own turns."""
        fork = TurnRecorder(
            self.store,
            source=self.session.source,
            backend=self.session.backend,
            system=self.session.system,
            tools=self.session.tools,
        )
        shared = self.response_for(ctx)
        parent_id, response_id = (shared[1], shared[0]) if shared else (self.session.id, None)
        fork.session = attrs.evolve(
            fork.session, parent_id=parent_id, parent_response_id=response_id
        )
        with self._lock:
            fork._rows = dict(self._rows)  # a fork of the fork finds the trunk's rows too
        return fork

    def response(self, turn: CompletedTurn, first_round: int = 0) -> LoggedResponse:
        """The turn as a row; its rounds are numbered from `first_round`. A failed turn
        is a row too: its finished rounds (their tools ran), no text, and the error in
        its diagnostics (`finish_reason` "error", or "cancelled" for a turn stopped
        before it finished)."""
        calls: list[LoggedCall] = []
        results = [_result(r) for r in results_since_last_turn(turn.prompt_ctx)]
        round_no = first_round
        for message in turn.steps:
            if isinstance(message, AssistantMessage):
                calls.extend(_call(c, round_no) for c in message.tool_calls)
                round_no += 1
            elif isinstance(message, ToolResult):
                results.append(_result(message))
        row = LoggedResponse(
            session_id=self.session.id,
            text="",
            prompt=prompt_text(turn.item),
            backend=self.session.backend,
            first_event_ms=turn.first_event_ms,
            duration_ms=turn.duration_ms,
            calls=tuple(calls),
            results=tuple(results),
        )
        if not turn.succeeded:
            error = f"{type(turn.error).__name__}: {turn.error}"
            ended = "cancelled" if isinstance(turn.error, TurnCancelledError) else "error"
            return attrs.evolve(row, finish_reason=ended, diagnostics={"error": error})
        thunk = turn.thunk
        calls.extend(_call(c, round_no) for c in thunk.tools)
        usage, diagnostics = thunk.usage, thunk.diagnostics
        return attrs.evolve(
            row,
            text=thunk.value,
            model=thunk.model or model_of(self.session.backend),
            finish_reason=thunk.finish_reason,
            prompt_tokens=usage.prompt_tokens if usage else None,
            completion_tokens=usage.completion_tokens if usage else None,
            diagnostics=attrs.asdict(diagnostics) if diagnostics is not None else None,
            calls=tuple(calls),
        )


def _call(call: ToolCall, round_no: int) -> LoggedCall:
    return LoggedCall(call.id, call.name, dict(call.arguments), round_no)


def _result(result: ToolResult) -> LoggedResult:
    return LoggedResult(result.call_id, result.name, result.output, result.error)
