"""`SessionToolCallingProtocol`: the hooks through which a session runs and records calls.

Kept apart from `Session` (and re-exported by `parlay.session`) so each module has one job.
"""

from __future__ import annotations

import contextvars
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from parlay._sync import run_sync
from parlay.calls import in_thread
from parlay.context import Context, ToolCall, ToolResult
from parlay.errors import InvalidRequestError
from parlay.tool_text import render_output
from parlay.tools import Toolbox

# Set while a session's own tool loop runs calls, so protocol hooks know not to insert
# into `session.ctx` (the loop records the round in its thunk instead).
_running_loop_of: contextvars.ContextVar[SessionToolCallingProtocol | None]
_running_loop_of = contextvars.ContextVar("parlay_tool_loop", default=None)


class SessionToolCallingProtocol:
    """A mixin for `Session` that runs and records tool calls: the hooks of a protocol.

    `class MySession(SessionToolCallingProtocol, Session)` gets:

    - `call_tool(call)` / `acall_tool(call)`: run the tool, record the call and its
      result in the context, return the `ToolResult`. Override for approval or caching.
    - `tool_call_result(call, result)` / `atool_call_result(...)`: record a result you
      produced (a `ToolResult`, any value, or an exception). Override to format results.
    - `call_tools(calls)` / `acall_tools(calls)`: several calls at once, each through
      `call_tool`, recorded in the order of the calls.

    `query` and `transform` run their calls through these hooks too, so a protocol
    written once applies everywhere (inside the loop the round is recorded in the turn).
    The calls of one round run at once (sync hooks in worker threads), so a hook that
    must see calls one at a time needs `parallel_tools=False` on the session.
    """

    ctx: Context
    tools: Toolbox
    tool_timeout: float | None
    parallel_tools: bool

    if TYPE_CHECKING:  # Session's; declared here for the type checker only

        async def _execute_round(
            self, calls: list[ToolCall], finished: dict[str, ToolResult] | None = None
        ) -> list[ToolResult]: ...

    def call_tool(self, call: ToolCall) -> ToolResult:
        result = run_sync(self.tools.arun(call, timeout=self.tool_timeout))
        return self.tool_call_result(call, result)

    async def acall_tool(self, call: ToolCall) -> ToolResult:
        result = await self.tools.arun(call, timeout=self.tool_timeout)
        return await self.atool_call_result(call, result)

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
        if _running_loop_of.get() is not self:
            ctx = self.ctx
            if ctx.find_call(call.id) is None:
                ctx = ctx.insert(call)
            self.ctx = ctx.insert(recorded)
        return recorded

    async def atool_call_result(self, call: ToolCall, result: Any) -> ToolResult:
        return self.tool_call_result(call, result)

    def tool_result(self, call: ToolCall, output: Any) -> ToolResult:
        """`Session.tool_result` through this protocol's hook: `tool_call_result`."""
        return self.tool_call_result(call, output)

    async def _execute_in_loop(self, call: ToolCall) -> ToolResult:
        token = _running_loop_of.set(self)
        try:
            cls = type(self)
            overrides_sync = cls.call_tool is not SessionToolCallingProtocol.call_tool
            overrides_async = cls.acall_tool is not SessionToolCallingProtocol.acall_tool
            if overrides_sync and not overrides_async:
                return await in_thread(self.call_tool, call)
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
