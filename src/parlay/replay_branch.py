"""One replay: the user's turns of a session sent again, on another backend, model, tool
set or protocol, as a new branch of it (`Session.replay`; see `parlay.replay`). It takes
the session it replays and makes the branch by forking it, so it sits below the session,
which imports it; `replay_all`, which makes sessions of contexts, sits above.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Literal

import attrs

from parlay.context import AssistantMessage, Context, ToolCall, ToolResult
from parlay.tools import Tool, Toolbox

if TYPE_CHECKING:
    from parlay.backends.base import Backend
    from parlay.request import GenerationOptions
    from parlay.session import Session

ResultSource = Literal["run", "recorded"]


def _key(call: ToolCall) -> tuple[str, str]:
    return call.name, json.dumps(call.arguments, sort_keys=True, default=repr)


def recorded_results(ctx: Context) -> dict[tuple[str, str], ToolResult]:
    """Each call `ctx` holds a result for, by tool and arguments (the latest wins)."""
    calls: dict[str, ToolCall] = {}
    found: dict[tuple[str, str], ToolResult] = {}
    for message in ctx.messages():
        if isinstance(message, AssistantMessage):
            calls.update((c.id, c) for c in message.tool_calls)
        elif isinstance(message, ToolResult) and message.call_id in calls:
            found[_key(calls[message.call_id])] = message
    return found


class RecordedResults(Toolbox):
    """The tools of `tools`, answering a call made before from its recorded result; any
    other call goes to `tools` (which may be traced, say)."""

    def __init__(self, tools: Toolbox, recorded: dict[tuple[str, str], ToolResult]) -> None:
        super().__init__(list(tools))
        self.inner = tools
        self.recorded = recorded
        self.reused = 0

    async def arun(self, call: ToolCall, *, timeout: float | None = None) -> ToolResult:
        kept = self.recorded.get(_key(call))
        if kept is None:
            return await self.inner.arun(call, timeout=timeout)
        self.reused += 1
        return ToolResult(call.id, call.name, kept.output, kept.error, kept.value)


def _toolbox(
    tools: Iterable[Tool | Callable[..., Any]] | Toolbox | None, fallback: Toolbox
) -> Toolbox:
    if tools is None:
        return fallback
    return tools if isinstance(tools, Toolbox) else Toolbox(tools)


def _branch(
    source: Session,
    backend: Backend,
    tools: Toolbox,
    session_class: type[Session] | None,
    options: GenerationOptions | None,
    name: str | None,
    preamble: Context,
) -> Session:
    """The new branch: a fork of `source` (its class, observers, log) on the new parts,
    or a session of `session_class` (another protocol mixin) made like it."""
    if session_class is None:
        target = source.fork(at=0, name=name)
        target.ctx = preamble
        target.backend, target.tools = backend, tools
        target.options = options or source.options
    else:
        target = session_class(
            backend,
            ctx=preamble,
            tools=tools,
            chain_limit=source.chain_limit,
            options=options or source.options,
            observers=[o for o in source.observers if o is not source.log],
            parallel_tools=source.parallel_tools,
            tool_timeout=source.tool_timeout,
        )
        if source.log is not None:
            target.log = source.log.forked(preamble)
            target.observers.append(target.log)
        target.branch = source.branch.child(target, name)
    if target.log is not None and target.log is not source.log:
        named = getattr(backend, "name", None)
        target.log.session = attrs.evolve(target.log.session, backend=named)
    return target


async def replay_session(
    source: Session,
    backend: Backend | None = None,
    *,
    ctx: Context | None = None,
    tools: Iterable[Tool | Callable[..., Any]] | Toolbox | None = None,
    session_class: type[Session] | None = None,
    options: GenerationOptions | None = None,
    results: ResultSource = "run",
    name: str | None = None,
) -> Session:
    """`source.areplay(...)`: see `Session.replay`."""
    if results not in ("run", "recorded"):
        raise ValueError(f"results= is 'run' or 'recorded', not {results!r}")
    old = ctx if ctx is not None else source.ctx
    toolbox = _toolbox(tools, source.tools)
    backend = backend or source.backend
    # A traced session's replay is traced the same way (`parlay.otel`).
    same_tracing = getattr(source.backend, "same_tracing", None)
    if same_tracing is not None:
        backend, toolbox = same_tracing(backend, toolbox)
    if results == "recorded":
        toolbox = RecordedResults(toolbox, recorded_results(old))
    target = _branch(source, backend, toolbox, session_class, options, name, old.at_turn(0))
    # Calls run when there is something to answer them: tools, or recorded results.
    answers = bool(target.tools) or (
        isinstance(toolbox, RecordedResults) and bool(toolbox.recorded)
    )
    for turn in old.turns:
        await target._turn(turn.start, None, None, None, run_tools=answers)
    return target


__all__ = ["RecordedResults", "ResultSource", "recorded_results", "replay_session"]
