"""`ToolHooks`: the hooks through which a session runs and records calls.

`Session` inherits them, so a protocol is a subclass of `Session` that overrides a hook:
ordinary method resolution. Kept apart from `Session` (and re-exported by
`parlay.session`) so each module has one job. `SessionToolCallingProtocol`, the mixin
these hooks once needed, is kept as an empty class so code written for it still runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from parlay._sync import run_sync
from parlay.concurrent_calls import in_thread
from parlay.context import Context, ToolCall, ToolResult
from parlay.errors import InvalidRequestError
from parlay.tool_text import render_output
from parlay.tools import Toolbox


class ToolHooks:
    """The hooks of a protocol, on every `Session`: override them in a subclass.

    - `call_tool(call)` / `acall_tool(call)`: run the tool and return the `ToolResult`
      (recorded in the context, with its call, when you call it yourself). Override
      either for approval or caching: the tool loop awaits `acall_tool`, whose default
      runs `call_tool` in a worker thread, so a sync override is seen there too.
    - `tool_call_result(call, result)` / `atool_call_result(...)`: make the result from
      what the tool gave (a `ToolResult`, any value, or an exception) and record it.
      Override to format results. `tool_result(call, output)` is the same hook.
    - `call_tools(calls)` / `acall_tools(calls)`: several calls at once, each through
      `acall_tool`, recorded in the order of the calls.

    `query`, `transform` and `chat(run_tools=True)` run their calls through these hooks
    too; a call the loop (or `acall_tools`) is running is recorded by it, in the turn,
    not by the hook. The calls of one round run at once (sync hooks in worker threads),
    so a hook that must see calls one at a time needs `parallel_tools=False`.
    """

    tools: Toolbox
    tool_timeout: float | None
    parallel_tools: bool
    # Ids of the calls a tool loop or `acall_tools` is running: it records their results
    # itself (in order, or in its turn), so the hooks do not insert them into the context.
    _held_calls: set[str]

    if TYPE_CHECKING:  # Session's; declared here for the type checker only

        @property
        def ctx(self) -> Context: ...

        @ctx.setter
        def ctx(self, value: Context) -> None: ...

        async def _execute_round(
            self, calls: list[ToolCall], finished: dict[str, ToolResult] | None = None
        ) -> list[ToolResult]: ...

    def call_tool(self, call: ToolCall) -> ToolResult:
        result = run_sync(self.tools.arun(call, timeout=self.tool_timeout))
        return self.tool_call_result(call, result)

    async def acall_tool(self, call: ToolCall) -> ToolResult:
        return await in_thread(self.call_tool, call)

    def call_tools(self, calls: Sequence[ToolCall]) -> list[ToolResult]:
        return run_sync(self.acall_tools(calls))

    async def acall_tools(self, calls: Sequence[ToolCall]) -> list[ToolResult]:
        """Run `calls` side by side through the hooks; record calls and results in order."""
        results = await self._execute_round(list(calls))
        ctx = self.ctx
        # Calls not yet in the context go in first, as one assistant turn, then the results.
        for call in calls:
            if ctx.find_call(call.id) is None:
                ctx = ctx.insert(call)
        for result in results:
            ctx = ctx.insert(result)
        self.ctx = ctx
        return results

    def tool_call_result(self, call: ToolCall, result: Any) -> ToolResult:
        recorded = as_tool_result(call, result)
        if call.id not in self._held_calls:
            ctx = self.ctx
            if ctx.find_call(call.id) is None:
                ctx = ctx.insert(call)
            self.ctx = ctx.insert(recorded)
        return recorded

    async def atool_call_result(self, call: ToolCall, result: Any) -> ToolResult:
        return self.tool_call_result(call, result)

    def tool_result(self, call: ToolCall, output: Any) -> ToolResult:
        """Record a result you produced for `call` (any value, an exception, or a
        `ToolResult`): the call goes into the context first when it is not there yet,
        then the result. Returns the recorded `ToolResult`; `respond()` then asks the
        model to go on. Goes through `tool_call_result`, so an override formats it."""
        return self.tool_call_result(call, output)


class SessionToolCallingProtocol:
    """Once the mixin that gave a session its hooks; every `Session` has them now
    (`ToolHooks`). `class MySession(SessionToolCallingProtocol, Session)` still works,
    in either base order: this class adds nothing."""


def as_tool_result(call: ToolCall, result: Any) -> ToolResult:
    """A `ToolResult` for `call` from a ToolResult, an exception or any value."""
    if isinstance(result, ToolResult):
        if result.call_id != call.id:
            raise InvalidRequestError(f"result is for call {result.call_id!r}, not {call.id!r}")
        return result
    if isinstance(result, BaseException):
        return ToolResult(call.id, call.name, error=f"{type(result).__name__}: {result}")
    return ToolResult(call.id, call.name, output=render_output(result), value=result)
