"""The log keeps a fork's parent; a logged conversation comes back as a context in Python
(`Store.context`, `start_session(resume=...)`) as `-c` rebuilds it; `parlay logs tree`."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from parlay import ConfigurationError, ScriptedBackend, Session, Store, start_session
from parlay.backends.scripted import calls
from parlay.cli.app import app
from parlay.cli.resume import find_conversation, rebuild_context
from parlay.store.migrations import SCHEMA_VERSION, Dialect, statements
from parlay.store.tree import session_forest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))
from scripted_parlay import run


def echo(request: object) -> str:
    return "said " + request.messages[-1].content  # type: ignore[attr-defined]


def logged(store: Store) -> Session:
    session = Session(ScriptedBackend(echo), system="sys", log=store)
    for text in ("one", "two", "three"):
        session.chat(text).value  # noqa: B018
    return session


def contents(session_or_ctx: object) -> list[str]:
    ctx = getattr(session_or_ctx, "ctx", session_or_ctx)
    return [m.content for m in ctx.messages()]  # type: ignore[attr-defined]


def test_a_fork_is_a_log_session_of_its_own_that_names_its_parent(tmp_path: Path) -> None:
    store = Store(tmp_path / "log.db")
    session = logged(store)
    fork = session.fork(at=1)
    fork.chat("other").value  # noqa: B018
    assert fork.log is not session.log and fork.log in fork.observers
    assert session.log not in fork.observers
    row = store.session(fork.log.session_id)
    assert row.parent_id == session.log.session_id
    assert (
        row.parent_response_id
        == store.responses(session_id=session.log.session_id, limit=None)[-1].id
    )
    # the parent's log goes on as before: its own turns only
    assert len(store.responses(session_id=session.log.session_id, limit=None)) == 3


def test_store_context_gives_a_fork_back_with_its_trunk(tmp_path: Path) -> None:
    store = Store(tmp_path / "log.db")
    session = logged(store)
    fork = session.fork(at=2)
    fork.chat("other").value  # noqa: B018
    assert store.context(fork.log.session_id).messages() == fork.ctx.messages()
    assert store.context(session.log.session_id[:8]).messages() == session.ctx.messages()
    assert store.context().messages() == fork.ctx.messages()  # the latest conversation
    first = store.responses(session_id=session.log.session_id, limit=None)[-1]
    assert contents(store.context(first.id)) == ["sys", "one", "said one"]


def test_store_context_is_what_the_clis_continue_rebuilds(tmp_path: Path) -> None:
    store = Store(tmp_path / "log.db")
    session = logged(store)
    cli = rebuild_context(find_conversation(store, session.log.session_id))
    assert store.context(session.log.session_id).messages() == cli.messages()


def test_the_cli_continues_a_fork_with_its_trunk(tmp_path: Path) -> None:
    log = tmp_path / "log.db"
    session = logged(Store(log))
    fork = session.fork(at=1)
    fork.chat("other").value  # noqa: B018
    done = run(["prompt", "next", "--cid", fork.log.session_id, "--no-stream"], log)
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout.strip().splitlines()[-1])
    assert [text for _, text in shown] == ["sys", "one", "said one", "other", "said other", "next"]


@pytest.mark.parametrize("key", ["nope", 999, True])
def test_store_context_names_what_it_could_not_find(tmp_path: Path, key: object) -> None:
    store = Store(tmp_path / "log.db")
    if key is True:
        with pytest.raises(TypeError, match=r"session id .* or a response id"):
            store.context(key)  # type: ignore[arg-type]
        return
    logged(store)
    with pytest.raises(ConfigurationError, match=r"no logged conversation|no response 999"):
        store.context(key)  # type: ignore[arg-type]


def test_start_session_resume_continues_into_the_same_log_session(tmp_path: Path) -> None:
    store = Store(tmp_path / "log.db")
    session = logged(store)
    resumed = start_session(ScriptedBackend(echo), resume=True, log=store)
    assert resumed.ctx.messages() == session.ctx.messages()
    resumed.chat("four").value  # noqa: B018
    assert resumed.log.session_id == session.log.session_id
    assert contents(store.context(session.log.session_id))[-2:] == ["four", "said four"]


def test_start_session_resumed_at_an_earlier_response_is_a_fork(tmp_path: Path) -> None:
    store = Store(tmp_path / "log.db")
    session = logged(store)
    first = store.responses(session_id=session.log.session_id, limit=None)[-1]
    resumed = start_session(ScriptedBackend(echo), resume=first.id, log=store, system="new sys")
    assert contents(resumed) == ["new sys", "one", "said one"]
    resumed.chat("elsewhere").value  # noqa: B018
    row = store.session(resumed.log.session_id)
    assert (row.parent_id, row.parent_response_id) == (session.log.session_id, first.id)
    # a fork of the resumed session finds the trunk's rows too
    deeper = resumed.fork(at=1)
    deeper.chat("deeper").value  # noqa: B018
    assert store.session(deeper.log.session_id).parent_response_id == first.id


def test_a_replay_is_logged_as_a_fork_from_the_start(tmp_path: Path) -> None:
    store = Store(tmp_path / "log.db")
    session = logged(store)
    replayed = session.replay(ScriptedBackend(lambda r: "new"))
    row = store.session(replayed.log.session_id)
    assert row.parent_id == session.log.session_id and row.parent_response_id is None
    assert contents(store.context(row.id)) == ["sys", "one", "new", "two", "new", "three", "new"]


def test_a_log_of_schema_one_gains_the_parent_columns_and_keeps_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as conn:
        for statement in statements(0, Dialect.SQLITE):
            conn.execute(statement)
        conn.execute("INSERT INTO sessions VALUES ('s1', 't', 'cli', 'b', 'sys', '[]')")
        conn.execute(
            "INSERT INTO responses (session_id, created_at, prompt, text) VALUES ('s1', 't', 'hi', 'yo')"
        )
        conn.execute("PRAGMA user_version = 1")
    store = Store(path)
    assert store.schema_version == SCHEMA_VERSION == 3
    assert store.session("s1").parent_id is None
    assert contents(store.context("s1")) == ["sys", "hi", "yo"]


def test_logs_tree_shows_each_fork_under_its_parent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = Store(tmp_path / "log.db")
    monkeypatch.setenv("PARLAY_LOG_DB", str(store.path))
    session = logged(store)
    fork = session.fork(at=1)
    fork.chat("[bold]other[/bold]").value  # noqa: B018
    (tree,) = session_forest(store)
    assert tree.session.id == session.log.session_id
    assert [c.session.id for c in tree.children] == [fork.log.session_id]
    done = CliRunner().invoke(app, ["logs", "tree"], env={"COLUMNS": "200"})
    assert done.exit_code == 0, done.output
    lines = done.output.splitlines()
    assert session.log.session_id[:12] in lines[0] and "3 responses" in lines[0]
    assert fork.log.session_id[:12] in lines[1] and "from response 1" in lines[1]
    assert "[bold]other[/bold]" in lines[1]  # logged text is printed as text, not markup
    listed = CliRunner().invoke(app, ["logs", "tree", fork.log.session_id[:10], "--json"])
    rows = [json.loads(line) for line in listed.output.splitlines()]
    assert [(r["depth"], r["id"]) for r in rows] == [
        (0, session.log.session_id),
        (1, fork.log.session_id),
    ]


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def test_a_resumed_conversation_logs_only_its_new_tool_results(tmp_path: Path) -> None:
    store = Store(tmp_path / "log.db")

    def model(request: object) -> object:
        last = request.messages[-1]  # type: ignore[attr-defined]
        if last.role == "user" and "add" in last.content:
            return calls(("add", {"a": 2, "b": 3}))
        return "ok"

    first = Session(ScriptedBackend(model), tools=[add], log=store)
    first.chat("please add", run_tools=True).value  # noqa: B018
    resumed = start_session(ScriptedBackend(model), tools=[add], resume=True, log=store)
    resumed.chat("thanks").value  # noqa: B018
    assert store.count("tool_results") == 1
    (logged,) = store.responses(query="please add")
    assert [r.output for r in logged.results] == ["5"]


def test_a_logged_answer_comes_back_with_its_figures(tmp_path: Path) -> None:
    store = Store(tmp_path / "log.db")
    session = logged(store)
    answer = store.context(session.log.session_id)[-1]
    live = session.ctx[-1]
    assert (answer.value, answer.usage, answer.model, answer.finish_reason) == (
        live.value, live.usage, live.model, live.finish_reason,
    )  # fmt: skip
    assert answer.duration_ms == pytest.approx(live.duration_ms, abs=0.01)
