"""A damaged log and a full disk are clear errors naming the real cause, never a traceback
or the failed clean-up that followed it (an outside probe's reproductions)."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from parlay import Session
from parlay.backends.scripted import ScriptedBackend
from parlay.errors import StoreError
from parlay.store import LoggedResponse, Store

SRC = Path(__file__).resolve().parents[2] / "src"


def _parlay(args: list[str], log: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PARLAY_LOG_DB": str(log)}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-m", "parlay.cli.app", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


def _write_turns(store: Store, turns: int) -> None:
    store.add_session("s1")
    for i in range(turns):
        store.add_response(LoggedResponse("s1", f"answer {i} " * 20, prompt=f"prompt {i}"))


def test_parlay_logs_on_a_log_with_a_damaged_page_is_a_clean_error(tmp_path: Path) -> None:
    log = tmp_path / "p.db"
    store = Store(log)
    _write_turns(store, 200)
    with store._connection() as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    store.close()
    # dd if=/dev/urandom of=p.db bs=4096 seek=3 count=2 conv=notrunc (seeded: repeatable)
    with log.open("r+b") as file:
        file.seek(3 * 4096)
        file.write(random.Random(40).randbytes(2 * 4096))

    done = _parlay(["logs"], log)

    assert done.returncode == 1, done.stdout
    assert "Traceback" not in done.stderr
    assert "is damaged (database disk image is malformed)" in done.stderr
    assert "move it aside" in done.stderr


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A 256 KiB tmpfs, as the probe used (needs root and a kernel that lets us mount)."""
    where = tmp_path / f"tmpfs-{uuid.uuid4().hex[:6]}"
    where.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(where)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def test_a_full_disk_warns_with_its_real_cause_not_the_failed_rollback(tiny_disk: Path) -> None:
    session = Session(ScriptedBackend(lambda request: "y" * 1000), log=Store(tiny_disk / "l.db"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(400):
            assert session.chat("x" * 1000).value == "y" * 1000  # the turns still work
    # The log's own warnings only: with "always", a ResourceWarning of an earlier test's
    # socket freed by the collector meanwhile would be caught too (a long run failed here
    # once, and did not again in five runs alone).
    said = {str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)}
    assert said, "a 256 KiB disk held 400 turns of 2,000 characters?"
    assert all("database or disk is full" in text for text in said), said
    assert not any("rollback" in text for text in said), said


def test_a_full_log_is_a_store_error_naming_the_cause(tmp_path: Path) -> None:
    """The same without a tmpfs: SQLite's page limit makes the same SQLITE_FULL."""
    store = Store(tmp_path / "l.db")
    _write_turns(store, 1)
    with store._connection() as conn:
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages}")
    with pytest.raises(StoreError) as caught:
        _write_turns(store, 50)
    assert "database or disk is full" in str(caught.value)
    assert "rollback" not in str(caught.value)
