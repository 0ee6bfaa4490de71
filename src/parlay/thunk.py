"""ModelOutputThunk: the lazy, awaitable, streamable result of every session verb."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import inspect
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterator, Sequence
from typing import Any, TypeVar

from attrs import frozen

from parlay._sync import iterate_sync, portal_loop
from parlay.errors import ThunkError
from parlay.events import (
    Event,
    Finish,
    TextDelta,
    ToolCallArgsDelta,
    ToolCallStart,
    Usage,
)
from parlay.messages import Message
from parlay.thunk_results import ThunkResults

T = TypeVar("T")

# The thunk whose completion hook is running (in this context, or in the worker threads
# the hook hands work to): it may read the results before the thunk reports done.
_completing: contextvars.ContextVar[ModelOutputThunk[Any] | None] = contextvars.ContextVar(
    "parlay_completing_thunk", default=None
)


@frozen
class RoundDone:
    """Internal marker from a tool loop: one model round and its tool results are finished.

    `messages` are the round's assistant message and the tool results that followed;
    the thunk keeps them as `steps` and starts collecting the next round afresh.
    """

    messages: tuple[Message, ...]


Producer = Callable[[], AsyncIterator["Event | RoundDone"]]


class ModelOutputThunk(ThunkResults[T]):
    """A model's answer that may not exist yet.

    Nothing runs until the thunk is asked for something: `.value` (blocks in sync code),
    `await thunk`, `async for delta in thunk` (text as it streams), or `for delta in thunk`.
    The model runs once however many consumers there are; late consumers replay the
    events from the start.

    `duration_ms` and `first_event_ms` are set by the session that ran the turn when it
    completes (from the prompt to the answer, and to the first text or call streamed);
    None on a thunk no session timed.
    """

    duration_ms: float | None = None
    first_event_ms: float | None = None

    def __init__(
        self,
        producer: Producer,
        *,
        parse: Callable[[str], T] | None = None,
        on_complete: Callable[[ModelOutputThunk[T]], Awaitable[None] | None] | None = None,
        on_failure: Callable[[BaseException], Awaitable[None] | None] | None = None,
    ) -> None:
        self._producer = producer
        self._parse = parse
        self._on_complete = on_complete
        self._on_failure = on_failure
        self._events: list[Event] = []
        self._lock = threading.Lock()
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []
        self._finished = threading.Event()
        # True from the moment the producer is exhausted, before the completion
        # callbacks run, so they can read the results through the public properties.
        self._settled = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._driver: asyncio.Task[None] | concurrent.futures.Future[None] | None = None
        self._error: BaseException | None = None
        self._round_start = 0
        self._steps: list[Message] = []
        self._usage: Usage | None = None
        self._parsed: Any = None
        self._parsed_ready = False

    @classmethod
    def restored(
        cls,
        events: Sequence[Event],
        steps: Sequence[Message] = (),
        *,
        error: Exception | None = None,
    ) -> ModelOutputThunk[Any]:
        """A thunk that is already computed, from what was kept of one: `events` of its
        final round (the text, the calls, a `Finish` with the turn's usage), `steps` of
        the rounds before it, or the `error` it failed with. Nothing runs when it is read
        (`Context.from_json` makes these)."""

        async def nothing() -> AsyncIterator[Event | RoundDone]:
            return
            yield

        thunk: ModelOutputThunk[Any] = cls(nothing)
        thunk._events = list(events)
        thunk._steps = list(steps)
        for event in thunk._events:
            if isinstance(event, Finish) and event.usage is not None:
                thunk._usage = event.usage if thunk._usage is None else thunk._usage + event.usage
        thunk._error = error
        thunk._settled = True
        thunk._finished.set()
        return thunk

    # -- state -----------------------------------------------------------------------
    @property
    def is_computed(self) -> bool:
        """True once the model has finished (successfully or not)."""
        return self._finished.is_set()

    @property
    def is_started(self) -> bool:
        return self._loop is not None

    def __repr__(self) -> str:
        if not self.is_computed:
            return f"<ModelOutputThunk {'running' if self.is_started else 'pending'}>"
        if self._error is not None:
            return f"<ModelOutputThunk failed: {self._error!r}>"
        short = text if len(text := self._text()) <= 60 else text[:57] + "..."
        calls = [c.name for c in self._calls()]  # a final output's calls ran in no loop
        return f"<ModelOutputThunk {short!r} tools={calls}{' (unrun)' if calls else ''}>"

    def __str__(self) -> str:
        """The text once computed (so `print(reply)` shows the answer); else the repr."""
        if self.is_computed and self._error is None:
            return self._text()
        return repr(self)

    def _repr_html_(self) -> str:
        """The reply as turns, its calls and the loop's steps folded, for notebooks."""
        from parlay.display import thunk_html

        if not self.is_computed:
            return thunk_html("running" if self.is_started else "pending", "", (), (), None)
        if self._error is not None:
            return thunk_html(f"failed: {self._error!r}", "", (), (), None)
        return thunk_html("done", self._text(), self._calls(), self.steps, self.diagnostics)

    # -- running ---------------------------------------------------------------------
    def _start(self, loop: asyncio.AbstractEventLoop) -> None:
        with self._lock:
            if self._loop is not None:
                return
            self._loop = loop
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self._driver = loop.create_task(self._drive())
        else:
            self._driver = asyncio.run_coroutine_threadsafe(self._drive(), loop)

    def cancel(self, *, wait: float = 0) -> bool:
        """Stop a running turn: its model request and the tool calls it is running are
        cancelled, and every consumer gets `asyncio.CancelledError`. False when the turn
        has not started or is already over. `wait`: seconds to wait, from a thread other
        than the turn's loop, for it to unwind (its failure hook, the session's observers
        with it, done)."""
        driver, loop = self._driver, self._loop
        if driver is None or loop is None or self._finished.is_set():
            return False
        if wait > 0:
            self._check_not_own_loop()
        loop.call_soon_threadsafe(driver.cancel)
        if wait > 0:
            self._finished.wait(wait)
        return True

    async def _drive(self) -> None:
        try:
            async for item in self._producer():
                if isinstance(item, RoundDone):
                    self._steps.extend(item.messages)
                    self._round_start = len(self._events)
                    continue
                if isinstance(item, Finish) and item.usage is not None:
                    self._usage = item.usage if self._usage is None else self._usage + item.usage
                self._events.append(item)
                self._notify()
            self._settled = True
            await self._hook(self._on_complete, self)
        except Exception as exc:  # delivered to every consumer
            self._error = exc
            self._settled = True
            await self._hook(self._on_failure, exc)
        except asyncio.CancelledError as exc:  # the hook is told, then unwinding goes on
            self._error = exc
            self._settled = True
            await self._hook(self._on_failure, exc)
            raise
        except BaseException as exc:  # the process is going down: undo, tell no one
            self._error = exc
            self._settled = True
            if self._on_failure is not None:
                pending = self._on_failure(exc)
                if inspect.iscoroutine(pending):
                    pending.close()
            raise
        finally:
            self._finished.set()
            self._notify()

    async def _hook(self, hook: Callable[[Any], Awaitable[None] | None] | None, arg: Any) -> None:
        """Run a completion or failure hook before anyone is told the thunk is done, so a
        consumer woken by it sees its effects (a logged row, say). It may be async: a slow
        hook holds up this turn only, not the loop."""
        if hook is None:
            return
        token = _completing.set(self)
        try:
            pending = hook(arg)
            if inspect.isawaitable(pending):
                await pending
        finally:
            _completing.reset(token)

    def _notify(self) -> None:
        with self._lock:
            waiters, self._waiters = self._waiters, []
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        for loop, event in waiters:
            if loop is running:
                event.set()
            elif not loop.is_closed():
                loop.call_soon_threadsafe(event.set)

    async def _wait_beyond(self, seen: int) -> None:
        event = asyncio.Event()
        with self._lock:
            if len(self._events) > seen or self._finished.is_set():
                return
            self._waiters.append((asyncio.get_running_loop(), event))
        await event.wait()

    def _check_not_own_loop(self) -> None:
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            return
        if running is self._loop and not self._finished.is_set():
            raise ThunkError(
                "this thunk is being computed on the running event loop; blocking on it here "
                "would deadlock: use `await thunk` or `async for` in async code"
            )

    def _force(self) -> None:
        if self._finished.is_set() or (self._settled and _completing.get() is self):
            # The completion hook reads the results before the thunk reports done.
            self._raise_if_failed()
            return
        self._check_not_own_loop()
        self._start(portal_loop())
        self._finished.wait()
        self._raise_if_failed()

    def _raise_if_failed(self) -> None:
        if self._error is not None:
            raise self._error

    # -- consuming -------------------------------------------------------------------
    async def events(self) -> AsyncIterator[Event]:
        """Every event of the final output and the rounds before it, as they arrive."""
        self._start(asyncio.get_running_loop())
        seen = 0
        while True:
            while seen < len(self._events):
                yield self._events[seen]
                seen += 1
            if self._finished.is_set():
                if seen >= len(self._events):
                    self._raise_if_failed()
                    return
                continue
            await self._wait_beyond(seen)

    async def text_deltas(self) -> AsyncIterator[str]:
        async for event in self.events():
            if isinstance(event, TextDelta):
                yield event.text

    def __aiter__(self) -> AsyncIterator[str]:
        return self.text_deltas()

    def __iter__(self) -> Iterator[str]:
        """Text deltas from synchronous code (runs the model on parlay's portal loop)."""
        if self._finished.is_set():
            self._raise_if_failed()
            return iter([e.text for e in self._events if isinstance(e, TextDelta)])
        self._check_not_own_loop()
        return iterate_sync(self.text_deltas())

    def __await__(self) -> Generator[Any, None, ModelOutputThunk[T]]:
        return self._await().__await__()

    async def _await(self) -> ModelOutputThunk[T]:
        async for _ in self.events():
            pass
        return self


def arguments_text(events: list[Event], call_id: str) -> str:
    """The concatenated argument deltas of one call (for checking streams)."""
    return "".join(e.delta for e in events if isinstance(e, ToolCallArgsDelta) and e.id == call_id)


def started_calls(events: list[Event]) -> list[ToolCallStart]:
    return [e for e in events if isinstance(e, ToolCallStart)]
