"""The log in a real PostgreSQL server: the same `Store` API and readers as SQLite
(`parlay logs` and its tree, `Store.context`, `start_session(resume=)`, session logging),
one set of migrations applied once by replicas starting together, a retried request
logged once, and a database that is down costs a warning, never the turn."""

from __future__ import annotations

import threading
import time
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from postgres_server import find_binaries, postgres_cluster, postgres_server
from typer.testing import CliRunner

from parlay import ScriptedBackend, Session, Store, start_session
from parlay.backends.scripted import calls
from parlay.cli.app import app
from parlay.errors import StoreError
from parlay.store import SCHEMA_VERSION, LoggedCall, LoggedResponse, LoggedSession
from parlay.store.postgres_db import DOWN_S, masked

pytestmark = pytest.mark.skipif(isinstance(find_binaries(), str), reason=str(find_binaries()))


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    pytest.importorskip("psycopg")
    with postgres_server("fsync=off") as url:
        yield url


@pytest.fixture
def url(server: str) -> str:
    """A database of its own for each test, on the module's server."""
    import psycopg

    name = "t" + uuid.uuid4().hex[:12]
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return server.rsplit("/", 1)[0] + "/" + name


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """The same test on each kind of log."""
    if request.param == "sqlite":
        made = Store(tmp_path / "log.db")
    else:
        made = Store(request.getfixturevalue("url"))
    yield made
    made.close()


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _tool_session(store: Store) -> Session:
    script = [calls(("add", {"a": 2, "b": 3})), "five", "bye", "forked"]
    session = Session(ScriptedBackend(script), system="sys", tools=[add], log=store)
    session.chat("what is 2 + 3?", run_tools=True).value  # noqa: B018
    session.chat("thanks").value  # noqa: B018
    return session


def test_a_session_logged_to_either_database_reads_back_whole(store: Store) -> None:
    session = _tool_session(store)
    sid = session.log.session_id
    assert store.context(sid).messages() == session.ctx.messages()
    rows = store.responses(session_id=sid, limit=None)
    assert [r.prompt for r in rows] == ["thanks", "what is 2 + 3?"]
    assert [(c.name, c.arguments) for c in rows[1].calls] == [("add", {"a": 2, "b": 3})]
    assert [r.output for r in rows[1].results] == ["5"]
    assert store.responses(query="WHAT IS") == [rows[1]]  # case-insensitive on both
    assert store.responses(tool="add") == [rows[1]]
    assert store.schema_version == SCHEMA_VERSION


def test_a_session_resumed_from_either_database_goes_on_in_the_same_conversation(
    store: Store,
) -> None:
    first = _tool_session(store)
    sid = first.log.session_id
    again = start_session(ScriptedBackend(["more"]), resume=sid, log=store)
    assert again.ctx.messages() == first.ctx.messages()
    again.chat("go on").value  # noqa: B018
    assert store.responses(session_id=sid, limit=1)[0].prompt == "go on"
    fork = start_session(ScriptedBackend(["other"]), resume=store.responses()[-1].id, log=store)
    fork.chat("branch").value  # noqa: B018
    assert store.session(fork.log.session_id).parent_id == sid


def test_a_retried_request_is_logged_once_as_its_later_answer_on_either_database(
    store: Store,
) -> None:
    session = LoggedSession("s1", "", "serve", None, None, ())
    first = LoggedResponse(
        "s1", "a", prompt="p", request_key="req-1", calls=(LoggedCall("c", "f", {}),)
    )
    retried = LoggedResponse("s1", "a again", prompt="p", request_key="req-1")
    one = store.add_response(first, session)
    two = store.add_response(retried, session)
    other = store.add_response(LoggedResponse("s1", "b", request_key="req-2"), session)
    assert one == two != other
    # the row is the later answer: the one the retried request's client got
    assert [r.text for r in store.responses(limit=None)] == ["b", "a again"]
    assert store.count("tool_calls") == 0


def test_parlay_logs_and_its_tree_read_a_postgres_log(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = Store(url)
    session = _tool_session(store)
    session.fork(at=1).chat("forked").value  # noqa: B018
    monkeypatch.setenv("PARLAY_LOG_DB", url)
    runner = CliRunner()
    listed = runner.invoke(app, ["logs", "--json"])
    assert listed.exit_code == 0, listed.output
    assert "what is 2 + 3?" in listed.output and "forked" in listed.output
    tree = runner.invoke(app, ["logs", "tree"])
    assert tree.exit_code == 0, tree.output
    assert session.log.session_id[:8] in tree.output and "forked" in tree.output
    where = runner.invoke(app, ["logs", "path"])
    assert where.output.strip() == url


def test_replicas_starting_together_on_a_new_database_migrate_it_once(url: str) -> None:
    errors: list[BaseException] = []

    def open_one() -> None:
        try:
            Store(url).add_session(uuid.uuid4().hex)
        except BaseException as exc:  # pragma: no cover - the failure is the finding
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    store = Store(url)
    assert store.schema_version == SCHEMA_VERSION
    assert len(store.sessions(limit=None)) == 8


def test_a_postgres_log_that_is_down_warns_and_the_turns_go_on_without_waiting_again() -> None:
    with socket_nobody_listens_on() as port:
        store = Store(f"postgresql://parlay:secret@127.0.0.1:{port}/parlay")
        session = Session(ScriptedBackend(["hello", "again"]), log=store)
        took = []
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for text, answer in (("hi", "hello"), ("more", "again")):
                started = time.monotonic()
                assert session.chat(text).value == answer
                took.append(time.monotonic() - started)
    said = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(said) == 2, said  # one per turn: each says the turn was not logged
    assert "could not log" in said[0] and f"127.0.0.1:{port}" in said[0]
    assert "secret" not in said[0]  # the password never reaches a message
    assert took[0] < 10  # bounded: one wait for a connection
    assert took[1] < 1, took  # the database found down is not waited for again at once


def test_a_log_whose_database_restarts_takes_turns_again_once_it_is_back() -> None:
    with postgres_cluster("fsync=off") as server:
        store = Store(server.url)
        session = Session(ScriptedBackend(["one", "two", "three"]), log=store)
        session.chat("first").value  # noqa: B018
        server.stop()
        with pytest.warns(RuntimeWarning, match="cannot reach the log"):
            session.chat("while down").value  # noqa: B018
        server.start()
        time.sleep(DOWN_S)  # a database found down is not asked again before
        session.chat("after").value  # noqa: B018
        logged = [r.prompt for r in store.responses(limit=None)]
        store.close()
    # none of the pool's connections that the restart closed fails a write
    assert logged == ["after", "first"]


def test_a_newer_schema_in_postgres_is_refused_with_advice(url: str) -> None:
    older = Store(url)
    older.add_session("s")
    older.close()  # as a process starting after a newer parlay migrated the database
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("UPDATE parlay_schema SET version = %s", (SCHEMA_VERSION + 1,))
    with pytest.raises(StoreError, match="upgrade parlay"):
        Store(url).responses()


def test_a_password_is_masked_in_the_logs_name() -> None:
    assert masked("postgresql://u:pw@db:5432/x") == "postgresql://u:***@db:5432/x"
    assert masked("postgresql://u@db/x") == "postgresql://u@db/x"
    assert "pw" not in repr(Store("postgresql://u:pw@db:5432/x"))


class socket_nobody_listens_on:
    """A loopback port held bound but not listening: connecting is refused at once."""

    def __enter__(self) -> int:
        import socket

        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        return int(self.sock.getsockname()[1])

    def __exit__(self, *exc: object) -> None:
        self.sock.close()
