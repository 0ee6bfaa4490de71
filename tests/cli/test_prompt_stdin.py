"""`parlay prompt` reads its prompt as llm does: from stdin when none is given, piped
stdin then the argument when both are (real subprocesses, real pipes)."""

from __future__ import annotations

import json
from pathlib import Path

from scripted_parlay import run


def shown(stdout: str) -> list[list[str]]:
    """The messages the echo script was shown (its reply is them as JSON)."""
    return json.loads(stdout)


def test_piped_stdin_is_the_prompt_when_none_is_given(tmp_path: Path) -> None:
    done = run(["prompt", "--no-stream"], tmp_path / "log.db", stdin="hi\n")
    assert done.returncode == 0, done.stderr
    assert shown(done.stdout) == [["user", "hi\n"]]


def test_piped_stdin_comes_first_then_the_argument(tmp_path: Path) -> None:
    done = run(["prompt", "explain this", "--no-stream"], tmp_path / "log.db", stdin="x = 1\n")
    assert done.returncode == 0, done.stderr
    assert shown(done.stdout) == [["user", "x = 1\n explain this"]]


def test_dash_still_reads_stdin_alone(tmp_path: Path) -> None:
    done = run(["prompt", "-", "--no-stream"], tmp_path / "log.db", stdin="from stdin")
    assert done.returncode == 0, done.stderr
    assert shown(done.stdout) == [["user", "from stdin"]]


def test_no_prompt_and_nothing_piped_says_how_to_give_one(tmp_path: Path) -> None:
    done = run(["prompt"], tmp_path / "log.db", stdin="")
    assert done.returncode == 2
    assert "echo TEXT | parlay prompt" in done.stderr


def test_the_argument_alone_when_stdin_is_empty(tmp_path: Path) -> None:
    done = run(["prompt", "just this", "--no-stream"], tmp_path / "log.db", stdin=None)
    assert done.returncode == 0, done.stderr
    assert shown(done.stdout) == [["user", "just this"]]
