"""Replay: the user's turns of a conversation sent again, on another backend, model, tool
set or protocol, as a new branch to compare with the old.

Each turn's first item (the user's message or instruction) goes to the new session as it
was; the model's outputs, tool results and anything inserted by hand do not: the new
model answers for itself. When the replay has tools, its calls are run until it answers
(as `query` does), by the tools, or, with `results="recorded"`, from the results the old
conversation recorded for the same call (same tool, same arguments), running the tool
only for a call it never made. `replay_all` does many conversations at once, a bounded
number at a time, with a progress bar when there are many.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Literal

import attrs

from parlay._sync import run_sync
from parlay.context import AssistantMessage, Context, ToolCall, ToolResult
from parlay.tools import Tool, Toolbox

if TYPE_CHECKING:
    from parlay.backends.base import Backend
    from parlay.request import GenerationOptions
    from parlay.session import Session

ResultSource = Literal["run", "recorded"]
# From this many conversations on, `replay_all` shows a progress bar unless told not to.
PROGRESS_FROM = 10


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


def _sessions(
    sources: Sequence[Session | Context], backend: Backend | None, tools: Any
) -> list[Session]:
    from parlay.session import Session

    made = []
    for source in sources:
        if isinstance(source, Session):
            made.append(source)
        elif backend is None:
            raise ValueError("replaying a Context needs backend=: it has no session of its own")
        else:  # the old conversation as a session of its own, the replay a branch of it
            made.append(Session(backend, ctx=source, tools=tools))
    return made


async def areplay_all(
    sources: Sequence[Session | Context],
    backend: Backend | None = None,
    *,
    concurrency: int = 4,
    progress: bool | None = None,
    return_exceptions: bool = False,
    **kwargs: Any,
) -> list[Any]:
    """Replay every conversation of `sources` (sessions, or contexts read back from files
    or the log), `concurrency` at a time, turns of one conversation in order. The replays
    in the order of `sources`; a failure stops the others and is raised, unless
    `return_exceptions=True` puts it in its place. `progress`: a bar (rich) on standard
    error; None shows one from `PROGRESS_FROM` conversations on. `kwargs` as `replay`."""
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    sessions = _sessions(sources, backend, kwargs.get("tools"))
    gate = asyncio.Semaphore(concurrency)
    show = len(sessions) >= PROGRESS_FROM if progress is None else progress
    bar = _Progress(len(sessions)) if show else None

    async def one(session: Session) -> Session:
        async with gate:
            try:
                return await session.areplay(backend, **kwargs)
            finally:
                if bar is not None:
                    bar.advance()

    tasks = [asyncio.ensure_future(one(s)) for s in sessions]
    try:
        return list(await asyncio.gather(*tasks, return_exceptions=return_exceptions))
    finally:
        for task in tasks:
            task.cancel()
        if bar is not None:
            bar.stop()


def replay_all(
    sources: Sequence[Session | Context], backend: Backend | None = None, **kwargs: Any
) -> list[Any]:
    """`areplay_all` from synchronous code (a notebook cell)."""
    return run_sync(areplay_all(sources, backend, **kwargs))


class _Progress:
    def __init__(self, total: int) -> None:
        from rich.console import Console
        from rich.progress import Progress

        self._bar = Progress(console=Console(stderr=True), transient=False)
        self._task = self._bar.add_task("replaying", total=total)
        self._bar.start()

    def advance(self) -> None:
        self._bar.advance(self._task)

    def stop(self) -> None:
        self._bar.stop()


__all__ = [
    "PROGRESS_FROM",
    "RecordedResults",
    "ResultSource",
    "areplay_all",
    "recorded_results",
    "replay_all",
    "replay_session",
]
