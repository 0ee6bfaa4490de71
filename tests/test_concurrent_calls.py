"""Several calls in one model round run at once, results keep the order of the calls.

No timing assertions: overlap is shown by calls that wait for each other (a barrier
only opens once every call has started, so run one by one they would never finish);
every wait has a generous guard so a regression fails instead of hanging. The speed
figures are in bench/results/tools.md.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from parlay import (
    ScriptedBackend,
    Session,
    SessionToolCallingProtocol,
    ToolCall,
    ToolResult,
    tool,
)
from parlay.backends.scripted import calls
from parlay.concurrent_calls import batches

GUARD = 10.0  # seconds a barrier waits before giving up: a hang guard, not a timing claim


class AsyncBarrier:
    """Opens once `parties` callers are waiting (asyncio.Barrier is 3.11+ but not 3.11.0)."""

    def __init__(self, parties: int) -> None:
        self.parties = parties
        self.arrived = 0
        self.open = asyncio.Event()

    async def wait(self) -> None:
        self.arrived += 1
        if self.arrived >= self.parties:
            self.open.set()
        await asyncio.wait_for(self.open.wait(), GUARD)


def round_of(n: int, name: str = "work") -> Any:
    return calls(*[(name, {"i": i}) for i in range(n)])


def results_of(thunk: Any) -> list[ToolResult]:
    return [m for m in thunk.steps if isinstance(m, ToolResult)]


def test_async_calls_of_one_round_overlap_and_results_keep_call_order():
    barrier = AsyncBarrier(8)
    finished: list[int] = []

    async def work(i: int) -> str:
        await barrier.wait()  # all 8 must be running at once to get past this
        await asyncio.sleep(0.001 * (8 - i))  # the last call finishes first
        finished.append(i)
        return f"done {i}"

    session = Session(ScriptedBackend([round_of(8), "ok"]), tools=[work])
    thunk = session.query("x", "go")
    assert thunk.value == "ok"
    assert [r.output for r in results_of(thunk)] == [f"done {i}" for i in range(8)]
    assert finished != sorted(finished)  # they did finish out of order
    # The next request carried the results in the order of the calls.
    sent = [m for m in session.backend.requests[1].messages if isinstance(m, ToolResult)]
    assert [r.output for r in sent] == [f"done {i}" for i in range(8)]


def test_sync_tools_run_in_worker_threads_side_by_side():
    barrier = threading.Barrier(8, timeout=GUARD)
    threads: set[str] = set()

    def work(i: int) -> int:
        threads.add(threading.current_thread().name)
        barrier.wait()  # BrokenBarrierError (an error result) unless all 8 overlap
        return i * i

    session = Session(ScriptedBackend([round_of(8), "ok"]), tools=[work])
    thunk = session.query("x", "go")
    assert [r.output for r in results_of(thunk)] == [str(i * i) for i in range(8)]
    assert len(threads) == 8 and all(t.startswith("parlay-tool") for t in threads)


def test_one_failing_and_one_timing_out_among_eight_cancel_nothing():
    barrier = AsyncBarrier(6)
    never = asyncio.Event()

    async def work(i: int) -> str:
        if i == 3:
            raise LookupError("no item 3")
        if i == 5:
            await never.wait()  # times out under the session's tool_timeout
        await barrier.wait()
        return f"done {i}"

    script = round_of(8)
    session = Session(ScriptedBackend([script, "ok"]), tools=[work], tool_timeout=1.0)
    results = results_of(session.query("x", "go"))
    assert [r.call_id for r in results] == [c.id for c in script.tool_calls]
    assert results[3].error == "LookupError: no item 3"
    assert results[5].error == "tool 'work' timed out after 1.0 s"
    assert [r.output for i, r in enumerate(results) if i not in (3, 5)] == [
        f"done {i}" for i in (0, 1, 2, 4, 6, 7)
    ]


def test_a_tools_own_timeout_wins_over_the_session_default():
    @tool(timeout=0.2)
    async def quick(i: int) -> str:
        await asyncio.sleep(GUARD)
        return "late"

    session = Session(ScriptedBackend([round_of(1, "quick"), "ok"]), tools=[quick])
    session.tool_timeout = 60.0
    (result,) = results_of(session.query("x", "go"))
    assert result.error == "tool 'quick' timed out after 0.2 s"


def test_parallel_tools_false_runs_calls_one_at_a_time_in_order():
    active: list[int] = []
    overlap: list[int] = []
    order: list[int] = []

    async def work(i: int) -> int:
        active.append(i)
        overlap.append(len(active))
        await asyncio.sleep(0.001 * (5 - i))
        active.remove(i)
        order.append(i)
        return i

    session = Session(ScriptedBackend([round_of(5), "ok"]), tools=[work], parallel_tools=False)
    assert [r.output for r in results_of(session.query("x", "go"))] == ["0", "1", "2", "3", "4"]
    assert overlap == [1] * 5 and order == [0, 1, 2, 3, 4]


def test_a_tool_marked_not_parallel_runs_alone_between_its_neighbours():
    active: set[str] = set()
    seen_by_write: list[set[str]] = []
    barrier = AsyncBarrier(2)

    async def read(i: int) -> int:
        active.add(f"read{i}")
        if i < 2:
            await barrier.wait()  # the two reads before the write overlap
        active.discard(f"read{i}")
        return i

    @tool(parallel=False)
    def write(i: int) -> int:
        seen_by_write.append(set(active))
        return i

    script = calls(("read", {"i": 0}), ("read", {"i": 1}), ("write", {"i": 9}), ("read", {"i": 2}))
    session = Session(ScriptedBackend([script, "ok"]), tools=[read, write])
    assert [r.output for r in results_of(session.query("x", "go"))] == ["0", "1", "9", "2"]
    assert seen_by_write == [set()]


def test_batches_group_neighbours_that_may_overlap():
    marks = "aaXaXXa"
    got = batches([ToolCall(m, id=str(i)) for i, m in enumerate(marks)], lambda c: c.name == "a")
    assert ["".join(c.name for c in b) for b in got] == ["aa", "X", "a", "X", "X", "a"]


class CountingSession(SessionToolCallingProtocol, Session):
    """A sync-only protocol: the loop runs its hook in worker threads."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.seen: list[str] = []
        self.lock = threading.Lock()

    def call_tool(self, call: ToolCall) -> ToolResult:
        with self.lock:
            self.seen.append(call.id)
        return super().call_tool(call)


def test_protocol_hooks_see_every_call_of_a_concurrent_round():
    barrier = threading.Barrier(4, timeout=GUARD)

    def work(i: int) -> int:
        barrier.wait()
        return i

    script = round_of(4)
    session = CountingSession(ScriptedBackend([script, "ok"]), tools=[work])
    thunk = session.query("x", "go")
    assert [r.output for r in results_of(thunk)] == ["0", "1", "2", "3"]
    assert sorted(session.seen) == sorted(c.id for c in script.tool_calls)
    assert [m.role for m in session.ctx.messages()].count("tool") == 4  # recorded once


def test_call_tools_outside_the_loop_records_results_in_call_order():
    async def work(i: int) -> int:
        await asyncio.sleep(0.001 * (4 - i))
        return i

    session = CountingSession(ScriptedBackend([]), tools=[work])
    batch = [ToolCall("work", {"i": i}, id=f"c{i}") for i in range(4)]
    results = session.call_tools(batch)
    assert [r.call_id for r in results] == ["c0", "c1", "c2", "c3"]
    recorded = [m for m in session.ctx.messages() if isinstance(m, ToolResult)]
    assert [r.call_id for r in recorded] == ["c0", "c1", "c2", "c3"]
    assert session.ctx.messages()[0].tool_calls == tuple(batch)


class RefusingSession(SessionToolCallingProtocol, Session):
    async def acall_tool(self, call: ToolCall) -> ToolResult:
        if call.arguments["i"] == 0:
            await asyncio.sleep(0.01)
            raise RuntimeError("the approval service is down")
        return await super().acall_tool(call)


def test_a_hook_that_raises_cancels_the_calls_still_running():
    cancelled: list[int] = []

    async def work(i: int) -> int:
        try:
            await asyncio.sleep(GUARD)
        except asyncio.CancelledError:
            cancelled.append(i)
            raise
        return i

    session = RefusingSession(ScriptedBackend([round_of(3), "ok"]), tools=[work])
    before = session.ctx
    with pytest.raises(RuntimeError, match="approval service"):
        _ = session.query("x", "go").value
    assert sorted(cancelled) == [1, 2]
    assert session.ctx is before  # the failed turn was rolled back


async def test_cancelling_a_turn_cancels_its_running_calls():
    started = AsyncBarrier(3)
    cancelled: list[int] = []

    async def work(i: int) -> int:
        try:
            await started.wait()
            await asyncio.sleep(GUARD)
        except asyncio.CancelledError:
            cancelled.append(i)
            raise
        return i

    session = Session(ScriptedBackend([round_of(3), "ok"]), tools=[work])
    before = session.ctx
    thunk = session.query("x", "go")
    consumer = asyncio.ensure_future(thunk._await())
    await asyncio.wait_for(started.open.wait(), GUARD)
    assert thunk.cancel() is True
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(consumer, GUARD)
    assert sorted(cancelled) == [0, 1, 2]
    assert thunk.is_computed and session.ctx is before
    assert thunk.cancel() is False  # over already


async def test_cancelling_a_sync_hook_cancels_the_async_work_it_waits_on() -> None:
    from parlay._sync import run_sync
    from parlay.concurrent_calls import in_thread

    started, stopped = threading.Event(), threading.Event()

    async def forever() -> None:
        started.set()
        try:
            await asyncio.sleep(3600)
        finally:
            stopped.set()

    def hook() -> None:  # a sync protocol hook running an async tool
        run_sync(forever())

    waiting = asyncio.ensure_future(in_thread(hook))
    assert await asyncio.to_thread(started.wait, 10)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert await asyncio.to_thread(stopped.wait, 10)
