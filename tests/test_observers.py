"""Turn observers: the session tells them of each completed turn, off the event loop,
before the thunk reports done; the SQLite log is one of them and the session does not
import it."""

from __future__ import annotations

import ast
import asyncio
import threading
from pathlib import Path

import pytest

import parlay
from parlay import ScriptedBackend, Session, ToolCall, ToolResult, UserMessage
from parlay.backends.scripted import calls
from parlay.observers import CompletedTurn
from parlay.store import LoggedResponse, LoggedSession, Store, TurnRecorder


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def test_an_observer_sees_each_turn_with_its_input_output_and_times() -> None:
    seen: list[CompletedTurn] = []
    backend = ScriptedBackend([calls(("add", {"a": 1, "b": 2})), "it is 3", "bye"])
    session = Session(backend, tools=[add], observers=[seen.append])
    assert session.query({"n": 1}, "add").value == "it is 3"
    assert session.chat("thanks").value == "bye"
    first, second = seen
    assert first.thunk.value == "it is 3" and len(first.thunk.steps) == 2  # call, result
    assert second.item == UserMessage("thanks") and second.prompt_ctx.last == second.item
    for turn in seen:
        assert turn.started <= turn.finished
        assert turn.first_event is not None and turn.started <= turn.first_event
        assert turn.duration_ms >= 0


def test_a_turn_is_done_only_after_its_observers_ran() -> None:
    # What a consumer reads after the turn (a logged row, say) is already there.
    seen: list[str] = []
    session = Session(ScriptedBackend(["hello"]), observers=[lambda t: seen.append(t.thunk.value)])
    thunk = session.chat("hi")
    assert thunk.value == "hello"
    assert seen == ["hello"]


async def test_observers_run_off_the_event_loop_and_a_slow_one_blocks_no_other_turn() -> None:
    loop_thread = threading.get_ident()
    release = threading.Event()
    ran_on: list[int] = []

    def slow(turn: CompletedTurn) -> None:
        ran_on.append(threading.get_ident())
        assert release.wait(10), "never released"

    held = Session(ScriptedBackend(["held"]), observers=[slow])
    free = Session(ScriptedBackend(["free"]))
    waiting = asyncio.ensure_future(held.achat("a"))
    # The held turn waits in its observer; the loop still runs another turn to the end.
    assert (await asyncio.wait_for(free.achat("b"), 10)).value == "free"
    assert not waiting.done()
    release.set()
    assert (await asyncio.wait_for(waiting, 10)).value == "held"
    assert ran_on and ran_on[0] != loop_thread


def test_a_failing_observer_warns_and_the_turn_and_later_observers_go_on() -> None:
    seen: list[str] = []

    def broken(turn: CompletedTurn) -> None:
        raise OSError("disk full")

    session = Session(ScriptedBackend(["hello"]), observers=[broken, lambda t: seen.append("ok")])
    with pytest.warns(RuntimeWarning, match="observer broken failed: OSError: disk full"):
        assert session.chat("hi").value == "hello"
    assert seen == ["ok"]


def test_the_log_writes_in_a_worker_thread_and_the_row_is_there_when_the_turn_is(
    tmp_path: Path,
) -> None:
    threads: list[str] = []

    class WatchedStore(Store):
        def add_response(
            self, response: LoggedResponse, session: LoggedSession | None = None
        ) -> int:
            threads.append(threading.current_thread().name)
            return super().add_response(response, session)

    store = WatchedStore(tmp_path / "log.db")
    session = Session(ScriptedBackend(["hello"]), log=store)
    assert session.chat("hi").value == "hello"
    (row,) = store.responses()
    assert row.text == "hello" and row.id == session.log.last_response_id  # type: ignore[union-attr]
    (thread,) = threads
    assert thread.startswith("parlay-tool")  # not the portal loop's thread


def test_log_takes_a_recorder_of_your_own_and_rejects_anything_else(tmp_path: Path) -> None:
    recorder = TurnRecorder(Store(tmp_path / "log.db"), source="nightly")
    session = Session(ScriptedBackend(["hello"]), log=recorder)
    assert session.log is recorder and recorder in session.observers
    session.chat("hi").value  # noqa: B018
    (logged,) = recorder.store.sessions()
    assert logged.source == "nightly"
    with pytest.raises(TypeError, match=r"log= takes True, a parlay\.Store or a TurnRecorder"):
        Session(ScriptedBackend([]), log="log.db")  # type: ignore[arg-type]


def test_a_fork_shares_the_observers_but_not_the_list() -> None:
    seen: list[str] = []
    session = Session(ScriptedBackend(["one", "two"]), observers=[lambda t: seen.append("a")])
    fork = session.fork()
    fork.observers.append(lambda t: seen.append("b"))
    session.chat("x").value  # noqa: B018
    fork.chat("y").value  # noqa: B018
    assert seen == ["a", "a", "b"]


def test_the_session_module_does_not_import_the_store_when_it_loads() -> None:
    source = Path(parlay.session.__file__).read_text()
    loaded: list[str] = []
    for node in ast.parse(source).body:  # module level only: not TYPE_CHECKING, not functions
        if isinstance(node, ast.ImportFrom) and node.module:
            loaded.append(node.module)
        elif isinstance(node, ast.Import):
            loaded.extend(alias.name for alias in node.names)
    assert "parlay.observers" in loaded
    assert not [m for m in loaded if m.startswith("parlay.store")]


def test_a_turn_stopped_at_its_chain_limit_is_told_with_the_rounds_it_made() -> None:
    seen: list[CompletedTurn] = []
    backend = ScriptedBackend([calls(("add", {"a": 1, "b": 2}))] * 3)
    session = Session(backend, tools=[add], observers=[seen.append])
    with pytest.raises(parlay.ToolChainLimitError):
        session.chat("add forever", run_tools=True, chain_limit=1).value  # noqa: B018
    (turn,) = seen
    assert not turn.succeeded and isinstance(turn.error, parlay.ToolChainLimitError)
    # The first round ran its tool; the second asked again and was stopped.
    kinds = [type(m).__name__ for m in turn.steps]
    assert kinds == ["AssistantMessage", "ToolResult", "AssistantMessage"]
    assert turn.steps[1].output == "3"  # type: ignore[union-attr]


def test_a_failed_turn_is_a_row_in_the_log_with_the_calls_that_ran(tmp_path: Path) -> None:
    store = Store(tmp_path / "log.db")
    backend = ScriptedBackend([calls(("add", {"a": 1, "b": 2}))] * 3)
    session = Session(backend, tools=[add], log=store)
    with pytest.raises(parlay.ToolChainLimitError):
        session.chat("add forever", run_tools=True, chain_limit=1).value  # noqa: B018
    (row,) = store.responses()
    assert (row.prompt, row.text, row.finish_reason) == ("add forever", "", "error")
    assert row.diagnostics is not None
    assert row.diagnostics["error"].startswith("ToolChainLimitError: ")
    assert [(c.name, c.round) for c in row.calls] == [("add", 0), ("add", 1)]
    assert [r.output for r in row.results] == ["3"]


async def test_a_cancelled_turn_is_rolled_back_and_told_as_cancelled_with_the_tools_that_ran(
    tmp_path: Path,
) -> None:
    seen: list[CompletedTurn] = []
    started = asyncio.Event()

    added = asyncio.Event()

    class Told(Session):
        async def acall_tool(self, call: ToolCall) -> ToolResult:
            # The tool loop runs each call through this hook (a worker thread by default):
            # the add beside wait_forever has its result once the hook returns.
            result = await super().acall_tool(call)
            if call.name == "add" and call.arguments["a"] == 1:
                added.set()
            return result

    async def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    async def wait_forever(x: int) -> int:
        """Never returns."""
        await added.wait()  # the add beside it has its result: cancel only then
        await asyncio.sleep(0)
        started.set()
        await asyncio.sleep(3600)
        return x

    backend = ScriptedBackend(
        [
            calls(("add", {"a": 2, "b": 3})),
            calls(("add", {"a": 1, "b": 1}), ("wait_forever", {"x": 1})),
            "never",
        ]
    )
    store = Store(tmp_path / "log.db")
    session = Told(
        backend, tools=[add, wait_forever], observers=[seen.append], log=TurnRecorder(store)
    )
    before = session.ctx
    thunk = session.chat("go", run_tools=True)
    consumer = asyncio.ensure_future(thunk._await())
    await asyncio.wait_for(started.wait(), 10)
    assert thunk.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(consumer, 10)
    assert session.ctx is before
    [turn] = seen
    assert isinstance(turn.error, parlay.TurnCancelledError)
    # The round that finished, and the one cancelled: its add ran, its wait did not end.
    assert [m.role for m in turn.steps] == ["assistant", "tool", "assistant", "tool", "tool"]
    assert [m.error for m in turn.steps[3:]] == [None, "cancelled with the turn"]  # type: ignore[union-attr]
    [row] = store.responses()
    assert row.finish_reason == "cancelled"
    assert [c.name for c in row.calls] == ["add", "add", "wait_forever"]
    assert [(r.output, r.error) for r in row.results] == [
        ("5", None),
        ("2", None),
        ("", "cancelled with the turn"),
    ]
