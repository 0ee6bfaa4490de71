"""Running the tool calls of one model round side by side, results kept in call order.

A model that asks for several calls in one turn waits for the slowest, not for the sum.
Async tools run concurrently on the loop; sync tools each in a thread of their own, so
eight sleeping tools do not queue behind the default executor's few workers (it has
`cpu_count + 4` of them, six on a two-core machine).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import itertools
import threading
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import Executor, Future
from typing import Any, TypeVar

from parlay._sync import PortalWaits, current_waits
from parlay.context import ToolCall, ToolResult

T = TypeVar("T")

# How long a cancelled round waits for its calls to unwind before giving up on them.
CANCEL_GRACE_SECONDS = 5.0


class ToolThreads(Executor):
    """A daemon thread for each sync call: a wide round never queues, and a tool blocked
    where Python cannot stop it (a timed-out or cancelled call keeps its thread; its
    result is dropped) does not keep the process from exiting, as a
    `ThreadPoolExecutor`'s threads would: they are joined at exit, so Ctrl-C in `parlay
    prompt` waited for the tool."""

    def __init__(self) -> None:
        self._numbers = itertools.count(1)

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        future: Future[T] = Future()

        def run() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                result = fn(*args, **kwargs)
            except BaseException as error:  # handed to the awaiting caller, as a pool does
                future.set_exception(error)
            else:
                future.set_result(result)

        name = f"parlay-tool-{next(self._numbers)}"
        threading.Thread(target=run, name=name, daemon=True).start()
        return future


_executor = ToolThreads()


def tool_executor() -> Executor:
    """The worker threads sync tools (and sync protocol hooks) run in."""
    return _executor


async def in_thread(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """`fn(*args, **kwargs)` in a tool thread, with the caller's context variables.
    Cancelling the caller cancels what the thread waits for through `run_sync`."""
    loop = asyncio.get_running_loop()
    context = contextvars.copy_context()
    waits = PortalWaits(loop)
    context.run(current_waits.set, waits)
    call = functools.partial(context.run, fn, *args, **kwargs)
    running = loop.run_in_executor(tool_executor(), call)
    try:
        return await asyncio.shield(running)
    except asyncio.CancelledError:
        if waits.pending:
            # The thread waits on work of this loop: cancel it and let it unwind, so the
            # cancelled tool has run its cleanup when the caller goes on. (A thread
            # blocked in plain code cannot be stopped; it is not waited for.)
            waits.cancel()
            await asyncio.wait([running], timeout=CANCEL_GRACE_SECONDS)
        else:
            waits.cancel()
        raise


Execute = Callable[[ToolCall], Awaitable[ToolResult]]


def batches(
    calls: Sequence[ToolCall], together: Callable[[ToolCall], bool]
) -> list[list[ToolCall]]:
    """Consecutive calls that may overlap form one batch; any other call is a batch alone."""
    out: list[list[ToolCall]] = []
    for call in calls:
        if together(call) and out and together(out[-1][0]):
            out[-1].append(call)
        else:
            out.append([call])
    return out


async def run_round(
    calls: Sequence[ToolCall], execute: Execute, *, together: Callable[[ToolCall], bool]
) -> list[ToolResult]:
    """`execute(call)` for every call, results in the order of `calls`.

    Calls for which `together(call)` is true run at once with their neighbours; the others
    run alone, in their place. A failing tool is an error result and cancels nothing. An
    exception raised by `execute` itself (a protocol hook that raises) cancels the calls
    still running and propagates; so does cancelling the round.
    """
    results: list[ToolResult] = []
    for batch in batches(calls, together):
        if len(batch) == 1:
            results.append(await execute(batch[0]))
        else:
            results.extend(await _run_batch(batch, execute))
    return results


async def _run_batch(batch: list[ToolCall], execute: Execute) -> list[ToolResult]:
    tasks = [asyncio.ensure_future(execute(call)) for call in batch]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        for task in tasks:
            if task.done() and not task.cancelled() and task.exception() is not None:
                raise task.exception()  # type: ignore[misc]
        return [task.result() for task in tasks]
    finally:
        running = [task for task in tasks if not task.done()]
        for task in running:
            task.cancel()
        if running:
            # Bounded: a call that ignores cancellation must not hang the turn.
            await asyncio.wait(running, timeout=CANCEL_GRACE_SECONDS)


__all__ = ["in_thread", "run_round", "tool_executor"]
