"""Versioned schema migrations for the SQLite log.

`PRAGMA user_version` holds the number of migrations applied. Each migration runs in its
own `BEGIN IMMEDIATE` transaction and re-reads the version inside it, so several
processes opening a new log file at once apply every migration exactly once.
Append new migrations; never edit one that has shipped.

Not a library: alembic needs SQLAlchemy; yoyo-migrations (checked: 9.0), the one that
fits plain SQL on SQLite and PostgreSQL, keeps four tables of its own in the log (its
lock a row polled every half second, a waiter giving up after ten seconds) where
`user_version` and `BEGIN IMMEDIATE` do here, reads migrations from files, and brings
sqlparse, tabulate and importlib-metadata. When the log gains PostgreSQL, two things here
are SQLite's only and change for it: the version moves to a one-row table, and the lock to
`pg_advisory_xact_lock`; the list of migrations and the loop stay.
"""

from __future__ import annotations

import sqlite3

MIGRATIONS: tuple[tuple[str, ...], ...] = (
    # 1: sessions, responses, tool calls, tool results
    (
        """CREATE TABLE sessions (
            id TEXT PRIMARY KEY,
            created_at TEXT NOT NULL,
            source TEXT NOT NULL,
            backend TEXT,
            system TEXT,
            tools TEXT NOT NULL DEFAULT '[]'
        )""",
        """CREATE TABLE responses (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            session_id TEXT NOT NULL REFERENCES sessions(id),
            created_at TEXT NOT NULL,
            backend TEXT,
            model TEXT,
            prompt TEXT,
            text TEXT NOT NULL,
            finish_reason TEXT,
            prompt_tokens INTEGER,
            completion_tokens INTEGER,
            first_event_ms REAL,
            duration_ms REAL,
            diagnostics TEXT
        )""",
        """CREATE TABLE tool_calls (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            response_id INTEGER NOT NULL REFERENCES responses(id),
            round INTEGER NOT NULL,
            call_id TEXT NOT NULL,
            name TEXT NOT NULL,
            arguments TEXT NOT NULL
        )""",
        """CREATE TABLE tool_results (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            response_id INTEGER NOT NULL REFERENCES responses(id),
            call_id TEXT NOT NULL,
            name TEXT NOT NULL,
            output TEXT NOT NULL,
            error TEXT
        )""",
        "CREATE INDEX responses_session ON responses(session_id)",
        "CREATE INDEX tool_calls_response ON tool_calls(response_id)",
        "CREATE INDEX tool_calls_name ON tool_calls(name)",
        "CREATE INDEX tool_calls_call_id ON tool_calls(call_id)",
        "CREATE INDEX tool_results_call_id ON tool_results(call_id)",
        "CREATE INDEX tool_results_response ON tool_results(response_id)",
    ),
    # 2: the session a fork branched from, and the last response of it the fork shares
    (
        "ALTER TABLE sessions ADD COLUMN parent_id TEXT",
        "ALTER TABLE sessions ADD COLUMN parent_response_id INTEGER",
        "CREATE INDEX sessions_parent ON sessions(parent_id)",
    ),
)

SCHEMA_VERSION = len(MIGRATIONS)


def schema_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def migrate(conn: sqlite3.Connection) -> int:
    """Bring the schema up to date; returns the number of migrations applied here.

    `conn` must be in autocommit mode (isolation_level=None) so the transactions here
    are the only ones.
    """
    applied = 0
    while schema_version(conn) < SCHEMA_VERSION:
        conn.execute("BEGIN IMMEDIATE")
        try:
            current = schema_version(conn)  # another process may have migrated meanwhile
            if current >= SCHEMA_VERSION:
                conn.execute("COMMIT")
                break
            for statement in MIGRATIONS[current]:
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {current + 1}")
            conn.execute("COMMIT")
            applied += 1
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return applied
