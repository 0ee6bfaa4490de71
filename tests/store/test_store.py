"""The SQLite log on a real SQLite file: schema, round trips, sessions that log, concurrency."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from parlay import Session, SessionToolCallingProtocol, ToolResult
from parlay.backends.scripted import ScriptedBackend, calls
from parlay.errors import StoreError
from parlay.store import (
    SCHEMA_VERSION,
    LoggedCall,
    LoggedResponse,
    LoggedResult,
    LoggedSession,
    Store,
    default_path,
)


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class ProtocolSession(SessionToolCallingProtocol, Session):
    pass


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "log.db")


def test_new_file_is_migrated_to_the_current_version_in_wal_mode(store: Store) -> None:
    assert store.schema_version == SCHEMA_VERSION
    assert store.journal_mode == "wal"
    with sqlite3.connect(store.path) as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"sessions", "responses", "tool_calls", "tool_results"} <= tables


def test_reopening_applies_nothing_again(store: Store) -> None:
    store.add_session("s1")
    again = Store(store.path)
    assert again.schema_version == SCHEMA_VERSION
    assert [s.id for s in again.sessions()] == ["s1"]


def test_a_log_from_a_newer_parlay_is_refused_with_advice(tmp_path: Path) -> None:
    path = tmp_path / "future.db"
    with sqlite3.connect(path) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(StoreError, match="upgrade parlay"):
        Store(path).responses()


def test_a_file_that_is_not_a_database_is_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "junk.db"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match=r"junk\.db"):
        Store(path).responses()


def test_env_var_overrides_the_default_path(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PARLAY_LOG_DB", str(tmp_path / "x.db"))
    assert default_path() == tmp_path / "x.db"
    assert Store().path == tmp_path / "x.db"
    monkeypatch.delenv("PARLAY_LOG_DB")
    assert default_path().name == "logs.db"
    assert "parlay" in str(default_path())


def test_response_round_trip_with_calls_and_results(store: Store) -> None:
    written = LoggedResponse(
        session_id="s1",
        text="3",
        prompt="1+2?",
        model="m",
        finish_reason="tool_calls",
        prompt_tokens=10,
        completion_tokens=2,
        first_event_ms=1.5,
        duration_ms=4.0,
        diagnostics={"retries": []},
        calls=(LoggedCall("c1", "add", {"a": 1, "b": 2}),),
        results=(LoggedResult("c1", "add", "3"),),
    )
    rid = store.add_response(written, LoggedSession("s1", "", "test", "b", None, ("add",)))
    read = store.response(rid)
    assert read is not None
    assert read.as_dict() == {**written.as_dict(), "id": rid}
    assert store.sessions()[0].tools == ("add",)
    assert store.response(rid + 100) is None


def test_filter_by_tool_and_session(store: Store) -> None:
    session = LoggedSession("abc123", "", "test", None, None, ())
    store.add_response(LoggedResponse("abc123", "no tools"), session)
    store.add_response(LoggedResponse("abc123", "", calls=(LoggedCall("c", "add", {}),)), session)
    store.add_response(
        LoggedResponse("zzz", "other"), LoggedSession("zzz", "", "t", None, None, ())
    )
    assert [r.calls[0].name for r in store.responses(tool="add")] == ["add"]
    assert store.responses(tool="nope") == []
    assert len(store.responses(session_id="abc")) == 2
    assert len(store.responses(limit=1)) == 1


def test_session_with_log_records_turns_calls_and_results(store: Store) -> None:
    backend = ScriptedBackend([calls(("add", {"a": 1, "b": 2})), "it is 3"])
    session = ProtocolSession(backend, tools=[add], system="be brief", log=store)
    first = session.chat("what is 1+2?")
    (call,) = first.tools
    session.call_tool(call)
    assert session.respond().value == "it is 3"

    # One row for the prompt (as llm logs a chain): the call, its result, the answer.
    (row,) = store.responses()
    assert row.prompt == "what is 1+2?" and row.text == "it is 3"
    assert row.finish_reason == "stop"
    assert [(c.call_id, c.name, c.arguments, c.round) for c in row.calls] == [
        (call.id, "add", {"a": 1, "b": 2}, 0)
    ]
    assert [(r.call_id, r.output, r.error) for r in row.results] == [(call.id, "3", None)]
    assert row.completion_tokens == 1 + 1  # both rounds (the script counts 1 token each)
    assert row.duration_ms is not None
    assert row.id == session.log.last_response_id  # type: ignore[union-attr]
    assert row.session_id == session.log.session_id  # type: ignore[union-attr]
    assert store.count("tool_results") == 1
    (logged_session,) = store.sessions()
    assert logged_session.system == "be brief" and logged_session.tools == ("add",)


def test_tool_loop_turn_records_every_round(store: Store) -> None:
    backend = ScriptedBackend(
        [calls(("add", {"a": 1, "b": 2})), calls(("add", {"a": "x", "b": 1})), "done"]
    )
    session = Session(backend, tools=[add], log=store)
    assert session.query({"n": 1}, "add things").value == "done"
    (row,) = store.responses()
    assert [c.round for c in row.calls] == [0, 1]
    outputs = {r.call_id: (r.output, r.error) for r in row.results}
    assert outputs[row.calls[0].call_id] == ("3", None)
    assert "invalid arguments" in (outputs[row.calls[1].call_id][1] or "")


def test_hand_inserted_results_are_logged_with_the_next_turn(store: Store) -> None:
    backend = ScriptedBackend([calls(("add", {"a": 2, "b": 2})), "four"])
    session = Session(backend, tools=[add], log=store)
    (call,) = session.chat("2+2").tools
    session.ctx = session.ctx.insert(ToolResult(call.id, call.name, output="4"))
    assert session.respond().value == "four"
    (row,) = store.responses()  # the result given by hand joins the prompt's row
    assert (row.prompt, row.text) == ("2+2", "four")
    assert [(r.call_id, r.output) for r in row.results] == [(call.id, "4")]


def test_each_prompt_has_its_own_row_and_rounds_continue_across_respond(store: Store) -> None:
    backend = ScriptedBackend(
        [calls(("add", {"a": 1, "b": 1})), calls(("add", {"a": 2, "b": 2})), "4", "bye"]
    )
    session = ProtocolSession(backend, tools=[add], log=store)
    (first,) = session.chat("add twice").tools
    session.call_tool(first)
    (second,) = session.respond().tools
    session.call_tool(second)
    assert session.respond().value == "4"
    assert session.chat("thanks").value == "bye"
    newest, oldest = store.responses()
    assert (oldest.prompt, oldest.text) == ("add twice", "4")
    assert [(c.call_id, c.round) for c in oldest.calls] == [(first.id, 0), (second.id, 1)]
    assert [r.output for r in oldest.results] == ["2", "4"]
    assert (newest.prompt, newest.text, newest.calls) == ("thanks", "bye", ())


def test_a_log_that_cannot_be_written_warns_and_the_turn_still_works(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    session = Session(ScriptedBackend(["hello"]), log=Store(blocker / "sub" / "log.db"))
    with pytest.warns(RuntimeWarning, match="could not log"):
        assert session.chat("hi").value == "hello"


def test_threads_writing_at_once_lose_nothing(store: Store) -> None:
    def write(n: int) -> None:
        for i in range(50):
            store.add_response(
                LoggedResponse(f"t{n}", str(i), calls=(LoggedCall(f"c{n}-{i}", "f", {}),)),
                LoggedSession(f"t{n}", "", "test", None, None, ()),
            )

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert store.count("responses") == 200
    assert store.count("tool_calls") == 200
    assert store.count("sessions") == 4


WRITER = """
import sys
from parlay.store import LoggedCall, LoggedResponse, LoggedSession, Store
store = Store(sys.argv[1])
name = sys.argv[2]
for i in range(int(sys.argv[3])):
    store.add_response(
        LoggedResponse(name, str(i), calls=(LoggedCall(f"{name}-{i}", "f", {"i": i}),)),
        LoggedSession(name, "", "test", None, None, ()),
    )
"""


def test_two_processes_writing_at_once_lose_nothing(tmp_path: Path) -> None:
    # A fresh file: both processes also race to create and migrate the schema.
    path = tmp_path / "shared.db"
    n = 150
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(path), name, str(n)])
        for name in ("p1", "p2")
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    store = Store(path)
    assert store.count("responses") == 2 * n
    assert store.count("tool_calls") == 2 * n
    for name in ("p1", "p2"):
        texts = sorted(int(r.text) for r in store.responses(limit=None, session_id=name))
        assert texts == list(range(n))
    assert store.schema_version == SCHEMA_VERSION
