"""The log: sessions, responses, tool calls and tool results, in SQLite or PostgreSQL.

`Store(path)` is a SQLite file (the default, `sqlite_db`); `Store("postgresql://...")` a
PostgreSQL database that several processes and machines share (`postgres_db`). The API,
the schema and what the rows mean are the same on both; so is every reader (`parlay
logs`, `Store.context`, `start_session(resume=)`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import platformdirs

from parlay.errors import StoreError
from parlay.store.migrations import Dialect
from parlay.store.postgres_db import PostgresDatabase, is_postgres_url
from parlay.store.records import (
    LoggedCall,
    LoggedResponse,
    LoggedResult,
    LoggedSession,
    utc_now,
)
from parlay.store.rows import (
    insert_calls,
    insert_parent,
    read_response,
    read_session,
    replace_response,
    response_columns,
)
from parlay.store.sqlite_db import ENV_VAR, SqliteDatabase

if TYPE_CHECKING:
    from parlay.context import Context

__all__ = ["ENV_VAR", "LoggedCall", "LoggedResponse", "LoggedResult", "LoggedSession", "Store"]


def default_path() -> Path:
    """`$PARLAY_LOG_DB` if set to a file, else `logs.db` in the user's data directory."""
    chosen = os.environ.get(ENV_VAR)
    if chosen and not is_postgres_url(chosen):
        return Path(chosen).expanduser()
    return Path(platformdirs.user_data_dir("parlay", appauthor=False)) / "logs.db"


def default_target() -> str | Path:
    """Where the log is: `$PARLAY_LOG_DB` (a file or a postgresql:// URL), else the file."""
    chosen = os.environ.get(ENV_VAR)
    return chosen if is_postgres_url(chosen) else default_path()  # type: ignore[return-value]


class Store:
    """The log: a SQLite file (a path; created and migrated on first use), or a
    PostgreSQL database (a `postgresql://user:password@host:port/db` URL, which needs
    `pip install '.[postgres]'` in parlay's folder). None: `$PARLAY_LOG_DB`, else the
    default file."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        target = path if path is not None else default_target()
        self._db: SqliteDatabase | PostgresDatabase
        if is_postgres_url(target):
            self._db = PostgresDatabase(str(target))
            # A file's path; None for a database, whose place is `where`.
            self.path: Path | None = None
        else:
            self.path = Path(target).expanduser()
            self._db = SqliteDatabase(self.path)

    def __repr__(self) -> str:
        return f"Store({self.where!r})"

    @property
    def where(self) -> str:
        """The file, or the database's URL without its password."""
        return self._db.where

    @property
    def dialect(self) -> Dialect:
        return self._db.dialect

    # -- connections -------------------------------------------------------------------
    def _connection(self) -> Any:
        return self._db.connection()

    def _write(self) -> Any:
        return self._db.write()

    def close(self) -> None:
        """Close this process's connections (they are also closed when the store is freed)."""
        self._db.close()

    @property
    def schema_version(self) -> int:
        return self._db.schema_version()

    @property
    def journal_mode(self) -> str:
        if not isinstance(self._db, SqliteDatabase):
            return "postgresql"
        with self._connection() as conn:
            return str(conn.execute("PRAGMA journal_mode").fetchone()[0])

    def writable(self) -> str | None:
        """None when the log takes writes now, else why not (one line): a readiness
        probe's question. An empty write transaction (PostgreSQL: on a primary)."""
        try:
            with self._write() as conn:
                if self.dialect is Dialect.POSTGRES:
                    row = conn.execute("SELECT pg_is_in_recovery() AS standby").fetchone()
                    if row["standby"]:
                        return f"the log {self.where} is a read-only standby"
        except StoreError as exc:
            return str(exc)
        return None

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
        conn: Any,
        session_id: str,
        source: str,
        backend: str | None,
        system: str | None,
        tools: Sequence[str],
    ) -> None:
        conn.execute(
            "INSERT INTO sessions (id, created_at, source, backend, system, tools) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
            (session_id, utc_now(), source, backend, system, json.dumps(list(tools))),
        )

    def add_response(self, response: LoggedResponse, session: LoggedSession | None = None) -> int:
        """Write a response with its tool calls and results in one transaction; its id.
        A response with a `request_key` already in the log replaces that row (the same
        request, retried: the later answer is the one its client got) under its id."""
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
            response_id = self._db.insert(
                conn,
                "INSERT INTO responses (session_id, created_at, backend, model, prompt, text, "
                "finish_reason, prompt_tokens, completion_tokens, first_event_ms, duration_ms, "
                "diagnostics, request_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (request_key) DO NOTHING",
                (response.session_id, *response_columns(response), response.request_key),
            )
            if response_id is None:
                # The request was logged already, and sent again (a load balancer retried
                # it on another replica): the row becomes this answer, the one the client got.
                row = conn.execute(
                    "SELECT id FROM responses WHERE request_key = ?", (response.request_key,)
                ).fetchone()
                response_id = int(row["id"])
                replace_response(conn, response_id, response)
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
            like_op = "ILIKE" if self.dialect is Dialect.POSTGRES else "LIKE"
            where.append(f"(prompt {like_op} ? ESCAPE '\\' OR text {like_op} ? ESCAPE '\\')")
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
            return int(conn.execute(f"SELECT COUNT(*) AS n FROM {table}").fetchone()["n"])
