"""The log in PostgreSQL, shared by every replica of `parlay serve` (and every command
given the same URL): psycopg 3 through a small connection pool per process.

The statements are the SQLite log's (`?` placeholders, translated once here). Every
write is one transaction with a statement timeout, and waiting for a pooled connection
is bounded too, so a database that is down costs a caller seconds, never a hang: the
pool goes on reconnecting in the background and the next write after it is back works.
"""

from __future__ import annotations

import atexit
import functools
import logging
import os
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from parlay.errors import StoreError
from parlay.store.migrations import SCHEMA_VERSION, Dialect, migrate_postgres, pg_schema_version

URL_SCHEMES = ("postgresql://", "postgres://")
# Connections per process: the proxy writes from a few threads at a time.
POOL_SIZE = 8
# Seconds to wait for a pooled connection, to connect, and for one write statement.
WAIT_S = 5.0
CONNECT_S = 3
STATEMENT_MS = 5000
# Seconds a database found out of reach is not asked again (each caller fails at once).
DOWN_S = 5.0


def is_postgres_url(target: object) -> bool:
    return isinstance(target, str) and target.startswith(URL_SCHEMES)


def masked(url: str) -> str:
    """The URL without its password, for messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


@functools.lru_cache(maxsize=256)
def _pg(sql: str) -> str:
    # The log's SQL has no literal `?` nor `%`: its patterns travel as parameters.
    return sql.replace("?", "%s")


class _Connection:
    """A psycopg connection that takes the SQLite log's statements."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self._conn.execute(_pg(sql), params)

    def executemany(self, sql: str, params: Iterable[Sequence[Any]]) -> None:
        rows = list(params)
        if rows:
            with self._conn.cursor() as cursor:
                cursor.executemany(_pg(sql), rows)


# One pool per database and process, whatever the number of `Store`s naming it: a
# command makes several, and a pool freed by the garbage collector on one of its own
# worker threads cannot join them. Closed when the process exits.
_POOLS: dict[tuple[str, int], Any] = {}
_POOLS_LOCK = threading.Lock()
# Databases found out of reach: until when, and what was found.
_DOWN: dict[str, tuple[float, str]] = {}


@atexit.register
def _close_pools() -> None:
    with _POOLS_LOCK:
        for (_, pid), pool in list(_POOLS.items()):
            if pid == os.getpid():
                pool.close()
        _POOLS.clear()


class PostgresDatabase:
    """A PostgreSQL database (its tables created and migrated on first use)."""

    dialect = Dialect.POSTGRES

    def __init__(self, url: str) -> None:
        self.url = url
        self.where = masked(url)

    def _open_pool(self) -> Any:
        try:
            from psycopg.rows import dict_row
            from psycopg_pool import ConnectionPool
        except ImportError as exc:
            raise StoreError(
                "a PostgreSQL log needs psycopg and psycopg-pool: "
                "pip install '.[postgres]' in parlay's folder"
            ) from exc
        quiet = logging.getLogger("psycopg.pool")
        if quiet.level == logging.NOTSET:
            # Its line per reconnection attempt while a database is down would bury the
            # one warning parlay gives; a level set by the user stands.
            quiet.setLevel(logging.ERROR)
        pool = ConnectionPool(
            self.url,
            min_size=1,
            max_size=POOL_SIZE,
            timeout=WAIT_S,
            open=False,
            name="parlay-log",
            # Each connection checked as it is handed out (one round trip, tens of µs on
            # a LAN): after a database restart, a pooled connection it closed is replaced
            # instead of failing a write.
            check=ConnectionPool.check_connection,
            kwargs={"autocommit": True, "row_factory": dict_row, "connect_timeout": CONNECT_S},
        )
        pool.open(wait=False)
        try:
            with pool.connection() as conn:
                version = pg_schema_version(conn)
                if version > SCHEMA_VERSION:
                    raise StoreError(
                        f"the log {self.where} has schema version {version}, newer than "
                        f"this parlay understands ({SCHEMA_VERSION}): upgrade parlay"
                    )
                migrate_postgres(conn)
        except BaseException:
            pool.close()
            raise
        return pool

    def _the_pool(self) -> Any:
        # A pool per process: a forked worker must not share its parent's sockets.
        key = (self.url, os.getpid())
        with _POOLS_LOCK:
            pool = _POOLS.get(key)
            if pool is None:
                pool = _POOLS[key] = self._guarded(self._open_pool)
            return pool

    def _guarded(self, action: Any) -> Any:
        try:
            return action()
        except StoreError:
            raise
        except Exception as exc:
            raise StoreError(self._explain(exc)) from exc

    def _explain(self, exc: Exception) -> str:
        kind = type(exc).__name__
        if kind == "PoolTimeout":
            return (
                f"cannot reach the log {self.where}: no connection within {WAIT_S:g} s "
                "(is the database up?)"
            )
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else kind
        return f"the log {self.where} is not usable: {first}"

    @contextmanager
    def connection(self) -> Iterator[_Connection]:
        down = _DOWN.get(self.url)
        if down is not None and time.monotonic() < down[0]:
            raise StoreError(down[1])
        try:
            pool = self._the_pool()
            with pool.connection() as conn:
                yield _Connection(conn)
        except StoreError as exc:
            self._note(exc.__cause__, str(exc))
            raise
        except Exception as exc:
            if not _is_database_error(exc):
                raise
            error = StoreError(self._explain(exc))
            self._note(exc, str(error))
            raise error from exc

    def _note(self, cause: BaseException | None, message: str) -> None:
        """A database out of reach is not asked again for `DOWN_S`: each caller (a
        session's turn, a proxy's request) would otherwise wait `WAIT_S` for it."""
        kinds = {kind.__name__ for kind in type(cause).__mro__}
        if kinds & {"PoolTimeout", "OperationalError"}:
            _DOWN[self.url] = (time.monotonic() + DOWN_S, message)

    @contextmanager
    def write(self) -> Iterator[_Connection]:
        """One write transaction, its statements bounded in time."""
        with self.connection() as wrapped:
            conn = wrapped._conn
            with conn.transaction():
                conn.execute(f"SET LOCAL statement_timeout = {STATEMENT_MS}")
                yield wrapped

    @staticmethod
    def insert(conn: Any, sql: str, params: Sequence[Any]) -> int | None:
        """Run an INSERT; the new row's id, or None when a conflict skipped it."""
        row = conn.execute(sql + " RETURNING id", params).fetchone()
        return int(row["id"]) if row is not None else None

    def schema_version(self) -> int:
        with self.connection() as conn:
            return pg_schema_version(conn._conn)

    def close(self) -> None:
        """Close this process's connections to the database (reopened when next used)."""
        with _POOLS_LOCK:
            pool = _POOLS.pop((self.url, os.getpid()), None)
        if pool is not None:
            pool.close()


def _is_database_error(exc: Exception) -> bool:
    """psycopg's and the pool's errors, told apart without importing either here."""
    module = type(exc).__module__
    return module.startswith(("psycopg", "psycopg_pool"))
