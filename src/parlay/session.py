"""Session: an immutable context, a backend, tools, and the verbs that talk to the model."""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel

from parlay._sync import run_sync
from parlay.backends.base import Backend
from parlay.components import Instruction
from parlay.context import (
    AssistantMessage,
    Context,
    Item,
    Message,
    SystemMessage,
    ToolCall,
    ToolResult,
    UserMessage,
)
from parlay.errors import InvalidRequestError, ToolChainLimitError
from parlay.events import Event, TextDelta, ToolCallEnd
from parlay.request import ChatRequest, GenerationOptions, ResponseFormat, ToolChoice
from parlay.store import Store, TurnRecorder
from parlay.thunk import ModelOutputThunk, RoundDone
from parlay.tools import Tool, Toolbox, render_output

M = TypeVar("M", bound=BaseModel)
DEFAULT_CHAIN_LIMIT = 5

# Set while a session's own tool loop runs calls, so protocol hooks know not to insert
# into `session.ctx` (the loop records the round in its thunk instead).
_running_loop_of: contextvars.ContextVar[Session | None] = contextvars.ContextVar(
    "parlay_tool_loop", default=None
)


class Session:
    """A conversation with one backend.

    `ctx` is the immutable context so far; every verb inserts its input and the model's
    output (a `ModelOutputThunk`, which renders to the turn's messages once computed).
    Assigning `session.ctx` is allowed: that is how results are inserted by hand.
    """

    def __init__(
        self,
        backend: Backend,
        ctx: Context | None = None,
        tools: Iterable[Tool | Callable[..., Any]] | Toolbox | None = None,
        *,
        system: str | None = None,
        chain_limit: int = DEFAULT_CHAIN_LIMIT,
        options: GenerationOptions | None = None,
        log: bool | Store = False,
    ) -> None:
        if chain_limit < 1:
            raise InvalidRequestError(f"chain_limit must be at least 1, got {chain_limit}")
        self.backend = backend
        self.tools = tools if isinstance(tools, Toolbox) else Toolbox(tools or ())
        self.chain_limit = chain_limit
        self.options = options or GenerationOptions()
        base = ctx if ctx is not None else Context()
        self._ctx = base.insert(SystemMessage(system)) if system else base
        # `log=True` writes every completed turn to the SQLite log (`parlay logs`).
        self.log: TurnRecorder | None = None
        if log is not False:
            self.log = TurnRecorder(
                Store() if log is True else log,
                backend=getattr(backend, "name", None),
                system=system,
                tools=self.tools.names,
            )

    # -- the context -----------------------------------------------------------------
    @property
    def ctx(self) -> Context:
        return self._ctx

    @ctx.setter
    def ctx(self, value: Context) -> None:
        if not isinstance(value, Context):
            raise TypeError(f"session.ctx must be a Context, not {type(value).__name__}")
        self._ctx = value

    def fork(self) -> Session:
        """A new session sharing this one's context, backend and tools (nothing is copied)."""
        clone = object.__new__(type(self))
        clone.__dict__.update(self.__dict__)
        return clone

    # -- verbs -----------------------------------------------------------------------
    def chat(
        self,
        text: str,
        *,
        tool_choice: ToolChoice | str | None = None,
        format: type[M] | None = None,
        options: GenerationOptions | None = None,
    ) -> ModelOutputThunk[Any]:
        """Send a user message. Tool calls are returned in `.tools`, not executed."""
        return self._turn(UserMessage(text), tool_choice, format, options, run_tools=False)

    def instruct(
        self,
        description: str,
        *,
        requirements: Sequence[str] = (),
        grounding: Mapping[str, Any] | None = None,
        examples: Sequence[str] = (),
        tool_choice: ToolChoice | str | None = None,
        format: type[M] | None = None,
        options: GenerationOptions | None = None,
    ) -> ModelOutputThunk[Any]:
        """Give a task rendered from the instruction template. Calls are not executed."""
        item = Instruction.instruct(
            description, requirements=requirements, grounding=grounding, examples=examples
        )
        return self._turn(item, tool_choice, format, options, run_tools=False)

    def query(
        self,
        obj: Any,
        question: str,
        *,
        tool_choice: ToolChoice | str | None = None,
        format: type[M] | None = None,
        chain_limit: int | None = None,
        options: GenerationOptions | None = None,
    ) -> ModelOutputThunk[Any]:
        """Ask a question about `obj`, running tools until the model answers."""
        item = Instruction.query(obj, question)
        return self._turn(item, tool_choice, format, options, True, chain_limit)

    def transform(
        self,
        obj: Any,
        instruction: str,
        *,
        tool_choice: ToolChoice | str | None = None,
        format: type[M] | None = None,
        chain_limit: int | None = None,
        options: GenerationOptions | None = None,
    ) -> ModelOutputThunk[Any]:
        """Transform `obj` as instructed, running tools until the model answers."""
        item = Instruction.transform(obj, instruction)
        return self._turn(item, tool_choice, format, options, True, chain_limit)

    def respond(
        self,
        *,
        tool_choice: ToolChoice | str | None = None,
        format: type[M] | None = None,
        options: GenerationOptions | None = None,
    ) -> ModelOutputThunk[Any]:
        """Ask the model for its next turn from the context as it is (say, after tool
        results were inserted by hand). Nothing new is inserted before the output."""
        return self._turn(None, tool_choice, format, options, run_tools=False)

    async def achat(self, text: str, **kwargs: Any) -> ModelOutputThunk[Any]:
        return await self.chat(text, **kwargs)

    async def ainstruct(self, description: str, **kwargs: Any) -> ModelOutputThunk[Any]:
        return await self.instruct(description, **kwargs)

    async def aquery(self, obj: Any, question: str, **kwargs: Any) -> ModelOutputThunk[Any]:
        return await self.query(obj, question, **kwargs)

    async def atransform(self, obj: Any, instruction: str, **kwargs: Any) -> ModelOutputThunk[Any]:
        return await self.transform(obj, instruction, **kwargs)

    async def arespond(self, **kwargs: Any) -> ModelOutputThunk[Any]:
        return await self.respond(**kwargs)

    # -- the turn machinery -------------------------------------------------------------
    def _turn(
        self,
        item: Item | None,
        tool_choice: ToolChoice | str | None,
        format: type[BaseModel] | None,
        options: GenerationOptions | None,
        run_tools: bool,
        chain_limit: int | None = None,
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
                prompt_ctx, choice, response_format, options or self.options, run_tools, limit
            )

        pending = None
        if self.log is not None:
            produce, pending = self.log.track(item, prompt_ctx, produce)
        inserted: list[Context] = []
        thunk: ModelOutputThunk[Any] = ModelOutputThunk(
            produce,
            parse=parse,
            on_complete=self._on_turn_complete,
            on_failure=lambda _: self._rollback(inserted[0], before),
        )
        if self.log is not None and pending is not None:
            self.log.watch(thunk, pending)
        inserted.append(prompt_ctx.insert(thunk))
        self._ctx = inserted[0]
        return thunk

    def _rollback(self, after: Context, before: Context) -> None:
        # A failed turn leaves the context as it was, unless the user moved on already.
        if self._ctx is after:
            self._ctx = before

    def _on_turn_complete(self, thunk: ModelOutputThunk[Any]) -> None:
        """Called once a turn's thunk is computed; a hook for subclasses and the log."""
        if self.log is not None:
            self.log.complete(thunk)

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
        )

    async def _run_turn(
        self,
        prompt_ctx: Context,
        choice: ToolChoice,
        response_format: ResponseFormat | None,
        options: GenerationOptions,
        run_tools: bool,
        limit: int,
    ) -> AsyncIterator[Event | RoundDone]:
        await settle(prompt_ctx)
        history = prompt_ctx.messages()
        steps: list[Message] = []
        rounds = 0
        while True:
            request = self._request((*history, *steps), choice, response_format, options)
            calls: list[ToolCall] = []
            text: list[str] = []
            async for event in self.backend.stream(request):
                if isinstance(event, ToolCallEnd):
                    calls.append(event.call)
                elif isinstance(event, TextDelta):
                    text.append(event.text)
                yield event
            if not run_tools or not calls:
                return
            rounds += 1
            round_messages: list[Message] = [AssistantMessage("".join(text), tuple(calls))]
            if rounds > limit:
                steps.extend(round_messages)
                ctx = prompt_ctx
                for message in steps:
                    ctx = ctx.insert(message)
                raise ToolChainLimitError(
                    f"the model was still calling tools after {limit} rounds (chain limit "
                    f"{limit}); raise chain_limit or inspect error.context",
                    context=ctx,
                    limit=limit,
                )
            for call in calls:
                round_messages.append(await self._execute_in_loop(call))
            steps.extend(round_messages)
            yield RoundDone(tuple(round_messages))
            if choice.forces_call:
                # A forced call has been made; the model now decides freely.
                choice = ToolChoice("auto")

    async def _execute_in_loop(self, call: ToolCall) -> ToolResult:
        return await self.tools.arun(call)


class SessionToolCallingProtocol:
    """A mixin for `Session` that runs and records tool calls: the hooks of a protocol.

    `class MySession(SessionToolCallingProtocol, Session)` gets:

    - `call_tool(call)` / `acall_tool(call)`: run the tool, record the call and its
      result in the context, return the `ToolResult`. Override for approval or caching.
    - `tool_call_result(call, result)` / `atool_call_result(...)`: record a result you
      produced (a `ToolResult`, any value, or an exception). Override to format results.

    `query` and `transform` run their calls through these hooks too, so a protocol
    written once applies everywhere (inside the loop the round is recorded in the turn).
    """

    ctx: Context
    tools: Toolbox

    def call_tool(self, call: ToolCall) -> ToolResult:
        result = run_sync(self.tools.arun(call))
        return self.tool_call_result(call, result)

    async def acall_tool(self, call: ToolCall) -> ToolResult:
        result = await self.tools.arun(call)
        return await self.atool_call_result(call, result)

    def tool_call_result(self, call: ToolCall, result: Any) -> ToolResult:
        recorded = as_tool_result(call, result)
        if _running_loop_of.get() is not self:
            ctx = self.ctx
            if ctx.find_call(call.id) is None:
                ctx = ctx.insert(call)
            self.ctx = ctx.insert(recorded)
        return recorded

    async def atool_call_result(self, call: ToolCall, result: Any) -> ToolResult:
        return self.tool_call_result(call, result)

    async def _execute_in_loop(self, call: ToolCall) -> ToolResult:
        token = _running_loop_of.set(self)  # type: ignore[arg-type]
        try:
            cls = type(self)
            overrides_sync = cls.call_tool is not SessionToolCallingProtocol.call_tool
            overrides_async = cls.acall_tool is not SessionToolCallingProtocol.acall_tool
            if overrides_sync and not overrides_async:
                return await asyncio.to_thread(self.call_tool, call)
            return await self.acall_tool(call)
        finally:
            _running_loop_of.reset(token)


def as_tool_result(call: ToolCall, result: Any) -> ToolResult:
    """A `ToolResult` for `call` from a ToolResult, an exception or any value."""
    if isinstance(result, ToolResult):
        if result.call_id != call.id:
            raise InvalidRequestError(f"result is for call {result.call_id!r}, not {call.id!r}")
        return result
    if isinstance(result, BaseException):
        return ToolResult(call.id, call.name, error=f"{type(result).__name__}: {result}")
    return ToolResult(call.id, call.name, output=render_output(result), value=result)


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
