"""How many threads llama.cpp gets (issue: a fixed 2 threads collapse on a shared machine)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from parlay.backends.local import LocalBackend
from parlay.backends.threads import (
    THREADS_ENV,
    allowed_cpus,
    busy_cores,
    free_threads,
    pick_threads,
)
from parlay.errors import ConfigurationError


@pytest.mark.parametrize(
    ("cores", "busy", "threads"),
    [(2, 0.05, 2), (2, 0.5, 1), (2, 1.0, 1), (2, 2.0, 1), (8, 3.0, 5), (1, 0.0, 1)],
)
def test_the_thread_count_is_the_cores_free_now(cores: int, busy: float, threads: int) -> None:
    assert free_threads(list(range(cores)), busy=busy) == threads


def test_a_core_kept_busy_by_another_process_is_seen_busy() -> None:
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        assert busy_cores(allowed_cpus(), seconds=0.5) >= 0.5
    finally:
        spinner.kill()
        spinner.wait()


def test_the_environment_and_an_explicit_count_win(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(THREADS_ENV, "3")
    assert pick_threads() == 3
    assert pick_threads(1) == 1


@pytest.mark.parametrize("raw", ["0", "-2", "two", "1.5"])
def test_a_thread_count_in_the_environment_that_is_no_count_is_refused(
    monkeypatch: pytest.MonkeyPatch, raw: str
) -> None:
    monkeypatch.setenv(THREADS_ENV, raw)
    with pytest.raises(ConfigurationError, match=THREADS_ENV):
        pick_threads()


def test_local_backend_refuses_zero_threads() -> None:
    with pytest.raises(ConfigurationError, match="threads must be 1 or more"):
        LocalBackend("unused.gguf", threads=0)
