"""CLI fixtures: a private log file per test, tool files on disk."""

from __future__ import annotations

from pathlib import Path

import pytest

TOOLS_PY = '''\
"""Tools for the CLI tests."""

import math


def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first number.
        b: The second number.
    """
    return a + b


def shout(text: str) -> str:
    """Upper-case some text."""
    return text.upper()


def _helper(x: int) -> int:
    return x
'''


@pytest.fixture(autouse=True)
def log_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "log.db"
    monkeypatch.setenv("PARLAY_LOG_DB", str(path))
    return path


@pytest.fixture
def tools_file(tmp_path: Path) -> Path:
    path = tmp_path / "my_tools.py"
    path.write_text(TOOLS_PY)
    return path
