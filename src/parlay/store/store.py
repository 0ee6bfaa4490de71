"""The SQLite log: sessions, responses, tool calls and tool results.

One file, WAL mode, a busy timeout and `BEGIN IMMEDIATE` for every write, so several
processes (two `parlay` commands, a notebook and a script) can write at once and nothing
is lost: a writer waits for the lock instead of failing. Each thread gets its own
connection, so a `Store` is safe to share between threads.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

import platformdirs

from parlay.errors import StoreError
from parlay.store.migrations import SCHEMA_VERSION, migrate, schema_version
from parlay.store.records import (
    LoggedCall,
    LoggedResponse,
    LoggedResult,
    LoggedSession,
    utc_now,
)
from parlay.store.rows import insert_calls, insert_parent, read_response, read_session

if TYPE_CHECKING:
    from parlay.context import Context

__all__ = ["ENV_VAR", "LoggedCall", "LoggedResponse", "LoggedResult", "LoggedSession", "Store"]

ENV_VAR = "PARLAY_LOG_DB"
BUSY_TIMEOUT_S = 30.0


def _retry_while_locked(action: Callable[[], object]) -> None:
    """Run `action`, again while SQLite says the file is locked, up to the busy timeout.

    The busy timeout already waits in most cases, but not all: a WAL checkpoint, or a
    journal-mode switch racing another process, can report SQLITE_BUSY at once.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        try:
            action()
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def default_path() -> Path:
    """`$PARLAY_LOG_DB` if set, else `logs.db` in the user's data directory for parlay."""
    chosen = os.environ.get(ENV_VAR)
    if chosen:
        return Path(chosen).expanduser()
    return Path(platformdirs.user_data_dir("parlay", appauthor=False)) / "logs.db"


class Store:
    """A SQLite log file (created and migrated on first use)."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path).expanduser() if path is not None else default_path()
        self._ready = False
        self._connections: dict[tuple[int, int], sqlite3.Connection] = {}

    def __repr__(self) -> str:
        return f"Store({str(self.path)!r})"

    # -- connections -------------------------------------------------------------------
    def _open(self) -> sqlite3.Connection:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(
                self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
            )
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(
                f"cannot open the log {str(self.path)!r}: {exc}; set ${ENV_VAR} to a writable file"
            ) from exc
        conn.row_factory = sqlite3.Row
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            conn.execute("PRAGMA foreign_keys = ON")
            # In WAL mode NORMAL never corrupts the file; a power cut may lose the last
            # commits, an application crash loses nothing. FULL costs an fsync per turn.
            conn.execute("PRAGMA synchronous = NORMAL")
            if not self._ready:
                # Two processes opening a new file race to switch it to WAL and migrate
                # it; the loser can be told "locked" at once, without the busy wait.
                _retry_while_locked(lambda: self._prepare(conn))
                self._ready = True
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise StoreError(f"the log {str(self.path)!r} is not usable: {exc}") from exc
        except BaseException:
            conn.close()
            raise
        return conn

    def _prepare(self, conn: sqlite3.Connection) -> None:
        conn.execute("PRAGMA journal_mode = WAL")
        version = schema_version(conn)
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"the log {str(self.path)!r} has schema version {version}, newer than "
                f"this parlay understands ({SCHEMA_VERSION}): upgrade parlay"
            )
        migrate(conn)

    @contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        """This thread's connection (kept open: opening one per write costs more than it)."""
        key = (os.getpid(), threading.get_ident())
        conn = self._connections.get(key)
        if conn is None:
            conn = self._connections[key] = self._open()
        try:
            yield conn
        except sqlite3.DatabaseError as exc:
            # A broken connection is dropped; the next operation opens a fresh one.
            self._connections.pop(key, None)
            conn.close()
            raise StoreError(self._explain(exc)) from exc

    def _explain(self, exc: sqlite3.DatabaseError) -> str:
        """What went wrong with the log, and what to do about it, in one line."""
        where = f"the log {str(self.path)!r}"
        if isinstance(exc, sqlite3.OperationalError) and "full" in str(exc):
            return f"cannot write to {where}: {exc}; free some space or set ${ENV_VAR}"
        if "malformed" in str(exc) or "not a database" in str(exc):
            return (
                f"{where} is damaged ({exc}): move it aside to start a new log, or set "
                f"${ENV_VAR} to another file"
            )
        return f"{where} is not usable: {exc}"

    def close(self) -> None:
        """Close this process's connections (they are also closed when the store is freed)."""
        for key, conn in list(self._connections.items()):
            if key[0] == os.getpid():
                conn.close()
            self._connections.pop(key, None)

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; takes the write lock up front so it cannot deadlock."""
        with self._connection() as conn:
            try:
                _retry_while_locked(lambda: conn.execute("BEGIN IMMEDIATE"))
            except sqlite3.OperationalError as exc:
                raise StoreError(f"cannot write to the log {self.path}: {exc}") from exc
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                # SQLite may already have rolled back (it does on a full disk); a failing
                # ROLLBACK ("no transaction is active") must not hide that real cause.
                with suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
                raise

    @property
    def schema_version(self) -> int:
        with self._connection() as conn:
            return schema_version(conn)

    @property
    def journal_mode(self) -> str:
        with self._connection() as conn:
            return str(conn.execute("PRAGMA journal_mode").fetchone()[0])

    # -- writing -----------------------------------------------------------------------
    def add_session(
        self,
        session_id: str,
        *,
        source: str = "python",
        backend: str | None = None,
        system: str | None = None,
        tools: Sequence[str] = (),
    ) -> None:
        """Record a session (again is harmless: the first record is kept)."""
        with self._write() as conn:
            self._insert_session(conn, session_id, source, backend, system, tools)

    @staticmethod
    def _insert_session(
        conn: sqlite3.Connection,
        session_id: str,
        source: str,
        backend: str | None,
        system: str | None,
        tools: Sequence[str],
    ) -> None:
        conn.execute(
            "INSERT OR IGNORE INTO sessions (id, created_at, source, backend, system, tools) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (session_id, utc_now(), source, backend, system, json.dumps(list(tools))),
        )

    def add_response(self, response: LoggedResponse, session: LoggedSession | None = None) -> int:
        """Write a response with its tool calls and results in one transaction; its id."""
        with self._write() as conn:
            if session is not None:
                self._insert_session(
                    conn,
                    session.id,
                    session.source,
                    session.backend,
                    session.system,
                    session.tools,
                )
                insert_parent(conn, session)
            cursor = conn.execute(
                "INSERT INTO responses (session_id, created_at, backend, model, prompt, text, "
                "finish_reason, prompt_tokens, completion_tokens, first_event_ms, duration_ms, "
                "diagnostics) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    response.session_id,
                    response.created_at,
                    response.backend,
                    response.model,
                    response.prompt,
                    response.text,
                    response.finish_reason,
                    response.prompt_tokens,
                    response.completion_tokens,
                    response.first_event_ms,
                    response.duration_ms,
                    json.dumps(response.diagnostics) if response.diagnostics is not None else None,
                ),
            )
            response_id = int(cursor.lastrowid or 0)
            insert_calls(conn, response_id, response)
            return response_id

    def extend_response(self, response_id: int, more: LoggedResponse) -> None:
        """Add a later round of the same prompt to row `response_id`: its calls and
        results, its answer and finish reason, its tokens added to the row's; `more`'s
        duration (measured from the prompt) replaces the row's. One transaction."""
        with self._write() as conn:
            conn.execute(
                "UPDATE responses SET text = ?, finish_reason = ?, "
                "model = COALESCE(?, model), "
                "prompt_tokens = CASE WHEN ? IS NULL THEN prompt_tokens "
                "ELSE COALESCE(prompt_tokens, 0) + ? END, "
                "completion_tokens = CASE WHEN ? IS NULL THEN completion_tokens "
                "ELSE COALESCE(completion_tokens, 0) + ? END, "
                "duration_ms = COALESCE(?, duration_ms), "
                "diagnostics = COALESCE(?, diagnostics) WHERE id = ?",
                (
                    more.text,
                    more.finish_reason,
                    more.model,
                    more.prompt_tokens,
                    more.prompt_tokens,
                    more.completion_tokens,
                    more.completion_tokens,
                    more.duration_ms,
                    json.dumps(more.diagnostics) if more.diagnostics is not None else None,
                    response_id,
                ),
            )
            insert_calls(conn, response_id, more)

    # -- reading -----------------------------------------------------------------------
    def responses(
        self,
        *,
        limit: int | None = 20,
        tool: str | None = None,
        session_id: str | None = None,
        query: str | None = None,
    ) -> list[LoggedResponse]:
        """Newest first; `tool` keeps the responses that called that tool, `query` those
        whose prompt or answer contains that text (case-insensitive for ASCII)."""
        where: list[str] = []
        params: list[Any] = []
        if query:
            like = "%" + query.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            where.append("(prompt LIKE ? ESCAPE '\\' OR text LIKE ? ESCAPE '\\')")
            params.extend([like, like])
        if tool is not None:
            where.append("id IN (SELECT response_id FROM tool_calls WHERE name = ?)")
            params.append(tool)
        if session_id is not None:
            where.append("session_id LIKE ?")
            params.append(session_id + "%")
        sql = "SELECT * FROM responses"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY id DESC"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        with self._connection() as conn:
            rows = conn.execute(sql, params).fetchall()
            return [read_response(conn, row) for row in rows]

    def response(self, response_id: int) -> LoggedResponse | None:
        with self._connection() as conn:
            row = conn.execute("SELECT * FROM responses WHERE id = ?", (response_id,)).fetchone()
            return read_response(conn, row) if row is not None else None

    def sessions(self, *, limit: int | None = 20) -> list[LoggedSession]:
        sql = "SELECT * FROM sessions ORDER BY created_at DESC"
        params: list[Any] = []
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        with self._connection() as conn:
            return [read_session(r) for r in conn.execute(sql, params)]

    def session(self, session_id: str) -> LoggedSession | None:
        """The logged session with this exact id."""
        with self._connection() as conn:
            row = conn.execute("SELECT * FROM sessions WHERE id = ?", (session_id,)).fetchone()
            return read_session(row) if row is not None else None

    def context(self, conversation: str | int | None = None) -> Context:
        """A logged conversation as a context, as `parlay prompt -c` continues it: a
        log-session id (or a unique prefix of one; None for the latest conversation), or
        a response id (an int) for the conversation up to and including that response.
        A fork's context starts with its parent's trunk."""
        from parlay.store.conversation import logged_context

        return logged_context(self, conversation)

    def count(self, table: str = "responses") -> int:
        if table not in ("sessions", "responses", "tool_calls", "tool_results"):
            raise ValueError(f"no table {table!r} in the log")
        with self._connection() as conn:
            return int(conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])
