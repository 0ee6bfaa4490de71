import asyncio
import threading

import pytest

from parlay import ModelOutputThunk, TextDelta, ThunkError, ToolCall
from parlay.backends.scripted import reply_events
from parlay.context import AssistantMessage


class Producer:
    """Counts how often the model 'runs', and can pause mid-stream."""

    def __init__(self, reply, gate: asyncio.Event | None = None, fail: Exception | None = None):
        self.reply = reply
        self.runs = 0
        self.gate = gate
        self.fail = fail

    async def __call__(self):
        self.runs += 1
        for index, event in enumerate(reply_events(self.reply, chunk_size=2)):
            if index == 1 and self.gate is not None:
                await self.gate.wait()
            if self.fail is not None and index == 2:
                raise self.fail
            yield event


def test_nothing_runs_until_asked():
    producer = Producer("hello world")
    thunk = ModelOutputThunk(producer)
    assert producer.runs == 0 and not thunk.is_computed and not thunk.is_started
    assert thunk.value == "hello world"
    assert producer.runs == 1 and thunk.is_computed
    assert thunk.finish_reason == "stop" and thunk.usage is not None
    assert thunk.value == "hello world" and producer.runs == 1


def test_sync_iteration_streams_text_deltas():
    thunk = ModelOutputThunk(Producer("abcdef"))
    assert list(thunk) == ["ab", "cd", "ef"]
    assert list(thunk) == ["ab", "cd", "ef"]  # replays once computed


def test_tools_hold_the_parsed_calls():
    call = ToolCall("add", {"a": 1, "b": 2}, id="c1")
    thunk = ModelOutputThunk(Producer(AssistantMessage("", (call,))))
    assert thunk.tools == (call,)
    assert thunk.finish_reason == "tool_calls"
    assert thunk.message == AssistantMessage("", (call,))
    assert thunk.as_messages() == (AssistantMessage("", (call,)),)


async def test_await_and_async_streaming():
    producer = Producer("streaming text")
    thunk = ModelOutputThunk(producer)
    deltas = [d async for d in thunk]
    assert "".join(deltas) == "streaming text" and len(deltas) > 1
    assert (await thunk) is thunk and thunk.value == "streaming text"
    assert producer.runs == 1


async def test_two_consumers_share_one_run_and_see_every_event():
    gate = asyncio.Event()
    producer = Producer("one two three", gate=gate)
    thunk = ModelOutputThunk(producer)

    async def collect():
        return [d async for d in thunk]

    first = asyncio.create_task(collect())
    await asyncio.sleep(0.01)
    second = asyncio.create_task(collect())
    await asyncio.sleep(0.01)
    assert not thunk.is_computed
    gate.set()
    assert await first == await second
    assert producer.runs == 1


async def test_blocking_on_a_thunk_running_on_this_loop_is_refused():
    gate = asyncio.Event()
    thunk = ModelOutputThunk(Producer("text", gate=gate))
    task = asyncio.create_task(thunk._await())
    await asyncio.sleep(0.01)
    with pytest.raises(ThunkError, match="await thunk"):
        _ = thunk.value
    gate.set()
    await task
    assert thunk.value == "text"


def test_sync_value_from_another_thread_while_async_consumer_runs():
    thunk = ModelOutputThunk(Producer("from two threads"))
    seen: list[str] = []

    def worker():
        seen.append(thunk.value)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert seen == ["from two threads"] * 4


async def test_errors_reach_every_consumer():
    thunk = ModelOutputThunk(Producer("abcdef", fail=RuntimeError("backend died")))
    with pytest.raises(RuntimeError, match="backend died"):
        await thunk
    with pytest.raises(RuntimeError, match="backend died"):
        _ = thunk.value
    assert thunk.is_computed


def test_parsed_needs_a_format():
    thunk = ModelOutputThunk(Producer("{}"))
    with pytest.raises(ThunkError, match="format="):
        _ = thunk.parsed
    assert isinstance(thunk.all_events()[0], TextDelta)
