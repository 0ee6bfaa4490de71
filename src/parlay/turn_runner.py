"""One turn of a session: its thunk in the context, its clock, its rollback on failure,
and the observers told when it ends.

`Session` inherits `TurnRunner`; every verb is a `_turn` with the item it inserts.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable
from functools import partial
from typing import Any

from pydantic import BaseModel

from parlay.context import Context, Item
from parlay.errors import InvalidRequestError, TurnCancelledError
from parlay.events import Event
from parlay.observers import CompletedTurn, TurnClock, TurnObserver, notify
from parlay.request import GenerationOptions, ResponseFormat, ToolChoice
from parlay.requirements.sampling import SampledThunk, Sampler
from parlay.thunk import ModelOutputThunk, RoundDone
from parlay.tool_loop import ToolLoop


class TurnRunner(ToolLoop):
    """The turn machinery under the session's verbs."""

    _ctx: Context
    chain_limit: int
    options: GenerationOptions
    observers: list[TurnObserver]

    def _turn(
        self,
        item: Item | None,
        tool_choice: ToolChoice | str | None,
        format: type[BaseModel] | None,
        options: GenerationOptions | None,
        run_tools: bool,
        chain_limit: int | None = None,
        sampler: Sampler | None = None,
    ) -> ModelOutputThunk[Any]:
        choice = ToolChoice.coerce(tool_choice)
        if choice.mode == "tool" and choice.name not in self.tools:
            raise InvalidRequestError(
                f"tool_choice names {choice.name!r}, which is not one of this session's "
                f"tools ({', '.join(self.tools.names) or 'none'})"
            )
        limit = self.chain_limit if chain_limit is None else chain_limit
        before = self._ctx
        prompt_ctx = before.insert(item) if item is not None else before
        response_format = (
            ResponseFormat(format.model_json_schema(), name=format.__name__)
            if format is not None
            else None
        )
        parse = format.model_validate_json if format is not None else None

        def produce() -> AsyncIterator[Event | RoundDone]:
            return self._run_turn(
                prompt_ctx,
                choice,
                response_format,
                options or self.options,
                run_tools,
                limit,
                told=clock.rounds,
            )

        clock = TurnClock(item, prompt_ctx)
        inserted: list[Context] = []
        kind = ModelOutputThunk if sampler is None else partial(SampledThunk, sampler=sampler)
        thunk: ModelOutputThunk[Any] = kind(
            clock.wrap(produce if sampler is None else sampler.run),
            parse=parse,
            on_complete=lambda done: self._completed(clock, done),
            on_failure=lambda error: self._failed(error, inserted[0], before, clock, thunk),
        )
        inserted.append(prompt_ctx.insert(thunk))
        self._ctx = inserted[0]
        return thunk

    def _completed(self, clock: TurnClock, thunk: ModelOutputThunk[Any]) -> Awaitable[None]:
        turn = clock.completed(thunk)
        thunk.duration_ms, thunk.first_event_ms = turn.duration_ms, turn.first_event_ms
        return self.turn_completed(turn)

    def _failed(
        self,
        error: BaseException,
        after: Context,
        before: Context,
        clock: TurnClock,
        thunk: ModelOutputThunk[Any],
    ) -> Awaitable[None] | None:
        # A failed turn leaves the context as it was, unless the user moved on already.
        if self._ctx is after:
            self._ctx = before
        if isinstance(error, asyncio.CancelledError):
            error = TurnCancelledError("the turn was cancelled before it finished")
        elif not isinstance(error, Exception):
            return None  # the process is being interrupted: no one is told
        return self.turn_completed(clock.failed(thunk, error))

    async def turn_completed(self, turn: CompletedTurn) -> None:
        """Called once per finished turn (`turn.error` says whether it failed), before
        its thunk reports done: tells the observers (in a worker thread). Override to act
        on turns in a subclass; call `super()` to keep the observers (and the log) told."""
        await notify(self.observers, turn)
