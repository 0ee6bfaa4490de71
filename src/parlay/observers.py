"""Turn observers: what a session tells the world when a turn completes.

A session knows this one hook, not what listens to it: the SQLite log
(`parlay.store.TurnRecorder`) is one observer, a user's metrics or tracing another.
Observers run in a worker thread, one after another in the order given, before the
turn's thunk reports itself done: a consumer that saw the thunk complete also sees
what its observers wrote, and a slow observer (a locked database waits up to its busy
timeout) holds up that turn only, never the event loop the other turns stream on.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import AsyncIterator, Callable, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from parlay.concurrent_calls import in_thread
from parlay.context import Context, Item, Message
from parlay.errors import ToolLoopError, TurnCancelledError
from parlay.events import TextDelta, ToolCallStart

if TYPE_CHECKING:
    from parlay.thunk import ModelOutputThunk, Producer


@attrs.frozen
class CompletedTurn:
    """One finished turn as an observer sees it, whether it succeeded or failed.

    `item` is what the verb inserted (None for `respond()`), `prompt_ctx` the context the
    model was asked from (the item included), `thunk` the output. `error` is None when
    the turn succeeded; otherwise the exception its consumers get, and reading the
    thunk's results raises it. `steps` are the rounds of the turn's tool loop, each call
    with its result; for a turn stopped at its chain limit they end with the calls it was
    stopped on, which did not run. The times are `time.monotonic()` readings:
    `first_event` is the first text or call the model streamed (None if it streamed
    neither).
    """

    item: Item | None
    prompt_ctx: Context
    thunk: ModelOutputThunk[Any]
    started: float
    first_event: float | None
    finished: float
    error: Exception | None = None
    steps: tuple[Message, ...] = ()

    @property
    def succeeded(self) -> bool:
        return self.error is None

    @property
    def duration_ms(self) -> float:
        return elapsed_ms(self.started, self.finished)

    @property
    def first_event_ms(self) -> float | None:
        if self.first_event is None:
            return None
        return elapsed_ms(self.started, self.first_event)


def elapsed_ms(start: float, end: float) -> float:
    """Milliseconds between two `time.monotonic()` readings, to the microsecond."""
    return round((end - start) * 1000, 3)


TurnObserver = Callable[[CompletedTurn], object]
"""Called once per finished turn, failed ones too (`CompletedTurn.error`), in a worker
thread; what it returns is ignored."""


@attrs.define
class TurnClock:
    """Times one turn's producer: when it started, when the model first streamed."""

    item: Item | None
    prompt_ctx: Context
    started: float | None = None
    first_event: float | None = None
    # Of the tool loop, as they finish: the session adds them (a cancelled round too).
    rounds: list[Message] = attrs.field(factory=list)

    def wrap(self, produce: Producer) -> Producer:
        async def timed() -> AsyncIterator[Any]:
            self.started = time.monotonic()
            async for event in produce():
                if self.first_event is None and isinstance(event, TextDelta | ToolCallStart):
                    self.first_event = time.monotonic()
                yield event

        return timed

    def completed(self, thunk: ModelOutputThunk[Any]) -> CompletedTurn:
        return self._ended(thunk, None, thunk.steps)

    def failed(self, thunk: ModelOutputThunk[Any], error: Exception) -> CompletedTurn:
        # A tool loop that stopped (chain limit, a cut call) hands over every round it made.
        steps: tuple[Message, ...] = ()
        if isinstance(error, ToolLoopError):
            steps = error.context.messages()[len(self.prompt_ctx.messages()) :]
        elif isinstance(error, TurnCancelledError):  # the rounds its tools ran in
            steps = tuple(self.rounds)
        return self._ended(thunk, error, steps)

    def _ended(
        self, thunk: ModelOutputThunk[Any], error: Exception | None, steps: tuple[Message, ...]
    ) -> CompletedTurn:
        now = time.monotonic()
        started = self.started if self.started is not None else now
        return CompletedTurn(
            self.item, self.prompt_ctx, thunk, started, self.first_event, now, error, steps
        )


async def notify(observers: Sequence[TurnObserver], turn: CompletedTurn) -> None:
    """Tell every observer, in order, off the event loop. A failing observer warns; the
    turn it observes stands as it ended."""
    if observers:
        await in_thread(_notify_each, tuple(observers), turn)


def _notify_each(observers: tuple[TurnObserver, ...], turn: CompletedTurn) -> None:
    for observer in observers:
        try:
            observer(turn)
        except Exception as exc:
            name = getattr(observer, "__name__", type(observer).__name__)
            warnings.warn(
                f"turn observer {name} failed: {type(exc).__name__}: {exc}",
                RuntimeWarning,
                stacklevel=2,
            )


__all__ = ["CompletedTurn", "TurnClock", "TurnObserver", "elapsed_ms", "notify"]
