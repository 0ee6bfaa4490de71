"""A real PostgreSQL server for the tests (and bench/gateway.py): `initdb` into a temp
folder, `postgres` on a free loopback port, stopped when the block ends.

PostgreSQL refuses to run as root: as root, the server runs as the `postgres` user
(Debian's package makes it; `Popen(user=...)` switches before exec, so the pid is the
server's own and a signal reaches it). Binaries are found on PATH or under
/usr/lib/postgresql/*/bin; without them, `find_binaries` says why (a test skips).
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def find_binaries() -> Path | str:
    """The folder holding `initdb` and `postgres`, or why there is none (or why they
    cannot run here: as root, without the `postgres` user to run them as)."""
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "no `postgres` user to run PostgreSQL as (apt-get install postgresql)"
    found = shutil.which("initdb")
    if found:
        return Path(found).parent
    for folder in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if (Path(folder) / "initdb").exists():
            return Path(folder)
    return "PostgreSQL is not installed (apt-get install postgresql)"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _as_owner() -> dict[str, object]:
    """`Popen` arguments running a command as the `postgres` user when we are root."""
    if os.geteuid() != 0:
        return {}
    return {"user": "postgres", "group": "postgres", "extra_groups": []}


class PostgresServer:
    """One server on its own data folder and port, which a test may stop and start."""

    def __init__(self, binaries: Path, folder: Path, settings: tuple[str, ...]) -> None:
        self.port = _free_port()
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/parlay"
        command = [str(binaries / "postgres"), "-D", str(folder / "data")]
        command += ["-p", str(self.port), "-k", str(folder)]
        command += ["-c", "listen_addresses=127.0.0.1", "-c", "max_connections=100"]
        for setting in settings:
            command += ["-c", setting]
        self.command = command
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, *, create: bool = False) -> None:
        self.process = subprocess.Popen(  # type: ignore[call-overload]
            self.command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, **_as_owner()
        )
        _wait_and_create(self.process, self.port, create)

    def stop(self) -> None:
        """A fast shutdown: clients still connected are cut off."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)


@contextmanager
def postgres_cluster(*settings: str) -> Iterator[PostgresServer]:
    """A running server with a database `parlay`. `settings` are extra `-c name=value`
    for the server (the tests turn fsync off; the benchmark does not)."""
    binaries = find_binaries()
    if isinstance(binaries, str):
        raise RuntimeError(binaries)
    folder = Path(tempfile.mkdtemp(prefix="parlay-pg-"))
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
    data = str(folder / "data")
    init = [str(binaries / "initdb"), "-D", data, "-U", "postgres", "-A", "trust", "-N"]
    subprocess.run(init, check=True, capture_output=True, timeout=120, **_as_owner())  # type: ignore[call-overload]
    server = PostgresServer(binaries, folder, settings)
    try:
        server.start(create=True)
        yield server
    finally:
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def postgres_server(*settings: str) -> Iterator[str]:
    """`postgres_cluster`'s URL of its database `parlay`."""
    with postgres_cluster(*settings) as server:
        yield server.url


def _wait_and_create(server: subprocess.Popen[bytes], port: int, create: bool) -> None:
    import psycopg

    deadline = time.monotonic() + 60
    while True:
        try:
            with psycopg.connect(
                f"postgresql://postgres@127.0.0.1:{port}/postgres", autocommit=True
            ) as conn:
                if create:
                    conn.execute("CREATE DATABASE parlay")
            return
        except psycopg.OperationalError:
            if server.poll() is not None or time.monotonic() > deadline:
                err = server.stderr.read().decode() if server.stderr else ""
                raise RuntimeError(f"postgres did not start: {err[-2000:]}") from None
            time.sleep(0.1)
