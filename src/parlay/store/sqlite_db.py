"""The log in one SQLite file: WAL mode, a busy timeout and `BEGIN IMMEDIATE` for every
write, so several processes (two `parlay` commands, a notebook and a script) can write
at once and nothing is lost: a writer waits for the lock instead of failing. Each thread
gets its own connection, so the database is safe to share between threads."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from parlay.errors import StoreError
from parlay.store.migrations import SCHEMA_VERSION, Dialect, migrate, schema_version

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


class SqliteDatabase:
    """One SQLite file (created and migrated on first use)."""

    dialect = Dialect.SQLITE

    def __init__(self, path: Path) -> None:
        self.path = path
        self._ready = False
        self._connections: dict[tuple[int, int], sqlite3.Connection] = {}

    @property
    def where(self) -> str:
        return str(self.path)

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
    def connection(self) -> Iterator[sqlite3.Connection]:
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

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; takes the write lock up front so it cannot deadlock."""
        with self.connection() as conn:
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

    @staticmethod
    def insert(conn: Any, sql: str, params: Sequence[Any]) -> int | None:
        """Run an INSERT; the new row's id, or None when a conflict skipped it."""
        cursor = conn.execute(sql, params)
        return int(cursor.lastrowid) if cursor.rowcount else None

    def schema_version(self) -> int:
        with self.connection() as conn:
            return schema_version(conn)

    def close(self) -> None:
        """Close this process's connections (they are also closed when the store is freed)."""
        for key, conn in list(self._connections.items()):
            if key[0] == os.getpid():
                conn.close()
            self._connections.pop(key, None)
