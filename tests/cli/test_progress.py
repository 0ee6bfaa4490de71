"""While the model loads or thinks, a terminal shows a status line on stderr; a pipe, a
file or `--json` get nothing but the answer (a session waited 9-60 s on a silent
`parlay prompt`). The terminal is a real one (tmux), the model a scripted slow one."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from scripted_parlay import HERE, run

from parlay.backends.local import LocalBackend
from parlay.cli.progress import _unloaded_model
from parlay.engine.backend import PromptedBackend

needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")
WAITING = "waiting for the model's reply"


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, check=True).stdout


@contextmanager
def terminal(tmp_path: Path, args: str, delay: float = 4) -> Iterator[str]:
    """`parlay ARGS` in a 120x30 tmux terminal; the pane stays after it exits."""
    name = f"parlay-{uuid.uuid4().hex[:8]}"
    env = f"PARLAY_LOG_DB={shlex.quote(str(tmp_path / 'log.db'))} SCRIPTED_DELAY={delay}"
    command = f"{env} {sys.executable} {HERE} {args}; echo EXITED; sleep 60"
    tmux("new-session", "-d", "-s", name, "-x", "120", "-y", "30", command)
    try:
        yield name
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True, env=os.environ)


def screens_until_exit(name: str, bound: float = 30) -> list[str]:
    """Every screen seen, 10 a second, until the command has exited (or `bound` s)."""
    seen: list[str] = []
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        seen.append(tmux("capture-pane", "-p", "-t", name))
        if "EXITED" in seen[-1]:
            return seen
        time.sleep(0.1)
    pytest.fail(f"never exited:\n{seen[-1]}")


@needs_tmux
def test_a_terminal_shows_a_status_while_the_model_thinks_then_only_the_answer(
    tmp_path: Path,
) -> None:
    with terminal(tmp_path, "prompt hi -m slow") as name:
        screens = screens_until_exit(name)
    waiting = [s for s in screens if WAITING in s]
    assert waiting, "no status line while the model thought"
    assert any(f"{WAITING}… 2 s" in s for s in waiting), "the seconds waited do not count up"
    final = screens[-1]
    assert '[["user", "hi"]]' in final
    assert WAITING not in final  # erased once the answer came


@needs_tmux
def test_json_on_a_terminal_shows_no_status(tmp_path: Path) -> None:
    with terminal(tmp_path, "prompt hi -m slow --json", delay=2) as name:
        screens = screens_until_exit(name)
    assert '"text": "[[\\"user\\", \\"hi\\"]]"' in screens[-1]
    assert not any(WAITING in s for s in screens)


def test_a_pipe_gets_the_answer_and_no_status(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SCRIPTED_DELAY", "1.5")
    done = run(["prompt", "hi", "-m", "slow"], tmp_path / "log.db")
    assert done.returncode == 0, done.stderr
    assert done.stdout == '[["user", "hi"]]\n'
    assert done.stderr == ""


def test_the_status_names_the_embedded_model_until_it_is_loaded(tmp_path: Path) -> None:
    model = tmp_path / "tiny-model.gguf"  # never loaded: the backend only names it
    embedded = PromptedBackend(LocalBackend(model))
    assert _unloaded_model(embedded) == "tiny-model.gguf"
    assert _unloaded_model(PromptedBackend(PromptedBackend(LocalBackend(model)))) is not None
    assert _unloaded_model(object()) is None
