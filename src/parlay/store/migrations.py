"""Versioned schema migrations for the log, one description for SQLite and PostgreSQL.

Each migration is a list of statements written once; the few words the two databases
spell differently (`{serial}`, `{real}`) are filled in per dialect. Append new
migrations; never edit one that has shipped.

SQLite: `PRAGMA user_version` holds the number of migrations applied; each migration runs
in its own `BEGIN IMMEDIATE` transaction and re-reads the version inside it, so several
processes opening a new log file at once apply every migration exactly once.
PostgreSQL: the number is the one row of `parlay_schema`, and every pending migration
runs in one transaction under `pg_advisory_xact_lock`, so replicas starting together
apply each exactly once (PostgreSQL's DDL is transactional).

Not a library: alembic needs SQLAlchemy; yoyo-migrations (checked: 9.0), the one that
fits plain SQL on SQLite and PostgreSQL, keeps four tables of its own in the log (its
lock a row polled every half second, a waiter giving up after ten seconds) where
`user_version` and `BEGIN IMMEDIATE` (or an advisory lock) do here, reads migrations from
files, and brings sqlparse, tabulate and importlib-metadata.
"""

from __future__ import annotations

import enum
import sqlite3
from typing import Any


class Dialect(enum.Enum):
    SQLITE = "sqlite"
    POSTGRES = "postgresql"


# The words the two spell differently. SQLite's REAL is 8 bytes, PostgreSQL's 4.
_WORDS: dict[Dialect, dict[str, str]] = {
    Dialect.SQLITE: {"serial": "INTEGER PRIMARY KEY AUTOINCREMENT", "real": "REAL"},
    Dialect.POSTGRES: {"serial": "SERIAL PRIMARY KEY", "real": "DOUBLE PRECISION"},
}
# Any number of parlay's own: the advisory lock that serialises migrating a database.
PG_LOCK_KEY = 0x7061726C6179  # "parlay"

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
            id {serial},
            session_id TEXT NOT NULL REFERENCES sessions(id),
            created_at TEXT NOT NULL,
            backend TEXT,
            model TEXT,
            prompt TEXT,
            text TEXT NOT NULL,
            finish_reason TEXT,
            prompt_tokens INTEGER,
            completion_tokens INTEGER,
            first_event_ms {real},
            duration_ms {real},
            diagnostics TEXT
        )""",
        """CREATE TABLE tool_calls (
            id {serial},
            response_id INTEGER NOT NULL REFERENCES responses(id),
            round INTEGER NOT NULL,
            call_id TEXT NOT NULL,
            name TEXT NOT NULL,
            arguments TEXT NOT NULL
        )""",
        """CREATE TABLE tool_results (
            id {serial},
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
    # 3: the request a proxy's turn answered (a load balancer's request id), so a request
    # retried on another replica is logged once
    (
        "ALTER TABLE responses ADD COLUMN request_key TEXT",
        "CREATE UNIQUE INDEX responses_request_key ON responses(request_key)",
    ),
)

SCHEMA_VERSION = len(MIGRATIONS)


def statements(index: int, dialect: Dialect) -> list[str]:
    """Migration `index` (0-based) in `dialect`'s words."""
    return [statement.format(**_WORDS[dialect]) for statement in MIGRATIONS[index]]


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
            for statement in statements(current, Dialect.SQLITE):
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {current + 1}")
            conn.execute("COMMIT")
            applied += 1
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return applied


def pg_schema_version(conn: Any) -> int:
    """The version of a PostgreSQL log (0: parlay has not written to it yet)."""
    row = conn.execute("SELECT to_regclass('parlay_schema') AS t").fetchone()
    if row["t"] is None:
        return 0
    row = conn.execute("SELECT version FROM parlay_schema").fetchone()
    return int(row["version"]) if row is not None else 0


def migrate_postgres(conn: Any) -> int:
    """Bring a PostgreSQL log up to date in one transaction; returns the number applied.
    `conn` is a psycopg connection in autocommit mode, rows as dicts."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (PG_LOCK_KEY,))
        conn.execute("CREATE TABLE IF NOT EXISTS parlay_schema (version INTEGER NOT NULL)")
        current = pg_schema_version(conn)
        if current == 0:
            conn.execute("DELETE FROM parlay_schema")
            conn.execute("INSERT INTO parlay_schema (version) VALUES (0)")
        for index in range(current, SCHEMA_VERSION):
            for statement in statements(index, Dialect.POSTGRES):
                conn.execute(statement)
        if current < SCHEMA_VERSION:
            conn.execute("UPDATE parlay_schema SET version = %s", (SCHEMA_VERSION,))
        return max(0, SCHEMA_VERSION - current)
