"""The tool loop of a turn: ask the model, run the calls it made, ask again.

`Session` inherits it; every call the loop runs goes through the session's `acall_tool`
hook (`parlay.tool_protocol`), so an override in a subclass sees them all.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from parlay.backends.base import Backend
from parlay.backends.offered import allowed_names, offered_calls_only
from parlay.concurrent_calls import run_round
from parlay.context import AssistantMessage, Context, Message, ToolCall, ToolResult
from parlay.errors import ToolCallTruncatedError, ToolChainLimitError
from parlay.events import Event
from parlay.reply import Reply, ReplyBuilder
from parlay.request import ChatRequest, GenerationOptions, ResponseFormat, ToolChoice
from parlay.thunk import ModelOutputThunk, RoundDone
from parlay.tools import Toolbox


class ToolLoop:
    """The rounds of one turn, over the session's backend and tools."""

    backend: Backend
    tools: Toolbox
    tool_timeout: float | None
    parallel_tools: bool
    _held_calls: set[str]

    if TYPE_CHECKING:  # the protocol hook, `ToolHooks.acall_tool`

        async def acall_tool(self, call: ToolCall) -> ToolResult: ...

    def _request(
        self,
        messages: tuple[Message, ...],
        choice: ToolChoice,
        response_format: ResponseFormat | None,
        options: GenerationOptions,
    ) -> ChatRequest:
        return ChatRequest(
            messages=messages,
            tools=self.tools.specs,
            tool_choice=choice,
            response_format=response_format,
            options=options,
            parallel_tool_calls=options.parallel_tool_calls is not False,
        )

    async def _run_turn(
        self,
        prompt_ctx: Context,
        choice: ToolChoice,
        response_format: ResponseFormat | None,
        options: GenerationOptions,
        run_tools: bool,
        limit: int,
        *,
        told: list[Message],
    ) -> AsyncIterator[Event | RoundDone]:
        """The turn's events, round after round of the tool loop; each round's messages
        also go to `told` once its tools ran (or were cancelled), for the observers."""
        await settle(prompt_ctx)
        history = prompt_ctx.messages()
        steps: list[Message] = []
        rounds = 0
        while True:
            request = self._request((*history, *steps), choice, response_format, options)
            gathered = ReplyBuilder()
            # The session runs only its own tools, whatever backend it has.
            mine = self.tools.names
            events = offered_calls_only(
                self.backend.stream(request), allowed_names(request, mine), mine
            )
            async for event in events:
                gathered.feed(event)
                yield event
            reply = gathered.build()
            calls = list(reply.calls)
            if not run_tools or not calls:
                return
            rounds += 1
            round_messages: list[Message] = [AssistantMessage(reply.text, reply.calls)]
            _stop_before_running(reply, rounds, limit, prompt_ctx, (*steps, *round_messages))
            finished: dict[str, ToolResult] = {}
            try:
                round_messages.extend(await self._execute_round(calls, finished))
            except asyncio.CancelledError:
                told.extend([*round_messages, *_as_cancelled(calls, finished)])
                raise
            steps.extend(round_messages)
            told.extend(round_messages)
            yield RoundDone(tuple(round_messages))
            if choice.forces_call:
                # A forced call has been made; the model now decides freely.
                choice = ToolChoice("auto")

    def _runs_together(self, call: ToolCall) -> bool:
        if not self.parallel_tools:
            return False
        found = self.tools.get(call.name)
        return found is None or found.parallel

    async def _execute_round(
        self, calls: list[ToolCall], finished: dict[str, ToolResult] | None = None
    ) -> list[ToolResult]:
        """One round's calls, side by side where allowed; results in call order. Each
        result also goes into `finished` (by call id) as it comes, so a cancelled round
        can still tell which of its tools ran."""

        async def execute(call: ToolCall) -> ToolResult:
            # The round records its results itself: the hooks leave the context alone.
            self._held_calls.add(call.id)
            try:
                result = await self.acall_tool(call)
            finally:
                self._held_calls.discard(call.id)
            if finished is not None:
                finished[call.id] = result
            return result

        return await run_round(calls, execute, together=self._runs_together)


def _stop_before_running(
    reply: Reply, rounds: int, limit: int, prompt_ctx: Context, so_far: tuple[Message, ...]
) -> None:
    """Raise when the round's calls must not run. The error's context, `prompt_ctx` with
    `so_far` (which ends with the reply that made the calls), is built only then."""
    if reply.finish.reason == "length":
        # The budget ran out inside the last call: running it would act on arguments
        # the model never finished (a list cut after two items).
        raise ToolCallTruncatedError(
            f"the reply reached its token limit while writing a call to "
            f"{reply.calls[-1].name!r}, so its arguments may be incomplete; no tool of the "
            "round ran. Raise max_tokens, or inspect error.context",
            context=_with(prompt_ctx, so_far),
            call=reply.calls[-1],
        )
    if rounds > limit:
        raise ToolChainLimitError(
            f"the model was still calling tools after {limit} rounds (chain limit {limit}); "
            "raise chain_limit or inspect error.context",
            context=_with(prompt_ctx, so_far),
            limit=limit,
        )


def _with(ctx: Context, messages: tuple[Message, ...]) -> Context:
    for message in messages:
        ctx = ctx.insert(message)
    return ctx


def _as_cancelled(calls: list[ToolCall], finished: dict[str, ToolResult]) -> list[ToolResult]:
    """A cancelled round's results: those that came, and for the others the cancellation."""
    return [
        finished.get(call.id) or ToolResult(call.id, call.name, error="cancelled with the turn")
        for call in calls
    ]


async def settle(ctx: Context) -> None:
    """Await every uncomputed thunk in `ctx` (newest-first, stopping at rendered history)."""
    pending: list[ModelOutputThunk[Any]] = []
    node: Context | None = ctx
    while node is not None and node.last is not None:
        if node._cache is not None:
            break
        item = node.last
        if isinstance(item, ModelOutputThunk) and not item.is_computed:
            pending.append(item)
        node = node.parent
    for thunk in reversed(pending):
        await thunk
